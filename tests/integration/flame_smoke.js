// flame_smoke.js — runs the script of a hotspur flame graph HTML file in node
// with a minimal stand-in for the DOM and the canvas, and drives it: first
// draw, hover tooltip, click to zoom, search, icicle toggle, reset, and (diff
// pages) the base-widths toggle. Fails (exit 1) on any exception or when the
// page draws nothing. Prints timings of the first draw and of a redraw.
//   node flame_smoke.js page.html [expect-search-regex]
"use strict";
const fs = require("fs");
const html = fs.readFileSync(process.argv[2], "utf8");
const search = process.argv[3] || ".";

const data = /<script id="hs-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html);
const code = /<script>([\s\S]*?)<\/script>/.exec(html);
if (!data || !code) { console.error("page has no data or no script"); process.exit(1); }

let fills = 0, texts = 0;
const listeners = {};
function element(id) {
  return {
    id, hidden: false, value: "", textContent: id === "hs-data" ? data[1] : "", innerHTML: "",
    style: {}, offsetWidth: 200, offsetHeight: 100, clientWidth: 1200, clientHeight: 0,
    width: 0, height: 0,
    classList: (() => { const c = new Set(); return {
      add(k) { c.add(k); }, remove(k) { c.delete(k); }, contains(k) { return c.has(k); },
      toggle(k) { if (c.has(k)) c.delete(k); else c.add(k); } }; })(),
    addEventListener(type, fn) { (listeners[id + ":" + type] = listeners[id + ":" + type] || []).push(fn); },
    getBoundingClientRect() { return { left: 0, top: 0 }; },
    focus() {},
    getContext() {
      return {
        setTransform() {}, clearRect() {}, fillText() { texts++; },
        fillRect() { fills++; }, measureText(s) { return { width: 7 * s.length }; },
        set fillStyle(v) {}, set font(v) {}, set textBaseline(v) {}, set globalAlpha(v) {},
      };
    },
  };
}
const elements = {};
global.document = {
  title: "",
  body: { clientWidth: 1200, setAttribute(k, v) { this[k] = v; } },
  getElementById(id) { return elements[id] || (elements[id] = element(id)); },
  addEventListener(type, fn) { (listeners["document:" + type] = listeners["document:" + type] || []).push(fn); },
};
global.window = {
  devicePixelRatio: 1, innerWidth: 1400, innerHeight: 900,
  addEventListener() {},
};
global.setTimeout = (fn) => { fn(); return 0; };
global.clearTimeout = () => {};

function fire(key, ev) { for (const fn of listeners[key] || []) fn(ev); }

let t0 = process.hrtime.bigint();
new Function(code[1])();          // parses the data and draws once
const firstMs = Number(process.hrtime.bigint() - t0) / 1e6;
const canvas = elements["fg"];
canvas.clientHeight = parseFloat(canvas.style.height) || 0;
if (fills === 0) { console.error("first draw filled nothing"); process.exit(1); }
if (!(+document.body["data-hs-ready"] > 0)) { console.error("page did not flag itself ready"); process.exit(1); }

// Hover the bottom-left frame (the root in flame orientation) and a point
// higher up; the tooltip must show something.
fire("fg:mousemove", { clientX: 5, clientY: canvas.clientHeight - 5 });
if (!/total/.test(elements["tip"].innerHTML)) { console.error("no tooltip on the root"); process.exit(1); }
fire("fg:mousemove", { clientX: 300, clientY: canvas.clientHeight - 17 * 2 - 5 });
// Click a frame at depth 2 to zoom, then redraw timing.
const before = fills;
fire("fg:click", { clientX: 300, clientY: canvas.clientHeight - 17 * 2 - 5 });
if (fills === before) { console.error("click did not redraw"); process.exit(1); }
// Search.
elements["search"].value = search;
fire("search:keydown", { key: "Enter" });
const matched = elements["matched"].textContent;
if (!/matched \d+ frames: .*%/.test(matched)) { console.error("search shows no share: " + matched); process.exit(1); }
// Case: the search ignores case unless "Aa" is on; a leading (?i) always does.
if (/[a-z]/.test(search) && search === search.toLowerCase()) {
  elements["search"].value = search.toUpperCase();
  fire("search:keydown", { key: "Enter" });
  if (elements["matched"].textContent !== matched) { console.error("search is not case-insensitive: " + elements["matched"].textContent); process.exit(1); }
  fire("icase:click", {});
  if (elements["matched"].textContent !== "no match") { console.error("'Aa' does not make the search match case: " + elements["matched"].textContent); process.exit(1); }
  elements["search"].value = "(?i)" + search.toUpperCase();
  fire("search:keydown", { key: "Enter" });
  if (elements["matched"].textContent !== matched) { console.error("(?i) does not ignore case"); process.exit(1); }
  fire("icase:click", {});
}
// Bad regex must not throw.
elements["search"].value = "(";
fire("search:keydown", { key: "Enter" });
// Icicle, reset (Esc), base widths on diff pages.
fire("orient:click", {});
fire("document:keydown", { key: "Escape" });
if (!elements["widths"].hidden) fire("widths:click", {});
t0 = process.hrtime.bigint();
fire("reset:click", {});
const redrawMs = Number(process.hrtime.bigint() - t0) / 1e6;
console.log(`ok: first draw ${firstMs.toFixed(1)} ms, redraw ${redrawMs.toFixed(1)} ms, ` +
            `${fills} rects, ${texts} labels; search: ${matched}`);
