// web_ui_firefox.js CONFIG.json — the web UI in headless Firefox (Debian's
// firefox-esr driven by puppeteer-core over WebDriver BiDi; playwright-core
// drives only its own patched Firefox builds): the page loads against the
// test's server, draws the flame graph, zooms on a click, and shows the
// numbers computed from the folded files (root total, a frame's tooltip,
// the function table, a server-side filter). web_ui.js does the full tour
// in Chromium.
// Then the compare checks web_compare.js runs in Chromium
// (web_compare_checks.js: per profile, in-use, bad URLs).
// CONFIG: {url, tmp, out (screenshot dir), now, profiles: [{folded, version, labels, start}],
//          cmp: [v1, v2 folded], w, heap, heapWindows (web_compare_checks.js)}
"use strict";
const fs = require("fs");
const path = require("path");
const puppeteer = require(path.join(process.env.HS_NODE_MODULES || path.join(__dirname, "../node/node_modules"), "puppeteer-core"));
const W = require("./web_truth.js");
const C = require("./web_compare_checks.js");

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const T = 30000; // every wait is bounded
const truth = (pred, opts) => W.truth(cfg.profiles, pred, opts);
const { fmt, fail, eq } = W;

async function ready(page, want = "ready") {
  await page.waitForFunction(() => document.body.dataset.hsState !== "loading", { timeout: T });
  const st = await page.evaluate(() => document.body.dataset.hsState);
  if (st !== want) fail(`the page is in state ${st}, want ${want}: ` + await page.$eval("#error", (e) => e.textContent));
}
const val = (page, sel) => page.$eval(sel, (e) => +e.dataset.value);
const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());

async function check(page) {
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const all = truth(() => true);
  await page.goto(cfg.url + "/?service=web&span=600");
  await ready(page);
  eq("profiles merged", await val(page, "#profiles"), all.n);
  eq("root total", await val(page, "#root-total"), all.total);
  eq("root total text", await text(page, "#root-total"), fmt(all.total));
  // drawn: the canvas has frames laid out and pixels that are not blank
  const drawn = await page.evaluate(() => {
    const G = hsUI.fg, c = G.canvas, px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 3; i < px.length; i += 4) ink += px[i] > 0;
    return { rects: G.rects.length, ink, mark: performance.getEntriesByName("hs-flame-drawn").length };
  });
  if (drawn.rects < 5 || drawn.ink < 1000 || drawn.mark !== 1) fail("flame graph not drawn: " + JSON.stringify(drawn));
  console.log(`ok: ${all.n} profiles, root total ${fmt(all.total)}, ${drawn.rects} frames drawn`);

  // click a frame with the mouse: zoom, breadcrumb, tooltip
  const pt = await page.evaluate(W.framePoint, ["run", "fg"]);
  if (!pt) fail("no frame run drawn");
  await page.mouse.move(pt.x, pt.y);
  await page.mouse.click(pt.x, pt.y);
  eq("zoomed frame", await page.evaluate(() => hsUI.fg.name(hsUI.fg.zoomNode)), "run");
  eq("breadcrumb", (await page.$$eval("#crumbs button", (b) => b.map((x) => x.textContent))).join(" > "), "all > main > run");
  const tip = await text(page, "#tip");
  if (!tip.includes("run") || !tip.includes(fmt(all.fn.run.total))) fail("tooltip of run: " + tip);
  await page.focus("#fg");
  await page.keyboard.press("Escape");
  eq("zoom after Escape", await page.evaluate(() => hsUI.fg.zoomNode), 0);
  await page.screenshot({ path: path.join(cfg.out, "firefox-flame.png") });
  console.log(`ok: click zoom on run (total ${fmt(all.fn.run.total)}), breadcrumb, tooltip, Escape`);

  // the function table
  await page.click("#tab-functions");
  const cell = (f, col) => page.$eval(`#fn-table tbody tr[data-name="${f}"] td[data-col="${col}"]`, (e) => e.textContent.trim());
  eq("compute self", await cell("compute", "self"), fmt(all.fn.compute.self));
  eq("compute total", await cell("compute", "total"), fmt(all.fn.compute.total));
  await page.click("#tab-flame");

  // a filter applied by the server: hide the stacks through write
  const nw = truth(() => true, { ignore: /^write$/ });
  await page.select("#add-filter", "f-ignore");   // filters not in use hide behind "add filter"
  await page.type("#f-ignore", "^write$");
  await page.keyboard.press("Enter");
  await ready(page);
  eq("root total with hide stacks ^write$", await val(page, "#root-total"), nw.total);
  console.log(`ok: function table (compute ${fmt(all.fn.compute.self)} / ${fmt(all.fn.compute.total)}), filter ${fmt(nw.total)}`);

  // a compare: the gone function is drawn as wide as it was (hsUI.fg.frames())
  const tr = W.diffTree(cfg.cmp[0], cfg.cmp[1]);
  await page.goto(cfg.url + "/?service=cmp&span=600&version=2&cmp=version&base_version=1");
  await ready(page);
  const fr = await page.evaluate(() => window.hsUI.fg.frames());
  const root = fr.find((f) => f.depth === 0), gone = fr.find((f) => f.name === "regex");
  if (!root || !gone) fail("compare frames: " + JSON.stringify(fr));
  const want = W.findNode(tr, "regex").base / tr.w;
  if (Math.abs(gone.width / root.width - want) > 0.01 * want || !gone.label.includes("(gone)"))
    fail(`the gone frame: ${JSON.stringify(gone)}, want ${(100 * want).toFixed(2)}% of ${root.width} px`);
  console.log(`ok: compare: gone frame regex drawn ${gone.width.toFixed(1)} px of ${root.width.toFixed(1)}`);

  // the compare checks web_compare.js runs in Chromium
  const B = { page, ready: (want) => ready(page, want), select: (sel, v) => page.select(sel, v) };
  console.log("ok: " + await C.normalized(B, cfg));
  console.log("ok: " + await C.inuse(B, cfg));
  console.log("ok: " + await C.badUrls(B, cfg));
  if (errors.length) fail("errors in the page: " + errors.join("; "));
}

(async () => {
  const browser = await puppeteer.launch({
    browser: "firefox", executablePath: "/usr/bin/firefox-esr", headless: true, timeout: 60000,
    userDataDir: fs.mkdtempSync(path.join(cfg.tmp || "/tmp", "firefox-")),
    defaultViewport: { width: 1280, height: 800 },
  });
  let rc = 0;
  try {
    console.log("browser: " + await browser.version());
    const page = await browser.newPage();
    page.setDefaultTimeout(T);
    await check(page);
  } catch (e) {
    console.error("FAIL: " + (e && e.message ? e.message : e));
    rc = 1;
  } finally {
    await browser.close();
  }
  process.exit(rc);
})();
