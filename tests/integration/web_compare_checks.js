// web_compare_checks.js — checks of the compare story (issue 28) that run
// in both browsers: web_compare.js (Chromium, playwright-core) and
// web_ui_firefox.js (Firefox, puppeteer-core) call them on their page with
// a small adapter B = {page, ready(want), select(selector, value)} (the two
// libraries differ only there). Each check reads what the page drew through
// window.hsUI (docs/web-ui.md) against values known from the fixtures:
//  - normalized: service norm, version a 3 windows and version b 6 windows
//    of the same folded stacks (file w): compared per profile by default,
//    no change anywhere, said on the page; agg=sum one switch away;
//  - inuse: service heapn, N equal heap windows (file heap, "a;b V V V V"
//    lines): the in-use flame graph's root equals one window's, averaged;
//  - badUrls: service cmp with versions 1 and 2 and no label: each bad URL
//    says what was asked and why, and keeps it; an empty range offers the
//    range where the profiles are.
"use strict";
const fs = require("fs");
const { readFolded, fail, eq } = require("./web_truth.js");

const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const val = (page, sel) => page.$eval(sel, (e) => +e.dataset.value);

async function normalized(B, cfg) {
  const page = B.page;
  await page.goto(cfg.url + "/?service=norm&span=600&version=b&cmp=version&base_version=a");
  await B.ready();
  eq("root change, 6 vs 3 equal windows", await val(page, "#root-delta"), 0);
  const fr = await page.evaluate(() => window.hsUI.fg.frames());
  if (fr.length < 3) fail("too few frames drawn: " + JSON.stringify(fr));
  for (const f of fr) if (f.base !== f.new) fail(`${f.name} changed in a compare of equal windows: ${JSON.stringify(f)}`);
  const note = await text(page, "#agg-note");
  if (!/average per profile/.test(note) || !/\b6\b/.test(note) || !/\b3\b/.test(note)) fail("the page does not say it compares per profile: " + note);
  eq("the agg selector", await page.$eval("#agg", (e) => e.value), "avg");
  await B.select("#agg", "sum");
  await B.ready();
  const total = readFolded(cfg.w).reduce((a, s) => a + s.value, 0);
  eq("root change as sums", await val(page, "#root-delta"), 3 * total);
  if (new URL(page.url()).searchParams.get("agg") !== "sum") fail("the URL does not keep agg=sum: " + page.url());
  return `6 vs 3 equal windows: no change in ${fr.length} frames, "${note}"; as sums +${3 * total}`;
}

async function inuse(B, cfg) {
  const page = B.page;
  const rows = fs.readFileSync(cfg.heap, "utf8").split("\n").filter((l) => l.trim()).map((l) => l.trim().split(/\s+/));
  const one = rows.reduce((a, r) => a + +r[4], 0);   // inuse_space of one window
  await page.goto(cfg.url + "/?service=heapn&type=heap&si=inuse_space&span=600");
  await B.ready();
  eq("profiles merged", await val(page, "#profiles"), cfg.heapWindows);
  eq(`in-use root of ${cfg.heapWindows} equal windows`, await val(page, "#root-total"), one);
  const fr = await page.evaluate(() => window.hsUI.fg.frames());
  const root = fr.find((f) => f.depth === 0);
  eq("the drawn root's value", root && root.new, one);
  eq("the agg selector", await page.$eval("#agg", (e) => e.value), "avg");
  return `in-use of ${cfg.heapWindows} equal windows: ${one} bytes, one window's (average)`;
}

async function badUrls(B, cfg) {
  const page = B.page;
  const cases = [
    ["service=nosuchservice", ["nosuchservice", "cmp"], "service", "nosuchservice"],
    ["service=cmp&type=wall", ["wall", "samples"], "type", "wall"],
    ["service=cmp&version=99", ["99", "1", "2"], "version", "99"],
    ["service=cmp&span=abc", ["abc"], "span", "abc"],
    ["service=cmp&label=zone%3Deu-1", ["zone=eu-1", "no label"], "label", "zone=eu-1"],
    ["service=cmp&version=2&si=nosuchvalue", ["nosuchvalue", "samples"], "si", "nosuchvalue"],
  ];
  const out = [];
  for (const [qs, words, key, kept] of cases) {
    await page.goto(cfg.url + "/?" + qs);
    await B.ready("error");
    const msg = await text(page, "#error");
    for (const w of words) if (!msg.includes(w)) fail(`?${qs}: the message does not say "${w}": ${msg}`);
    if (/NaN/.test(msg)) fail(`?${qs}: ${msg}`);
    eq(`?${qs}: kept in the URL`, new URL(page.url()).searchParams.get(key), kept);
    out.push(`?${qs}: ${msg.split("\n")[0]}`);
  }
  // a range with nothing in it
  await page.goto(cfg.url + `/?service=cmp&span=600&end=${cfg.now - 86400}`);
  await B.ready("empty");
  const msg = await text(page, "#notice");
  if (!/no profiles of cmp in this range/i.test(msg)) fail("empty range: " + msg);
  await page.click("#notice button");
  await B.ready();
  eq("profiles after taking the offered range", await val(page, "#profiles"), 2);
  out.push(`empty range: "${msg}", the offered range shows 2 profiles`);
  return out.join("\nok: ");
}

module.exports = { normalized, inuse, badUrls };
