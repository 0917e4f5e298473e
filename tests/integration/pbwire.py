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
