// app.js — the web UI of `hotspur serve` (index.html): selectors, timeline,
// flame graph, function table, callers/callees, compare, filters, source.
// Everything shown comes from the query API (docs/server.md), so the numbers
// are the CLI's. The state is the URL's query string (readState/writeState):
// every control writes it, a reload or a copied link restores it.

const HsFlame = window.HsFlame;
const $ = (id) => document.getElementById(id);
const fv = (v, unit) => HsFlame.fmtValue(v, unit);
const { pct, esc, signed } = HsFlame;
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// ------------------------------------------------------------------ state
// Single-valued keys and repeatable ones; defaults are omitted from the URL.
const SINGLE = ["service", "type", "si", "span", "end", "from", "until", "agg", "weight", "focus", "ignore",
  "show_from", "hide", "show", "hl", "fn", "view", "cmp", "base_shift", "base_from", "base_until",
  "base_label", "sort", "q", "zoom", "icicle", "nodes", "tenant", "trace"];
const MULTI = ["version", "label", "base_version"];
const FILTERS = ["focus", "ignore", "show_from", "hide", "show", "trace"];
// trace=ID: the samples of one span (16 hex digits) or trace (32), by the
// span_id / trace_id labels they carry (docs/otlp.md, "Trace links")
const TRACE_RE = /^[0-9a-f]{16}([0-9a-f]{16})?$/;
const traceTag = (id) => (id.length === 16 ? "span_id=" : "trace_id=") + id;
let S = readState();

function readState() {
  const p = new URLSearchParams(location.search), s = {};
  for (const k of SINGLE) s[k] = p.get(k) || "";
  for (const k of MULTI) s[k] = p.getAll(k);
  return s;
}
function writeState() {
  const p = new URLSearchParams();
  for (const k of SINGLE) if (S[k]) p.set(k, S[k]);
  for (const k of MULTI) for (const v of S[k]) p.append(k, v);
  const qs = p.toString();
  history.replaceState(null, "", qs ? "?" + qs : location.pathname);
}
function set(changes, reload = true) {
  Object.assign(S, changes);
  writeState();
  if (reload) refresh();
}

// ------------------------------------------------------------------ API
class ApiError extends Error {}
let errors = [];
function showErrors() {
  const box = $("error");
  box.hidden = errors.length === 0;
  box.textContent = errors.join("\n");
}
// With `hotspur serve --token`, the token the user typed: sent as a bearer
// token, kept in this tab's sessionStorage, never in the URL.
let token = sessionStorage.getItem("hs-token") || "";
// The tenant (docs/server.md, "Tenants") is the URL's tenant=, sent as the
// X-Scope-OrgID header a link cannot carry; none is the default tenant.
const authHeaders = () => Object.assign(token ? { Authorization: "Bearer " + token } : {},
  S.tenant ? { "X-Scope-OrgID": S.tenant } : {});
async function api(path, params, { raw = false, quiet = false } = {}) {
  const url = "api/v1/" + path + (params ? "?" + params.toString() : "");
  let r;
  try {
    r = await fetch(url, { headers: authHeaders() });
  } catch (e) {
    throw new ApiError(`${path}: the server does not answer (${e.message})`);
  }
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { const j = await r.json(); if (j && j.error) msg = j.error; } catch (e) { /* not JSON */ }
    const err = new ApiError(`${path}: ${msg}`);
    err.status = r.status;
    err.quiet = quiet;
    throw err;
  }
  return raw ? r : r.json();
}

// The query parameters of the current selection (one side).
// "now" is read once per refresh, so every request of one refresh agrees.
let pinnedNow = 0;
function nowS() { return pinnedNow || Math.floor(Date.now() / 1000); }
// The span in seconds: "" is 1 hour; 600, or a number with s, m, h, d, w
// (10m, 1h); NaN when it is none of these.
function spanSeconds(v = S.span) {
  if (!v) return 3600;
  const m = /^(\d+)([smhdw]?)$/.exec(v);
  const n = m ? +m[1] * { "": 1, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]] : NaN;
  return n > 0 ? n : NaN;
}
// What in the URL's times cannot be read, as sentences ([] when all is well).
function badTimes() {
  const out = [], unix = /^\d{1,12}$/;
  if (Number.isNaN(spanSeconds())) out.push(`This link asks for span “${S.span}”: that is not a span (seconds, or a number with s, m, h, d or w: 600, 10m, 1h, 7d).`);
  for (const k of ["end", "from", "until", "base_from", "base_until"])
    if (S[k] && !unix.test(S[k])) out.push(`This link asks for ${k} “${S[k]}”: that is not a time (unix seconds).`);
  if (S.from && S.until && unix.test(S.from) && unix.test(S.until) && +S.from >= +S.until)
    out.push(`This link asks for the range from ${S.from} until ${S.until}: it ends before it starts.`);
  if (S.base_shift && S.base_shift !== "custom" && !/^\d+$/.test(S.base_shift))
    out.push(`This link asks for base_shift “${S.base_shift}”: that is not a number of seconds.`);
  if (S.weight && !(+S.weight > 0 && +S.weight <= 100)) out.push(`This link asks for weight “${S.weight}”: a percentage, 1 to 100.`);
  if (S.agg && S.agg !== "sum" && S.agg !== "avg") out.push(`This link asks for agg “${S.agg}”: sum or avg.`);
  return out;
}
function range() {
  if (S.from && S.until) return [+S.from, +S.until];
  const span = spanSeconds();
  const end = S.end ? +S.end : nowS() + 1;
  return [end - span, end];
}
function baseParams({ filters = true, withBase = false } = {}) {
  const p = new URLSearchParams();
  p.set("service", S.service);
  p.set("type", S.type);
  const [from, until] = range();
  p.set("from", String(from));
  p.set("until", String(until));
  for (const v of S.version) p.append("version", v);
  for (const l of S.label) p.append("label", l);
  if (S.agg === "avg" || S.agg === "sum") p.set("agg", S.agg);   // else the server's default
  if (S.weight) p.set("weight", S.weight);
  if (S.si) p.set("sample_index", S.si);
  if (filters) for (const k of FILTERS) if (S[k]) {
    if (k === "trace") p.set("tagfocus", traceTag(S[k]));
    else p.set(k, S[k]);
  }
  if (withBase && S.cmp) {
    if (S.cmp === "version") for (const v of S.base_version) p.append("base_version", v);
    if (S.cmp === "time") {
      if (S.base_shift === "custom" && S.base_from && S.base_until) {
        p.set("base_from", S.base_from);
        p.set("base_until", S.base_until);
      } else {
        const sh = +(S.base_shift || 86400);
        p.set("base_from", String(from - sh));
        p.set("base_until", String(until - sh));
      }
    }
    if (S.cmp === "label" && S.base_label) p.set("base_label", S.base_label);
  }
  return p;
}
function comparing() {
  return (S.cmp === "version" && S.base_version.length > 0) || S.cmp === "time" ||
    (S.cmp === "label" && !!S.base_label);
}

// ------------------------------------------------------------------ selectors
let types = [];           // from /types
let labelValues = {};     // from /labels
function fillSelect(sel, values, current, { any = null, labelOf = (v) => v } = {}) {
  sel.textContent = "";
  if (any !== null) sel.append(new Option(any, ""));
  for (const v of values) sel.append(new Option(labelOf(v), v));
  if (sel.multiple) for (const o of sel.options) o.selected = current.includes(o.value);
  else sel.value = values.includes(current) || current === "" ? current : (values[0] || "");
}
// A value the URL asked for that is not there: shown selected in its
// selector, marked, so the user sees the choice kept and can change it.
function keepAsked(sel, value) {
  const o = new Option(value + " (none)", value);
  o.className = "asked";
  sel.append(o);
  o.selected = true;
}
const list = (xs) => xs.length ? xs.join(", ") : "none";
// Errors about what the URL asks for: said, never silently replaced.
class AskedError extends ApiError {}
async function loadSelectors() {
  const svc = (await api("services")).services || [];
  if (!svc.length) throw new ApiError("no profiles stored yet: send some to POST /api/v1/ingest");
  if (!S.service) S.service = svc[0];
  fillSelect($("service"), svc, S.service);
  if (!svc.includes(S.service)) {
    keepAsked($("service"), S.service);
    throw new AskedError(`This link asks for service “${S.service}”: no profiles are stored under that name. Services: ${list(svc)}.`);
  }
  const t = await api("types", new URLSearchParams({ service: S.service }));
  types = t.types || [];
  const tnames = types.map((x) => x.name);
  if (!S.type) S.type = tnames.includes("cpu") ? "cpu" : (tnames[0] || "");
  fillSelect($("type"), tnames, S.type);
  if (!tnames.includes(S.type)) {
    keepAsked($("type"), S.type);
    throw new AskedError(`This link asks for type “${S.type}” of service “${S.service}”: ${S.service} has no ${S.type} profiles. Types: ${list(tnames)}.`);
  }
  const ty = types.find((x) => x.name === S.type) || { sample_types: [] };
  const sts = (ty.sample_types || []).map((x) => x.type);
  fillSelect($("sample"), sts, S.si || ty.default || "", {
    labelOf: (v) => { const st = ty.sample_types.find((x) => x.type === v); return st ? `${v} (${st.unit})` : v; },
  });
  const asked = [];
  if (S.si && !sts.includes(S.si)) {
    keepAsked($("sample"), S.si);
    asked.push(`This link asks for the value “${S.si}” of ${S.type} profiles: they have ${list(sts)}.`);
  }
  const q = new URLSearchParams({ service: S.service, type: S.type });
  const [vers, labs] = await Promise.all([api("versions", q), api("labels", q)]);
  const versions = vers.versions || [];
  fillSelect($("versions"), versions, S.version);
  fillSelect($("base-version"), versions, S.base_version[0] || "", { any: "(choose)" });
  for (const [k, sel, what] of [["version", "versions", "version"], ["base_version", "base-version", "base version"]]) {
    const missing = S[k].filter((v) => !versions.includes(v));
    for (const v of missing) keepAsked($(sel), v);
    if (missing.length) asked.push(`This link asks for ${what} ${missing.map((v) => `“${v}”`).join(", ")} of ${S.service} (${S.type}): ` +
      `there are no such profiles. Versions: ${list(versions)}.`);
  }
  labelValues = labs.labels || {};
  const box = $("labels");
  box.textContent = "";
  const baseOpts = [];
  for (const k of Object.keys(labelValues).sort()) {
    const cur = (S.label.find((l) => l.startsWith(k + "=")) || "").slice(k.length + 1);
    const lab = document.createElement("label");
    lab.append(k + " ");
    const sel = document.createElement("select");
    sel.dataset.label = k;
    sel.id = "label-" + k;
    fillSelect(sel, labelValues[k], cur, { any: "any" });
    sel.addEventListener("change", () => {
      const rest = S.label.filter((l) => !l.startsWith(k + "="));
      if (sel.value) rest.push(k + "=" + sel.value);
      set({ label: rest, from: "", until: "" });
    });
    lab.append(sel);
    box.append(lab, " ");
    for (const v of labelValues[k]) baseOpts.push(k + "=" + v);
  }
  fillSelect($("base-label"), baseOpts, S.base_label, { any: "(choose)" });
  for (const l of S.label.concat(S.base_label ? [S.base_label] : [])) {
    const eqAt = l.indexOf("="), k = l.slice(0, eqAt), v = l.slice(eqAt + 1);
    if (eqAt > 0 && (labelValues[k] || []).includes(v)) continue;
    const sel = $("label-" + k);
    if (sel) keepAsked(sel, v);
    asked.push(`This link asks for the label “${l}”: ${S.service} (${S.type}) has ` +
      (labelValues[k] ? `${k} = ${list(labelValues[k])}.` : `no label “${k}”. Labels: ${list(Object.keys(labelValues).sort())}.`));
  }
  writeState();
  if (asked.length) throw new AskedError(asked.join("\n"));
}

function syncControls() {
  const span = $("span");
  for (const o of [...span.options]) if (o.className === "asked") o.remove();
  if (S.span && ![...span.options].some((o) => o.value === S.span)) {
    const n = spanSeconds();
    span.append(Object.assign(new Option(Number.isNaN(n) ? S.span + " (not a span)" : S.span, S.span), { className: "asked" }));
  }
  span.value = S.span || "3600";
  $("end").value = S.end ? toLocalInput(+S.end) : "";
  $("agg").value = S.agg || "sum";
  $("weight").value = S.weight;
  for (const k of FILTERS) $("f-" + k).value = S[k];
  $("f-highlight").value = S.hl;
  $("cmp").value = S.cmp;
  document.body.dataset.cmp = S.cmp;
  $("base-shift").value = S.base_shift || "86400";
  if (S.base_shift === "custom") document.body.dataset.custom = "1"; else delete document.body.dataset.custom;
  $("base-from").value = S.base_from ? toLocalInput(+S.base_from) : "";
  $("base-until").value = S.base_until ? toLocalInput(+S.base_until) : "";
  $("fn-filter").value = S.q;
  $("fn-name").value = S.fn;
  $("f-fn").value = S.fn;
  $("fg-orient").classList.toggle("on", S.icicle === "1");
  $("range-reset").hidden = !(S.from && S.until);
  syncChips();
}
function toLocalInput(unix) {
  const d = new Date(unix * 1000), z = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${z(d.getMonth() + 1)}-${z(d.getDate())}T${z(d.getHours())}:${z(d.getMinutes())}`;
}
function fromLocalInput(s) { return s ? String(Math.floor(new Date(s).getTime() / 1000)) : ""; }

function wireControls() {
  $("service").addEventListener("change", (e) => set({ service: e.target.value, type: "", si: "", version: [],
    label: [], base_version: [], base_label: "", fn: "", zoom: "" }));
  $("type").addEventListener("change", (e) => set({ type: e.target.value, si: "", fn: "", zoom: "" }));
  $("sample").addEventListener("change", (e) => set({ si: e.target.value }));
  $("versions").addEventListener("change", (e) =>
    set({ version: [...e.target.selectedOptions].map((o) => o.value), zoom: "" }));
  $("span").addEventListener("change", (e) => set({ span: e.target.value, from: "", until: "" }));
  $("end").addEventListener("change", (e) => set({ end: fromLocalInput(e.target.value), from: "", until: "" }));
  $("now").addEventListener("click", () => set({ end: "", from: "", until: "" }));
  $("agg").addEventListener("change", (e) => set({ agg: e.target.value === "avg" ? "avg" : "sum" }));
  $("weight").addEventListener("change", (e) => {
    const v = +e.target.value;
    set({ weight: v > 0 && v < 100 ? String(v) : "" });
  });
  for (const k of FILTERS) {
    const inp = $("f-" + k);
    inp.addEventListener("keydown", (e) => { if (e.key === "Enter") applyFilter(k, inp); });
    inp.addEventListener("change", () => applyFilter(k, inp));
  }
  const hl = $("f-highlight");
  hl.addEventListener("input", () => { S.hl = hl.value; writeState(); highlight(); });
  $("cmp").addEventListener("change", (e) => set({ cmp: e.target.value, zoom: "" }));
  $("base-version").addEventListener("change", (e) => set({ base_version: e.target.value ? [e.target.value] : [] }));
  $("base-shift").addEventListener("change", (e) => set({ base_shift: e.target.value === "86400" ? "" : e.target.value }));
  $("base-from").addEventListener("change", (e) => set({ base_from: fromLocalInput(e.target.value) }));
  $("base-until").addEventListener("change", (e) => set({ base_until: fromLocalInput(e.target.value) }));
  $("base-label").addEventListener("change", (e) => set({ base_label: e.target.value }));
  $("range-reset").addEventListener("click", () => set({ from: "", until: "" }));
  $("auth").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value;
    sessionStorage.setItem("hs-token", token);
    $("auth").hidden = true;
    refresh();
  });
  // a link cannot send the token or the tenant: with one, fetch the profile and save it
  $("download").addEventListener("click", async (e) => {
    if (!token && !S.tenant) return;
    e.preventDefault();
    try {
      const r = await api("profile", new URLSearchParams($("download").search), { raw: true });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(await r.blob());
      a.download = "profile.pb.gz";
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } catch (err) { report(err); }
  });
  $("copy").addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(location.href); $("copy").textContent = "copied"; }
    catch (e) { prompt("Copy this link:", location.href); }
    setTimeout(() => { $("copy").textContent = "copy link"; }, 1500);
  });
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => showView(b.dataset.view));
    b.addEventListener("keydown", (e) => {
      const tabs = [...document.querySelectorAll("#tabs button")], i = tabs.indexOf(b);
      const j = e.key === "ArrowRight" ? i + 1 : e.key === "ArrowLeft" ? i - 1 : -1;
      if (j >= 0 && j < tabs.length) { tabs[j].focus(); showView(tabs[j].dataset.view); }
    });
  }
  $("fn-filter").addEventListener("input", (e) => { S.q = e.target.value; writeState(); renderTable(); });
  $("fn-name").addEventListener("change", (e) => focusFunction(e.target.value));
  $("f-fn").addEventListener("keydown", (e) => { if (e.key === "Enter") focusFunction(e.target.value.trim()); });
  $("f-fn").addEventListener("change", (e) => { if (e.target.value.trim()) focusFunction(e.target.value.trim()); });
  $("fg-reset").addEventListener("click", () => fg.reset());
  $("skip").addEventListener("click", (e) => { e.preventDefault(); showView("flame"); $("fg").focus(); });
  $("fg-orient").addEventListener("click", () => {
    S.icicle = S.icicle === "1" ? "" : "1";
    writeState();
    $("fg-orient").classList.toggle("on", S.icicle === "1");
    fg.setIcicle(S.icicle === "1");
  });
  $("fg-widths").addEventListener("change", (e) => fg.setWidthMode(e.target.value));
  $("fg-focus").addEventListener("click", () => focusSelected());
  $("fg").addEventListener("keydown", (e) => { if (e.key === "f") focusSelected(); });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && document.activeElement === document.body) fg.reset();
  });
  let rt = 0;
  window.addEventListener("resize", () => {
    clearTimeout(rt);
    rt = setTimeout(() => { fg.draw(); drawTimeline(); if (cl.t) { cl.draw(); ce.draw(); } }, 100);
  });
}
// Filters are chips: a filter in use (or just added with "add filter") is
// shown with its box and a × that removes it; the others are hidden.
const openChips = new Set();
function syncChips() {
  for (const inp of document.querySelectorAll("#filters label.chip input")) {
    const shown = !!inp.value || openChips.has(inp.id);
    inp.closest("label").classList.toggle("shown", shown);
  }
}
function wireChips() {
  $("add-filter").addEventListener("change", (e) => {
    const id = e.target.value;
    e.target.value = "";
    if (!id) return;
    openChips.add(id);
    syncChips();
    $(id).focus();
  });
  for (const inp of document.querySelectorAll("#filters label.chip input")) {
    inp.addEventListener("blur", () => { if (!inp.value) { openChips.delete(inp.id); syncChips(); } });
    inp.closest("label").querySelector(".chip-x").addEventListener("click", (e) => {
      e.preventDefault();
      openChips.delete(inp.id);
      inp.value = "";
      const k = inp.id.slice(2);
      if (k === "highlight") { S.hl = ""; writeState(); highlight(); }
      else if (k === "fn") { S.fn = ""; writeState(); }
      else applyFilter(k, inp);
      syncChips();
    });
  }
}
function applyFilter(k, inp) {
  const v = inp.value;
  inp.classList.remove("bad");
  if (v && k === "trace" && !TRACE_RE.test(v)) { inp.classList.add("bad"); return; }
  if (v) { try { new RegExp(v); } catch (e) { inp.classList.add("bad"); return; } }
  if (S[k] !== v) set({ [k]: v, zoom: "" });
}

function showView(v) {
  if (!["flame", "functions", "focus", "source"].includes(v)) v = "flame";
  S.view = v === "flame" ? "" : v;
  writeState();
  for (const b of document.querySelectorAll("#tabs button")) {
    const on = b.dataset.view === v;
    b.setAttribute("aria-selected", String(on));
    b.tabIndex = on ? 0 : -1;
    $("view-" + b.dataset.view).hidden = !on;
  }
  if (v === "flame") fg.draw();
  if (v === "focus") loadFocus();
  if (v === "source") loadSource();
  if (v === "functions") renderTable();
}

// ------------------------------------------------------------------ flame graph
const fg = new HsFlame.FlameGraph({
  canvas: $("fg"), wrap: $("fg-wrap"), spacer: $("fg-spacer"), tip: $("tip"),
  maxHeight: () => Math.max(window.innerHeight - $("fg-wrap").getBoundingClientRect().top - 40, 260),
  onZoom: (i) => { renderCrumbs(i); S.zoom = i ? fg.path(i).slice(1).map((j) => fg.name(j)).join(";") : ""; writeState(); },
  onHover: (i) => {
    const st = $("fg-status");
    if (i < 0 || !fg.t) { st.innerHTML = "&nbsp;"; return; }
    const t = fg.t, u = fg.unit;
    st.textContent = fg.label(i) + " — total " + fv(t.total[i], u) + " (" + pct(t.total[i], fg.grand) + "), self " +
      fv(t.self[i], u) + (t.diff ? ", base " + fv(t.base[i], u) + ", delta " + signed(t.total[i] - t.base[i], u) : "");
  },
});
function renderCrumbs(i) {
  const nav = $("crumbs");
  nav.textContent = "";
  if (!fg.t || i <= 0) return;
  const path = fg.path(i);
  path.forEach((j, k) => {
    if (k) nav.append(Object.assign(document.createElement("span"), { className: "sep", textContent: "›" }));
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = fg.name(j);
    b.title = fg.name(j);
    b.addEventListener("click", () => fg.zoom(j));
    nav.append(b);
  });
}
function zoomToPath(names) {
  const t = fg.t;
  let i = 0;
  for (const nm of names) {
    let found = -1;
    for (let c = i + 1; c < t.endOf[i]; c = t.endOf[c]) if (fg.name(c) === nm) { found = c; break; }
    if (found < 0) break;
    i = found;
  }
  if (i) fg.zoom(i);
}
function highlight() {
  const inp = $("f-highlight"), out = $("share");
  inp.classList.remove("bad");
  if (!fg.t) return;
  if (!S.hl) { fg.search(null); out.textContent = filterShareText; return; }
  let re;
  try { re = new RegExp(S.hl); } catch (e) { inp.classList.add("bad"); return; }
  const r = fg.search(re), u = fg.unit;
  let txt = r.count ? `highlight: ${r.count} frames, ${fv(r.value, u)} (${pct(r.value, fg.grand)})` : "highlight: no match";
  if (fg.t.diff && r.count) txt += `, base ${fv(r.base, u)} (${pct(r.base, fg.grandBase)})`;
  out.textContent = (filterShareText ? filterShareText + " · " : "") + txt;
}
function focusSelected() {
  const i = fg.selected >= 0 ? fg.selected : fg.zoomNode;
  if (i > 0 && !fg.t.other[i]) focusFunction(fg.name(i));
}

// ------------------------------------------------------------------ data
let cur = null;          // the last flame graph / diff answer
let funcs = [];          // rows of the function table
let filterShareText = "";
let generation = 0;      // drops answers of superseded refreshes

// The flame graph (or diff) query of the current state, and its request
// (failures are kept in the promise, not thrown here).
function mainQuery() {
  const diff = comparing(), p = baseParams({ withBase: diff });
  if (!diff) p.set("max_nodes", S.nodes || "20000");
  const endpoint = diff ? "diff" : "flamegraph";
  return { endpoint, p, key: endpoint + "?" + p.toString() };
}
function mainRequest() {
  const q = mainQuery(), answer = api(q.endpoint, q.p);
  answer.catch(() => {});
  return { key: q.key, answer };
}

async function refresh() {
  const gen = ++generation;
  pinnedNow = Math.floor(Date.now() / 1000);
  errors = [];
  showErrors();
  $("notice").hidden = true;
  $("notice").textContent = "";
  document.body.dataset.hsState = "loading";
  syncControls();
  try {
    // A link names its service and type: ask for the graph while the
    // selectors load, and use the answer if they changed nothing.
    const bad = badTimes();
    const early = S.service && S.type && !bad.length ? mainRequest() : null;
    await loadSelectors();
    if (gen !== generation) return;
    syncControls();
    if (bad.length) throw new AskedError(bad.join("\n"));
    const diff = comparing();
    $("download").href = "api/v1/profile?" + baseParams().toString();
    const series = loadTimeline().catch((e) => report(e));
    let req = early;
    if (!req || req.key !== mainQuery().key) req = mainRequest();
    const main = await req.answer;
    if (gen !== generation) return;
    cur = main;
    $("fg-status").innerHTML = "&nbsp;";
    const tree = HsFlame.fromServer(main);
    const unit = main.unit || "";
    fg.setTree(tree, {
      unit, rootName: "all",   // the root's name in `hotspur flame` files too
      total: diff ? (main.new && main.new.total) || tree.total[0] : (main.unfiltered || main.total || tree.total[0]),
      baseTotal: diff ? (main.base && main.base.total) || tree.base[0] : 0,
    });
    fg.setIcicle(S.icicle === "1");
    // the time from navigation to a drawn flame graph (bench/web_ui.sh)
    if (!performance.getEntriesByName("hs-flame-drawn").length) performance.mark("hs-flame-drawn");
    $("fg-widths-box").hidden = !diff;
    $("fg-widths").value = "max";
    if (S.zoom) zoomToPath(S.zoom.split(";"));
    else renderCrumbs(0);
    renderSummary(main, tree, diff);
    if (diff) {
      funcs = (main.functions || []).map((f) => ({ ...f, d_self: f.self_new - f.self_base, d_total: f.total_new - f.total_base }));
    } else {
      const fp = baseParams();
      const fr = await api("functions", fp);
      if (gen !== generation) return;
      funcs = fr.functions || [];
    }
    renderLegend(main, diff);
    fg.setSignificant(null);
    filterShare(main, diff);
    highlight();
    const names = $("fn-names");
    names.textContent = "";
    for (const f of funcs.slice(0, 500)) names.append(new Option(f.name));
    showView(S.view || "flame");
    await series;
    if (diff && gen === generation) await loadSignificance(gen, main);
    const shown = diff ? (main.new ? main.new.profiles : main.profiles) : main.profiles;
    if (gen !== generation) return;
    if (shown === 0) await offerRange(gen);
    if (gen === generation) document.body.dataset.hsState = shown === 0 ? "empty" : "ready";
  } catch (e) {
    if (gen !== generation) return;
    report(e);
    if (e.status === 401) { $("auth").hidden = false; $("token").focus(); }
    document.body.dataset.hsState = "error";
  }
}
// An empty range: say so, and offer the same span ending where the
// selection's latest profiles are (found with two /series requests: the
// last day with profiles in the last 90, then its last minute).
async function offerRange(gen) {
  const box = $("notice"), [from, until] = range();
  const when = (t) => new Date(t * 1000).toLocaleString();
  box.hidden = false;
  box.textContent = `No profiles of ${S.service} in this range (${S.type}, ${when(from)} to ${when(until)}` +
    `${S.version.length ? ", version " + S.version.join(", ") : ""}${S.label.length ? ", " + S.label.join(", ") : ""}). `;
  const last = async (a, b, step) => {
    const p = baseParams({ filters: false });
    p.set("from", String(a)); p.set("until", String(b)); p.set("step", String(step));
    const pts = (await api("series", p)).points || [];
    return pts.length ? pts[pts.length - 1][0] : -1;
  };
  try {
    const now = nowS() + 1, day = await last(now - 90 * 86400, now, 86400);
    if (gen !== generation) return;
    if (day < 0) { box.append("There are none in the last 90 days either: choose another version, label or service."); return; }
    const minute = await last(day, Math.min(day + 86400, now), 60);
    if (gen !== generation || minute < 0) return;
    const end = minute + 60, span = until - from;
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = `show the ${fmtSpan(span)} ending ${when(end)}, where the latest are`;
    b.addEventListener("click", () => set({ end: String(end), from: "", until: "", span: S.from && S.until ? String(span) : S.span, zoom: "" }));
    box.append(b);
  } catch (e) { report(e); }
}
function fmtSpan(s) {
  for (const [n, u] of [[604800, "week"], [86400, "day"], [3600, "hour"], [60, "minute"]])
    if (s >= n && s % n === 0) return plural(s / n, u).replace(/^1 /, "");
  return plural(s, "second");
}
function report(e) {
  errors.push(e instanceof ApiError ? e.message : "error: " + (e && e.message ? e.message : e));
  showErrors();
  if (!(e instanceof ApiError)) console.error(e);
}

function renderSummary(d, tree, diff) {
  const u = d.unit || "", agg = d.agg === "avg" ? " (average per profile)" : "";
  $("agg").value = d.agg === "avg" ? "avg" : "sum";   // what is shown, chosen or the server's default
  const note = $("agg-note");
  note.textContent = "";
  if (!S.agg && d.agg === "avg") {
    const nn = diff && d.new ? d.new.profiles : d.profiles, nb = diff && d.base ? d.base.profiles : nn;
    note.textContent = nn !== nb
      ? `Compared per profile (average per profile): the sides have ${plural(nn, "profile")} and ${nb}. Choose “sum” to add them up.`
      : "In-use figures are levels: the profiles are averaged, not added. Choose “sum” to add them up.";
  }
  const el = $("summary");
  const st = `${d.sample_type || ""}${u ? " (" + u + ")" : ""}`;
  if (!diff) {
    el.innerHTML = `<span class="num" id="profiles" data-value="${d.profiles}">${d.profiles}</span> ${d.profiles === 1 ? "profile" : "profiles"} merged · ` +
      `${esc(st)} total <span class="num" id="root-total" data-value="${tree.total[0]}">${esc(fv(tree.total[0], u))}</span>${agg}`;
    return;
  }
  const nw = d.new || { profiles: d.profiles, total: tree.total[0] }, bs = d.base || { profiles: 0, total: tree.base[0] };
  const delta = tree.total[0] - tree.base[0], cls = delta > 0 ? "grew" : delta < 0 ? "shrank" : "";
  el.innerHTML = `${esc(st)}${agg}: new <span class="num" id="root-total" data-value="${tree.total[0]}">${esc(fv(tree.total[0], u))}</span>` +
    ` (<span id="profiles" data-value="${nw.profiles}">${nw.profiles}</span> ${nw.profiles === 1 ? "profile" : "profiles"}) vs base <span class="num" id="base-total" data-value="${tree.base[0]}">${esc(fv(tree.base[0], u))}</span>` +
    ` (${plural(bs.profiles, "profile")}): <span class="num ${cls}" id="root-delta" data-value="${delta}">${esc(signed(delta, u))}</span>` +
    (tree.base[0] ? ` (${delta >= 0 ? "+" : ""}${pct(delta, tree.base[0])})` : "");
}
// A compare of 2..32 windows a side: ask the diff again with
// significance=1 (a merge per window, seconds on large profiles: after the
// first draw), then mark the table and outline the graph.
async function loadSignificance(gen, main) {
  const nn = main.new ? main.new.profiles : 0, nb = main.base ? main.base.profiles : 0;
  if (nn < 2 || nb < 2 || nn > 32 || nb > 32) return;
  const q = mainQuery();
  q.p.set("significance", "1");
  $("legend").append(" · significance across windows: computing…");
  let d;
  try { d = await api(q.endpoint, q.p); } catch (e) { report(e); return; }
  if (gen !== generation || !d.significance) return;
  const p = new Map((d.functions || []).map((f) => [f.name, f.p]));
  for (const f of funcs) if (p.has(f.name)) f.p = p.get(f.name);
  cur.significance = d.significance;
  renderLegend(cur, true);
  fg.setSignificant(new Set(funcs.filter((f) => f.p < SIG_P).map((f) => f.name)));
  if (S.view === "functions") renderTable();
}
// The smallest two-sided p the Mann-Whitney test can give for m and n
// windows: every window of one side above every one of the other.
function minP(m, n) {
  let c = 1;
  for (let k = 1; k <= Math.min(m, n); k++) c = c * (m + n - k + 1) / k;
  return 2 / c;
}
function renderLegend(d, diff) {
  $("legend").innerHTML = diff
    ? '<span class="grew">■</span> grew <span class="shrank">■</span> shrank (colour by change of total);' +
      ' “(gone)”: only in the base, “(new)”: only in the new side' +
      (!d.significance ? "" : minP(d.significance.base_windows, d.significance.new_windows) < SIG_P
        ? `; <span class="sig-key">▭</span> outlined: changed significantly across the ` +
          `${d.significance.base_windows} and ${d.significance.new_windows} windows (Mann–Whitney, p &lt; ${SIG_P})`
        : `; ${d.significance.base_windows} and ${d.significance.new_windows} windows are too few to tell a ` +
          "significant change (4 a side are needed)")
    : (d.nodes && d.nodes.length >= 20000 ? "small frames folded into “other”" : "");
}

// With a filter, the share of what it keeps (matched of total, as the API
// reports it): of this selection and, in a compare, of the base ("before")
// and the new side ("after").
function filterShare(d, diff) {
  filterShareText = "";
  if (FILTERS.some((k) => S[k])) {
    const u = d.unit || "";
    const one = (kept, all) => `${pct(kept, all)} (${fv(kept, u)} of ${fv(all, u)})`;
    if (diff && d.base && d.new) {
      filterShareText = `filters keep: base ${one(d.base.matched, d.base.total)} → new ${one(d.new.matched, d.new.total)}`;
    } else {
      filterShareText = `filters keep ${one(d.matched, d.unfiltered || d.total)}`;
    }
  }
  $("share").textContent = filterShareText;
}

// ------------------------------------------------------------------ timeline
// The totals of the selection over the whole span (one bar per step), a
// time axis along the bottom, the value axis (0, half and max gridlines,
// labelled on the left), each version's span as a band along the top, and
// a readout of the bar under the mouse. Drag to narrow the range.
let points = [], tlStep = 60, drag = null, tlVersions = [], tlHover = -1;
const TL_TOP = 12, TL_BOTTOM = 14;        // version bands above, time axis below
const VERSION_COLOURS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
async function loadTimeline() {
  // always the whole span; a range dragged on it is drawn as a selection
  const span0 = spanSeconds(), end = S.end ? +S.end : nowS() + 1;
  const from = end - span0, until = end;
  const span = until - from;
  tlStep = Math.max(10, Math.ceil(span / 120));
  const params = () => {
    const p = baseParams({ filters: false });   // totals of the selection, as stored
    p.set("from", String(from));
    p.set("until", String(until));
    p.set("step", String(tlStep));
    return p;
  };
  const r = await api("series", params());
  points = r.points || [];
  tlRange = [from, until];
  tlUnit = r.unit || "";
  tlVersions = [];
  drawTimeline();
  // each version's span: the versions chosen, else all (at most 8)
  let vs = S.version.length ? S.version.slice() : [...$("versions").options].map((o) => o.value);
  if (comparing() && S.cmp === "version") for (const v of S.base_version) if (!vs.includes(v)) vs.push(v);
  vs = vs.slice(0, 8);
  if (vs.length < 2 && !S.version.length) return;
  const spans = await Promise.all(vs.map(async (v) => {
    const p = params();
    p.delete("version");
    p.delete("agg");
    p.append("version", v);
    const pts = (await api("series", p)).points || [];
    return pts.length ? { version: v, from: pts[0][0], until: Math.min(pts[pts.length - 1][0] + tlStep, until) } : null;
  }));
  tlVersions = spans.filter(Boolean);
  drawTimeline();
}
let tlRange = [0, 1], tlUnit = "";
// Tick times for [a, b): a round step giving at most about 8 ticks.
function timeTicks(a, b, W) {
  const steps = [10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
  const want = Math.max(2, Math.min(8, Math.floor(W / 110)));
  const step = steps.find((s) => (b - a) / s <= want) || 604800;
  const off = new Date(a * 1000).getTimezoneOffset() * 60;   // round in local time
  const out = [];
  for (let t = Math.ceil((a - off) / step) * step + off; t < b; t += step) out.push(t);
  return { step, ticks: out };
}
function tickLabel(t, step) {
  const d = new Date(t * 1000), z = (n) => String(n).padStart(2, "0");
  const hm = `${z(d.getHours())}:${z(d.getMinutes())}` + (step < 60 ? `:${z(d.getSeconds())}` : "");
  return step >= 86400 ? `${d.getMonth() + 1}/${d.getDate()}` : (d.getHours() === 0 && d.getMinutes() === 0 && step >= 3600 ? `${d.getMonth() + 1}/${d.getDate()} ` : "") + hm;
}
let tlDrawn = { ticks: [], versions: [] };
function drawTimeline() {
  const c = $("timeline"), ctx = c.getContext("2d"), dpr = window.devicePixelRatio || 1;
  const W = c.clientWidth, H = c.clientHeight;
  c.width = Math.round(W * dpr); c.height = Math.round(H * dpr);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, W, H);
  const [a, b] = tlRange, xs = (t) => (t - a) / (b - a) * W;
  const y0 = H - TL_BOTTOM, plotH = y0 - TL_TOP - 2;
  let max = 0;
  for (const q of points) max = Math.max(max, q[1]);
  ctx.font = "10px system-ui, sans-serif";
  // value axis: gridlines at half and max
  ctx.strokeStyle = "#eee";
  ctx.lineWidth = 1;
  for (const f of [0.5, 1]) { const y = Math.round(y0 - f * plotH) + 0.5; ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(W, y); ctx.stroke(); }
  // the bars
  const bw = Math.max(tlStep / (b - a) * W - 1, 1);
  points.forEach((q, k) => {
    const h = max ? q[1] / max * plotH : 0;
    ctx.fillStyle = k === tlHover ? "#b3541e" : "#e07b39";
    ctx.fillRect(xs(q[0]), y0 - h, bw, h);
  });
  // time axis
  ctx.strokeStyle = "#999";
  ctx.beginPath(); ctx.moveTo(0, y0 + 0.5); ctx.lineTo(W, y0 + 0.5); ctx.stroke();
  const { step, ticks } = timeTicks(a, b, W);
  ctx.fillStyle = "#666";
  ctx.textBaseline = "top";
  for (const t of ticks) {
    const x = Math.round(xs(t)) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y0 + 3); ctx.stroke();
    const lab = tickLabel(t, step), w = ctx.measureText(lab).width;
    ctx.fillText(lab, Math.min(Math.max(x - w / 2, 0), W - w), y0 + 3);
  }
  // value labels on the left, over the plot
  ctx.textBaseline = "middle";
  if (max) {
    for (const f of [0.5, 1]) {
      const lab = fv(max * f, tlUnit), y = y0 - f * plotH;
      ctx.fillStyle = "rgba(255,255,255,0.8)";
      ctx.fillRect(1, y - 6, ctx.measureText(lab).width + 4, 12);
      ctx.fillStyle = "#666";
      ctx.fillText(lab, 3, y);
    }
  }
  // each version's span along the top
  tlVersions.forEach((v, k) => {
    const x1 = Math.max(xs(v.from), 0), x2 = Math.min(xs(v.until), W);
    ctx.fillStyle = VERSION_COLOURS[k % VERSION_COLOURS.length];
    ctx.globalAlpha = 0.75;
    ctx.fillRect(x1, 1, Math.max(x2 - x1, 2), TL_TOP - 3);
    ctx.globalAlpha = 1;
    const lab = "v" + v.version;
    if (x2 - x1 > ctx.measureText(lab).width + 4) { ctx.fillStyle = "#fff"; ctx.fillText(lab, x1 + 2, 1 + (TL_TOP - 3) / 2); }
  });
  // the narrowed range, or the drag in progress
  let sel = null;
  if (drag) sel = [Math.min(drag.x0, drag.x1), Math.max(drag.x0, drag.x1)];
  else if (S.from && S.until) sel = [xs(+S.from), xs(+S.until)];
  if (sel) {
    ctx.fillStyle = "rgba(125,60,152,0.18)";
    ctx.fillRect(sel[0], 0, sel[1] - sel[0], H);
  }
  tlDrawn = { ticks: ticks.map((t) => ({ t, x: xs(t), label: tickLabel(t, step) })), max,
    versions: tlVersions.map((v) => ({ ...v, x: xs(v.from), width: xs(v.until) - xs(v.from) })) };
}
function tlReadout(k) {
  const out = $("tl-readout");
  if (k < 0) { out.textContent = "drag across the timeline to narrow the range"; return; }
  const q = points[k], when = (t) => new Date(t * 1000).toLocaleTimeString();
  const vs = tlVersions.filter((v) => q[0] < v.until && q[0] + tlStep > v.from).map((v) => v.version);
  out.textContent = `${new Date(q[0] * 1000).toLocaleDateString()} ${when(q[0])}–${when(q[0] + tlStep)}: ` +
    `${fv(q[1], tlUnit)} in ${plural(q[2], "profile")}${vs.length ? " · version " + vs.join(", ") : ""}`;
}
function wireTimeline() {
  const c = $("timeline");
  const x = (e) => e.clientX - c.getBoundingClientRect().left;
  c.addEventListener("mousedown", (e) => { drag = { x0: x(e), x1: x(e) }; drawTimeline(); });
  c.addEventListener("mousemove", (e) => {
    if (drag) { drag.x1 = x(e); drawTimeline(); return; }
    const [a, b] = tlRange, t = a + x(e) / c.clientWidth * (b - a);
    const k = points.findIndex((p) => t >= p[0] && t < p[0] + tlStep);
    if (k !== tlHover) { tlHover = k; drawTimeline(); }
    tlReadout(k);
  });
  c.addEventListener("mouseleave", () => { tlHover = -1; drawTimeline(); tlReadout(-1); });
  window.addEventListener("mouseup", () => {
    if (!drag) return;
    const d = drag;
    drag = null;
    const [a, b] = tlRange, W = c.clientWidth;
    const lo = Math.min(d.x0, d.x1), hi = Math.max(d.x0, d.x1);
    if (hi - lo < 3) { drawTimeline(); return; }
    const from = Math.floor(a + lo / W * (b - a)), until = Math.ceil(a + hi / W * (b - a));
    set({ from: String(from), until: String(until), zoom: "" });
  });
}

// ------------------------------------------------------------------ function table
const COLS = [
  { key: "name", label: "function" }, { key: "file", label: "file", cls: "file" },
  { key: "self", label: "self" }, { key: "self_pct", label: "self %", of: "self" },
  { key: "total", label: "total" }, { key: "total_pct", label: "total %", of: "total" },
];
const DCOLS = [
  { key: "name", label: "function" }, { key: "self_base", label: "self base" }, { key: "self_new", label: "self new" },
  { key: "d_self", label: "self delta", signed: true }, { key: "total_base", label: "total base" },
  { key: "total_new", label: "total new" }, { key: "d_total", label: "total delta", signed: true },
  { key: "d_pct", label: "delta %", of: "d_total" },
  { key: "p", label: "significant", sig: true },
];
const SIG_P = 0.05;   // a change with p below this across windows is marked
function renderTable() {
  const diff = !!(cur && cur.nodes && cur.nodes.length && cur.nodes[0].length >= 6);
  const sig = !!(cur && cur.significance);
  const cols = (diff ? DCOLS : COLS).filter((c) => !c.sig || sig), unit = (cur && cur.unit) || "";
  let [key, dir] = (S.sort || "").split(":");
  if (!cols.some((c) => c.key === key)) { key = diff ? "d_self" : "total"; dir = ""; }
  const thead = $("fn-table").tHead;
  thead.textContent = "";
  const tr = thead.insertRow();
  for (const c of cols) {
    const th = document.createElement("th");
    if (c.cls) th.className = c.cls;
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = c.label;
    b.dataset.key = c.key;
    if (c.key === key) b.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    b.addEventListener("click", () => {
      const k = c.of || c.key;
      S.sort = k === key && dir !== "asc" ? k + ":asc" : k;
      writeState();
      renderTable();
    });
    th.append(b);
    tr.append(th);
  }
  let rows = funcs;
  if (S.q) {
    let test;
    const m = /^\/(.*)\/$/.exec(S.q);
    if (m) { try { const re = new RegExp(m[1]); test = (n) => re.test(n); } catch (e) { test = () => false; } }
    else { const q = S.q.toLowerCase(); test = (n) => n.toLowerCase().includes(q); }
    rows = rows.filter((f) => test(f.name));
  }
  const num = (f, k) => (k === "name" || k === "file") ? null : +f[k] || 0;
  const sk = key;
  rows = rows.slice().sort((a, b) => {
    let r;
    if (sk === "name" || sk === "file") r = String(a[sk] || "").localeCompare(String(b[sk] || ""));
    else if (sk === "p") r = (a.p ?? 1) - (b.p ?? 1);
    else if (diff && sk.startsWith("d_")) r = Math.abs(num(b, sk)) - Math.abs(num(a, sk)) ||
      Math.abs(b.d_total) - Math.abs(a.d_total);
    else r = num(b, sk) - num(a, sk);
    return dir === "asc" ? -r : r;
  });
  const body = $("fn-table").tBodies[0];
  body.textContent = "";
  const grand = diff ? (fg.grand || 1) : (cur && (cur.unfiltered || cur.total)) || fg.grand || 1;
  const shown = rows.slice(0, 3000), frag = document.createDocumentFragment();
  for (const f of shown) {
    const r = document.createElement("tr");
    r.tabIndex = 0;
    r.dataset.name = f.name;
    if (f.name === S.fn) r.className = "sel";
    for (const c of cols) {
      const td = document.createElement("td");
      if (c.key === "name") td.textContent = f.name;
      else if (c.key === "file") { td.textContent = f.file || ""; td.className = "file"; }
      else if (c.key === "self_pct") td.textContent = pct(f.self, grand);
      else if (c.key === "total_pct") td.textContent = pct(f.total, grand);
      else if (c.key === "p") {
        const on = f.p < SIG_P;
        td.textContent = (on ? "✓ " : "") + "p=" + (f.p < 0.001 ? "<0.001" : (+f.p).toFixed(3));
        td.className = on ? "sig" : "muted";
        td.dataset.value = String(f.p);
        td.title = "Mann–Whitney U test of this function's share of each window, base windows against new ones";
      } else if (c.key === "d_pct") td.textContent = !f.total_new && f.total_base ? "gone" : !f.total_base && f.total_new ? "new"
        : f.total_base ? (f.d_total >= 0 ? "+" : "") + pct(f.d_total, f.total_base) : "";
      else {
        const v = +f[c.key] || 0;
        td.textContent = c.signed ? signed(v, unit) : fv(v, unit);
        td.dataset.value = String(v);
        if (c.signed) td.className = v > 0 ? "grew" : v < 0 ? "shrank" : "";
      }
      td.dataset.col = c.key;
      r.append(td);
    }
    r.addEventListener("click", () => focusFunction(f.name));
    r.addEventListener("keydown", (e) => {
      if (e.key === "Enter") focusFunction(f.name);
      if (e.key === "ArrowDown" && r.nextElementSibling) { e.preventDefault(); r.nextElementSibling.focus(); }
      if (e.key === "ArrowUp" && r.previousElementSibling) { e.preventDefault(); r.previousElementSibling.focus(); }
    });
    frag.append(r);
  }
  body.append(frag);
  $("fn-count").textContent = `${rows.length} of ${funcs.length} functions` + (rows.length > shown.length ? ` (first ${shown.length} shown)` : "") +
    " · click or Enter: callers/callees";
}

// ------------------------------------------------------------------ callers / callees
const cl = new HsFlame.FlameGraph({ canvas: $("cl"), wrap: $("cl-wrap"), spacer: $("cl-spacer"), tip: $("tip"),
  maxHeight: () => Math.max((window.innerHeight - 330) / 2, 140) });
const ce = new HsFlame.FlameGraph({ canvas: $("ce"), wrap: $("ce-wrap"), spacer: $("ce-spacer"), tip: $("tip"),
  icicle: true, maxHeight: () => Math.max((window.innerHeight - 330) / 2, 140) });
function focusFunction(name) {
  if (!name) return;
  S.fn = name;
  writeState();
  $("fn-name").value = name;
  $("f-fn").value = name;
  syncChips();
  showView("focus");
}
let focusKey = "";
async function loadFocus() {
  const name = S.fn, out = $("focus-summary");
  if (!name) { out.textContent = "choose a function in the Functions tab, or select a frame and press f"; return; }
  // in a compare, both sides (base_* parameters); filters apply to both
  const diff = comparing(), p = baseParams({ withBase: diff });
  p.set("function", name);
  p.set("max_nodes", "20000");
  const key = "sandwich?" + p.toString();
  if (key === focusKey && cl.t) { cl.draw(); ce.draw(); return; }
  out.textContent = "loading…";
  try {
    // the server merges every stack through the function (analysis/sandwich.c)
    const d = await api("sandwich", p);
    const sw = d.sandwich, callers = HsFlame.fromServer(d.callers), callees = HsFlame.fromServer(d.callees);
    focusKey = key;
    const unit = d.unit || "";
    const grand = diff ? (d.new && d.new.total) || 0 : d.total || 0;
    const grandBase = diff ? (d.base && d.base.total) || 0 : 0;
    const opts = { unit, total: grand, baseTotal: grandBase, rootName: name };
    cl.setTree(callers, opts);
    ce.setTree(callees, opts);
    let h = `<b>${esc(name)}</b>: total <span id="focus-total" data-value="${sw.total}">${esc(fv(sw.total, unit))}</span>` +
      ` (${pct(sw.total, grand)}), self <span id="focus-self" data-value="${sw.self}">${esc(fv(sw.self, unit))}</span>` +
      ` (${pct(sw.self, grand)})`;
    if (diff) {
      const dt = sw.total - sw.base_total, cls = dt > 0 ? "grew" : dt < 0 ? "shrank" : "";
      h += ` · base total ${esc(fv(sw.base_total, unit))}, change <span id="focus-delta" class="${cls}" data-value="${dt}">${esc(signed(dt, unit))}</span>`;
    }
    out.innerHTML = h + ` · ${plural(d.callers.count, "caller")}, ${plural(d.callees.count, "callee")}`;
  } catch (e) {
    out.textContent = "";
    report(e);
  }
}

// ------------------------------------------------------------------ source
async function loadSource() {
  const box = $("source"), name = S.fn;
  if (!name) {
    box.innerHTML = '<div class="note">Choose a function (Functions tab, or a frame and f) to see its source.</div>';
    return;
  }
  const p = baseParams();
  p.set("function", name);
  box.textContent = "loading…";
  let d;
  try {
    d = await api("source", p, { quiet: true });
  } catch (e) {
    const noPath = /source.path|source-path/i.test(e.message);
    box.innerHTML = `<div class="note" id="source-note">${noPath
      ? "This server has no source directory: start it with <code>hotspur serve --source-path DIR</code> " +
        "(or <code>hotspur web --source-path DIR</code>) to see source lines with their self and total values."
      : "No source for <b>" + esc(name) + "</b>."}<br><span class="muted">${esc(e.message)}</span></div>`;
    return;
  }
  const unit = d.unit || (cur && cur.unit) || "";
  const files = d.files || [d];
  box.textContent = "";
  for (const f of files) {
    const h = document.createElement("h2");
    h.className = "pane-title";
    h.textContent = `${f.function || name} — ${f.file || ""}`;
    box.append(h);
    const tab = document.createElement("table");
    tab.innerHTML = "<thead><tr><th>self</th><th>total</th><th>line</th><th class=code></th></tr></thead>";
    const tb = tab.createTBody();
    for (const l of f.lines || []) {
      const r = tb.insertRow();
      if (l.self || l.total) r.className = "hot";
      r.dataset.line = String(l.line);
      for (const [v, cls, raw] of [[l.self ? fv(l.self, unit) : ".", "self", l.self], [l.total ? fv(l.total, unit) : ".", "total", l.total],
        [String(l.line), "line"], [l.text || "", "code"]]) {
        const td = r.insertCell();
        td.textContent = v;
        td.className = cls;
        if (raw !== undefined) td.dataset.value = String(raw || 0);
      }
    }
    if (!f.found) {
      const note = document.createElement("p");
      note.className = "muted";
      note.textContent = `${f.file || "the file"} is not under the server's --source-path: only the sampled lines are listed.`;
      box.append(note);
    }
    box.append(tab);
  }
}

// ------------------------------------------------------------------ start
// For the browser tests: the graphs and the state (read-only use).
window.hsUI = { fg, cl, ce, state: () => S, timeline: () => tlDrawn };
wireControls();
wireChips();
wireTimeline();
window.addEventListener("popstate", () => { S = readState(); refresh(); });
refresh();
