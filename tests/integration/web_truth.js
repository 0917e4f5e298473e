// web_truth.js — what the browser tests (web_ui.js in Chromium,
// web_ui_firefox.js in Firefox) expect the page to show, computed from the
// folded stack files the test server was given, and their assertions.
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

module.exports = { readFolded, truth, fmt, fail, eq };
