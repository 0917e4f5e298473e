// web_compare.js — the compare story of the web UI in headless Chromium
// (tests/integration/web_compare.sh starts the server and gives CONFIG):
// what the differential flame graph draws (window.hsUI.fg.frames(), the
// hook docs/web-ui.md documents) against widths computed here from the
// folded files, per-profile compares of unequal counts, bad URLs, empty
// ranges, in-use averages.   node web_compare.js CONFIG.json
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.HS_NODE_MODULES || path.join(__dirname, "../node/node_modules"), "playwright-core"));
const { readFolded, fail, eq, diffTree, findNode: find } = require("./web_truth.js");
const C = require("./web_compare_checks.js");

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const T = 30000;

const within = (what, got, want, tol = 0.01) => {
  if (!(Math.abs(got - want) <= tol * Math.abs(want))) fail(`${what}: ${got}, want ${want} (within ${100 * tol}%)`);
};

async function ready(page, want = "ready") {
  await page.waitForFunction(() => document.body.dataset.hsState !== "loading", null, { timeout: T });
  const st = await page.evaluate(() => document.body.dataset.hsState);
  if (st !== want) fail(`the page is in state ${st}, want ${want}: ${await page.textContent("#error")}`);
}
const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const val = (page, sel) => page.$eval(sel, (e) => +e.dataset.value);
async function shot(page, name) { await page.screenshot({ path: path.join(cfg.out, name + ".png") }); }

// 1. gone and new frames in the differential flame graph
async function goneFrames(page) {
  const tr = diffTree(cfg.v1, cfg.v2);
  await page.goto(cfg.url + "/?service=cmp&span=600&version=2&cmp=version&base_version=1");
  await ready(page);
  const fr = await page.evaluate(() => window.hsUI.fg.frames());
  const root = fr.find((f) => f.depth === 0);
  if (!root) fail("no root frame drawn: " + JSON.stringify(fr));
  const scale = root.width / tr.w;     // pixels per sample unit
  const check = (name, side, label) => {
    const f = fr.find((x) => x.name === name), n = find(tr, name);
    if (!f) fail(`${name} is not drawn: ${JSON.stringify(fr.map((x) => x.name))}`);
    eq(`${name}'s base`, f.base, n.base);
    eq(`${name}'s new`, f.new, n.new);
    within(`${name}'s width (px)`, f.width, n.w * scale);
    within(`${name}'s width, as a share of the root's`, f.width / root.width, n[side] / tr.w);
    if (f.x < 0 || f.x + f.width > root.x + root.width + 0.5) fail(`${name} is drawn outside the graph: ${JSON.stringify(f)}`);
    if (label && !f.label.includes(label)) fail(`${name} is labelled ${JSON.stringify(f.label)}, want "${label}"`);
    return f;
  };
  const gone = check("line_matches_regex", "base", "(gone)");
  check("regcomp", "base", "(gone)");
  check("memmem", "new", "(new)");
  check("strstr", "new", "");
  // children fit in their parents
  for (const f of fr) if (f.depth > 0 && !fr.some((p) => p.depth === f.depth - 1 && p.x <= f.x + 0.01 && f.x + f.width <= p.x + p.width + 0.5))
    fail(`${f.name} is not under a parent: ${JSON.stringify(f)}`);
  // hovering the gone frame shows it, not a neighbour
  const box = await page.$eval("#fg", (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top }; });
  const g = await page.evaluate(() => ({ G: hsUI.fg.G, top: hsUI.fg.top }));
  await page.mouse.move(box.x + gone.x + gone.width / 2, box.y + g.G - (gone.depth + 1) * 17 - g.top + 8);
  const status = await text(page, "#fg-status");
  if (!status.startsWith("line_matches_regex")) fail("hovering the gone frame shows: " + status);
  await shot(page, "compare-gone");
  console.log(`ok: gone line_matches_regex drawn ${gone.width.toFixed(1)} px of ${root.width.toFixed(1)} (base ${gone.base}), memmem new, hover shows it`);

  // callers/callees of count_matches: as many callees drawn as counted
  await page.goto(cfg.url + "/?service=cmp&span=600&version=2&cmp=version&base_version=1&view=focus&fn=count_matches");
  await ready(page);
  await page.waitForFunction(() => /callee/.test(document.getElementById("focus-summary").textContent), null, { timeout: T });
  const summary = await text(page, "#focus-summary");
  const drawn = await page.evaluate(() => window.hsUI.ce.frames().filter((f) => f.depth === 1).map((f) => f.name).sort());
  const want = [...find(tr, "count_matches").kids.keys()].sort();
  eq("callees of count_matches drawn", JSON.stringify(drawn), JSON.stringify(want));
  if (!summary.includes(`${want.length} callees`)) fail(`the summary counts otherwise: ${summary}`);
  console.log(`ok: callers/callees of count_matches: ${summary}`);
}

// 2. unequal profile counts: per profile by default; in-use of equal
// windows averages; 3. bad URLs and empty ranges (web_compare_checks.js,
// the same checks web_ui_firefox.js runs in Firefox)
const B = (page) => ({ page, ready: (want) => ready(page, want), select: (sel, v) => page.selectOption(sel, v) });
async function normalized(page) {
  const r = await C.normalized(B(page), cfg);
  console.log("ok: " + r);
  await page.goto(cfg.url + "/?service=norm&span=600&version=b&cmp=version&base_version=a");
  await ready(page);
  await shot(page, "compare-normalized");
}
async function inuse(page) {
  console.log("ok: " + await C.inuse(B(page), cfg));
}
async function badUrls(page) {
  console.log("ok: " + await C.badUrls(B(page), cfg));
  await page.goto(cfg.url + `/?service=cmp&span=600&end=${cfg.now - 86400}`);
  await ready(page, "empty");
  await shot(page, "empty-range");
}

// 4. the table, names and layout: gone/new rows, the file header over its
// column, "0" as pprof prints it, one root name, "1 profile", 1024 px, a
// skip link to the graph
async function pleasant(page) {
  await page.goto(cfg.url + "/?service=cmp&span=600&version=2&cmp=version&base_version=1&view=functions");
  await ready(page);
  const dpct = (n) => page.$eval(`#fn-table tbody tr[data-name="${n}"] td[data-col="d_pct"]`, (e) => e.textContent.trim());
  eq("delta % of a gone function", await dpct("line_matches_regex"), "gone");
  eq("delta % of a new function", await dpct("memmem"), "new");
  await page.goto(cfg.url + "/?service=cmp&span=600&version=1&view=functions");
  await ready(page);
  const cols = await page.$eval("#fn-table", (t) => {
    const th = t.querySelector("thead th.file"), td = t.querySelector("tbody td.file");
    return { th: th && th.getBoundingClientRect().left, td: td && td.getBoundingClientRect().left };
  });
  if (cols.th === null || cols.td === null || Math.abs(cols.th - cols.td) > 12) fail("the file header is not over its column: " + JSON.stringify(cols));
  eq("zero self", await page.$eval('#fn-table tbody tr[data-name="main"] td[data-col="self"]', (e) => e.textContent.trim()), "0");
  eq("zero nanoseconds", await page.evaluate(() => HsFlame.fmtValue(0, "nanoseconds")), "0");
  const sum = await text(page, "#summary");
  if (!/^1 profile merged/.test(sum)) fail("one profile: " + sum);
  await page.click("#tab-flame");
  eq("root name (as in hotspur flame files)", await page.evaluate(() => window.hsUI.fg.frames().find((f) => f.depth === 0).name), "all");
  // 1024 px wide: nothing falls off
  await page.setViewportSize({ width: 1024, height: 768 });
  await page.goto(cfg.url + "/?service=cmp&span=600&version=2&cmp=version&base_version=1");
  await ready(page);
  const fit = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth,
    right: Math.max(...["download", "copy", "fg-wrap", "agg"].map((id) => document.getElementById(id).getBoundingClientRect().right)) }));
  if (fit.scroll > 1024 || fit.right > 1024) fail("at 1024 px the page is wider than the window: " + JSON.stringify(fit));
  await shot(page, "compare-1024");
  // keyboard: the first Tab reaches the skip link, Enter the graph
  await page.keyboard.press("Tab");
  eq("first Tab stop", await page.evaluate(() => document.activeElement.id), "skip");
  await page.keyboard.press("Enter");
  eq("after the skip link", await page.evaluate(() => document.activeElement.id), "fg");
  await page.setViewportSize({ width: 1280, height: 800 });
  console.log(`ok: gone/new in the table, file header, "0", root "all", "1 profile", 1024 px (${fit.scroll} px wide), skip link`);
}

// 5. the timeline: a time axis, each version's span, a hover readout
async function timeline(page) {
  await page.goto(cfg.url + "/?service=cmp&span=600");
  await ready(page);
  const tl = await page.evaluate(() => window.hsUI.timeline());
  if (tl.ticks.length < 2) fail("the timeline has no time axis: " + JSON.stringify(tl.ticks));
  const v = Object.fromEntries(tl.versions.map((x) => [x.version, x]));
  for (const [ver, start] of [["1", cfg.now - 200], ["2", cfg.now - 100]])
    if (!v[ver] || !(v[ver].from <= start && start < v[ver].until)) fail(`version ${ver}'s span (profile at ${start}): ${JSON.stringify(tl.versions)}`);
  if (v["1"].until > v["2"].from) fail("the versions' spans overlap: " + JSON.stringify(tl.versions));
  const box = await page.$eval("#timeline", (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  await page.mouse.move(box.x + v["2"].x + Math.max(v["2"].width / 2, 1), box.y + box.h - 20);
  const r = await text(page, "#tl-readout");
  const total = readFolded(cfg.v2).reduce((acc, s) => acc + s.value, 0);
  if (!r.includes(`${total} in 1 profile`) || !r.includes("version 2")) fail("timeline readout over version 2: " + r);
  console.log(`ok: timeline: ${tl.ticks.length} ticks (${tl.ticks.map((t) => t.label).join(" ")}), versions 1 and 2 marked, readout "${r}"`);
}

// 6. filters are chips: none on screen until added, removable
async function chips(page) {
  await page.goto(cfg.url + "/?service=cmp&span=600&version=1");
  await ready(page);
  const visible = () => page.$$eval("#filters label.chip input", (xs) => xs.filter((x) => x.offsetParent !== null).map((x) => x.id));
  eq("filter boxes on screen before any is added", JSON.stringify(await visible()), "[]");
  const header = await page.$eval("#top", (e) => e.getBoundingClientRect().height);
  await page.selectOption("#add-filter", "f-ignore");
  eq("the added filter has the keyboard", await page.evaluate(() => document.activeElement.id), "f-ignore");
  await page.keyboard.type("^read$");
  await page.keyboard.press("Enter");
  await ready(page);
  const v1 = readFolded(cfg.v1).filter((x) => !x.frames.includes("read")).reduce((a, x) => a + x.value, 0);
  eq("total with the chip hide stacks ^read$", await val(page, "#root-total"), v1);
  eq("chips on screen", JSON.stringify(await visible()), JSON.stringify(["f-ignore"]));
  await page.click("#f-ignore + .chip-x");
  await ready(page);
  eq("chips after ×", JSON.stringify(await visible()), "[]");
  if (new URL(page.url()).searchParams.get("ignore") !== null) fail("× did not remove the filter from the URL: " + page.url());
  console.log(`ok: filter chips: none shown, added, applied (${v1}), removed; header ${header} px high`);
}

// 7. significance across windows: f changed in every window, h did not
async function significance(page) {
  const api = await page.request.get(cfg.url + "/api/v1/diff?service=sig&type=samples&from=now-10m&version=b&base_version=a&significance=1");
  const d = await api.json();
  const plain = await (await page.request.get(cfg.url + "/api/v1/diff?service=sig&type=samples&from=now-10m&version=b&base_version=a")).json();
  if (plain.significance || plain.functions.some((x) => "p" in x)) fail("significance without significance=1: " + JSON.stringify(plain.significance));
  const fn = Object.fromEntries(d.functions.map((x) => [x.name, x]));
  if (!d.significance || d.significance.new_windows !== 4 || d.significance.base_windows !== 4) fail("diff answer's significance: " + JSON.stringify(d.significance));
  if (!(Math.abs(fn.f.p - 2 / 70) < 1e-3)) fail("p of f (every window grew): " + fn.f.p);
  if (!(fn.h.p > 0.5)) fail("p of h (the same shares on both sides): " + fn.h.p);
  if (!(fn.g.p < 0.05)) fail("p of g (shrank in every window): " + fn.g.p);
  await page.goto(cfg.url + "/?service=sig&span=600&version=b&cmp=version&base_version=a");
  await ready(page);
  const fr = Object.fromEntries((await page.evaluate(() => window.hsUI.fg.frames())).map((x) => [x.name, x]));
  if (!fr.f.significant || !fr.g.significant || fr.h.significant) fail("outlined frames: " + JSON.stringify(fr));
  await shot(page, "significance");
  await page.click("#tab-functions");
  const cell = (n) => page.$eval(`#fn-table tbody tr[data-name="${n}"] td[data-col="p"]`, (e) => e.textContent.trim());
  const cf = await cell("f"), ch = await cell("h");
  if (!cf.startsWith("✓") || ch.startsWith("✓")) fail(`significance column: f "${cf}", h "${ch}"`);
  console.log(`ok: significance over 4+4 windows: f ${cf}, g p=${fn.g.p}, h ${ch}; f and g outlined`);
}

(async () => {
  const dir = fs.mkdtempSync(path.join(cfg.tmp || "/tmp", "chromium-"));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: "/usr/bin/chromium", headless: true, viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"], timeout: 60000,
  });
  let rc = 0;
  try {
    const page = await ctx.newPage();
    page.setDefaultTimeout(T);
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    const parts = { gone: goneFrames, norm: normalized, inuse, bad: badUrls, pleasant, timeline, chips, significance }, only = process.env.WEB_COMPARE_ONLY;
    for (const [name, fn] of Object.entries(parts)) if (!only || only === name) await fn(page);
    if (errors.length) fail("page errors: " + errors.join("; "));
  } catch (e) {
    console.error("FAIL: " + (e && e.message ? e.message : e));
    rc = 1;
  } finally {
    await ctx.close();
  }
  process.exit(rc);
})();
