#!/usr/bin/env bash
# The report of a real capture of the demo workload (the stand-in
# accelerator: kvm, or the loop driver without /dev/kvm; lib.sh), as a perf
# user reads it:
# times in readable units (never 0.000), the default table within 120
# columns (the Capture line aside), --wide with every column, the job table
# with its own columns, no hook warnings for drivers the capture did not
# trace; the live summary of kxprof serve (report --from) without emitted
# figures; and Chrome flows that run forward on the real capture.
. "$(dirname "$0")/lib.sh"
at_exit 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"'

# run NAME WANT-RC OUT -- CMD...: stdout to OUT, stderr to OUT.err; fails NAME otherwise.
run() {
	local name=$1 want=$2 out=$3 rc
	shift 4
	"$@" >"$out" 2>"$out.err"
	rc=$?
	[ "$rc" -eq "$want" ] && return 0
	fail "$name" "exit $rc (wanted $want): $* ; stderr: $(head -c 300 "$out.err" | tr '\n' ' ')"
	return 1
}

# Widest line of a table in terminal columns (µ is one), the Capture line aside.
width() {
	python3 -c 'import sys; print(max([len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8") if not l.startswith("Capture: ")] or [0]))' "$1"
}
# The words of the first line of FILE that starts with PREFIX.
words() { grep -m1 "^$2" "$1" | tr -s ' ' | sed 's/ $//'; }

accel_argv 2 100 2000
run record 0 "$TMP/rec.out" -- "$KXPROF" record "${ACCEL_DEV[@]}" -o "$TMP/run.kxp" -- \
	"${ACCEL_ARGV[@]}" || exit 0
run report 0 "$TMP/t.txt" -- "$KXPROF" report "$TMP/run.kxp" || exit 0
check report_within_120_columns test "$(width "$TMP/t.txt")" -le 120
check report_no_zero_times sh -c "! tail -n +2 '$TMP/t.txt' | grep -q '0\.000'"
check report_units grep -Eq "^$ACCEL_JOB +200 +0 +[0-9.]+(ns|µs|ms|s) " "$TMP/t.txt"
# Blocked% when off-CPU time was measured (sched_switch attached).
check report_default_columns sh -c "echo '$(words "$TMP/t.txt" 'Name ')' |
	grep -Eqx 'Name Count Errors Total Avg p50 p99 Max( Blocked%)?'"
check report_job_columns sh -c "grep -A1 '^jobs/$ACCEL\$' '$TMP/t.txt' | tail -n 1 |
	tr -s ' ' | sed 's/ \$//' | grep -qx 'Name Jobs Total Avg p50 p99 Max'"
check report_job_rows_no_dashes sh -c "! grep -A3 '^jobs/$ACCEL\$' '$TMP/t.txt' | grep -q ' -\( \|\$\)'"
# A capture of one driver: no warning about GPU hooks (kxprof list keeps them all).
check report_no_gpu_hook_warnings sh -c "! grep -qE '^WARNING: .*(i915|amdgpu|xe_exec|drm_ioctl|gpu_scheduler)' '$TMP/t.txt'"
run list_keeps_hooks 0 "$TMP/list.txt" -- "$KXPROF" list &&
	check list_keeps_hooks grep -q 'i915' "$TMP/list.txt"

run report_hist 0 "$TMP/h.txt" -- "$KXPROF" report --hist "$TMP/run.kxp" &&
	check report_hist_within_120_columns test "$(width "$TMP/h.txt")" -le 120
run report_wide 0 "$TMP/w.txt" -- "$KXPROF" report --wide "$TMP/run.kxp" &&
	check report_wide_columns sh -c "echo '$(words "$TMP/w.txt" 'Name ')' |
		grep -Eqx 'Name Count Errors Total Min Avg p50 p90 p99 Max( Blocked On-CPU Blocked%)?'"
# The JSON keeps its unit: ms.
run report_json 0 "$TMP/r.json" -- "$KXPROF" report --json "$TMP/run.kxp" &&
	check report_json_ms test "$(jget "$TMP/r.json" 'd["Unit"]["Time"]')" = ms

# Chrome flows of the real capture: one per linked job, each starting at its
# submit point inside the job's ioctl on the submitting thread (a KVM_RUN's
# enter; the block queue event inside a BLKZEROOUT) and finishing at its
# job's start, never before it.
if [ "$ACCEL" = kvm ]; then JOBCAT=job/kvm; else JOBCAT=job/block; fi
run convert 0 "$TMP/c.out" -- "$KXPROF" convert "$TMP/run.kxp" --chrome "$TMP/run.json" &&
	check chrome_flows_forward python3 - "$TMP/run.json" "$TMP/r.json" "$ACCEL" "$ACCEL_JOB" "$JOBCAT" <<'PY'
import json, sys
from decimal import Decimal
ev = json.load(open(sys.argv[1]), parse_float=Decimal)["traceEvents"]
drv, job, jobcat = sys.argv[3], sys.argv[4], sys.argv[5]
linked = json.load(open(sys.argv[2]))["Jobs"]["devices"][drv]["linked"]
s = {e["id"]: e for e in ev if e.get("ph") == "s"}
f = {e["id"]: e for e in ev if e.get("ph") == "f"}
calls = {}
for e in ev:
    if e.get("ph") == "X" and e["name"] == job and e["cat"] == "ioctl/" + drv:
        calls.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
jobs = {(e["pid"], e["tid"], e["ts"]) for e in ev if e.get("ph") == "X" and e["cat"] == jobcat}
def inside(x):
    spans = calls.get((x["pid"], x["tid"]), [])
    if drv == "kvm":  # at the enter exactly
        return any(a == x["ts"] for a, b in spans)
    return any(a <= x["ts"] <= b for a, b in spans)
bad = [i for i in s if not (i in f and s[i]["ts"] <= f[i]["ts"] and inside(s[i]) and
                            (f[i]["pid"], f[i]["tid"], f[i]["ts"]) in jobs)]
print("flows", len(s), "finishes", len(f), "linked jobs", linked, "bad", bad[:5])
sys.exit(0 if len(s) == len(f) == linked >= 200 and not bad else 1)
PY

# The live summary of kxprof serve: what it is, no emitted/received figures.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$KXPROF" serve "${ACCEL_DEV[@]}" --listen "127.0.0.1:$PORT" -p $$ --rescan 0 2>"$TMP/serve.err" &
SPID=$!
for _ in $(seq 1 100); do
	curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$PORT/" && break
	sleep 0.1
done
accel_argv 1 20
run live_workload 0 "$TMP/wl.out" -- "${ACCEL_ARGV[@]}"
run live_report 0 "$TMP/live.txt" -- "$KXPROF" report --from "http://127.0.0.1:$PORT" &&
	check live_report_header sh -c "head -n 1 '$TMP/live.txt' | grep -q '^Live aggregates: ' &&
		! grep -q 'emitted' '$TMP/live.txt'"
run live_report_wide 0 "$TMP/lw.txt" -- "$KXPROF" report --from "http://127.0.0.1:$PORT" --wide &&
	check live_report_wide sh -c "echo '$(words "$TMP/lw.txt" 'Name ')' |
		grep -Eqx 'Name Count Errors Total Min Avg p50 p90 p99 Max( Blocked On-CPU Blocked%)?'"
kill -TERM $SPID
wait_rc serve_stops $SPID 0 && pass serve_stops
