// web_truth.js — what the browser tests (web_ui.js in Chromium,
// web_ui_firefox.js in Firefox) expect the page to show, computed from the
// folded stack files the test server was given, their assertions, and
// where a frame is drawn.
"use strict";
const fs = require("fs");

function readFolded(file) {
  const stacks = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = /^(.*) (\d+)$/.exec(line.trim());
    if (m) stacks.push({ frames: m[1].split(";"), value: +m[2] });
  }
  return stacks;
}
// total of the profiles selected by pred, and of one function (self, total)
function truth(profiles, pred, opts = {}) {
  let total = 0, n = 0;
  const fn = {};
  for (const p of profiles) {
    if (!pred(p)) continue;
    n++;
    for (const s of readFolded(p.folded)) {
      if (opts.ignore && s.frames.some((f) => opts.ignore.test(f))) continue;
      total += s.value;
      const leaf = s.frames[s.frames.length - 1];
      (fn[leaf] = fn[leaf] || { self: 0, total: 0 }).self += s.value;
      for (const f of new Set(s.frames)) (fn[f] = fn[f] || { self: 0, total: 0 }).total += s.value;
    }
  }
  return { total, n, fn };
}
const fmt = (v) => Math.round(v).toLocaleString("en-US");
const fail = (msg) => { throw new Error(msg); };
function eq(what, got, want) {
  if (got !== want) fail(`${what}: the page shows ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// Run in the page (page.evaluate(framePoint, [name, graph])): the point in
// the viewport to click on the drawn frame called name of hsUI[graph] (fg,
// cl, ce), or null when none is drawn wide enough.
function framePoint([name, g]) {
  const G = window.hsUI[g], r = G.canvas.getBoundingClientRect();
  for (const q of G.rects) if (G.name(q[0]) === name && q[2] > 4) {
    const d = q[3], y = G.icicle ? d * 17 : G.G - (d + 1) * 17;
    return { x: r.left + q[1] + q[2] / 2, y: r.top + y - G.top + 8 };
  }
  return null;
}

// A differential tree from two folded files: node = {base, new, kids}, and
// each node's drawn width: the larger of base and new, at least the sum of
// its children's widths.
function diffTree(baseFile, newFile) {
  const root = { name: "", base: 0, new: 0, kids: new Map() };
  for (const [file, side] of [[baseFile, "base"], [newFile, "new"]])
    for (const s of readFolded(file)) {
      let n = root;
      n[side] += s.value;
      for (const f of s.frames) {
        if (!n.kids.has(f)) n.kids.set(f, { name: f, base: 0, new: 0, kids: new Map() });
        n = n.kids.get(f);
        n[side] += s.value;
      }
    }
  const width = (n) => { let k = 0; for (const c of n.kids.values()) k += width(c); return (n.w = Math.max(n.base, n.new, k)); };
  width(root);
  return root;
}
function findNode(n, name) {
  if (n.name === name) return n;
  for (const c of n.kids.values()) { const r = findNode(c, name); if (r) return r; }
  return null;
}
// Playwright: make the filter box id (f-ignore, ...) usable: filters not in
// use are hidden behind the page's "add filter" chooser.
async function openFilter(page, id) {
  if (await page.$eval("#" + id, (e) => e.offsetParent === null)) await page.selectOption("#add-filter", id);
}

module.exports = { readFolded, truth, fmt, fail, eq, framePoint, openFilter, diffTree, findNode };
