// web_ui.js — drives the web UI in real headless Chromium (playwright-core,
// Debian's /usr/bin/chromium) and asserts what the page shows against values
// computed here from the folded stacks the profiles were made of.
//   node web_ui.js ui CONFIG.json     the server UI (tests/integration/web_ui.sh)
//   node web_ui.js token CONFIG.json  the token prompt of `hotspur serve --token`
//   node web_ui.js web CONFIG.json    `hotspur web` (tests/integration/web_cli.sh)
//   node web_ui.js flame CONFIG.json  `hotspur flame` pages: a graph deeper
//                                     than the canvas size limit, 100k nodes
//   node web_ui.js measure CONFIG.json  time to the first drawn flame graph
//                                       (bench/web_ui.sh); prints JSON
// CONFIG: {url, out (screenshot dir), profiles: [{folded, version, labels, start}], ...}
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.HS_NODE_MODULES || path.join(__dirname, "../node/node_modules"), "playwright-core"));

const mode = process.argv[2], cfg = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const T = 30000;    // every wait is bounded

// ------------------------------------------------------------ the truth
const W = require("./web_truth.js");
const truth = (pred, opts) => W.truth(cfg.profiles, pred, opts);
const { fmt, fail, eq, openFilter } = W;

// ------------------------------------------------------------ the browser
async function launch() {
  const dir = fs.mkdtempSync(path.join(cfg.tmp || "/tmp", "chromium-"));
  return chromium.launchPersistentContext(dir, {
    executablePath: "/usr/bin/chromium", headless: true, viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 60000,
  });
}
async function ready(page) {
  await page.waitForFunction(() => document.body.dataset.hsState !== "loading", null, { timeout: T });
  const st = await page.evaluate(() => document.body.dataset.hsState);
  if (st !== "ready") fail("the page is in state " + st + ": " + await page.textContent("#error"));
}
const val = (page, sel) => page.$eval(sel, (e) => +e.dataset.value);
const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
async function cell(page, fname, col) {
  return page.$eval(`#fn-table tbody tr[data-name="${fname}"] td[data-col="${col}"]`, (e) => e.textContent.trim());
}
// Click the drawn frame called name in graph g (fg, cl, ce) with the mouse.
async function clickFrame(page, name, g = "fg") {
  const pt = await page.evaluate(W.framePoint, [name, g]);
  if (!pt) fail(`no frame ${name} drawn in ${g}`);
  await page.mouse.move(pt.x, pt.y);
  await page.mouse.click(pt.x, pt.y);
}
async function shot(page, name) {
  if (!cfg.out) return;
  await page.screenshot({ path: path.join(cfg.out, name + ".png") });
}

// ------------------------------------------------------------ the checks
async function ui(page) {
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const all = truth(() => true);
  await page.goto(cfg.url + "/?service=web&span=600");
  await ready(page);
  eq("profiles merged", await val(page, "#profiles"), all.n);
  eq("root total", await val(page, "#root-total"), all.total);
  eq("root total text", await text(page, "#root-total"), fmt(all.total));
  console.log(`ok: ${all.n} profiles, root total ${fmt(all.total)}`);

  // average per profile
  await page.selectOption("#agg", "avg");
  await ready(page);
  eq("average root total text", await text(page, "#root-total"), fmt(all.total / all.n));
  await page.selectOption("#agg", "sum");
  await ready(page);

  // the weight filter: the top P% of profiles by total (ceil(P% of N) of them)
  const w = 34, keep = Math.ceil(w / 100 * all.n);
  const biggest = cfg.profiles.map((p) => truth((q) => q === p).total).sort((a, b) => b - a).slice(0, keep);
  await page.fill("#weight", String(w));
  await page.press("#weight", "Enter");
  await ready(page);
  eq(`profiles merged with weight top ${w}%`, await val(page, "#profiles"), keep);
  eq(`root total with weight top ${w}%`, await val(page, "#root-total"), biggest.reduce((a, b) => a + b, 0));
  await page.fill("#weight", "");
  await page.press("#weight", "Enter");
  await ready(page);
  eq("profiles merged without weight", await val(page, "#profiles"), all.n);
  console.log(`ok: weight top ${w}%: ${keep} profiles`);

  // one version; the function table
  const v1 = truth((p) => p.version === "1");
  await page.selectOption("#versions", ["1"]);
  await ready(page);
  eq("root total of version 1", await val(page, "#root-total"), v1.total);
  await shot(page, "flame");
  await page.click("#tab-functions");
  eq("compute self", await cell(page, "compute", "self"), fmt(v1.fn.compute.self));
  eq("compute total", await cell(page, "compute", "total"), fmt(v1.fn.compute.total));
  eq("main total %", await cell(page, "main", "total_pct"), (100 * v1.fn.main.total / v1.total).toFixed(2) + "%");
  await page.click('#fn-table th button[data-key="self"]');
  eq("first row by self", await page.$eval("#fn-table tbody tr", (e) => e.dataset.name),
    Object.entries(v1.fn).sort((a, b) => b[1].self - a[1].self)[0][0]);
  await page.fill("#fn-filter", "pars");
  eq("rows matching 'pars'", await page.$$eval("#fn-table tbody tr", (r) => r.length), 1);
  await page.fill("#fn-filter", "");
  await shot(page, "functions");
  console.log(`ok: function table: compute self ${fmt(v1.fn.compute.self)} total ${fmt(v1.fn.compute.total)}`);

  // click to zoom, breadcrumb, tooltip, keyboard reset
  await page.click("#tab-flame");
  await clickFrame(page, "run");
  eq("zoomed frame", await page.evaluate(() => hsUI.fg.name(hsUI.fg.zoomNode)), "run");
  const crumbs = await page.$$eval("#crumbs button", (b) => b.map((x) => x.textContent));
  eq("breadcrumb", crumbs.join(" > "), "all > main > run");
  if (!/zoom=main%3Brun/.test(page.url())) fail("the URL does not hold the zoom: " + page.url());
  const tip = await text(page, "#tip");
  if (!tip.includes("run") || !tip.includes(fmt(v1.fn.run.total))) fail("tooltip of run: " + tip);
  await page.focus("#fg");
  await page.keyboard.press("Escape");
  eq("zoom after Escape", await page.evaluate(() => hsUI.fg.zoomNode), 0);
  await page.keyboard.press("ArrowUp");     // select main (the root's largest child)
  await page.keyboard.press("Enter");
  eq("zoom by keyboard", await page.evaluate(() => hsUI.fg.name(hsUI.fg.zoomNode)), "main");
  await page.click("#fg-reset");
  console.log("ok: click zoom, breadcrumb, tooltip, keyboard");

  // choosing a function focuses: callers above, callees below
  await page.click("#tab-functions");
  await page.click('#fn-table tbody tr[data-name="compute"]');
  await page.waitForSelector("#focus-total", { timeout: T });
  eq("focus total", await val(page, "#focus-total"), v1.fn.compute.total);
  eq("focus self", await val(page, "#focus-self"), v1.fn.compute.self);
  const sw = await page.evaluate(() => {
    const kids = (G) => { const t = G.t, out = {}; for (let c = 1; c < t.N; c = t.endOf[c]) out[G.name(c)] = t.total[c]; return out; };
    return { root: hsUI.cl.name(0), callers: kids(hsUI.cl), callees: kids(hsUI.ce) };
  });
  eq("sandwich root", sw.root, "compute");
  eq("callers of compute", JSON.stringify(sw.callers), JSON.stringify({ run: v1.fn.compute.total }));
  eq("callees of compute", JSON.stringify(sw.callees), JSON.stringify({ malloc: v1.fn.malloc.total }));
  await shot(page, "callers-callees");
  // the filter bar's focus does the same for a typed name
  await openFilter(page, "f-fn");
  await page.fill("#f-fn", "parse");
  await page.press("#f-fn", "Enter");
  await page.waitForFunction(() => /parse/.test(document.getElementById("focus-summary").textContent), null, { timeout: T });
  eq("focus total of parse", await val(page, "#focus-total"), v1.fn.parse.total);
  eq("focus in the URL", new URL(page.url()).searchParams.get("fn"), "parse");
  await openFilter(page, "f-fn");
  await page.fill("#f-fn", "compute");
  await page.press("#f-fn", "Enter");
  await page.waitForFunction(() => /compute/.test(document.getElementById("focus-summary").textContent), null, { timeout: T });
  console.log("ok: sandwich of compute: callers run, callees malloc");

  // source view without --source-path: a clear note
  await page.click("#tab-source");
  await page.waitForSelector("#source-note", { timeout: T });
  if (!(await text(page, "#source-note")).includes("--source-path")) fail("source note: " + await text(page, "#source-note"));

  // a server-side filter: hide stacks through write
  await page.click("#tab-flame");
  const nw = truth((p) => p.version === "1", { ignore: /^write$/ });
  await openFilter(page, "f-ignore");
  await page.fill("#f-ignore", "^write$");
  await page.press("#f-ignore", "Enter");
  await ready(page);
  eq("root total with hide stacks ^write$", await val(page, "#root-total"), nw.total);
  const share = await text(page, "#share");
  if (!share.includes((100 * nw.total / v1.total).toFixed(2) + "%")) fail("filter share: " + share);
  console.log("ok: filter: " + share);
  await page.fill("#f-ignore", "");
  await page.press("#f-ignore", "Enter");
  await ready(page);

  // highlight: the share of matching frames
  await openFilter(page, "f-highlight");
  await page.fill("#f-highlight", "^compute$");
  await page.waitForFunction(() => /highlight/.test(document.getElementById("share").textContent), null, { timeout: T });
  const hl = await text(page, "#share");
  if (!hl.includes((100 * v1.fn.compute.total / v1.total).toFixed(2) + "%")) fail("highlight share: " + hl);
  await page.fill("#f-highlight", "");

  // compare versions (average per profile): the root shows the change
  const v2 = truth((p) => p.version === "2");
  await page.selectOption("#versions", ["2"]);
  await ready(page);
  await page.selectOption("#agg", "avg");
  await ready(page);
  await page.selectOption("#cmp", "version");
  await ready(page);
  await page.selectOption("#base-version", "1");
  await ready(page);
  const want = v2.total / v2.n - v1.total / v1.n;
  eq("root delta (avg)", await val(page, "#root-delta"), want);
  eq("root delta text", await text(page, "#root-delta"), (want > 0 ? "+" : "") + fmt(want));
  await shot(page, "compare");
  await page.click("#tab-functions");
  const dc = v2.fn.compute.total / v2.n - v1.fn.compute.total / v1.n;
  eq("first row of the diff table", await page.$eval("#fn-table tbody tr", (e) => e.dataset.name), "compute");
  eq("compute total delta", await cell(page, "compute", "d_total"), (dc > 0 ? "+" : "") + fmt(dc));
  // callers/callees in a compare: both sides
  await page.click('#fn-table tbody tr[data-name="compute"]');
  await page.waitForSelector("#focus-delta", { timeout: T });
  eq("focus total (new, avg)", await val(page, "#focus-total"), v2.fn.compute.total / v2.n);
  eq("focus change (avg)", await val(page, "#focus-delta"), dc);
  await page.click("#tab-flame");
  console.log(`ok: compare versions: root delta ${fmt(want)}, compute ${fmt(dc)} (table and callers/callees)`);

  // filter share before/after in a compare
  await openFilter(page, "f-ignore");
  await page.fill("#f-ignore", "^compute$");
  await page.press("#f-ignore", "Enter");
  await ready(page);
  const b1 = truth((p) => p.version === "1", { ignore: /^compute$/ }), b2 = truth((p) => p.version === "2", { ignore: /^compute$/ });
  const cs = await text(page, "#share");
  for (const pc of [100 * b1.total / v1.total, 100 * b2.total / v2.total])
    if (!cs.includes(pc.toFixed(2) + "%")) fail(`compare filter share lacks ${pc.toFixed(2)}%: ${cs}`);
  console.log("ok: compare filter: " + cs);

  // the URL holds every choice: a reload shows the same view
  await page.reload();
  await ready(page);
  eq("compare mode after reload", await page.$eval("#cmp", (e) => e.value), "version");
  eq("filter after reload", await page.$eval("#f-ignore", (e) => e.value), "^compute$");
  eq("root delta after reload", await val(page, "#root-delta"), b2.total / b2.n - b1.total / b1.n);
  console.log("ok: reload keeps the view");

  // compare label values: instance=a (2 profiles) against instance=b (1):
  // per profile by default, sums when asked
  await page.goto(cfg.url + "/?service=web&span=600&label=instance%3Da&cmp=label&base_label=instance%3Db");
  await ready(page);
  const la = truth((p) => p.labels.instance === "a"), lb = truth((p) => p.labels.instance === "b");
  eq("label compare delta (2 profiles vs 1: per profile)", await val(page, "#root-delta"), la.total / la.n - lb.total / lb.n);
  await page.goto(cfg.url + "/?service=web&span=600&label=instance%3Da&cmp=label&base_label=instance%3Db&agg=sum");
  await ready(page);
  eq("label compare delta (agg=sum)", await val(page, "#root-delta"), la.total - lb.total);
  console.log(`ok: compare labels: ${fmt(la.total / la.n - lb.total / lb.n)} per profile, ${fmt(la.total - lb.total)} as sums`);

  // compare time ranges: the last 10 minutes against the same span 1 hour earlier (empty base)
  await page.goto(cfg.url + "/?service=web&span=600&cmp=time&base_shift=3600");
  await ready(page);
  eq("time compare: base total", await val(page, "#base-total"), 0);
  eq("time compare: new total", await val(page, "#root-total"), all.total);

  // the timeline: dragging narrows the range
  await page.goto(cfg.url + "/?service=web&span=600");
  await ready(page);
  const latest = Math.max(...cfg.profiles.map((p) => p.start));
  const box = await page.$eval("#timeline", (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  const now = await page.evaluate(() => Math.floor(Date.now() / 1000));
  const x = (t) => box.x + (t - (now + 1 - 600)) / 600 * box.w;
  await page.mouse.move(x(latest - 20), box.y + box.h / 2);
  await page.mouse.down();
  await page.mouse.move(x(now + 0.9), box.y + box.h / 2, { steps: 5 });
  await page.mouse.up();
  await ready(page);
  const late = truth((p) => p.start >= latest - 20);
  eq("profiles after the drag", await val(page, "#profiles"), late.n);
  eq("root total after the drag", await val(page, "#root-total"), late.total);
  if (!/from=\d+/.test(page.url())) fail("the URL does not hold the narrowed range");
  console.log(`ok: timeline drag: ${late.n} profile(s)`);

  // an API error is shown in the page
  await page.goto(cfg.url + "/?service=web&span=600&focus=%28");
  await page.waitForFunction(() => document.body.dataset.hsState !== "loading", null, { timeout: T });
  if (await page.$eval("#error", (e) => e.hidden)) fail("a bad regex from the URL shows no error");
  if (!/^flamegraph: /m.test(await text(page, "#error"))) fail("the bad regex's error is not shown: " + await text(page, "#error"));
  console.log("ok: API error shown: " + await text(page, "#error"));

  // download link: the same selection as pprof
  await page.goto(cfg.url + "/?service=web&span=600&version=1");
  await ready(page);
  const href = await page.$eval("#download", (e) => e.href);
  const r = await page.request.get(href);
  eq("download status", r.status(), 200);
  eq("profiles in the download", r.headers()["x-hotspur-profiles"], String(v1.n));
  if (errors.length) fail("page errors: " + errors.join("; "));
}

// `hotspur serve --token`: the page asks for the token, then works with it
async function tokenCheck(page) {
  await page.goto(cfg.url + "/?service=web&span=600");
  await page.waitForFunction(() => document.body.dataset.hsState !== "loading", null, { timeout: T });
  if (await page.$eval("#auth", (e) => e.hidden)) fail("no token prompt on a server with --token");
  await page.fill("#token", "wrong");
  await page.press("#token", "Enter");
  await page.waitForFunction(() => document.body.dataset.hsState !== "loading", null, { timeout: T });
  if (await page.$eval("#auth", (e) => e.hidden)) fail("a wrong token was accepted");
  await page.fill("#token", cfg.token);
  await page.press("#token", "Enter");
  await ready(page);
  const all = truth(() => true);
  eq("root total with the token", await val(page, "#root-total"), all.total);
  if (page.url().includes(cfg.token)) fail("the token is in the URL");
  // the download fetches with the token
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: T }), page.click("#download")]);
  const file = path.join(cfg.tmp, "download.pb.gz");
  await dl.saveAs(file);
  if (fs.readFileSync(file).length < 20) fail("the downloaded profile is empty");
  console.log(`ok: token prompt, wrong token refused, then total ${fmt(all.total)}; download with the token`);
}

async function web(page) {
  await page.goto(cfg.url);
  await ready(page);
  if (cfg.source) {
    // the source view: per-line values of a function, the file's text
    const sc = cfg.source;
    await page.goto(cfg.url + `&si=${sc.sample}&fn=${encodeURIComponent(sc.fn)}&view=source`);
    await ready(page);
    await page.waitForSelector("#source table tbody tr", { timeout: T });
    const rows = await page.$$eval("#source tbody tr", (rs) => rs.map((r) => ({
      self: +r.querySelector("td.self").dataset.value, text: r.querySelector("td.code").textContent })));
    const sum = rows.reduce((a, r) => a + r.self, 0);
    eq(`self of ${sc.fn} summed over its lines`, sum, sc.self);
    const hot = rows.filter((r) => r.self > 0);
    if (!hot.length || !hot.every((r) => r.text.includes(sc.lineText))) fail("the sampled line's text: " + JSON.stringify(hot));
    await shot(page, "source");
    console.log(`ok: source view of ${sc.fn}: ${fmt(sum)} on "${hot[0].text.trim()}"`);
    return;
  }
  if (cfg.base) {
    const nw = truth((p) => p.version === "new"), bs = truth((p) => p.version === "base");
    eq("hotspur web --base: compare mode", await page.$eval("#cmp", (e) => e.value), "version");
    eq("hotspur web --base: root delta", await val(page, "#root-delta"), nw.total - bs.total);
    await shot(page, "web-base");
    console.log(`ok: hotspur web --base: delta ${fmt(nw.total - bs.total)}`);
  } else {
    const all = truth(() => true);
    eq("hotspur web: root total", await val(page, "#root-total"), all.total);
    eq("hotspur web: profiles", await val(page, "#profiles"), all.n);
    const versions = await page.$$eval("#versions option", (o) => o.map((x) => x.value));
    eq("hotspur web: versions", JSON.stringify(versions), JSON.stringify(cfg.profiles.map((p) => p.version).sort()));
    console.log(`ok: hotspur web: ${all.n} files, total ${fmt(all.total)}`);
  }
}

// `hotspur flame` pages (shared flamegraph.js): the canvas is the viewport.
async function flame(page) {
  const state = () => page.evaluate(() => {
    const g = window.hsFlame, c = g.canvas;
    let maxD = -1;
    for (const q of g.rects) maxD = Math.max(maxD, q[3]);
    return { canvasH: c.height, cssH: c.clientHeight, graphH: g.G, spacer: parseFloat(document.getElementById("fg-spacer").style.height),
      rects: g.rects.length, maxDrawnDepth: maxD, rootDrawn: g.rects.some((q) => q[0] === 0), depth: g.t.maxDepth,
      winH: window.innerHeight };
  });
  await page.goto("file://" + cfg.deep);
  await page.waitForFunction(() => document.body.dataset.hsReady, null, { timeout: T });
  let s = await state();
  if (!(s.depth >= cfg.deepFrames)) fail(`the deep page has depth ${s.depth}, want ${cfg.deepFrames}`);
  if (!(s.graphH > 65535)) fail("the deep graph is not deeper than the canvas limit: " + s.graphH);
  if (!(s.canvasH <= 65535 && s.cssH <= s.winH)) fail(`the canvas is not the viewport: ${JSON.stringify(s)}`);
  eq("canvas + spacer = the graph's height", s.cssH + s.spacer, s.graphH);
  if (!s.rootDrawn) fail("flame orientation does not start at the root: " + JSON.stringify(s));
  // scroll to the top: the deepest frames are drawn there
  await page.evaluate(() => { document.getElementById("wrap").scrollTop = 0; });
  await page.waitForFunction((d) => window.hsFlame.rects.some((q) => q[3] === d), s.depth, { timeout: T });
  s = await state();
  if (s.rootDrawn) fail("the root is drawn while the top of the graph is shown");
  const leaf = await page.evaluate(() => { const g = window.hsFlame; return g.name(g.rects.find((q) => q[3] === g.t.maxDepth)[0]); });
  eq("deepest frame", leaf, "f" + cfg.deepFrames);
  console.log(`ok: ${s.depth + 1} rows (${s.graphH} px) scroll in a ${s.cssH} px canvas; the top shows ${leaf}`);
  // a click up there zooms
  const pt = await page.evaluate(() => {
    const g = window.hsFlame, r = g.canvas.getBoundingClientRect(), q = g.rects.find((x) => x[3] === g.t.maxDepth - 2);
    return { x: r.left + q[1] + q[2] / 2, y: r.top + (g.G - (q[3] + 1) * 17) - g.top + 8, name: g.name(q[0]) };
  });
  await page.mouse.click(pt.x, pt.y);
  eq("zoom deep in the graph", await page.evaluate(() => window.hsFlame.name(window.hsFlame.zoomNode)), pt.name);
  // 100 000 nodes
  await page.goto("file://" + cfg.big);
  await page.waitForFunction(() => document.body.dataset.hsReady, null, { timeout: 60000 });
  const b = await page.evaluate(() => {
    const g = window.hsFlame, t0 = performance.now();
    for (let i = 0; i < 10; i++) g.draw();
    return { nodes: g.t.N, rects: g.rects.length, ms: (performance.now() - t0) / 10 };
  });
  if (!(b.nodes >= 100000 && b.rects > 0)) fail("the 100k page: " + JSON.stringify(b));
  console.log(`ok: ${b.nodes} nodes, ${b.rects} frames drawn, ${b.ms.toFixed(1)} ms per redraw (not asserted)`);
}

// Time from navigation to the first drawn flame graph, fresh page each round.
async function measure(ctx) {
  const out = [];
  for (let i = 0; i < (cfg.rounds || 5); i++) {
    const page = await ctx.newPage();
    await page.goto(cfg.url);
    await page.waitForFunction(() => performance.getEntriesByName("hs-flame-drawn").length > 0 ||
      document.body.dataset.hsState === "error", null, { timeout: 120000 });
    const r = await page.evaluate(() => {
      const m = performance.getEntriesByName("hs-flame-drawn")[0];
      const fgr = performance.getEntriesByType("resource").filter((e) => /api\/v1\/(flamegraph|diff)/.test(e.name))[0];
      return { ms: m ? m.startTime : -1, nodes: hsUI.fg.t ? hsUI.fg.t.N : 0,
        api: fgr ? fgr.responseEnd - fgr.startTime : -1, client: fgr && m ? m.startTime - fgr.responseEnd : -1,
        profiles: +(document.getElementById("profiles") || { dataset: {} }).dataset.value || 0,
        error: document.getElementById("error").textContent };
    });
    if (r.ms < 0) fail("no flame graph drawn: " + r.error);
    out.push(r);
    // let the page finish (the function table) so rounds do not overlap
    await page.waitForFunction(() => document.body.dataset.hsState !== "loading", null, { timeout: 120000 });
    // the browser's share, step by step: the page's flame graph request
    // again, its JSON parse, the tree (HsFlame.fromServer), layout and draw
    Object.assign(r, await page.evaluate(async () => {
      const fgr = performance.getEntriesByType("resource").filter((e) => /api\/v1\/flamegraph/.test(e.name))[0];
      const t0 = performance.now(), txt = await (await fetch(fgr.name)).text(), t1 = performance.now();
      const d = JSON.parse(txt), t2 = performance.now();
      const tree = HsFlame.fromServer(d), t3 = performance.now();
      hsUI.fg.setTree(tree, { unit: d.unit, rootName: "all", total: d.total, baseTotal: 0 });
      const t4 = performance.now();
      return { parse: t2 - t1, tree: t3 - t2, draw: t4 - t3, bytes: txt.length };
    }));
    await page.close();
  }
  const med = (k) => { const v = out.map((r) => r[k]).sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
  const ms = out.map((r) => r.ms).sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: ms[Math.floor(ms.length / 2)], min_ms: ms[0], max_ms: ms[ms.length - 1],
    api_median_ms: med("api"), client_median_ms: med("client"),
    parse_median_ms: med("parse"), tree_median_ms: med("tree"), draw_median_ms: med("draw"), json_bytes: out[0].bytes,
    nodes: out[0].nodes, profiles: out[0].profiles, rounds: ms.length }));
}

(async () => {
  const ctx = await launch();
  let rc = 0;
  try {
    if (mode === "measure") await measure(ctx);
    else {
      const page = await ctx.newPage();
      page.setDefaultTimeout(T);
      if (mode === "ui") await ui(page);
      else if (mode === "flame") await flame(page);
      else if (mode === "token") await tokenCheck(page);
      else await web(page);
    }
  } catch (e) {
    console.error("FAIL: " + (e && e.message ? e.message : e));
    rc = 1;
  } finally {
    await ctx.close();
  }
  process.exit(rc);
})();
