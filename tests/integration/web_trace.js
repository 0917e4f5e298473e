// web_trace.js — the web UI's tenant and trace filter in headless Chromium
// (tests/integration/web_trace.sh starts the server and gives CONFIG): the
// page's tenant= is sent as X-Scope-OrgID, and trace= (a span or trace ID)
// draws the flame graph of that span's samples only, as the API's tagfocus
// answers it.   node web_trace.js CONFIG.json
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.HS_NODE_MODULES || path.join(__dirname, "../node/node_modules"), "playwright-core"));

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const T = 30000;
function fail(msg) { console.error("FAIL: " + msg); process.exit(1); }

async function state(page) {
  await page.waitForFunction(() => document.body.dataset.hsState && document.body.dataset.hsState !== "loading", null, { timeout: T });
  return page.evaluate(() => document.body.dataset.hsState);
}
async function root(page, url) {
  await page.goto(cfg.url + url);
  const st = await state(page);
  if (st !== "ready") fail(`${url}: the page is in state ${st}: ${await page.textContent("#error")}`);
  const fr = await page.evaluate(() => window.hsUI.fg.frames());
  const r = fr.find((f) => f.depth === 0);
  if (!r) fail(`${url}: no root frame`);
  return { r, fr };
}

(async () => {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const sel = "service=otlp-app&type=cpu&span=86400";
    // 1. the tenant: acme's service is not the default tenant's
    await page.goto(cfg.url + "/?" + sel);
    const st = await state(page);
    if (st === "ready") fail("the default tenant shows acme's service: " + JSON.stringify(await page.evaluate(() => window.hsUI.fg.frames().map((f) => f.name))));
    const all = await root(page, "/?tenant=acme&" + sel);
    if (all.r.new !== cfg.total) fail(`acme's whole flame graph: root ${all.r.new}, want ${cfg.total} (the API's)`);
    // 2. one span, then its trace: only the span's samples, the API's total
    for (const id of [cfg.span, cfg.trace]) {
      const one = await root(page, `/?tenant=acme&${sel}&trace=${id}`);
      if (one.r.new !== cfg.span_total) fail(`trace=${id}: root ${one.r.new}, want ${cfg.span_total} (the API's tagfocus)`);
      if (!(one.r.new < all.r.new)) fail(`trace=${id}: nothing filtered (${one.r.new} of ${all.r.new})`);
      const names = one.fr.map((f) => f.name);
      const leaf = one.fr.find((f) => f.name === cfg.span_leaf);
      if (!leaf || Math.abs(leaf.width - one.r.width) > 1) fail(`trace=${id}: ${cfg.span_leaf} is not the whole graph: ${JSON.stringify(one.fr)}`);
      if (!(await page.$eval("#f-trace", (e) => e.value === e.ownerDocument.location.search.match(/trace=([0-9a-f]+)/)[1])))
        fail("the trace chip does not show the URL's ID");
      if (names.length < 3) fail(`trace=${id}: frames ${names}`);
    }
    // 3. typed into the chip: the URL keeps it
    await page.goto(cfg.url + "/?tenant=acme&" + sel);
    await state(page);
    await page.selectOption("#add-filter", "f-trace");
    await page.fill("#f-trace", cfg.span);
    await page.press("#f-trace", "Enter");
    await page.waitForFunction((id) => location.search.includes("trace=" + id), cfg.span, { timeout: T });
    await state(page);
    const typed = await page.evaluate(() => window.hsUI.fg.frames().find((f) => f.depth === 0).new);
    if (typed !== cfg.span_total) fail(`typed span: root ${typed}, want ${cfg.span_total}`);
    // a malformed ID is marked, not sent
    await page.fill("#f-trace", "xyz");
    await page.press("#f-trace", "Enter");
    if (!(await page.$eval("#f-trace", (e) => e.classList.contains("bad")))) fail("a malformed trace ID is not marked bad");
    await page.screenshot({ path: path.join(cfg.out, "web_trace.png") });
  } finally {
    await browser.close();
  }
  console.log("web_trace: ok");
})().catch((e) => fail(e.stack || String(e)));
