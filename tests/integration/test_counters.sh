#!/usr/bin/env bash
# Perf counters inside driver calls (record --counters): software counters
# checked against what the workload does (every BLKZEROOUT sleeps: at least
# one context switch per call, on the calling thread only), a hardware
# counter either read (a machine with a PMU) or skipped with its reason
# (this VM has none), exact accounting of the counter records, the report's
# table and JSON (streamed without device jobs, the same as read into
# memory), Chrome args and XSpace stats per call, and the usage errors. Where /dev/kvm exists, the same for a sleeping KVM_RUN.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip counters "needs root (loads BPF, opens perf events)"
	exit 0
fi
truncate -s 64M "$TMP/back.img"
LOOP=$(losetup -f --show "$TMP/back.img") || { fail loop_setup "losetup failed"; exit 0; }
at_exit 'losetup -d "$LOOP" 2>/dev/null; rm -rf "$TMP"'
# Does this machine count CPU cycles? (perf stat says "<not supported>" when not.)
if perf stat -x, -e cycles -- true 2>&1 | grep -q "not supported\|not counted"; then HW=0; else HW=1; fi

"$KXPROF" record --counters context-switches,page-faults,cpu-migrations,cycles --device loop \
	-o "$TMP/c.kxp" -- "$WL/profile_workload" -s 0.2 -D "$LOOP" -z 1 -f 0.5 >"$TMP/wl.json" \
	2>"$TMP/rec.err"
check record_exit [ $? -eq 0 ]
check record_says_counters grep -q "counters (context-switches,page-faults,cpu-migrations" "$TMP/rec.err"
if [ "$HW" -eq 0 ]; then
	check hw_counter_skipped grep -q "cycles skipped: no hardware counters here" "$TMP/rec.err"
else
	check hw_counter_read grep -q "counters (.*cycles" "$TMP/rec.err"
fi
"$KXPROF" report "$TMP/c.kxp" --json >"$TMP/r.json"
check report_json_exit [ $? -eq 0 ]
check counters_accounted python3 -c '
import json,sys
c = json.load(open(sys.argv[1]))["Counters"]
print("# counter records:", {k: c[k] for k in ("Names", "Emitted", "Received", "Dropped", "ReadFailures", "NotMeasured", "Unmatched")})
sys.exit(not (c["Received"] + c["Dropped"] == c["Emitted"] and c["Emitted"] > 0 and c["ReadFailures"] == 0))' "$TMP/r.json"
# Every BLKZEROOUT is measured; nearly all sleep (a context switch each).
check zero_calls_measured python3 -c '
import json,sys
d = json.load(open(sys.argv[1]))
wl = json.load(open(sys.argv[2]))
row = d["Counters"]["Rows"]["ioctl/loop"]["BLKZEROOUT"]
print("# BLKZEROOUT: %d issued, %d measured; context-switches %s; cpu-migrations %s; page-faults %s" % (wl["ioctls"]["BLKZEROOUT"], row["Calls"], row["context-switches"], row["cpu-migrations"], row["page-faults"]))
sys.exit(not (row["Calls"] == wl["ioctls"]["BLKZEROOUT"] and row["context-switches"]["Mean"] >= 0.99))' "$TMP/r.json" "$TMP/wl.json"
if [ "$HW" -eq 0 ]; then
	check report_warns_hw grep -q "counter hooks skipped: cycles (no hardware counters here" "$TMP/r.json"
fi

"$KXPROF" report "$TMP/c.kxp" >"$TMP/r.txt"
check report_table grep -q "^Counters inside driver calls" "$TMP/r.txt"
check report_table_row grep -q "^BLKZEROOUT " "$TMP/r.txt"
check report_table_width awk '/^Counters inside/ { on = 1 } /^(CPU|Off-CPU) profile/ { on = 0 } on && length($0) > 120 { bad = 1 } END { exit bad }' "$TMP/r.txt"

# Without device jobs, report joins the counter records to their calls as
# the file streams by (-v says so): the in-memory report's JSON, counters
# included (percentiles within 1/256).
# (A tenth of a second of zero calls: a few thousand, in tens of parts below.)
"$KXPROF" record --no-jobs --counters context-switches,page-faults --device loop \
	-o "$TMP/s.kxp" -- "$WL/profile_workload" -s 0.2 -D "$LOOP" -z 0.1 -f 0.5 >/dev/null 2>&1
check stream_record_exit [ $? -eq 0 ]
"$KXPROF" -v report "$TMP/s.kxp" --json >"$TMP/s.json" 2>"$TMP/s.err"
check stream_streamed grep -q "was streamed" "$TMP/s.err"
"$KXPROF" report --in-memory "$TMP/s.kxp" --json >"$TMP/s.m.json" 2>/dev/null
check stream_same python3 "$(dirname "$0")/same_report.py" "$TMP/s.json" "$TMP/s.m.json"
check stream_counted python3 -c '
import json,sys
row = json.load(open(sys.argv[1]))["Counters"]["Rows"]["ioctl/loop"]["BLKZEROOUT"]
sys.exit(not (row["Calls"] > 0 and row["context-switches"]["Mean"] >= 0.99))' "$TMP/s.json"
# convert reads it one time window at a time (-v says so), each counter
# record in the window of its call: every part is the bytes of the part
# written from the whole capture in memory (--in-memory), counters included.
for m in w m; do
	opt=(-v convert)
	[ $m = m ] && opt=(convert --in-memory)
	mkdir -p "$TMP/win.$m"
	"$KXPROF" "${opt[@]}" "$TMP/s.kxp" --split-events 40 --xplane "$TMP/win.$m/x" \
		--chrome "$TMP/win.$m/p.json" >/dev/null 2>"$TMP/win.$m.err"
	check "windowed_exit_$m" [ $? -eq 0 ]
done
check windowed_said grep -q "read one window at a time" "$TMP/win.w.err"
check windowed_parts test "$(ls "$TMP/win.w"/p.*.json | wc -l)" -ge 3
check windowed_same_chrome sh -c "cd '$TMP/win.w' && for f in p.*.json; do cmp -s \$f ../win.m/\$f || exit 1; done"
check windowed_same_xspace bash -c "diff <(cd '$TMP/win.w/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2) <(cd '$TMP/win.m/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2) >/dev/null"
check windowed_counters python3 -c '
import glob, json, sys
z = [e for p in glob.glob(sys.argv[1] + "/p.*.json") for e in json.load(open(p))["traceEvents"]
     if e.get("ph") == "X" and e.get("name") == "BLKZEROOUT"]
sys.exit(not z or any("context-switches" not in e["args"] for e in z))' "$TMP/win.w"

# Per call: Chrome args and XSpace stats.
"$KXPROF" convert "$TMP/c.kxp" --chrome "$TMP/c.json" --xplane "$TMP/xp" >/dev/null
check convert_exit [ $? -eq 0 ]
# Per call, against the time blocked the ioctl capture measured: a call that
# slept was switched out, so it counts at least one context switch.
check chrome_per_call python3 -c '
import json,sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
z = [e for e in ev if e.get("ph") == "X" and e.get("name") == "BLKZEROOUT" and e.get("cat") == "ioctl/loop"]
cs = [e["args"].get("context-switches") for e in z]
slept = [e for e in z if e["args"].get("offcpu_us", 0) > 0]
bad = [e for e in slept if e["args"].get("context-switches", 0) < 1]
print("# %d BLKZEROOUT slices (%d slept); context-switches per call: min %s, max %s; %d slept without one" % (len(z), len(slept), min(cs, default=None), max(cs, default=None), len(bad)))
sys.exit(bool(not z or None in cs or len(slept) < 0.9 * len(z) or bad))' "$TMP/c.json"
xp=$(find "$TMP/xp" -name "*.xplane.pb" | head -n 1)
check xspace_stat bash -c 'protoc --decode_raw <"$1" | grep -q "context-switches"' _ "$xp"

# ---- usage errors ----
"$KXPROF" record --counters nonsense -o "$TMP/x.kxp" -- true 2>"$TMP/e1"
check unknown_counter_exit2 [ $? -eq 2 ]
check unknown_counter_says grep -q "unknown counter 'nonsense' (known: cycles" "$TMP/e1"
"$KXPROF" record --counters cs,page-faults,cycles,instructions,cache-misses -o "$TMP/x.kxp" -- true 2>"$TMP/e2"
check too_many_exit2 [ $? -eq 2 ]
"$KXPROF" record --counters cs,context-switches -o "$TMP/x.kxp" -- true 2>"$TMP/e3"
check twice_exit2 [ $? -eq 2 ]
check twice_says grep -q "given twice" "$TMP/e3"

# ---- KVM: a sleeping KVM_RUN, where /dev/kvm exists ----
if [ -c /dev/kvm ]; then
	"$KXPROF" record --counters context-switches -o "$TMP/k.kxp" -- "$WL/kvm_workload" -t 1 -j 20 -s \
		>"$TMP/kwl.json" 2>/dev/null
	check kvm_record_exit [ $? -eq 0 ]
	"$KXPROF" report "$TMP/k.kxp" --json >"$TMP/k.json"
	check kvm_sleeping_run python3 -c '
import json,sys
row = json.load(open(sys.argv[1]))["Counters"]["Rows"]["ioctl/kvm"]["KVM_RUN"]
print("# KVM_RUN:", row)
sys.exit(not (row["Calls"] == 20 and row["context-switches"]["Mean"] >= 0.99))' "$TMP/k.json"
else
	skip kvm_sleeping_run "no /dev/kvm"
fi
