#!/usr/bin/env bash
# server_framing.sh — `hotspur serve` refuses ambiguous HTTP framing itself
# (issue 29), so a front proxy and the server cannot disagree on where a
# request ends: two Content-Lengths, Content-Length with chunked,
# "Transfer-Encoding :chunked", a Transfer-Encoding other than chunked
# (identity and xchunked hung) each get a 400 in JSON at once, the
# connection is closed, and nothing is stored. Over-long URLs and headers
# get 414/431 in JSON. Raw sockets, since curl will not send such requests.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/server_lib.sh"
unset LD_PRELOAD # python hangs with ASan's runtime preloaded (see server_ingest.sh)

server_start
port=${SERVER_URL##*:}
timeout 60 python3 - "$port" <<'PY' || fail "framing (above)"
import json, socket, sys, time
port = int(sys.argv[1])
bad = []
def raw(name, data, want, wait=5):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(wait)
    s.sendall(data); out = b""
    t0 = time.time(); closed = False
    try:
        while True:
            d = s.recv(65536)
            if not d:
                closed = True
                break
            out += d
    except socket.timeout:
        pass
    s.close()
    dt = time.time() - t0
    head, _, body = out.partition(b"\r\n\r\n")
    status = head.split(b"\r\n")[0].decode(errors="replace")
    print("%-24s %5.2fs closed=%s %s | %s" % (name, dt, closed, status, body[:100]))
    if (" %d " % want) not in status + " ":
        bad.append("%s: %s, want %d" % (name, status, want))
        return
    if want != 200:
        try:
            json.loads(body)["error"]
        except Exception:
            bad.append("%s: not a JSON error: %r" % (name, body[:80]))
        if not closed:
            bad.append("%s: the connection stayed open" % name)
P = b"/ingest?name=fr.cpu"
H = b"Host: 127.0.0.1\r\n"
raw("two Content-Length", b"POST " + P + b" HTTP/1.1\r\n" + H + b"Content-Length: 12\r\nContent-Length: 5\r\n\r\nmain;a 1\nxyz", 400)
raw("CL + chunked", b"POST " + P + b" HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nmain;b 1\n\r\n0\r\n\r\n", 400)
raw("TE space before colon", b"POST " + P + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding :chunked\r\n\r\n9\r\nmain;d 1\n\r\n0\r\n\r\n", 400)
raw("TE identity", b"POST " + P + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: identity\r\n\r\nmain;e 1\n", 400)
raw("TE xchunked", b"POST " + P + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: xchunked\r\n\r\n9\r\nmain;f 1\n\r\n0\r\n\r\n", 400)
raw("TE twice", b"POST " + P + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nmain;f 1\n\r\n0\r\n\r\n", 400)
raw("URL of 100 kB", b"GET /api/v1/services?x=" + b"a" * 100000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414)
raw("headers of 150 kB", b"GET /api/v1/services HTTP/1.1\r\n" + H + b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 1000) for i in range(150)) + b"\r\n", 431)
raw("plain chunked", b"POST /ingest?name=good.cpu HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n9\r\nmain;g 1\n\r\n0\r\n\r\n", 200)
if bad:
    print("FAIL: " + "; ".join(bad)); sys.exit(1)
PY
st=$(server_curl sv.json "$SERVER_URL/api/v1/services")
[ "$(cat sv.json)" = '{"services":["good"]}' ] || fail "stored: $(cat sv.json)"
server_alive || fail "the server died"
pass "ambiguous framing refused (400, JSON, connection closed, nothing stored); 414/431 in JSON"
