#!/usr/bin/env bash
# Errors are counted per ioctl with the right errno name, and commands the
# tables do not know are named in _IO form, never left blank.
. "$(dirname "$0")/lib.sh"
need_kvm errors || exit 0

"$KXPROF" record -o "$TMP/err.kxp" -- "$WL/err_workload" -n 7 >"$TMP/err.wl" 2>"$TMP/err.log"
"$KXPROF" report --json "$TMP/err.kxp" >"$TMP/err.json"
check errno_counts_exact python3 - "$TMP/err.wl" "$TMP/err.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))["Time"]["ioctl/kvm"]
# the workload names commands the kernel does not know "unknown:0xNNNN"
def name(n):
    if n.startswith("unknown:0x"):
        c = int(n.split(":")[1], 16)
        return "_IO(0x%02x,0x%02x,0)" % (c >> 8 & 0xff, c & 0xff)
    return n
bad = 0
for n, calls in w["ioctls"].items():
    row = r.get(name(n))
    errs = w["errors"].get(n, {})
    if not row or row["Total Count"] != calls or row["Errors"] != sum(errs.values()) or row["Errno"] != errs:
        print("mismatch", n, calls, errs, row); bad += 1
sys.exit(1 if bad else 0)
PY
check unknown_cmd_named grep -q '_IO(0xae,0xff,0)' <("$KXPROF" report "$TMP/err.kxp")
check table_shows_errno grep -q 'ENOTTY x7' <("$KXPROF" report "$TMP/err.kxp")
