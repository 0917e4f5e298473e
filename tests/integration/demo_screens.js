// demo_screens.js — screenshots of the web UI views docs/tutorial.md shows,
// taken in headless Chromium (playwright-core, Debian's /usr/bin/chromium)
// from the server `make demo` left running (tests/integration/demo_story.sh).
//   node demo_screens.js OUTDIR NAME=URL[|hover=FUNCTION]...
// Each page must finish loading without an error shown; the screenshot of
// the whole 1280x800 viewport goes to OUTDIR/NAME.png; each line printed
// says what the page shows: sum or average per profile (agg). With
// |hover=FUNCTION the mouse rests on that function's widest frame first
// (its tooltip in the picture: README's screenshot).
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.HS_NODE_MODULES || path.join(__dirname, "../node/node_modules"), "playwright-core"));

async function main() {
  const [out, ...shots] = process.argv.slice(2);
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || "/tmp", "chromium-"));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: "/usr/bin/chromium", headless: true, viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 60000,
  });
  try {
    for (const s of shots) {
      const eq = s.indexOf("=");
      const name = s.slice(0, eq), [url, opt] = s.slice(eq + 1).split("|hover=");
      const page = await ctx.newPage();
      await page.goto(url, { timeout: 30000 });
      await page.waitForFunction(() => document.body.dataset.hsState && document.body.dataset.hsState !== "loading",
        null, { timeout: 30000 });
      const state = await page.evaluate(() => document.body.dataset.hsState);
      const error = await page.evaluate(() => { const e = document.getElementById("error"); return e && !e.hidden ? e.textContent : ""; });
      if (state === "error" || error) throw new Error(`${name}: the page shows an error: ${error || state}`);
      // a compare asks for the significance marks after drawing: wait for them
      await page.waitForFunction(() => !/computing/.test((document.getElementById("legend") || {}).textContent || ""),
        null, { timeout: 60000 });
      await page.waitForTimeout(300); // let the canvas settle
      if (opt) {
        const f = (await page.evaluate(() => window.hsUI.fg.frames())).filter((x) => x.name === opt)
          .sort((a, b) => b.width - a.width)[0];
        if (!f) throw new Error(`${name}: no frame ${opt} drawn`);
        const box = await page.$eval("#fg", (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top }; });
        const g = await page.evaluate(() => ({ G: hsUI.fg.G, top: hsUI.fg.top }));
        await page.mouse.move(box.x + f.x + Math.min(f.width / 2, 60), box.y + g.G - (f.depth + 1) * 17 - g.top + 8);
        await page.waitForTimeout(200);
      }
      await page.screenshot({ path: path.join(out, name + ".png") });
      const agg = await page.$eval("#agg", (e) => e.value);
      console.log(`screenshot ${name}.png (${state}, agg ${agg})`);
      await page.close();
    }
  } finally {
    await ctx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
main().catch((e) => { console.error("FAIL: " + e.message); process.exit(1); });
