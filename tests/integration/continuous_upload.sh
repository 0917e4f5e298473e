# continuous_upload.sh — continuous mode against a recording stand-in
# collector: with HOTSPUR_PERIOD=2s and HOTSPUR_DURATION=1s a 6 s program
# uploads one window per 2 s period (3, or 4 when the last period's window
# opens just before exit), each window one profile of every enabled type,
# with the service (the program's name), version, labels and token asked
# for, a unique id per upload, from/until matching the profile's own
# time_nanos/duration_nanos, gzipped pprof bodies that `hotspur top` reads,
# and windows placed at a random point of their period. The frames of an
# upload are those `hotspur record` gives for the same program (function,
# file:line, inline frames).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

fake_start
t0=$(now)
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=2s HOTSPUR_DURATION=1s HOTSPUR_VERSION=v1.2 \
    HOTSPUR_LABELS='zone=eu-1,host=a b' HOTSPUR_TOKEN=s3cret HOTSPUR_HEAP=1 HOTSPUR_WALL_HZ=100 \
    HOTSPUR_LOCK=1 LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 3000 3000 >out 2>err ||
    fail "phases failed: $(cat err)"
t1=$(now)
[ "$(cat out)" = done ] || fail "program output: $(cat out)"
# All went well: the agent says nothing.
[ -z "$(agent_stderr err)" ] || fail "unexpected stderr: $(cat err)"
sleep 0.3 # the recorder may still be writing the last request
fake_summary >sum
cat sum
n=$(wc -l <sum)

# Every request: POST /api/v1/ingest, our metadata, gzipped body.
awk -F'\t' '$2 != "POST" || $3 != "/api/v1/ingest" || $8 != "phases" || $9 != "v1.2" ||
            $10 != "zone=eu-1,host=a b" || $11 != "Bearer s3cret" || $15 != 1 { print; bad = 1 }
            END { exit bad }' sum || fail "requests with wrong metadata (above)"
# Ids: 32 hex digits, all different.
awk -F'\t' 'length($7) != 32 || $7 ~ /[^0-9a-f]/ { bad = 1 } END { exit bad }' sum || fail "an id is not 128-bit hex"
[ "$(cut -f7 sum | sort -u | wc -l)" = "$n" ] || fail "ids are not unique"

# Windows: grouped by the profile's start; each has every type once.
cut -f13 sum | sort -un >starts
w=$(wc -l <starts)
[ "$w" -ge 3 ] && [ "$w" -le 4 ] || fail "$w windows in a 6 s run with 2 s periods (want 3 or 4)"
while read -r s; do
    types=$(awk -F'\t' -v s="$s" '$13 == s { print $4 }' sum | sort | tr '\n' ,)
    [ "$types" = "cpu,heap,lock,wall," ] || fail "window at $s has types $types"
done <starts
# from/until are time_nanos and time_nanos + duration_nanos, to the
# nanosecond (in Python: awk's doubles would round them).
env -u LD_PRELOAD python3 -c '
import sys
def ns(x):
    s, _, f = x.partition(".")
    return int(s) * 10**9 + int((f + "000000000")[:9])
bad = 0
for line in open("sum"):
    c = line.rstrip("\n").split("\t")
    if ns(c[4]) != int(c[12]) or ns(c[5]) != int(c[12]) + int(c[13]):
        print(line, end="")
        bad = 1
sys.exit(bad)' || fail "from/until are not the profiles' times to the nanosecond (above)"
# Each window is 1 s (the last may be cut short by the exit) and starts at
# a random point of its period: offset in [0, period - duration] = [0, 1] s
# from the period's start (the agent starts a few ms after t0).
i=0
offsets=()
while read -r s; do
    d=$(awk -F'\t' -v s="$s" '$13 == s { print $14; exit }' sum)
    off=$(awk -v s="$s" -v t0="$t0" -v i="$i" 'BEGIN { printf "%.3f\n", s / 1e9 - t0 - 2 * i }')
    echo "window $i: offset ${off} s in its period, ${d} ns"
    awk -v o="$off" 'BEGIN { exit !(o >= -0.01 && o <= 1.25) }' || fail "window $i starts ${off} s into its period"
    if [ "$i" -lt 3 ]; then
        awk -v d="$d" 'BEGIN { exit !(d >= 0.95e9 && d <= 1.3e9) }' || fail "window $i lasted $d ns, want 1 s"
    fi
    offsets+=("$off")
    i=$((i + 1))
done <starts
# Random, not fixed: three uniform draws in [0, 1] s agree within 10 ms
# with probability ~3e-4.
spread=$(printf '%s\n' "${offsets[@]:0:3}" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print hi - lo }')
awk -v s="$spread" 'BEGIN { exit !(s > 0.01) }' || fail "window offsets ${offsets[*]} are not random"

# Bodies are gzipped pprof of the right kind.
for t in cpu wall lock heap; do
    k=$(awk -F'\t' -v t="$t" '$4 == t { print $1; exit }' sum)
    "$HOTSPUR" top "$FAKE_DIR/req.$k.body" >"top.$t" || fail "hotspur top cannot read the $t upload"
done
grep -q '^Type: cpu' top.cpu || fail "cpu upload: $(head -5 top.cpu)"
grep -q '^Type: wall' top.wall || fail "wall upload: $(head -5 top.wall)"
grep -q '^Type: contentions\|^Type: delay' top.lock || fail "lock upload: $(head -5 top.lock)"
grep -q '^Type: inuse_space' top.heap || fail "heap upload: $(head -5 top.heap)"
k=$(awk -F'\t' '$4 == "cpu" { print $1; exit }' sum)
grep -q ' phase_a$' top.cpu || fail "first cpu window lacks phase_a: $(cat top.cpu)"

# The same frames as `hotspur record`: `stacks inline` (time in a function
# always inlined into its caller, built without frame pointers) recorded,
# and uploaded; every entry with 5% or more of either profile (function,
# file:line, inline marks) is in the other. The uploads are merged: with
# 1 s windows in every 1 s period they hold the whole run, 2.5 s of CPU
# (~250 samples) however loaded the machine; one window held 1 s of wall
# time, as few as 10 samples on a loaded machine, where a frame sampled
# once has 10% of it.
"$HOTSPUR" record -o rec.pb.gz -- "$PROGS/stacks" inline 1500 >/dev/null 2>rec.err || fail "record: $(cat rec.err)"
fake_start
HOTSPUR_SERVER=$FAKE_URL HOTSPUR_PERIOD=1s HOTSPUR_DURATION=1s \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/stacks" inline 2500 >/dev/null 2>err || fail "stacks: $(cat err)"
sleep 0.3
cpu_uploads=$(fake_summary | awk -F'\t' -v d="$FAKE_DIR" '$4 == "cpu" { print d "/req." $1 ".body" }')
[ -n "$cpu_uploads" ] || fail "no cpu upload from stacks"
# shellcheck disable=SC2086 # one file name per word
"$HOTSPUR" merge $cpu_uploads -o up.pb.gz || fail "cannot merge the cpu uploads"
echo "cpu uploads: $(echo $cpu_uploads | wc -w), samples: first $(total "${cpu_uploads%%$'\n'*}"), all $(total up.pb.gz); record: $(total rec.pb.gz)"
names() { # FILE FRACTION: its entries (function file:line [inline]) above FRACTION
    "$HOTSPUR" top --lines --nodefraction "$2" "$1" |
        awk '/flat%/ { t = 1; next } t { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' | sort
}
names rec.pb.gz 0.05 >rec.names
names rec.pb.gz 0 >rec.all
names up.pb.gz 0.05 >up.names
names up.pb.gz 0 >up.all
echo "record:"; cat rec.names
echo "upload:"; cat up.names
grep -q '^hot_inline .*(inline)$' rec.names || fail "record shows no inline frame (test program changed?)"
# Each entry with 5% or more of one profile is an entry of the other.
missing=$(comm -23 rec.names up.all; comm -23 up.names rec.all)
[ -z "$missing" ] || fail "frames in one profile and not the other: $missing"
[ "$(wc -l <up.names)" -ge 3 ] || fail "too few frames in the upload: $(cat up.names)"
pass "$w windows x 4 types, metadata, ids, times, random phase, record's frames"
