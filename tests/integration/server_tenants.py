"""server_tenants.py — the walker of server_tenants.sh: every route of
`hotspur serve --print-routes`, asked by every tenant with the same
request, must show that tenant's own secrets (where the route shows data)
and never another tenant's. A route the walker does not know how to ask is
a failure, so a new endpoint cannot be left out.

usage: server_tenants.py URL ROUTES_FILE BUILD_ID
Environment: AUTH_<tenant>="Header: value" lines (how each tenant asks).
"""
import gzip
import json
import os
import sys
import urllib.error
import urllib.request

URL, ROUTES, BUILD_ID = sys.argv[1], sys.argv[2], sys.argv[3]
TENANTS = ["acme", "beta", "default"]
# what only one tenant's stored data holds (function, label value, version)
SECRETS = {
    "acme": ["acme_secret_fn", "acme-zone", "acme-v1", BUILD_ID],
    "beta": ["beta_secret_fn", "beta-zone", "beta-v1"],
    "default": ["dflt_secret_fn", "dflt-zone", "dflt-v1"],
}
SEL = "service=shop&type=cpu&from=0"
# route -> (method, path with query, does the answer show stored data?)
ASK = {
    "GET /api/v1/services": ("GET", "/api/v1/services", False),
    "GET /api/v1/types": ("GET", "/api/v1/types?service=shop", False),
    "GET /api/v1/versions": ("GET", "/api/v1/versions?service=shop", True),
    "GET /api/v1/labels": ("GET", "/api/v1/labels?service=shop", True),
    "GET /api/v1/profile": ("GET", "/api/v1/profile?" + SEL, True),
    "GET /api/v1/flamegraph": ("GET", "/api/v1/flamegraph?" + SEL, True),
    "GET /api/v1/functions": ("GET", "/api/v1/functions?" + SEL, True),
    "GET /api/v1/series": ("GET", "/api/v1/series?" + SEL + "&step=60", False),
    "GET /api/v1/profiles": ("GET", "/api/v1/profiles?" + SEL, True),
    "GET /api/v1/diff": ("GET", "/api/v1/diff?" + SEL + "&base_from=1", True),
    "GET /api/v1/stats": ("GET", "/api/v1/stats", False),
    "GET /api/v1/peek": ("GET", "/api/v1/peek?" + SEL + "&function=main", True),
    "GET /api/v1/sandwich": ("GET", "/api/v1/sandwich?" + SEL + "&function=main", True),
    "GET /api/v1/source": ("GET", "/api/v1/source?" + SEL + "&function=main", False),
    "GET /api/v1/debuginfo": ("GET", "/api/v1/debuginfo", None),
    "GET /api/v1/debuginfo/ID": ("GET", "/api/v1/debuginfo/" + BUILD_ID, None),
    "GET /healthz": ("GET", "/healthz", False),
    "GET /": ("GET", "/", False),
    # writes: asked by ingest and debuginfo steps in server_tenants.sh; here
    # only checked not to reach another tenant (a DELETE of acme's upload by
    # beta is a 404 and acme still has it: below)
    "POST /api/v1/ingest": None,
    "POST /ingest": None,
    "POST /v1development/profiles": None,
    "PUT /api/v1/debuginfo/ID": None,
    "POST /api/v1/debuginfo/ID": None,
    "DELETE /api/v1/debuginfo/ID": ("DELETE", "/api/v1/debuginfo/" + BUILD_ID, None),
}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def ask(tenant, method, path):
    rq = urllib.request.Request(URL + path, method=method)
    for line in os.environ.get("AUTH_" + tenant, "").split("\n"):
        if line.strip():
            k, v = line.split(":", 1)
            rq.add_header(k.strip(), v.strip())
    try:
        with urllib.request.urlopen(rq, timeout=30) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    return status, body.decode("latin-1")


routes = [l.strip() for l in open(ROUTES) if l.strip()]
unknown = [r for r in routes if r not in ASK]
if unknown:
    fail("routes the tenant walker does not know (add them to server_tenants.py): %s" % unknown)
if len(routes) < 20:
    fail("too few routes printed: %s" % routes)
asked = 0
for route in routes:
    spec = ASK[route]
    if spec is None or spec[0] == "DELETE":
        continue
    method, path, shows = spec
    for t in TENANTS:
        status, body = ask(t, method, path)
        asked += 1
        for other in TENANTS:
            if other == t:
                continue
            for sec in SECRETS[other]:
                if sec in body and sec not in path:  # (a 404 may name what was asked)
                    fail("%s as %s (%d) shows %s's %s: %s" % (route, t, status, other, sec, body[:300]))
        own = [s for s in SECRETS[t] if s in body]
        if shows and not own:
            fail("%s as %s (%d) shows none of its own data %s: %s" % (route, t, status, SECRETS[t], body[:300]))
        if shows is None and t == "acme" and BUILD_ID not in body:  # debuginfo: acme uploaded it
            fail("%s as acme (%d) does not show its upload: %s" % (route, status, body[:300]))
        if shows is None and t != "acme" and method == "GET" and path.endswith(BUILD_ID) and status != 404:
            fail("%s as %s: %d, not 404, for acme's upload: %s" % (route, t, status, body[:300]))
# stats count only the tenant's own profiles
counts = {}
for t in TENANTS:
    status, body = ask(t, "GET", "/api/v1/stats")
    counts[t] = json.loads(body)
want = {k: int(v) for k, v in (x.split("=") for x in os.environ["PROFILES"].split(","))}
for t in TENANTS:
    got = counts[t].get("store", {}).get("profiles")
    if got != want[t]:
        fail("stats as %s: %s profiles, want %d (%s)" % (t, got, want[t], counts[t]))
# services: only shop (every tenant's service is shop; OTLP's and
# Pyroscope's uploads of acme have their own names)
for t in TENANTS:
    status, body = ask(t, "GET", "/api/v1/services")
    names = json.loads(body)
    names = names.get("services", names) if isinstance(names, dict) else names
    if t != "acme" and any("acme" in json.dumps(n) for n in names):
        fail("services as %s lists acme's: %s" % (t, body))
    if t == "acme" and not any("acme-otlp" in json.dumps(n) for n in names):
        fail("services as acme misses its OTLP upload (acme-otlp): %s" % body)
# the writes: beta cannot remove acme's debug info
status, body = ask("beta", "DELETE", "/api/v1/debuginfo/" + BUILD_ID)
if status != 404:
    fail("DELETE of acme's upload as beta: %d (want 404): %s" % (status, body))
status, body = ask("acme", "GET", "/api/v1/debuginfo/" + BUILD_ID)
if status != 200:
    fail("acme's upload is gone after beta's DELETE: %d %s" % (status, body))
print("walked %d routes, %d requests" % (len(routes), asked))
