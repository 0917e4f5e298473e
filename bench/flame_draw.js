// flame_draw.js — the browser's share of the first flame graph, without a
// browser: HsFlame.fromServer + setTree (layout and first draw, on a stub
// canvas that records nothing) of web/flamegraph.js for a seeded random
// 100 000-node tree, flat and differential (20% of the nodes only in the
// new side), median and min over ROUNDS rounds. With two files, both are
// timed in the same process, interleaved (the order alternating by round).
//   node bench/flame_draw.js NEW.js [OLD.js]       (bench/flame_draw.sh)
"use strict";
const fs = require("fs");
global.window = { devicePixelRatio: 1, innerHeight: 800 };
const ctx = { setTransform() {}, clearRect() {}, fillRect() {}, strokeRect() {}, fillText() {}, measureText: () => ({ width: 7 }) };
const canvas = () => ({ clientWidth: 1260, width: 0, height: 0, style: {}, getContext: () => ctx, addEventListener() {},
  getBoundingClientRect: () => ({ top: 100 }) });
const load = (file) => new Function(fs.readFileSync(file, "utf8") + "\nreturn HsFlame;")();
const files = process.argv.slice(2), libs = files.map(load);
const ROUNDS = +(process.env.ROUNDS || 40);

let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const N = 100000, names = [], flat = [[-1, 0, 0, 0]], diff = [[-1, 0, 0, 0, 0, 0]], depth = [0];
for (let i = 0; i < 3000; i++) names.push("fn_" + i);
for (let i = 1; i < N; i++) {
  let p = i - 1;
  while (depth[p] > 0 && rnd() < 0.3) p = flat[p][0];
  if (depth[p] > 60) p = 0;
  depth.push(depth[p] + 1);
  const v = 1 + Math.floor(rnd() * 1000), vb = rnd() < 0.2 ? 0 : 1 + Math.floor(rnd() * 1000);
  flat.push([p, 1 + Math.floor(rnd() * 2999), v, v]);
  diff.push([p, flat[i][1], v, v, vb, vb]);
}
for (let i = N - 1; i > 0; i--) {
  const p = flat[i][0];
  flat[p][2] += flat[i][2]; diff[p][2] += diff[i][2]; diff[p][4] += diff[i][4];
}
const cases = [];
libs.forEach((H, k) => {
  const g = new H.FlameGraph({ canvas: canvas(), maxHeight: () => 600 });
  cases.push({ name: `${k ? "old" : "new"} flat`, H, g, d: { names, nodes: flat }, ms: [] });
  cases.push({ name: `${k ? "old" : "new"} diff`, H, g, d: { names, nodes: diff }, ms: [] });
});
for (let r = 0; r < ROUNDS; r++)
  for (const c of r % 2 ? cases : cases.slice().reverse()) {
    const t0 = process.hrtime.bigint();
    c.g.setTree(c.H.fromServer(c.d), { rootName: "all" });
    c.ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const c of cases)
  console.log(`${c.name.padEnd(10)} fromServer+setTree median ${med(c.ms).toFixed(1)} ms, min ${Math.min(...c.ms).toFixed(1)} ms, ` +
    `${c.g.rects.length} frames drawn (${ROUNDS} rounds)`);
