// server_csrf.js CONFIG — a page of another origin, in real headless
// Chromium, tries what an attacker's page would against `hotspur serve`
// (issue 29): a no-cors text/plain POST to Pyroscope's /ingest and to
// /api/v1/ingest, and a query GET. None may be stored or answered; then
// the server's own UI, same origin, still loads. CONFIG: {tmp, url}.
// Prints "stored-by-evil N" and exits 1 on a failure.
const fs = require("fs");
const http = require("http");
const path = require("path");
const { chromium } = require(path.join(process.env.HS_NODE_MODULES || path.join(__dirname, "../node/node_modules"), "playwright-core"));
const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const fail = (m) => { console.error("FAIL: " + m); process.exit(1); };

const evil = `<!doctype html><script>
window.results = [];
const T = ${JSON.stringify(cfg.url)};
const tries = [
  [T + "/ingest?name=evil.cpu&from=" + Math.floor(Date.now() / 1000), {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "main;evil_frame 10\\n"}],
  [T + "/api/v1/ingest?service=evil2&type=cpu", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "x"}],
  [T + "/api/v1/services", {mode: "cors"}],
  [T + "/api/v1/flamegraph?service=svc&type=cpu&from=0", {mode: "no-cors"}],
];
Promise.all(tries.map(([u, o]) => fetch(u, o).then((r) => r.type + ":" + r.status, (e) => "error:" + e))).then((r) => { window.results = r; window.done = true; });
</script>`;

function get(u) {
  return new Promise((res, rej) => http.get(u, (r) => { let b = ""; r.on("data", (d) => (b += d)); r.on("end", () => res([r.statusCode, b])); }).on("error", rej));
}

(async () => {
  const srv = http.createServer((req, res) => { res.writeHead(200, {"Content-Type": "text/html"}); res.end(evil); });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const evilUrl = "http://127.0.0.1:" + srv.address().port + "/";
  const dir = fs.mkdtempSync(path.join(cfg.tmp || "/tmp", "chromium-"));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: "/usr/bin/chromium", headless: true, viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 60000,
  });
  try {
    const page = await ctx.newPage();
    await page.goto(evilUrl);
    await page.waitForFunction(() => window.done === true, null, { timeout: 30000 });
    console.log("evil page's fetches: " + JSON.stringify(await page.evaluate(() => window.results)));
    // What reached the store: asked without a browser (no Origin).
    const [st, body] = await get(cfg.url + "/api/v1/services");
    if (st !== 200) fail("services: " + st + " " + body);
    const svcs = JSON.parse(body).services;
    console.log("services after the evil page: " + JSON.stringify(svcs));
    const stored = svcs.filter((s) => s.startsWith("evil")).length;
    console.log("stored-by-evil " + stored);
    if (stored) fail("a cross-origin page stored a profile: " + JSON.stringify(svcs));
    // The server's own page, same origin, works under the rule.
    await page.goto(cfg.url + "/?service=svc&type=cpu&from=0");
    await page.waitForFunction(() => document.body.dataset.hsState && document.body.dataset.hsState !== "loading", null, { timeout: 30000 });
    const state = await page.evaluate(() => document.body.dataset.hsState);
    if (state !== "ready") fail("the UI, same origin, is in state " + state);
    console.log("own UI: ready");
  } finally {
    await ctx.close();
    srv.close();
  }
})().catch((e) => fail(e.stack || String(e)));
