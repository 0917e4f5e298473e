"""kcachegrind_view.py — reads what a running KCachegrind shows, through the
accessibility bus (AT-SPI, Debian's python3-pyatspi), for convert_kcachegrind.sh.

Usage: kcachegrind_view.py TIMEOUT_S
Waits until a KCachegrind window has loaded a file (its status bar reads
"NAME [1] - Total EVENT Cost: N"), then prints one JSON object:
  {"status": "...", "total": N,
   "flat": [{"incl": "60.00", "self": "60.00", "called": "3",
             "function": "burn_a", "location": "prog: prog.c"}, ...]}
"flat" is KCachegrind's "Flat Profile" table, every row, as displayed.
Exits 1 with a message when no such window appears in time. Standard
library and Debian's pyatspi only: run it with /usr/bin/python3.
"""
import json
import re
import sys
import time

import pyatspi

STATUS = re.compile(r"Total .* Cost: ([0-9 ]+)$")
FLAT_HEADERS = ["Incl.", "Self", "Called", "Function", "Location"]


def walk(acc, depth=0):
    """Every accessible under acc (depth-first), bounded in depth."""
    yield acc
    if depth > 40:
        return
    try:
        n = acc.childCount
    except Exception:
        return
    for i in range(n):
        try:
            c = acc.getChildAtIndex(i)
        except Exception:
            continue
        if c is not None:
            yield from walk(c, depth + 1)


def role(acc):
    try:
        return acc.getRoleName()
    except Exception:
        return ""


def flat_profile(app):
    """The rows of the table whose column headers are FLAT_HEADERS."""
    for acc in walk(app):
        if role(acc) not in ("table", "tree table", "tree"):
            continue
        try:
            t = acc.queryTable()
        except NotImplementedError:
            continue
        heads = []
        for c in range(t.nColumns):
            h = t.getColumnHeader(c)
            heads.append(h.name if h is not None else "")
        if heads != FLAT_HEADERS:
            continue
        rows = []
        for r in range(t.nRows):
            cells = [t.getAccessibleAt(r, c) for c in range(t.nColumns)]
            vals = [(x.name or "") if x is not None else "" for x in cells]
            rows.append(dict(zip(["incl", "self", "called", "function", "location"], vals)))
        return rows
    return None


def main():
    deadline = time.time() + float(sys.argv[1])
    seen = []
    while time.time() < deadline:
        desk = pyatspi.Registry.getDesktop(0)
        for i in range(desk.childCount):
            app = desk.getChildAtIndex(i)
            if app is None:
                continue
            seen.append(app.name)
            if "cachegrind" not in (app.name or "").lower():
                continue
            for acc in walk(app):
                if role(acc) != "label":
                    continue
                m = STATUS.search(acc.name or "")
                if not m:
                    continue
                flat = flat_profile(app)
                if flat is None:
                    break
                print(json.dumps({"status": acc.name,
                                  "total": int(m.group(1).replace(" ", "")),
                                  "flat": flat}))
                return 0
        time.sleep(0.5)
    print("kcachegrind_view: no KCachegrind window with a loaded file (applications seen: %s)"
          % sorted(set(n for n in seen if n)), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
