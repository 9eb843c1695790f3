#!/usr/bin/env bash
# Errors are counted per ioctl with the right errno name, and commands the
# tables do not know are named in _IO form, never left blank. The stand-in
# accelerator's driver rejects them (lib.sh): kvm through err_workload, the
# loop driver through loop_workload -e; each workload counts the errnos the
# kernel really returned.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "$ACCEL" = kvm ]; then
	ERRWL=("$WL/err_workload" -n 7)
else
	ERRWL=("$WL/loop_workload" -s 4 -p "$TMP" -e 7)
fi
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/err.kxp" -- "${ERRWL[@]}" >"$TMP/err.wl" 2>"$TMP/err.log" ||
	exit 0
kx 0 report --json "$TMP/err.kxp" >"$TMP/err.json" || exit 0
kx 0 report "$TMP/err.kxp" >"$TMP/err.txt" || exit 0
check errno_counts_exact python3 - "$HERE" "$TMP/err.wl" "$TMP/err.json" "ioctl/$ACCEL" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
from counts import report_name
w = json.load(open(sys.argv[2])); r = json.load(open(sys.argv[3]))["Time"][sys.argv[4]]
bad = 0
for n, calls in w["ioctls"].items():
    row = r.get(report_name(n))
    errs = w["errors"].get(n, {})
    if not row or row["Total Count"] != calls or row["Errors"] != sum(errs.values()) or row["Errno"] != errs:
        print("mismatch", n, calls, errs, row); bad += 1
sys.exit(1 if bad or not w["errors"] else 0)
PY
# The unknown commands appear under their _IO names; every errno of every
# call shows in the table's breakdown lines ("errors: EINVAL x7, ...").
check unknown_cmd_named python3 - "$HERE" "$TMP/err.wl" "$TMP/err.txt" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
from counts import report_name
w = json.load(open(sys.argv[2])); text = open(sys.argv[3]).read()
unknown = [report_name(n) for n in w["ioctls"] if n.startswith("unknown:")]
print("unknown commands:", unknown)
sys.exit(0 if unknown and all("\n%s " % n in text for n in unknown) else 1)
PY
check table_shows_errno python3 - "$HERE" "$TMP/err.wl" "$TMP/err.txt" <<'PY'
import json, sys
w = json.load(open(sys.argv[2])); text = open(sys.argv[3]).read()
want = ["%s x%d" % (e, n) for errs in w["errors"].values() for e, n in errs.items()]
missing = [x for x in want if x not in text]
print("breakdown entries", len(want), "missing", missing)
sys.exit(0 if want and not missing else 1)
PY
