#!/usr/bin/env bash
# Overload: a deliberately tiny ring buffer under an ioctl flood (the
# stand-in driver's cheap call, lib.sh) loses events, and the loss is
# accounted exactly: received + dropped == issued; the default ring under
# one flooding thread loses nothing.
. "$(dirname "$0")/lib.sh"

if kx 0 record "${ACCEL_DEV[@]}" --ringbuf-mb 0.004 -o "$TMP/flood.kxp" -- \
	"${ACCEL_FLOOD[@]}" -n 300000 >"$TMP/flood.wl" 2>"$TMP/flood.err" &&
	kx 0 report --json "$TMP/flood.kxp" >"$TMP/flood.json"; then
	check tiny_ring_drops test "$(jget "$TMP/flood.json" 'd["Capture"]["dropped"]')" -gt 0
	check drops_exact python3 - "$TMP/flood.wl" "$TMP/flood.json" <<'PY'
import json, sys
issued = sum(json.load(open(sys.argv[1]))["ioctls"].values())
r = json.load(open(sys.argv[2]))
c = r["Capture"]
reported = sum(v["Total Count"] for cat in r["Time"].values() for v in cat.values())
print("issued", issued, "capture", c, "reported", reported)
# every issued ioctl is either received (and reported) or counted as dropped
sys.exit(0 if c["emitted"] == issued and c["received"] + c["dropped"] == issued
         and reported == c["received"] else 1)
PY
	check drop_warning_printed grep -q 'dropped' "$TMP/flood.err"
fi

# default ring: one producing thread at full speed loses nothing
if kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/ok.kxp" -- "${ACCEL_FLOOD[@]}" -n 300000 \
	>"$TMP/ok.wl" 2>/dev/null && kx 0 report --json "$TMP/ok.kxp" >"$TMP/ok.json"; then
	check default_ring_no_drops test "$(jget "$TMP/ok.json" 'd["Capture"]["dropped"]')" -eq 0
	check default_ring_exact python3 "$(dirname "$0")/counts.py" "$TMP/ok.wl" "$TMP/ok.json" \
		"ioctl/$ACCEL"
fi
