"""otlp_body.py — one OTLP profiles request written by hand from the spec
(opentelemetry-proto's profiles.proto and docs/specification.md, "JSON
Protobuf Encoding"), in both encodings, for otlp.sh. Independent of
hotspur's code: the JSON is what the spec shows (lowerCamelCase keys,
64-bit integers as strings, hex trace/span ids), the protobuf is encoded
from the same dict with the field numbers of the published .proto files.

usage: otlp_body.py json|proto [bad-mapping|bad-string|no-zero|bad-stack]
"""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
from pbwire import ldelim, varint  # noqa: E402

NOW = int(os.environ.get("OTLP_NOW", "1764580000")) * 10**9

# message -> jsonKey -> (field number, kind, sub-message)
# kinds: u (varint), i (signed int64 varint), f64 (fixed64), s (string),
# b (bytes, base64 in JSON), hex (bytes, hex in JSON), m (message),
# and their repeated forms: ri (packed varints), rf64 (packed fixed64), rs, rm
S = {
    "Request": {"resourceProfiles": (1, "rm", "ResourceProfiles"), "dictionary": (2, "m", "Dictionary")},
    "Dictionary": {
        "mappingTable": (1, "rm", "Mapping"), "locationTable": (2, "rm", "Location"),
        "functionTable": (3, "rm", "Function"), "linkTable": (4, "rm", "Link"), "stringTable": (5, "rs", None),
        "attributeTable": (6, "rm", "KeyValueAndUnit"), "stackTable": (7, "rm", "Stack")},
    "ResourceProfiles": {"resource": (1, "m", "Resource"), "scopeProfiles": (2, "rm", "ScopeProfiles")},
    "Resource": {"attributes": (1, "rm", "KeyValue")},
    "KeyValue": {"key": (1, "s", None), "value": (2, "m", "AnyValue")},
    "AnyValue": {"stringValue": (1, "s", None), "boolValue": (2, "u", None), "intValue": (3, "i", None)},
    "ScopeProfiles": {"scope": (1, "m", "Scope"), "profiles": (2, "rm", "Profile")},
    "Scope": {"name": (1, "s", None), "version": (2, "s", None)},
    "Profile": {
        "sampleType": (1, "m", "ValueType"), "samples": (2, "rm", "Sample"), "timeUnixNano": (3, "f64", None),
        "durationNano": (4, "u", None), "periodType": (5, "m", "ValueType"), "period": (6, "i", None),
        "profileId": (7, "b", None), "originalPayloadFormat": (9, "s", None), "originalPayload": (10, "b", None),
        "attributeIndices": (11, "ri", None)},
    "ValueType": {"typeStrindex": (1, "u", None), "unitStrindex": (2, "u", None)},
    "Sample": {"stackIndex": (1, "u", None), "attributeIndices": (2, "ri", None), "linkIndex": (3, "u", None),
               "values": (4, "ri", None), "timestampsUnixNano": (5, "rf64", None)},
    "Mapping": {"memoryStart": (1, "u", None), "memoryLimit": (2, "u", None), "fileOffset": (3, "u", None),
                "filenameStrindex": (4, "u", None), "attributeIndices": (5, "ri", None)},
    "Location": {"mappingIndex": (1, "u", None), "address": (2, "u", None), "lines": (3, "rm", "Line"),
                 "attributeIndices": (4, "ri", None)},
    "Line": {"functionIndex": (1, "u", None), "line": (2, "i", None), "column": (3, "i", None)},
    "Function": {"nameStrindex": (1, "u", None), "systemNameStrindex": (2, "u", None),
                 "filenameStrindex": (3, "u", None), "startLine": (4, "i", None)},
    "Link": {"traceId": (1, "hex", None), "spanId": (2, "hex", None)},
    "KeyValueAndUnit": {"keyStrindex": (1, "u", None), "value": (2, "m", "AnyValue"), "unitStrindex": (3, "u", None)},
    "Stack": {"locationIndices": (1, "ri", None)},
}


def encode(msg, d):
    out = b""
    for key, v in d.items():
        num, kind, sub = S[msg][key]
        if kind in ("u", "i"):
            out += varint(num << 3) + varint(int(v))
        elif kind == "f64":
            out += varint(num << 3 | 1) + int(v).to_bytes(8, "little")
        elif kind == "s":
            out += ldelim(num, v.encode())
        elif kind == "b":
            out += ldelim(num, base64.b64decode(v))
        elif kind == "hex":
            out += ldelim(num, bytes.fromhex(v))
        elif kind == "m":
            out += ldelim(num, encode(sub, v))
        elif kind == "ri":
            out += ldelim(num, b"".join(varint(int(x)) for x in v))
        elif kind == "rf64":
            out += ldelim(num, b"".join(int(x).to_bytes(8, "little") for x in v))
        elif kind == "rs":
            out += b"".join(ldelim(num, x.encode()) for x in v)
        elif kind == "rm":
            out += b"".join(ldelim(num, encode(sub, x)) for x in v)
    return out


def request(variant=""):
    strings = ["", "cpu", "nanoseconds", "samples", "count", "main", "/src/app.c", "work", "helper",
               "/usr/bin/app", "thread.name", "worker-1", "bytes", "alloc"]
    s = {x: i for i, x in enumerate(strings)}
    dic = {
        "mappingTable": [{}, {"memoryStart": "4194304", "memoryLimit": "8388608", "filenameStrindex": s["/usr/bin/app"]}],
        "locationTable": [
            {},
            {"mappingIndex": 1, "address": "4198400", "lines": [{"functionIndex": 1, "line": "10"}]},
            {"mappingIndex": 1, "address": "4198500", "lines": [{"functionIndex": 2, "line": "20"}]},
            # an inline chain: helper inlined into work
            {"mappingIndex": 1, "address": "4198600",
             "lines": [{"functionIndex": 3, "line": "31", "column": "5"}, {"functionIndex": 2, "line": "22"}]},
        ],
        "functionTable": [
            {},
            {"nameStrindex": s["main"], "filenameStrindex": s["/src/app.c"], "startLine": "3"},
            {"nameStrindex": s["work"], "filenameStrindex": s["/src/app.c"], "startLine": "18"},
            {"nameStrindex": s["helper"], "filenameStrindex": s["/src/app.c"], "startLine": "30"},
        ],
        "linkTable": [
            {"traceId": "00000000000000000000000000000000", "spanId": "0000000000000000"},
            {"traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174"},
        ],
        "stringTable": strings,
        "attributeTable": [
            {},
            {"keyStrindex": s["thread.name"], "value": {"stringValue": "worker-1"}},
            {"keyStrindex": s["alloc"], "value": {"intValue": "64"}, "unitStrindex": s["bytes"]},
        ],
        "stackTable": [{}, {"locationIndices": [2, 1]}, {"locationIndices": [3, 1]}, {"locationIndices": [1]}],
    }
    prof = {
        "sampleType": {"typeStrindex": s["cpu"], "unitStrindex": s["nanoseconds"]},
        "samples": [
            # the three shapes of the spec: one aggregated value, per-timestamp values, timestamps only
            {"stackIndex": 1, "attributeIndices": [1], "values": ["3000000"]},
            {"stackIndex": 2, "attributeIndices": [1, 2], "linkIndex": 1, "values": ["1000000", "2000000"],
             "timestampsUnixNano": [str(NOW + 1000), str(NOW + 2000)]},
            {"stackIndex": 3, "timestampsUnixNano": [str(NOW + 3000), str(NOW + 4000), str(NOW + 5000)]},
        ],
        "timeUnixNano": str(NOW),
        "durationNano": "10000000000",
        "periodType": {"typeStrindex": s["cpu"], "unitStrindex": s["nanoseconds"]},
        "period": "10000000",
    }
    if os.environ.get("OTLP_ORIGINAL"):  # a pprof file: the profile's original payload
        prof["originalPayloadFormat"] = "pprof"
        prof["originalPayload"] = base64.b64encode(open(os.environ["OTLP_ORIGINAL"], "rb").read()).decode()
    if os.environ.get("OTLP_PROFILE_ID"):  # 32 hex digits
        prof["profileId"] = base64.b64encode(bytes.fromhex(os.environ["OTLP_PROFILE_ID"])).decode()
    req = {
        "resourceProfiles": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": os.environ.get("OTLP_SERVICE", "otlp-app")}},
                {"key": "service.version", "value": {"stringValue": "1.2.3"}},
                {"key": "host.name", "value": {"stringValue": "box-1"}},
                {"key": "process.pid", "value": {"intValue": "4242"}},
            ]},
            "scopeProfiles": [{"scope": {"name": "hand-written"}, "profiles": [prof]}],
        }],
        "dictionary": dic,
    }
    if variant == "bad-mapping":
        dic["locationTable"][2]["mappingIndex"] = 9
    elif variant == "bad-string":
        dic["functionTable"][3]["nameStrindex"] = 99
    elif variant == "no-zero":
        dic["stringTable"][0] = "oops"
    elif variant == "slices":  # the timestamps-only sample 25 s later: another 10 s time slice
        prof["samples"][2]["timestampsUnixNano"] = [str(NOW + 25 * 10**9)] * 3
    elif variant == "bad-stack":
        prof["samples"][1]["stackIndex"] = 7
    return req


if __name__ == "__main__":
    form = sys.argv[1]
    variant = sys.argv[2] if len(sys.argv) > 2 else ""
    req = request(variant)
    if form == "json":
        sys.stdout.write(json.dumps(req, indent=1))
    else:
        sys.stdout.buffer.write(encode("Request", req))
