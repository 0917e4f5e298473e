# continuous_record.sh — `hotspur record --server URL`: the command runs in
# continuous mode with the flags' service, version, labels, period and
# duration; its profiles go to the collector, no file is written, and the
# agent reports what it sent. The
# continuous-mode flags need --server; https:// is refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/continuous_lib.sh"

fake_start
"$HOTSPUR" record --server "$FAKE_URL" --period 1s --duration 500ms --service svc --version 7 \
    --labels a=b,c=d -o out.pb.gz -- "$PROGS/phases" 2500 0 >out 2>err || fail "record: $(cat err)"
cat err
[ "$(cat out)" = done ] || fail "output: $(cat out)"
[ ! -e out.pb.gz ] || fail "a file was written in continuous mode"
sleep 0.3
fake_summary >sum
cat sum
n=$(awk -F'\t' '$4 == "cpu" && $8 == "svc" && $9 == "7" && $10 == "a=b,c=d"' sum | wc -l)
[ "$n" -ge 2 ] || fail "$n cpu windows with the flags' metadata in 2.5 s with 1 s periods"
sent=$(sed -n 's/^hotspur: uploads to .*: \([0-9]*\) sent, .*/\1/p' err)
[ "$sent" = "$(wc -l <sum)" ] || fail "the agent reported $sent sent, the collector got $(wc -l <sum)"

for bad in "--period 1s" "--version 1" "--labels a=b"; do
    # shellcheck disable=SC2086 # word splitting intended
    if "$HOTSPUR" record $bad -- true 2>err; then fail "record $bad without --server was accepted"; fi
    grep -q 'go with --server' err || fail "record $bad: $(cat err)"
done
if "$HOTSPUR" record --server https://127.0.0.1:1 -- true 2>err; then fail "https:// was accepted"; fi
grep -q 'http://HOST:PORT' err || fail "https: $(cat err)"
"$HOTSPUR" record --help | grep -q -- '--server URL' || fail "--server is not in record --help"
pass "record --server: $n windows with the flags' metadata, no file"
