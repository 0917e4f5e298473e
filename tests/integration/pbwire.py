"""pbwire.py — protobuf wire format for the integration tests' hand-made
pprof profiles (standard library only; import it with
sys.path.insert(0, os.environ["SRC"] + "/tests/integration"))."""


def varint(n):
    """n as a varint; negative numbers as their 64-bit two's complement."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ldelim(num, payload):
    """A length-delimited field: an embedded message, string or bytes."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vfield(num, n):
    """A varint field."""
    return varint(num << 3) + varint(n)


def packed(num, xs):
    """A packed repeated varint field."""
    return ldelim(num, b"".join(varint(x) for x in xs))


HEAP_TYPES = ("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space", "bytes")


def heap_pprof(stacks):
    """A heap profile (Go's four sample types) as gzipped pprof: stacks is a
    list of (frames root first, [alloc_objects, alloc_space, inuse_objects,
    inuse_space]); one function and location per distinct frame name."""
    import gzip
    strs = [b""]
    def s(x):
        x = x.encode()
        if x not in strs:
            strs.append(x)
        return strs.index(x)
    st = b"".join(ldelim(1, vfield(1, s(t)) + vfield(2, s(u))) for t, u in HEAP_TYPES)
    ids, fns, locs, samples = {}, b"", b"", b""
    for frames, values in stacks:
        for f in frames:
            if f not in ids:
                ids[f] = len(ids) + 1
                fns += ldelim(5, vfield(1, ids[f]) + vfield(2, s(f)))
                locs += ldelim(4, vfield(1, ids[f]) + ldelim(4, vfield(1, ids[f])))
        samples += ldelim(2, packed(1, [ids[f] for f in reversed(frames)]) + packed(2, values))
    return gzip.compress(st + samples + locs + fns + b"".join(ldelim(6, x) for x in strs))


if __name__ == "__main__":
    # pbwire.py heap IN OUT: IN has lines "a;b;c AO AS IO IS" (root first)
    import sys
    if len(sys.argv) != 4 or sys.argv[1] != "heap":
        sys.exit("usage: pbwire.py heap IN.folded4 OUT.pb.gz")
    rows = []
    for line in open(sys.argv[2]):
        if line.strip():
            st, *vals = line.split()
            rows.append((st.split(";"), [int(v) for v in vals]))
    open(sys.argv[3], "wb").write(heap_pprof(rows))
