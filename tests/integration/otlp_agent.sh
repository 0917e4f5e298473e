#!/usr/bin/env bash
# otlp_agent.sh — the agent in continuous mode with HOTSPUR_OTLP_ENDPOINT
# (docs/otlp.md): a program's windows go to {endpoint}/v1development/profiles
# as OTLP protobuf, here a real `hotspur serve`, which stores them with the
# service, version and labels the agent was given as resource attributes,
# and the program's functions (phases: version 1 computes in phase_a).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
AGENT_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$HOTSPUR_LIB"
unset LD_PRELOAD # curl hangs with the ASan runtime (only the program gets it)

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

server_start
HOTSPUR_OTLP_ENDPOINT=$SERVER_URL/ HOTSPUR_PERIOD=1s HOTSPUR_DURATION=500ms HOTSPUR_SERVICE=otlp-agent \
    HOTSPUR_VERSION=v9 HOTSPUR_LABELS=zone=eu-1 \
    LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 2500 0 >out 2>err || fail "phases: $(cat err)"
[ -z "$(grep -v '^==' err)" ] || fail "the agent complained: $(cat err)"
st=$(server_curl list.json "$SERVER_URL/api/v1/profiles?service=otlp-agent&type=cpu&from=0")
[ "$st" = 200 ] || fail "profiles: $st $(cat list.json)"
n=$(json list.json 'len(d["profiles"])')
[ "$n" -ge 1 ] || fail "no OTLP upload stored: $(cat list.json) $(cat "$SERVER_LOG")"
[ "$(json list.json 'd["profiles"][0]["version"]')" = v9 ] || fail "service.version: $(cat list.json)"
server_curl labels.json "$SERVER_URL/api/v1/labels?service=otlp-agent" >/dev/null
grep -q '"zone":\["eu-1"\]' labels.json || fail "HOTSPUR_LABELS are not resource attributes: $(cat labels.json)"
st=$(server_curl f.json "$SERVER_URL/api/v1/functions?service=otlp-agent&type=cpu&from=0")
[ "$st" = 200 ] || fail "functions: $st"
json f.json '[f["name"] for f in d["functions"]]' | grep -q phase_a || fail "phase_a not among: $(cat f.json)"
# an endpoint that is not a URL: said once, not profiling, the program runs
HOTSPUR_OTLP_ENDPOINT=ftp://x LD_PRELOAD="$AGENT_PRELOAD" "$PROGS/phases" 100 0 >out 2>err || fail "phases: $(cat err)"
grep -q 'HOTSPUR_OTLP_ENDPOINT=ftp://x' err || fail "no message for a bad endpoint: $(cat err)"
pass
