#!/usr/bin/env bash
# The report of a real capture of the demo workload, as a perf user reads it:
# times in readable units (never 0.000), the default table within 120
# columns (the Capture line aside), --wide with every column, the job table
# with its own columns, no hook warnings for drivers the capture did not
# trace; the live summary of kxprof serve (report --from) without emitted
# figures; and Chrome flows that run forward on the real capture.
. "$(dirname "$0")/lib.sh"
need_kvm report || exit 0
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"' EXIT

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

run record 0 "$TMP/rec.out" -- "$KXPROF" record -o "$TMP/run.kxp" -- \
	"$WL/kvm_workload" -t 2 -j 100 -l 2000 || exit 0
run report 0 "$TMP/t.txt" -- "$KXPROF" report "$TMP/run.kxp" || exit 0
check report_within_120_columns test "$(width "$TMP/t.txt")" -le 120
check report_no_zero_times sh -c "! tail -n +2 '$TMP/t.txt' | grep -q '0\.000'"
check report_units grep -Eq '^KVM_RUN +200 +0 +[0-9.]+(ns|µs|ms|s) ' "$TMP/t.txt"
# Blocked% when off-CPU time was measured (sched_switch attached).
check report_default_columns sh -c "echo '$(words "$TMP/t.txt" 'Name ')' |
	grep -Eqx 'Name Count Errors Total Avg p50 p99 Max( Blocked%)?'"
check report_job_columns sh -c "grep -A1 '^jobs/kvm\$' '$TMP/t.txt' | tail -n 1 |
	tr -s ' ' | sed 's/ \$//' | grep -qx 'Name Jobs Total Avg p50 p99 Max'"
check report_job_rows_no_dashes sh -c "! grep -A3 '^jobs/kvm\$' '$TMP/t.txt' | grep -q ' -\( \|\$\)'"
# A kvm-only capture: no warning about GPU hooks (kxprof list keeps them all).
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

# Chrome flows of the real capture: each starts at its KVM_RUN's enter and
# finishes at its job's start, never before it.
run convert 0 "$TMP/c.out" -- "$KXPROF" convert "$TMP/run.kxp" --chrome "$TMP/run.json" &&
	check chrome_flows_forward python3 - "$TMP/run.json" <<'PY'
import json, sys
from decimal import Decimal
ev = json.load(open(sys.argv[1]), parse_float=Decimal)["traceEvents"]
s = {e["id"]: e for e in ev if e.get("ph") == "s"}
f = {e["id"]: e for e in ev if e.get("ph") == "f"}
enters = {(e["pid"], e["tid"], e["ts"]) for e in ev if e.get("ph") == "X" and e["name"] == "KVM_RUN"}
jobs = {(e["pid"], e["tid"], e["ts"]) for e in ev if e.get("ph") == "X" and e["cat"] == "job/kvm"}
ok = len(s) == len(f) == 200 and all(
    s[i]["ts"] <= f[i]["ts"] and (s[i]["pid"], s[i]["tid"], s[i]["ts"]) in enters and
    (f[i]["pid"], f[i]["tid"], f[i]["ts"]) in jobs for i in s)
sys.exit(0 if ok else 1)
PY

# The live summary of kxprof serve: what it is, no emitted/received figures.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$KXPROF" serve --listen "127.0.0.1:$PORT" -p $$ --rescan 0 2>"$TMP/serve.err" &
SPID=$!
for _ in $(seq 1 100); do
	curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$PORT/" && break
	sleep 0.1
done
run live_workload 0 "$TMP/wl.out" -- "$WL/kvm_workload" -t 1 -j 20
run live_report 0 "$TMP/live.txt" -- "$KXPROF" report --from "http://127.0.0.1:$PORT" &&
	check live_report_header sh -c "head -n 1 '$TMP/live.txt' | grep -q '^Live aggregates: ' &&
		! grep -q 'emitted' '$TMP/live.txt'"
run live_report_wide 0 "$TMP/lw.txt" -- "$KXPROF" report --from "http://127.0.0.1:$PORT" --wide &&
	check live_report_wide sh -c "echo '$(words "$TMP/lw.txt" 'Name ')' |
		grep -Eqx 'Name Count Errors Total Min Avg p50 p90 p99 Max( Blocked On-CPU Blocked%)?'"
kill -TERM $SPID
wait $SPID
check serve_stops test $? -eq 0
