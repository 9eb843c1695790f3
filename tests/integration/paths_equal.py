#!/usr/bin/env python3
"""paths_equal.py NAME DIR: the checks of test_paths_equal.sh that need more
than cmp, on the outputs of one record file in DIR (c.m.json and x.m/: the
whole capture in memory; p.w/: split, windowed; p.m/: split, in memory;
q/: split, a Chrome file alone). Prints a PASS or FAIL line for each:
  NAME_split_chrome_whole  every event of the whole trace but its metadata
      ("M") is in exactly one part, and no part holds another; the capture's
      global warnings (instants of category kxprof, scope g) are in every part
  NAME_split_xspace_whole  per plane and event name, the XSpace parts'
      events add up to the whole's (read as scripts/xspace-dump.sh
      --summary reads them)
  NAME_sliced_chrome_lines  each part written alone (from slices of its
      window) holds the lines of the in-memory part, in any order, a line's
      separating comma aside"""
import collections
import glob
import gzip
import json
import os
import sys

DUMP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts/xspace-dump.sh")


def xspace_reader():
    """The wire-format reader of scripts/xspace-dump.sh (its Python part), loaded."""
    src = open(DUMP).read()
    code = src.split("<<'PY'\n", 1)[1].split("\ntry:\n    main()", 1)[0]
    ns = {"__name__": "xspace_dump"}
    exec(compile(code, DUMP, "exec"), ns)
    return ns


XS = xspace_reader()


def load(path):
    return json.load(gzip.open(path) if path.endswith(".gz") else open(path))


def is_global_warning(e):
    return e.get("cat") == "kxprof" and e.get("ph") == "i" and e.get("s") == "g"


def chrome_events(path):
    """The events of a trace but its metadata: (others, global warnings), as multisets."""
    others, warnings = collections.Counter(), collections.Counter()
    for e in load(path)["traceEvents"]:
        if e.get("ph") == "M":
            continue
        key = json.dumps(e, sort_keys=True)
        (warnings if is_global_warning(e) else others)[key] += 1
    return others, warnings


def show(missing, extra):
    for k in list(missing)[:3]:
        print("- in the whole only: %s" % (k,))
    for k in list(extra)[:3]:
        print("+ in the parts only: %s" % (k,))


def chrome_parts(whole, parts):
    w, ww = chrome_events(whole)
    total = collections.Counter()
    for p in parts:
        o, pw = chrome_events(p)
        if pw != ww:
            print("%s: global warnings differ from the whole's" % p)
            show(ww - pw, pw - ww)
            return 1
        total += o
    if total != w:
        print("%d events in the whole, %d in %d parts" % (sum(w.values()), sum(total.values()), len(parts)))
        show(w - total, total - w)
        return 1
    return 0


def xspace_counts(path):
    b, c = open(path, "rb").read(), collections.Counter()
    for f, _, v in XS["fields"](b):
        if f == 1:
            plane = XS["plane_summary"](b, v)
            for name, n in plane["events"].items():
                c[(plane["name"], name)] += n
    return c


def xspace_parts(whole, parts):
    w, total = xspace_counts(whole), collections.Counter()
    for p in parts:
        total += xspace_counts(p)
    if total != w:
        show(w - total, total - w)
        return 1
    return 0


def same_lines(a, b):
    def lines(path):
        data = (gzip.open(path) if path.endswith(".gz") else open(path, "rb")).read()
        return sorted(l[:-1] if l.endswith(b",") else l for l in data.split(b"\n"))

    la, lb = lines(a), lines(b)
    if la != lb:
        print("%s and %s: %d and %d lines, not the same" % (a, b, len(la), len(lb)))
        return 1
    return 0


def sliced(d, parts):
    alone = sorted(glob.glob(os.path.join(d, "q/p.*.json")))
    if len(alone) != len(parts):
        print("%d parts written alone, %d beside an XSpace" % (len(alone), len(parts)))
        return 1
    return max(same_lines(os.path.join(d, "p.m", os.path.basename(p)), p) for p in alone)


def xplanes(d):
    return sorted(glob.glob(os.path.join(d, "**/*.xplane.pb"), recursive=True))


def main(name, d):
    parts = sorted(glob.glob(os.path.join(d, "p.w/p.*.json")))
    checks = [
        ("split_chrome_whole", lambda: chrome_parts(os.path.join(d, "c.m.json"), parts)),
        ("split_xspace_whole", lambda: xspace_parts(xplanes(os.path.join(d, "x.m"))[0],
                                                    xplanes(os.path.join(d, "p.w/x")))),
        ("sliced_chrome_lines", lambda: sliced(d, parts)),
    ]
    for check, fn in checks:
        try:
            bad = fn() or not parts
        except Exception as e:  # a missing or unreadable output: that check fails
            print("%s: %r" % (check, e))
            bad = True
        print("%s %s_%s" % ("FAIL" if bad else "PASS", name, check), flush=True)
    return 0


sys.exit(main(sys.argv[1], sys.argv[2]))
