#!/usr/bin/env bash
# Traces the real kvm driver: exact per-ioctl counts under every attach
# mechanism, sane durations, pid filtering (-p / -- CMD / -a), children and
# threads followed, and loss accounting.
. "$(dirname "$0")/lib.sh"
need_kvm kvm || exit 0
COUNTS="python3 $(dirname "$0")/counts.py"

# 1. exact counts per ioctl name, each mechanism
for mech in tp_btf raw_tp tp; do
	"$KXPROF" record -o "$TMP/$mech.kxp" --attach "$mech" -- "$WL/kvm_workload" -t 2 -j 50 \
		>"$TMP/$mech.wl" 2>"$TMP/$mech.err"
	rc=$?
	if [ $rc -ne 0 ]; then fail "record_$mech" "exit $rc: $(cat "$TMP/$mech.err")"; continue; fi
	"$KXPROF" report --json "$TMP/$mech.kxp" >"$TMP/$mech.json"
	check "counts_exact_$mech" $COUNTS "$TMP/$mech.wl" "$TMP/$mech.json" ioctl/kvm
	check "no_loss_$mech" test "$(jget "$TMP/$mech.json" \
		'd["Capture"]["received"]+d["Capture"]["dropped"]==d["Capture"]["emitted"] and d["Capture"]["dropped"]==0')" = True
done

# 2. durations: a long guest loop makes KVM_RUN clearly longer than GET_API_VERSION
"$KXPROF" record -o "$TMP/long.kxp" -- "$WL/kvm_workload" -t 1 -j 10 -l 50000 >"$TMP/long.wl" 2>/dev/null
"$KXPROF" report --json "$TMP/long.kxp" >"$TMP/long.json"
check durations_sane test "$(jget "$TMP/long.json" \
	'd["Time"]["ioctl/kvm"]["KVM_RUN"]["Min Time"] > 10*d["Time"]["ioctl/kvm"]["KVM_GET_API_VERSION"]["Max Time"] and d["Time"]["ioctl/kvm"]["KVM_RUN"]["Min Time"] > 0.01')" = True
# the workload's own KVM_RUN timing brackets what kxprof measured
check durations_match_workload python3 - "$TMP/long.wl" "$TMP/long.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
run = r["Time"]["ioctl/kvm"]["KVM_RUN"]
wl_mean_ms = w["kvm_run_ns"]["mean"] / 1e6
# kernel-side time is inside the user-side time, and close to it
sys.exit(0 if 0.5 * wl_mean_ms <= run["Avg Time"] <= wl_mean_ms * 1.05 + 0.01 else 1)
PY

# 3. a concurrent non-target process is not recorded; with -a it is
"$WL/kvm_workload" -t 1 -j 200 -l 2000 >"$TMP/other.wl" &
other=$!
"$KXPROF" record -o "$TMP/filt.kxp" -- "$WL/kvm_workload" -t 1 -j 30 >"$TMP/filt.wl" 2>/dev/null
wait $other
"$KXPROF" report --json "$TMP/filt.kxp" >"$TMP/filt.json"
check non_target_not_recorded $COUNTS "$TMP/filt.wl" "$TMP/filt.json" ioctl/kvm

# -a: two unrelated processes (neither is kxprof's child) are both recorded
"$KXPROF" record -a -o "$TMP/all.kxp" -d 2.5 2>/dev/null &
rec=$!
sleep 1
"$WL/kvm_workload" -t 1 -j 40 >"$TMP/a1.wl" &
a1=$!
"$WL/kvm_workload" -t 1 -j 30 >"$TMP/a2.wl"
wait $a1
wait $rec
"$KXPROF" report --json "$TMP/all.kxp" >"$TMP/all.json"
check all_records_everyone python3 - "$TMP/a1.wl" "$TMP/a2.wl" "$TMP/all.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["ioctls"]["KVM_RUN"] + json.load(open(sys.argv[2]))["ioctls"]["KVM_RUN"]
got = json.load(open(sys.argv[3]))["Time"]["ioctl/kvm"]["KVM_RUN"]["Total Count"]
sys.exit(0 if got >= a else 1)
PY

# 4. -p PID: attach to a running process
"$WL/kvm_workload" -t 1 -j 1000 -l 2000 >"$TMP/p.wl" &
p=$!
sleep 0.3
"$KXPROF" record -p "$p" -o "$TMP/p.kxp" -d 0.5 2>"$TMP/p.err"
wait $p
"$KXPROF" report --json "$TMP/p.kxp" >"$TMP/p.json"
check pid_attach test "$(jget "$TMP/p.json" \
	'0 < d["Time"]["ioctl/kvm"]["KVM_RUN"]["Total Count"] < 1000')" = True

# 5. children (fork) and threads of -- CMD are followed
"$KXPROF" record -o "$TMP/fork.kxp" -- "$WL/kvm_workload" -t 3 -j 20 -f >"$TMP/fork.wl" 2>/dev/null
"$KXPROF" report --json "$TMP/fork.kxp" >"$TMP/fork.json"
check children_and_threads_followed $COUNTS "$TMP/fork.wl" "$TMP/fork.json" ioctl/kvm
check child_counts_present test "$(jget "$TMP/fork.wl" 'len(d["children"])')" -ge 1

# 6. exit status of the command is propagated
"$KXPROF" record -o "$TMP/st.kxp" -- sh -c 'exit 7' 2>/dev/null
check exit_status_propagated test $? -eq 7
