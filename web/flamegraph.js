// flamegraph.js — the canvas flame graph, written once and used twice: by the
// server's web UI (web/index.html loads it as a classic script) and by
// `hotspur flame` / `hotspur diff --flame`, whose self-contained HTML file
// (src/report/flame.html) has this file inlined at build time.
//
// It defines one global, HsFlame:
//   HsFlame.fromDepthRecords(names, nodes, diff)  the flame.c format: flat
//       pre-order [name, depth, total(, base)] records, name 0 is the root;
//   HsFlame.fromServer(json)  the /api/v1/flamegraph, /api/v1/diff and
//       /api/v1/sandwich (callers, callees) format: pre-order
//       [parent, name, total, self(, total_base, self_base)], and
//       build_ids {name index: build ID} of frames not named yet;
//   new HsFlame.FlameGraph({canvas, wrap, spacer, tip, ...}) draws a tree.
//
// The canvas is the viewport, not the whole graph: it is as tall as what is
// visible (wrap scrolls over a spacer as tall as the graph), and each draw
// visits only the frames inside the zoomed range and the visible rows,
// skipping whole subtrees that are too narrow to see. So 100 000 nodes draw
// in a few milliseconds and a graph thousands of frames deep never hits the
// browser's canvas size limit.
var HsFlame = (function () {
  "use strict";
  const ROW = 17;
  const FONT = "12px ui-monospace, Menlo, Consolas, monospace";
  const MAX_ROWS = 1000000;           // spacer height stays below the layout limit

  // ---------------------------------------------------------------- formatting
  function fmtNum(v) { return Math.round(v).toLocaleString("en-US"); }
  function fmtValue(v, unit) {
    if (v === 0) return "0";          // as pprof prints it, whatever the unit
    const a = Math.abs(v);
    if (unit === "nanoseconds") {
      if (a >= 1e9) return (v / 1e9).toFixed(2) + "s";
      if (a >= 1e6) return (v / 1e6).toFixed(2) + "ms";
      if (a >= 1e3) return (v / 1e3).toFixed(2) + "µs";
      return fmtNum(v) + "ns";
    }
    if (unit === "bytes") {
      if (a >= 2 ** 30) return (v / 2 ** 30).toFixed(2) + "GiB";
      if (a >= 2 ** 20) return (v / 2 ** 20).toFixed(2) + "MiB";
      if (a >= 2 ** 10) return (v / 2 ** 10).toFixed(2) + "KiB";
      return fmtNum(v) + "B";
    }
    return fmtNum(v) + (unit && unit !== "count" ? " " + unit : "");
  }
  function signed(v, unit) { return (v > 0 ? "+" : "") + fmtValue(v, unit); }
  function pct(v, of) { return of ? (100 * v / of).toFixed(2) + "%" : "–"; }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) =>
      ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }

  // ---------------------------------------------------------------- trees
  // A tree: N nodes in pre-order, node 0 the root, typed arrays per field.
  function emptyTree(names, N, diff) {
    return {
      N, names, diff: !!diff,
      nameOf: new Uint32Array(N), depthOf: new Uint32Array(N), parentOf: new Int32Array(N),
      endOf: new Uint32Array(N), total: new Float64Array(N), self: new Float64Array(N),
      base: new Float64Array(diff ? N : 0), selfBase: new Float64Array(diff ? N : 0),
      other: new Uint8Array(N), maxDepth: 0,
    };
  }
  // endOf (one past a node's subtree) and maxDepth from depths in pre-order.
  function finish(t) {
    const stack = [];
    let maxDepth = 0;
    for (let i = 0; i < t.N; i++) {
      const d = t.depthOf[i];
      if (d > maxDepth) maxDepth = d;
      while (stack.length > d) t.endOf[stack.pop()] = i;
      stack.push(i);
    }
    while (stack.length) t.endOf[stack.pop()] = t.N;
    t.maxDepth = maxDepth;
    return t;
  }
  function markOther(t, otherName) {
    if (otherName < 0) return;
    for (let i = 1; i < t.N; i++) if (t.nameOf[i] === otherName) t.other[i] = 1;
  }

  function fromDepthRecords(names, raw, diff) {
    const stride = diff ? 4 : 3, N = raw.length / stride;
    const t = emptyTree(names, N, diff);
    const stack = [];
    for (let i = 0; i < N; i++) {
      const o = i * stride, d = raw[o + 1];
      t.nameOf[i] = raw[o]; t.depthOf[i] = d;
      t.total[i] = t.self[i] = raw[o + 2];
      if (diff) t.base[i] = t.selfBase[i] = raw[o + 3];
      stack.length = d;
      const p = d ? stack[d - 1] : -1;
      t.parentOf[i] = p;
      if (p >= 0) {
        t.self[p] -= t.total[i];
        if (diff) t.selfBase[p] -= t.base[i];
      }
      stack.push(i);
    }
    markOther(t, names.indexOf("[tiny frames]"));
    return finish(t);
  }

  function fromServer(d) {
    const nodes = d.nodes || [], diff = nodes.length > 0 && nodes[0].length >= 6;
    const t = emptyTree(d.names || [], nodes.length, diff);
    for (let i = 0; i < nodes.length; i++) {
      const r = nodes[i], p = r[0];
      t.parentOf[i] = i === 0 ? -1 : p;
      t.depthOf[i] = i === 0 ? 0 : t.depthOf[p] + 1;
      t.nameOf[i] = r[1]; t.total[i] = r[2]; t.self[i] = r[3];
      if (diff) { t.base[i] = r[4]; t.selfBase[i] = r[5]; }
    }
    markOther(t, t.names.indexOf("other"));
    t.buildIds = d.build_ids || null; // name index -> build ID of an unnamed frame's object
    return finish(t);
  }

  // The width of each node of a differential tree: the larger of its base
  // and new totals, and at least the sum of its children's widths (a child
  // that went and a sibling that came both keep their room).
  function maxWidths(t) {
    const w = new Float64Array(t.N), kids = new Float64Array(t.N);
    for (let i = t.N - 1; i >= 0; i--) {
      w[i] = Math.max(t.total[i], t.base[i], kids[i]);
      const p = t.parentOf[i];
      if (p >= 0) kids[p] += w[i];
    }
    return w;
  }
  // "gone" (only in the base), "new" (only in the new side) or "".
  function sideOnly(t, i) {
    if (!t.diff || i === 0) return "";
    if (t.total[i] === 0 && t.base[i] > 0) return "gone";
    if (t.base[i] === 0 && t.total[i] > 0) return "new";
    return "";
  }

  // ---------------------------------------------------------------- colours
  function hashName(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return (h >>> 0) / 4294967296;
  }

  // ---------------------------------------------------------------- the graph
  class FlameGraph {
    // opts: canvas, wrap (the scrolling box around canvas and spacer),
    // spacer, tip (tooltip element, may be null), unit, total and baseTotal
    // (what percentages are of; default the root), icicle, rootName,
    // maxHeight() (pixels the viewport may take), onZoom(i), onHover(i, ev),
    // onClick(i, ev) (return false to stop the zoom).
    constructor(opts) {
      this.o = opts;
      this.canvas = opts.canvas;
      this.ctx = this.canvas.getContext("2d");
      this.wrap = opts.wrap || null;
      this.spacer = opts.spacer || null;
      this.tip = opts.tip || null;
      this.icicle = !!opts.icicle;
      this.useBase = false;
      this.zoomNode = 0;
      this.matched = null;           // Uint8Array over nodes, or null
      this.rects = [];               // drawn frames: [node, x, w, depth]
      this.t = null;
      this.selected = -1;            // keyboard selection
      this.pending = false;
      const c = this.canvas;
      c.addEventListener("mousemove", (ev) => this.hover(this.nodeAt(ev), ev));
      c.addEventListener("mouseleave", () => this.hideTip());
      c.addEventListener("click", (ev) => this.click(this.nodeAt(ev), ev));
      c.addEventListener("keydown", (ev) => this.key(ev));
      if (this.wrap) this.wrap.addEventListener("scroll", () => this.schedule());
    }

    setTree(t, opts) {
      opts = opts || {};
      this.t = t;
      this.unit = opts.unit !== undefined ? opts.unit : this.o.unit;
      this.grand = opts.total || (t.N ? t.total[0] : 0);
      this.grandBase = opts.baseTotal || (t.diff && t.N ? t.base[0] : 0);
      this.rootName = opts.rootName || this.o.rootName || "all";
      this.zoomNode = 0;
      this.selected = -1;
      this.matched = null;
      this.sig = null;
      this.useBase = false;
      this.widthMode = t.diff ? "max" : "new";
      this.wmax = t.diff ? maxWidths(t) : null;
      this.xOf = new Float64Array(t.N);
      this.maxDelta = 0;
      if (t.diff) for (let i = 1; i < t.N; i++) {
        const d = Math.abs(t.total[i] - t.base[i]);
        if (d > this.maxDelta) this.maxDelta = d;
      }
      this.hue = new Float32Array(t.names.length).fill(-1);
      this.layout();
      this.scrolled = false;
      this.draw();
    }

    // Widths in value units. A differential graph is drawn by default with
    // the larger of base and new (wmax), so what went is as visible as what
    // grew; "new" and "base" draw one side's widths.
    widths() {
      const m = this.widthMode;
      return m === "max" && this.wmax ? this.wmax : m === "base" && this.t.diff ? this.t.base : this.t.total;
    }
    // x of each node in value units: a child starts where its previous
    // sibling ended.
    layout() {
      const t = this.t, w = this.widths(), x = this.xOf;
      const cursor = new Float64Array(t.N);
      for (let i = 0; i < t.N; i++) {
        const p = t.parentOf[i];
        x[i] = p < 0 ? 0 : cursor[p];
        if (p >= 0) cursor[p] += w[i];
        cursor[i] = x[i];
      }
    }
    name(i) { return i === 0 ? this.rootName : this.t.names[this.t.nameOf[i]]; }
    // The text drawn on frame i: its name, marked when only one side has it.
    label(i) { const o = sideOnly(this.t, i); return o ? this.name(i) + " (" + o + ")" : this.name(i); }
    // The frames the last draw drew (the documented hook of docs/web-ui.md):
    // x and width in CSS pixels of the canvas, depth (root 0), base and new
    // in the sample unit (base 0 outside a comparison), label as drawn.
    frames() {
      const t = this.t;
      if (!t) return [];
      return this.rects.map(([i, x, width, depth]) => ({ name: this.name(i), x, width, depth,
        base: t.diff ? t.base[i] : 0, new: t.total[i], label: this.label(i),
        significant: !!(this.sig && i !== 0 && this.sig[t.nameOf[i]]) }));
    }
    // Outline the frames of these function names (a Set; null: none): the
    // changes found significant across windows.
    setSignificant(names) {
      const t = this.t;
      this.sig = null;
      if (t && names && names.size) {
        this.sig = new Uint8Array(t.names.length);
        t.names.forEach((n, k) => { if (names.has(n)) this.sig[k] = 1; });
      }
      this.draw();
    }
    // Root .. i, for breadcrumbs.
    path(i) {
      const out = [];
      for (; i >= 0; i = this.t.parentOf[i]) out.push(i);
      return out.reverse();
    }

    colour(i) {
      const t = this.t;
      if (this.matched && this.matched[i]) return "#b05fd3";
      if (t.other[i]) return "#cfcfcf";
      if (t.diff) {
        const delta = t.total[i] - t.base[i];
        if (delta === 0 || this.maxDelta === 0) return "#e8e8e8";
        // a frame only on one side is never paler than this
        const f = Math.max(Math.sqrt(Math.abs(delta) / this.maxDelta), sideOnly(t, i) ? 0.45 : 0);
        const k = Math.round(230 - 170 * f);
        return delta > 0 ? `rgb(255,${k},${k})` : `rgb(${k},${k},255)`;
      }
      const n = t.nameOf[i];
      if (this.hue[n] < 0) this.hue[n] = hashName(t.names[n] || "");
      const v = this.hue[n], v2 = (v * 7) % 1;
      if (this.o.palette === "mem") // FlameGraph's mem: greens
        return `rgb(0,${190 + Math.round(50 * v2)},${Math.round(210 * v)})`;
      if (this.o.palette === "io") { // FlameGraph's io: blues
        const r = 80 + Math.round(60 * v);
        return `rgb(${r},${r},${190 + Math.round(55 * v2)})`;
      }
      return `rgb(${205 + Math.round(50 * v)},${Math.round(230 * v)},${Math.round(55 * v2)})`;
    }

    // ------------------------------------------------------------ drawing
    rows() { return Math.min(this.t.maxDepth + 1, MAX_ROWS); }
    viewHeight(G) {
      let max = this.o.maxHeight ? this.o.maxHeight() : 0;
      if (!max) {
        const top = this.wrap && this.wrap.getBoundingClientRect ? this.wrap.getBoundingClientRect().top : 0;
        max = (window.innerHeight || 800) - Math.max(top, 0) - 30;
      }
      return Math.max(Math.min(G, Math.max(max, 5 * ROW)), ROW);
    }
    schedule() {
      if (this.pending) return;
      this.pending = true;
      const run = () => { this.pending = false; this.draw(); };
      if (typeof requestAnimationFrame === "function") requestAnimationFrame(run); else run();
    }
    rowY(d, G) { return this.icicle ? d * ROW : G - (d + 1) * ROW; }
    scrollTop() { return this.wrap ? (+this.wrap.scrollTop || 0) : 0; }

    draw() {
      const t = this.t, c = this.canvas, ctx = this.ctx;
      if (!t) return;
      const dpr = window.devicePixelRatio || 1;
      const W = c.clientWidth || (this.wrap && this.wrap.clientWidth) || 1200;
      const rows = this.rows(), G = rows * ROW, H = this.viewHeight(G);
      this.G = G; this.H = H;
      c.style.height = H + "px";
      if (this.wrap) this.wrap.style.height = H + "px";   // wrap scrolls over the spacer
      if (this.spacer) this.spacer.style.height = (G - H) + "px";
      if (!this.scrolled && this.wrap) {
        // flame: start at the bottom, where the root is
        this.wrap.scrollTop = this.icicle ? 0 : G - H;
        this.scrolled = true;
      }
      const top = Math.min(Math.max(this.scrollTop(), 0), Math.max(G - H, 0));
      this.top = top;
      if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
        c.width = Math.round(W * dpr);
        c.height = Math.round(H * dpr);
      }
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, H);
      ctx.font = FONT;
      ctx.textBaseline = "middle";
      const charW = ctx.measureText("m").width || 7;
      // visible depths [dLo, dHi]
      let dLo, dHi;
      if (this.icicle) { dLo = Math.floor(top / ROW); dHi = Math.floor((top + H - 1) / ROW); }
      else { dLo = Math.floor((G - top - H) / ROW); dHi = Math.floor((G - top - 1) / ROW); }
      dLo = Math.max(dLo, 0); dHi = Math.min(dHi, rows - 1);
      const rects = this.rects = [];
      const widthOf = this.widths(), xOf = this.xOf, z = this.zoomNode;
      const x0 = xOf[z], span = widthOf[z] || 1, x1 = x0 + span, scale = W / span;
      let tinyStart = -1, tinyEnd = -1, tinyDepth = -1;   // a run of frames too narrow to draw
      const flushTiny = () => {
        if (tinyDepth >= 0 && tinyEnd - tinyStart >= 0.5) {
          ctx.fillStyle = "#cfcfcf";
          ctx.fillRect(tinyStart, this.rowY(tinyDepth, G) - top, Math.max(tinyEnd - tinyStart, 1), ROW - 1);
        }
        tinyDepth = -1;
      };
      const N = t.N, depthOf = t.depthOf, endOf = t.endOf;
      let i = 0;
      while (i < N) {
        const d = depthOf[i];
        if (d > dHi) { i = endOf[i]; continue; }
        const w = widthOf[i], nx = xOf[i];
        if (w === 0) {
          // Only in the base (diff, new widths): a thin blue marker where the
          // stack would be keeps it reachable.
          if (t.diff && this.widthMode === "new" && t.base[i] > 0 && nx >= x0 && nx <= x1 && i !== 0 &&
              widthOf[t.parentOf[i]] > 0 && d >= dLo) {
            flushTiny();
            const mx = (nx - x0) * scale;
            ctx.fillStyle = "#2e64c8";
            ctx.fillRect(mx - 1, this.rowY(d, G) - top, 2, ROW - 1);
            rects.push([i, mx - 2, 4, d]);
          }
          i = endOf[i];
          continue;
        }
        if (nx >= x1 || nx + w <= x0) { i = endOf[i]; continue; }
        const left = Math.max(nx, x0), right = Math.min(nx + w, x1);
        const px = (left - x0) * scale, pw = (right - left) * scale;
        if (pw < 0.5) {
          if (d >= dLo) {
            if (tinyDepth === d && px <= tinyEnd + 0.01) tinyEnd = px + pw;
            else { flushTiny(); tinyDepth = d; tinyStart = px; tinyEnd = px + pw; }
          }
          i = endOf[i];
          continue;
        }
        if (d >= dLo) {
          flushTiny();
          const y = this.rowY(d, G) - top;
          ctx.fillStyle = this.colour(i);
          ctx.globalAlpha = (i < z && z < endOf[i]) ? 0.6 : 1;   // ancestors of the zoomed frame
          ctx.fillRect(px, y, Math.max(pw - 0.5, 0.5), ROW - 1);
          ctx.globalAlpha = 1;
          if (this.sig && this.sig[t.nameOf[i]] && i !== 0) {   // a significant change: outlined
            ctx.strokeStyle = "#111";
            ctx.lineWidth = 1.5;
            if (ctx.strokeRect) ctx.strokeRect(px + 0.75, y + 0.75, Math.max(pw - 2, 1), ROW - 2.5);
          }
          if (i === this.selected) {
            ctx.strokeStyle = "#000";
            ctx.lineWidth = 2;
            if (ctx.strokeRect) ctx.strokeRect(px + 1, y + 1, Math.max(pw - 2.5, 1), ROW - 3);
          }
          rects.push([i, px, pw, d]);
          if (pw > 3 * charW + 6) {
            let label = this.label(i);
            const maxChars = Math.floor((pw - 6) / charW);
            if (label.length > maxChars) label = label.slice(0, Math.max(maxChars - 2, 1)) + "..";
            ctx.fillStyle = "#000";
            ctx.fillText(label, px + 3, y + ROW / 2);
          }
        }
        i++;
      }
      flushTiny();
      if (this.o.onDraw) this.o.onDraw();
    }

    // ------------------------------------------------------------ interaction
    nodeAt(ev) {
      if (!this.t) return -1;
      const r = this.canvas.getBoundingClientRect();
      const mx = ev.clientX - r.left, gy = ev.clientY - r.top + this.top;
      const d = this.icicle ? Math.floor(gy / ROW) : Math.ceil((this.G - gy) / ROW) - 1;
      let best = -1;
      for (const q of this.rects) {
        if (q[3] === d && mx >= q[1] && mx < q[1] + q[2]) {
          best = q[0];
          if (q[2] > 4) break;        // a real frame beats a vanished-stack marker
        }
      }
      return best;
    }

    tipHtml(i) {
      const t = this.t, u = this.unit, row = (label, a, b) =>
        `<tr><td>${label}</td><td class="num">${a}</td><td class="num">${b || ""}</td></tr>`;
      let h = `<div class="name">${esc(this.name(i))}</div><table>`;
      if (!t.diff) {
        h += row("total", fmtValue(t.total[i], u), pct(t.total[i], this.grand));
        h += row("self", fmtValue(t.self[i], u), pct(t.self[i], this.grand));
        if (this.zoomNode !== 0) h += row("of zoom", pct(t.total[i], this.widths()[this.zoomNode]), "");
      } else {
        const dt = t.total[i] - t.base[i], ds = t.self[i] - t.selfBase[i];
        const cls = dt > 0 ? "grew" : dt < 0 ? "shrank" : "";
        h += row("total new", fmtValue(t.total[i], u), pct(t.total[i], this.grand));
        h += row("total base", fmtValue(t.base[i], u), pct(t.base[i], this.grandBase));
        h += row(`<span class="${cls}">delta</span>`, `<span class="${cls}">${signed(dt, u)}</span>`,
          sideOnly(t, i) || (t.base[i] ? (dt >= 0 ? "+" : "") + pct(dt, t.base[i]) : ""));
        h += row("self new", fmtValue(t.self[i], u), pct(t.self[i], this.grand));
        h += row("self base", fmtValue(t.selfBase[i], u), pct(t.selfBase[i], this.grandBase));
        h += row("self delta", signed(ds, u), "");
        const o = sideOnly(t, i);
        if (o === "gone") h += '<tr><td colspan="3" class="shrank">gone: only in the base</td></tr>';
        if (o === "new") h += '<tr><td colspan="3" class="grew">new: only in the new side</td></tr>';
      }
      if (t.other[i]) h += '<tr><td colspan="3">small frames folded together</td></tr>';
      const bid = t.buildIds && t.buildIds[t.nameOf[i]];
      if (bid) h += `<tr><td colspan="3" class="bid">not named yet: build ID ${esc(bid)}</td></tr>`;
      return h + "</table>";
    }
    hover(i, ev) {
      if (this.o.onHover) this.o.onHover(i, ev);
      const tip = this.tip;
      if (!tip) return;
      if (i < 0) { this.hideTip(); return; }
      tip.innerHTML = this.tipHtml(i);
      tip.style.display = "block";
      let tx = ev.clientX + 14, ty = ev.clientY + 14;
      const tw = tip.offsetWidth, th = tip.offsetHeight;
      if (tx + tw > window.innerWidth) tx = Math.max(0, ev.clientX - tw - 14);
      if (ty + th > window.innerHeight) ty = Math.max(0, ev.clientY - th - 14);
      tip.style.left = tx + "px"; tip.style.top = ty + "px";
    }
    hideTip() { if (this.tip) this.tip.style.display = "none"; }
    click(i, ev) {
      if (i < 0) return;
      if (this.o.onClick && this.o.onClick(i, ev) === false) return;
      this.zoom(i);
    }
    zoom(i) {
      if (!this.t || i < 0 || i >= this.t.N) return;
      if (this.t.diff && this.widths()[i] === 0) this.setUseBase(true);   // vanished: base widths
      this.zoomNode = i;
      this.selected = i;
      this.draw();
      if (this.o.onZoom) this.o.onZoom(i);
    }
    reset() { this.zoom(0); }
    setIcicle(on) {
      this.icicle = !!on;
      this.scrolled = false;
      this.draw();
    }
    // Base widths on (off: the default, the larger of base and new).
    setUseBase(on) { this.setWidthMode(on ? "base" : "max"); }
    // "max" (larger of base and new), "new" or "base"; one side only in a diff.
    setWidthMode(m) {
      if (!this.t) return;
      this.widthMode = this.t.diff && (m === "base" || m === "new") ? m : this.t.diff ? "max" : "new";
      this.useBase = this.widthMode === "base";
      this.layout();
      if (this.widths()[this.zoomNode] === 0) this.zoomNode = 0;
      this.draw();
    }

    // Keyboard on the focused canvas: arrows move a selection (up/down to a
    // parent or the largest child, left/right to siblings), Enter zooms to
    // it, Escape resets.
    key(ev) {
      const t = this.t;
      if (!t) return;
      let s = this.selected >= 0 ? this.selected : this.zoomNode;
      const towardLeaf = this.icicle ? "ArrowDown" : "ArrowUp";
      const towardRoot = this.icicle ? "ArrowUp" : "ArrowDown";
      const w = this.widths();
      const sibling = (dir) => {
        const p = t.parentOf[s];
        if (p < 0) return s;
        let prev = -1;
        for (let c = p + 1; c < t.endOf[p]; c = t.endOf[c]) {
          if (dir > 0 && prev === s && w[c] > 0) return c;
          if (dir < 0 && c === s && prev >= 0) return prev;
          if (w[c] > 0) prev = c;
        }
        return s;
      };
      if (ev.key === towardLeaf) { if (s + 1 < t.endOf[s] && w[s + 1] > 0) s = s + 1; }
      else if (ev.key === towardRoot) { if (t.parentOf[s] >= 0) s = t.parentOf[s]; }
      else if (ev.key === "ArrowRight") s = sibling(1);
      else if (ev.key === "ArrowLeft") s = sibling(-1);
      else if (ev.key === "Enter") { this.zoom(s); ev.preventDefault(); return; }
      else if (ev.key === "Escape") { this.reset(); return; }
      else return;
      ev.preventDefault();
      this.selected = s;
      this.draw();
      if (this.o.onHover) this.o.onHover(s, null);
    }

    // Highlight frames whose name matches re (a RegExp or a string); returns
    // {count, value, base}: the value under matching frames, each sample
    // counted once (a match inside a match adds nothing). null clears.
    search(re) {
      const t = this.t;
      if (!re) { this.matched = null; this.draw(); return null; }
      if (typeof re === "string") re = new RegExp(re);
      const byName = new Uint8Array(t.names.length);
      for (let n = 0; n < t.names.length; n++) byName[n] = re.test(t.names[n]) ? 1 : 0;
      const m = this.matched = new Uint8Array(t.N);
      let value = 0, base = 0, count = 0, coveredTo = 0;
      for (let i = 1; i < t.N; i++) {
        if (!byName[t.nameOf[i]] || t.other[i]) continue;
        m[i] = 1;
        count++;
        if (i >= coveredTo) {
          value += t.total[i];
          if (t.diff) base += t.base[i];
          coveredTo = t.endOf[i];
        }
      }
      this.draw();
      return { count, value, base };
    }
  }

  return { FlameGraph, fromDepthRecords, fromServer, fmtValue, signed, pct, esc, ROW };
})();
if (typeof window !== "undefined") window.HsFlame = HsFlame;
