"""attach_relro.py PID -- print one line per read-only file-backed mapping
of process PID (RELRO: the GOT entries the loader made read-only after
relocation, libc's own among them; and constant data): "START FILE SHA256".
attach_cycles.sh compares the lines before the first attach and after the
last detach: every GOT entry a detach puts back is as it was. Reads
/proc/PID/mem (root, or kernel.yama.ptrace_scope 0, as attach itself)."""
import hashlib
import sys

pid = sys.argv[1]
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        f = line.split()
        if len(f) < 6 or f[1] != "r--p" or not f[5].startswith("/"):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        mem.seek(lo)
        print(f"{f[0].split('-')[0]} {f[5]} {hashlib.sha256(mem.read(hi - lo)).hexdigest()}")
