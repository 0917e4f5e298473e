# speedscope_types.sh — `convert --to speedscope` with several sample types
# writes one profile per type from one view build (the other types re-sum
# the default view's stacks, hs_view_at_index). Each profile must be what a
# view built at that index gives: the same as `--sample-index K` exports it
# (compared by frame names, as the frame tables differ), and its weights
# must sum to the type's total computed here from the values written.
# Profiles, written here as profile.proto by a small stdlib encoder:
#  - three types, one all zero, stacks repeated (merged), labelled samples
#    (merged by hash, not by the decoder's stack class), the default type in
#    the middle;
#  - a profile with one sample;
#  - negative values (as a diff writes): the view's stacks split by sign,
#    so the other type's view is built anew (test_analysis checks that
#    view itself; here its output must match);
# each at the default granularity, --lines, with --focus (dropped samples)
# and with several inputs merged.
source "$(dirname "$0")/lib.sh"

python3 - <<'PY'
import gzip, os, sys
sys.path.insert(0, os.environ["SRC"] + "/tests/integration")
from pbwire import ldelim as field, packed, vfield

def profile(path, types, samples, default=None):
    """types: [(type, unit)]; samples: [(stack of function names leaf first,
    [values], {label: value})]"""
    strings = [""]
    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)
    funcs, locs, body = {}, {}, b""
    for t, u in types:
        body += field(1, vfield(1, s(t)) + vfield(2, s(u)))
    for stack, values, labels in samples:
        ids = []
        for name in stack:
            if name not in funcs:
                funcs[name] = len(funcs) + 1
                locs[name] = len(locs) + 1
            ids.append(locs[name])
        sm = packed(1, ids) + packed(2, values)
        for k, v in labels.items():
            sm += field(3, vfield(1, s(k)) + vfield(2, s(v)))
        body += field(2, sm)
    for name, i in locs.items():
        line = field(4, vfield(1, funcs[name]) + vfield(2, 10 + i))
        body += field(4, vfield(1, i) + vfield(3, 0x1000 + 16 * i) + line)
    for name, i in funcs.items():
        body += field(5, vfield(1, i) + vfield(2, s(name)) + vfield(4, s("src/" + name + ".c")) +
                      vfield(5, 5 + i))
    if default:
        body += vfield(14, s(default))
    body = body + b"".join(field(6, x.encode()) for x in strings)
    with open(path, "wb") as f:
        f.write(gzip.compress(body))

a = ["leaf_a", "mid", "main"]
b = ["leaf_b", "mid", "main"]
c = ["leaf_c", "other", "main"]
types3 = [("alloc_objects", "count"), ("alloc_space", "bytes"), ("never", "count")]
profile("three.pb.gz", types3, [
    (a, [1, 100, 0], {}), (b, [2, 300, 0], {}), (a, [3, 50, 0], {}),
    (c, [0, 70, 0], {}), (b, [1, 10, 0], {"req": "x"}), (b, [4, 20, 0], {"req": "x"}),
    (c, [5, 0, 0], {"req": "y"}), (a, [1, 1, 0], {}),
], default="alloc_space")
profile("three2.pb.gz", types3, [(c, [7, 700, 0], {}), (a, [1, 2, 0], {"req": "x"})],
        default="alloc_space")
profile("one.pb.gz", [("samples", "count"), ("cpu", "nanoseconds")],
        [(a, [1, 10000000], {})])
profile("neg.pb.gz", [("samples", "count"), ("cpu", "nanoseconds")], [
    (a, [2, 20], {}), (a, [-1, -10], {}), (b, [1, 10], {}), (b, [3, -5], {}), (c, [1, 10], {}),
])
PY

check() { # OUT TOTALS... : OUT's profiles (per type) against --sample-index K exports
    python3 - "$@" <<'PY' || fail "$*: speedscope profiles differ from single-type exports"
import json, sys
multi = json.load(open(sys.argv[1]))
fr = multi["shared"]["frames"]
def paths(d, p):
    f = d["shared"]["frames"]
    return [(tuple(f[i]["name"] for i in s), w) for s, w in zip(p["samples"], p["weights"])]
assert multi["activeProfileIndex"] == int(sys.argv[2]), multi["activeProfileIndex"]
totals = [int(t) for t in sys.argv[3].split(",")]
assert len(multi["profiles"]) == len(totals), len(multi["profiles"])
for k, p in enumerate(multi["profiles"]):
    one = json.load(open(sys.argv[1] + "." + str(k)))
    assert len(one["profiles"]) == 1
    q = one["profiles"][0]
    assert (p["name"], p["unit"], p["endValue"]) == (q["name"], q["unit"], q["endValue"]), (k, p["name"], q["name"])
    assert paths(multi, p) == paths(one, q), (k, paths(multi, p), paths(one, q))
    assert sum(p["weights"]) == p["endValue"] == totals[k], (k, sum(p["weights"]), totals[k])
    assert all(w != 0 for w in p["weights"]), k
PY
}

run() { # NAME TYPES ACTIVE TOTALS OPTS... INPUTS
    local name=$1 nt=$2 active=$3 totals=$4
    shift 4
    "$HOTSPUR" convert "$@" --to speedscope -o $name.json
    for ((k = 0; k < nt; k++)); do
        "$HOTSPUR" convert --sample-index $k "$@" --to speedscope -o $name.json.$k
    done
    check $name.json $active $totals
}

# three types, the default (alloc_space, index 1) first in the view
run three 3 1 17,551,0 three.pb.gz
run three-lines 3 1 17,551,0 --lines three.pb.gz
# leaf_c's samples dropped: one by its stack class, one labelled
run three-focus 3 1 12,481,0 --focus mid three.pb.gz
run three-merged 3 1 25,1253,0 three.pb.gz three2.pb.gz
run one 2 1 1,10000000 one.pb.gz
# the all-zero type: a profile with no samples, endValue 0
python3 -c 'import json,sys; p=json.load(open("three.json"))["profiles"][2]; assert p["name"]=="never" and p["samples"]==[] and p["weights"]==[] and p["endValue"]==0, p' ||
    fail "the all-zero type is not an empty profile"
pass "several types, one all zero, merged stacks, labels, focus, merged inputs, one sample"

# negative values: a's and b's stacks are two each in the view (signs differ)
"$HOTSPUR" convert neg.pb.gz --to speedscope -o neg.json
for k in 0 1; do "$HOTSPUR" convert --sample-index $k neg.pb.gz --to speedscope -o neg.json.$k; done
python3 - <<'PY' || fail "negative values: profiles differ from single-type exports"
import json
m = json.load(open("neg.json"))
for k in (0, 1):
    one = json.load(open("neg.json." + str(k)))["profiles"][0]
    p = m["profiles"][k]
    names = lambda d, p: [tuple(d["shared"]["frames"][i]["name"] for i in s) for s in p["samples"]]
    assert names(m, p) == names(json.load(open("neg.json." + str(k))), one), k
    assert p["weights"] == one["weights"], (k, p["weights"], one["weights"])
assert sorted(m["profiles"][0]["weights"]) == [1, 1, 4], m["profiles"][0]["weights"]
assert sorted(m["profiles"][1]["weights"]) == [5, 10, 10], m["profiles"][1]["weights"]
PY
pass "negative values: each type grouped by its own signs"
