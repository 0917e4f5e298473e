#!/usr/bin/env python3
"""continuous_server.py — a stand-in collector for the continuous-mode tests
(standard library only; not a test itself).

  continuous_server.py serve DIR [PORT]
      Listen on 127.0.0.1:PORT (default: a port the kernel picks; the port
      is written to DIR/port once bound). Every request is recorded before it is answered:
      DIR/req.N.json (method, path, query as a list of [key, value], headers,
      receipt time) and DIR/req.N.body (the raw body), N = 1, 2, ...
      The answer follows DIR/mode, read at each request (default "ok"):
        ok      200 {"stored":1}
        NNN     that status (e.g. 500, 400, 429) with {"error":"mode NNN"}
        NNN S   the same with "Retry-After: S"
        hang    never answer (the connection stays open until the agent
                gives up)
        close   close the connection without an answer
        forward URL
                send the request on to URL (a real `hotspur serve`: its
                method, path and query, body, and headers but Host) and
                relay its status and body; the status it answered is
                written to DIR/req.N.status
  continuous_server.py info FILE
      Print "time_nanos duration_nanos" of a pprof file (gzipped or not).
  continuous_server.py summary DIR
      One line per recorded request, in order, fields separated by tabs:
      N method path type from until id service version labels auth
      received time_nanos duration_nanos gzip
      (labels: the label=K=V values joined by ","; auth: the Authorization
      header or "-"; a missing parameter is "-"; gzip: 1 if the body is
      gzipped).
"""
import gzip
import http.server
import json
import os
import socketserver
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def serve(d, port=0):
    lock = threading.Lock()
    count = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n) if n else b""
            u = urllib.parse.urlsplit(self.path)
            with lock:
                count[0] += 1
                k = count[0]
            rec = {
                "method": self.command,
                "path": u.path,
                "query": urllib.parse.parse_qsl(u.query, keep_blank_values=True),
                "headers": {key.lower(): v for key, v in self.headers.items()},
                "time": time.time(),
            }
            with open(os.path.join(d, "req.%d.body" % k), "wb") as f:
                f.write(body)
            tmp = os.path.join(d, ".req.%d.json" % k)
            with open(tmp, "w") as f:
                json.dump(rec, f)
            os.rename(tmp, os.path.join(d, "req.%d.json" % k))
            try:
                with open(os.path.join(d, "mode")) as f:
                    mode = f.read().strip() or "ok"
            except OSError:
                mode = "ok"
            if mode == "hang":
                time.sleep(3600)
                return
            if mode == "close":
                self.close_connection = True
                return
            if mode.startswith("forward "):
                status, out = forward(mode.split(None, 1)[1], self, body)
                with open(os.path.join(d, "req.%d.status" % k), "w") as f:
                    f.write("%d\n" % status)
                self.send_response(status)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                return
            words = mode.split()
            status = 200 if mode == "ok" else int(words[0])
            out = json.dumps({"stored": 1} if status == 200 else {"error": "mode %s" % mode}).encode()
            self.send_response(status)
            if len(words) > 1:
                self.send_header("Retry-After", words[1])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_POST

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    Server.allow_reuse_address = True
    s = Server(("127.0.0.1", port), Handler)
    with open(os.path.join(d, ".port"), "w") as f:
        f.write(str(s.server_address[1]))
    os.rename(os.path.join(d, ".port"), os.path.join(d, "port"))
    s.serve_forever()


def forward(url, req, body):
    """Send req (a handler's request, body already read) on to url; return
    (status, body) of the answer, (502, message) if there was none."""
    headers = {k: v for k, v in req.headers.items() if k.lower() not in ("host", "connection")}
    r = urllib.request.Request(url.rstrip("/") + req.path, data=body if req.command == "POST" else None,
                               headers=headers, method=req.command)
    try:
        with urllib.request.urlopen(r, timeout=30) as a:
            return a.status, a.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 502, ("forward to %s: %s" % (url, e)).encode()


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def times(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    fields = {}
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
            fields[num] = v
        elif wt == 2:
            n, i = varint(b, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise SystemExit("bad wire type %d" % wt)
    return fields.get(9, 0), fields.get(10, 0)


def info(path):
    print(*times(path))


def summary(d):
    n = 1
    while os.path.exists(os.path.join(d, "req.%d.json" % n)):
        with open(os.path.join(d, "req.%d.json" % n)) as f:
            r = json.load(f)
        body = os.path.join(d, "req.%d.body" % n)
        q = {}
        labels = []
        for k, v in r["query"]:
            if k == "label":
                labels.append(v)
            else:
                q.setdefault(k, v)
        with open(body, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        try:
            tn, dn = times(body)
        except Exception:
            tn, dn = -1, -1
        g = lambda k: q.get(k, "-") or "-"
        print("\t".join(str(x) for x in [
            n, r["method"], r["path"], g("type"), g("from"), g("until"), g("id"), g("service"),
            g("version"), ",".join(labels) or "-", r["headers"].get("authorization", "-"),
            "%.3f" % r["time"], tn, dn, int(gz)]))
        n += 1


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 0)
    elif len(sys.argv) == 3 and sys.argv[1] == "summary":
        summary(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "info":
        info(sys.argv[2])
    else:
        sys.exit(__doc__)
