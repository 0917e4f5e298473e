// sandwich.js — the callers/callees ("sandwich") view of one function, from
// a flame graph tree (flamegraph.js's format): every stack through the
// function is merged at it. Callees: the subtrees under its outermost
// occurrences, merged by name path. Callers: the stacks above those
// occurrences, read upwards from the function, merged the same way. An
// occurrence inside another one (recursion) is counted once, in the outer.
export function escapeRegex(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function child(n, name) {
  let c = n.kids.get(name);
  if (!c) { c = { name, total: 0, self: 0, kids: new Map(), children: [] }; n.kids.set(name, c); n.children.push(c); }
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
  const callers = { name: fname, total: 0, self: 0, kids: new Map(), children: [] };
  const callees = { name: fname, total: 0, self: 0, kids: new Map(), children: [] };
  let self = 0;
  for (let i = 1; i < t.N; i++) {
    if (t.other[i] || name(i) !== fname) continue;
    // self over every occurrence, recursive ones included
    self += t.self[i];
  }
  let i = 1;
  while (i < t.N) {
    if (t.other[i] || name(i) !== fname) { i++; continue; }
    const v = t.total[i];
    // callers: parent, grandparent, ... up to (not including) the root
    let n = callers;
    n.total += v;
    for (let p = t.parentOf[i]; p > 0; p = t.parentOf[p]) { n = child(n, name(p)); n.total += v; }
    n.self += v;            // the outermost caller: where these stacks start
    // callees: the subtree, merged at the function
    callees.total += v;
    callees.self += t.self[i];
    const todo = [[i, callees]];
    while (todo.length) {
      const [j, into] = todo.pop();
      for (let c = j + 1; c < t.endOf[j]; c = t.endOf[c]) {
        const m = child(into, t.other[c] ? "other" : name(c));
        m.total += t.total[c];
        m.self += t.self[c];
        if (t.other[c]) m.other = true;
        todo.push([c, m]);
      }
    }
    i = t.endOf[i];         // nested occurrences are already in this subtree
  }
  return { callers, callees, total: callees.total, self, callerCount: callers.children.length,
    calleeCount: callees.children.length, nodes: count(callers) + count(callees) };
}
