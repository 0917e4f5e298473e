#!/usr/bin/env bash
# server_slow_clients.sh — slow clients cannot lock others out of `hotspur
# serve` (issue 29): 300 connections from one address drip-feed a request
# head a byte a second (before, 256 of them held every slot for 30 s and
# other clients got 0 of 5 answers). Now one address holds at most 64
# connections, each waits at most 15 s for its head, and a client from
# another address gets every answer meanwhile. Bounded: 45 s.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # curl and python hang with ASan's runtime preloaded (see server_ingest.sh)

server_start
port=${SERVER_URL##*:}
timeout 90 python3 - "$port" <<'PY' || fail "slow clients locked others out (above)"
import socket, sys, threading, time
port = int(sys.argv[1])
head = b"GET /api/v1/services HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 200
N, RUN = 300, 35
lived = []          # seconds each accepted dripper stayed open
refused = [0]
lock = threading.Lock()

def drip():
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        with lock: refused[0] += 1
        return
    s.settimeout(1.5)
    i = 0
    try:
        while time.time() - t0 < RUN and i < len(head):
            s.sendall(head[i:i + 1]); i += 1
            try:
                if s.recv(1) == b"":   # closed by the server
                    break
            except socket.timeout:
                pass
    except OSError:
        pass
    with lock: lived.append(time.time() - t0)
    s.close()

ts = [threading.Thread(target=drip, daemon=True) for _ in range(N)]
for t in ts: t.start()
time.sleep(3)

ok, tries = 0, 0
for k in range(8):   # a client from another loopback address
    tries += 1
    try:
        c = socket.socket(); c.settimeout(5); c.bind(("127.0.0.2", 0)); c.connect(("127.0.0.1", port))
        c.sendall(b"GET /api/v1/services HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            d = c.recv(4096)
            if not d: break
            data += d
        c.close()
        if data.startswith(b"HTTP/1.1 200"): ok += 1
        else: print("other client got:", data[:80])
    except OSError as e:
        print("other client:", e)
    time.sleep(2)
for t in ts: t.join(RUN + 10)
held = [x for x in lived if x >= 2]   # the others were closed at once (per-address limit)
longest = max(lived) if lived else 0
print("drippers: %d tried, %d not connected, %d closed at once, %d held a slot; longest lived %.1f s; other client %d/%d answered"
      % (N, refused[0], len(lived) - len(held), len(held), longest, ok, tries))
bad = []
if ok != tries: bad.append("the other client got %d of %d answers" % (ok, tries))
if longest > 15 + 4: bad.append("a dripper lived %.1f s (head deadline 15 s)" % longest)
if len(held) > 64: bad.append("%d connections from one address held slots (limit 64)" % len(held))
if bad:
    print("FAIL: " + "; ".join(bad)); sys.exit(1)
PY
server_alive || fail "the server died"
st=$(server_curl sv.json "$SERVER_URL/api/v1/services")
[ "$st" = 200 ] || fail "after the slow clients: $st"
pass "300 drip-feeding connections: others answered, every head cut by its deadline"
