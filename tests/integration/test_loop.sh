#!/usr/bin/env bash
# Traces the loop driver (named with --device loop: block major 7 plus
# /dev/loop-control): exact counts for the control, configure, size and clear
# ioctls, decoded on the right fds.
. "$(dirname "$0")/lib.sh"
[ -e /dev/loop-control ] || { skip loop "no /dev/loop-control"; exit 0; }

"$KXPROF" record --device loop -o "$TMP/loop.kxp" -- "$WL/loop_workload" -s 4 -p "$TMP" \
	>"$TMP/loop.wl" 2>"$TMP/loop.err"
rc=$?
if [ $rc -ne 0 ]; then fail loop_record "exit $rc: $(cat "$TMP/loop.err")"; exit 0; fi
kx 0 report --json "$TMP/loop.kxp" >"$TMP/loop.json"
check loop_counts_exact python3 "$(dirname "$0")/counts.py" "$TMP/loop.wl" "$TMP/loop.json" ioctl/loop
# Only the loop driver's rows: its ioctls, and its block jobs when the kernel
# read the new device (a partition scan at attach) during the capture.
check loop_no_other_drivers test "$(jget "$TMP/loop.json" 'set(d["Time"]) <= {"ioctl/loop", "jobs/loop"} and "ioctl/loop" in d["Time"]')" = True

# Not named, not traced: the default set has no loop devices. (A machine
# with no accelerator and no kvm has an empty default set: record refuses.)
"$KXPROF" record -o "$TMP/noloop.kxp" -- "$WL/loop_workload" -s 4 -p "$TMP" >/dev/null 2>"$TMP/noloop.err"
rc=$?
if [ -s "$TMP/noloop.kxp" ]; then
	kx 0 report --json "$TMP/noloop.kxp" >"$TMP/noloop.json"
	check loop_not_traced_by_default_exit test "$rc" -eq 0
	check loop_not_traced_by_default test "$(jget "$TMP/noloop.json" '"ioctl/loop" in d["Time"]')" = False
else
	check loop_not_traced_by_default grep -q 'no accelerator device found here' "$TMP/noloop.err"
	check loop_not_traced_by_default_exit test "$rc" -eq 2
fi
