// sandwich.js — the callers/callees ("sandwich") view of one function, from
// a flame graph tree (flamegraph.js's format): every stack through the
// function is merged at it. Callees: the subtrees under its outermost
// occurrences, merged by name path. Callers: the stacks above those
// occurrences, read upwards from the function, merged the same way. An
// occurrence inside another one (recursion) is counted once, in the outer.
// A differential tree (t.diff) carries the base values along.
export function escapeRegex(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function node(name) {
  return { name, total: 0, self: 0, base: 0, selfBase: 0, kids: new Map(), children: [] };
}
function child(n, name) {
  let c = n.kids.get(name);
  if (!c) { c = node(name); n.kids.set(name, c); n.children.push(c); }
  return c;
}
function count(n) {
  let k = 0;
  const todo = [n];
  while (todo.length) { const x = todo.pop(); k++; for (const c of x.children) todo.push(c); }
  return k - 1;
}

export function sandwich(t, fname) {
  const name = (i) => t.names[t.nameOf[i]];
  const base = (i) => (t.diff ? t.base[i] : 0), selfBase = (i) => (t.diff ? t.selfBase[i] : 0);
  const callers = node(fname), callees = node(fname);
  let self = 0, selfB = 0;
  for (let i = 1; i < t.N; i++) {
    if (t.other[i] || name(i) !== fname) continue;
    // self over every occurrence, recursive ones included
    self += t.self[i];
    selfB += selfBase(i);
  }
  let i = 1;
  while (i < t.N) {
    if (t.other[i] || name(i) !== fname) { i++; continue; }
    const v = t.total[i], vb = base(i);
    // callers: parent, grandparent, ... up to (not including) the root
    let n = callers;
    n.total += v; n.base += vb;
    for (let p = t.parentOf[i]; p > 0; p = t.parentOf[p]) { n = child(n, name(p)); n.total += v; n.base += vb; }
    n.self += v;            // the outermost caller: where these stacks start
    n.selfBase += vb;
    // callees: the subtree, merged at the function
    callees.total += v; callees.base += vb;
    callees.self += t.self[i]; callees.selfBase += selfBase(i);
    const todo = [[i, callees]];
    while (todo.length) {
      const [j, into] = todo.pop();
      for (let c = j + 1; c < t.endOf[j]; c = t.endOf[c]) {
        const m = child(into, t.other[c] ? "other" : name(c));
        m.total += t.total[c]; m.self += t.self[c];
        m.base += base(c); m.selfBase += selfBase(c);
        if (t.other[c]) m.other = true;
        todo.push([c, m]);
      }
    }
    i = t.endOf[i];         // nested occurrences are already in this subtree
  }
  return { callers, callees, total: callees.total, self, base: callees.base, selfBase: selfB,
    callerCount: callers.children.length, calleeCount: callees.children.length,
    nodes: count(callers) + count(callees) };
}
