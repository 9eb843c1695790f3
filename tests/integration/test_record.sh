#!/usr/bin/env bash
# record on the stand-in accelerator (kvm where /dev/kvm exists, else the
# loop driver; see lib.sh): exact per-ioctl counts under every attach
# mechanism, sane durations, pid filtering (-p / -- CMD / -a), children and
# threads followed, loss accounting, and the command's exit status.
. "$(dirname "$0")/lib.sh"
COUNTS="python3 $(dirname "$0")/counts.py"
CAT=ioctl/$ACCEL
at_exit 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"'

# 1. exact counts per ioctl name, each mechanism
accel_argv 2 50
for mech in tp_btf raw_tp tp; do
	kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/$mech.kxp" --attach "$mech" -- "${ACCEL_ARGV[@]}" \
		>"$TMP/$mech.wl" 2>"$TMP/$mech.err" || continue
	kx 0 report --json "$TMP/$mech.kxp" >"$TMP/$mech.json" || continue
	check "counts_exact_$mech" $COUNTS "$TMP/$mech.wl" "$TMP/$mech.json" "$CAT"
	check "no_loss_$mech" test "$(jget "$TMP/$mech.json" \
		'd["Capture"]["received"]+d["Capture"]["dropped"]==d["Capture"]["emitted"] and d["Capture"]["dropped"]==0')" = True
done

# 2. durations: long jobs are clearly longer than the driver's cheap call
# (kvm: a long guest loop; loop: BLKFLSBUF after reading 16 MiB into the cache)
if [ "$ACCEL" = kvm ]; then
	accel_argv 1 10 50000 -g 20
	LONG=KVM_RUN
else
	accel_argv 1 10 "" -k flush -g 20
	LONG=BLKFLSBUF
fi
if kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/long.kxp" -- "${ACCEL_ARGV[@]}" >"$TMP/long.wl" 2>/dev/null &&
	kx 0 report --json "$TMP/long.kxp" >"$TMP/long.json"; then
	check durations_sane test "$(jget "$TMP/long.json" \
		'(lambda t: t["'$LONG'"]["Min Time"] > 10*t["'$ACCEL_CHEAP'"]["p50"] and t["'$LONG'"]["Min Time"] > 0.01)(d["Time"]["'$CAT'"])')" = True
	# the workload's own timing of each job brackets what kxprof measured
	check durations_match_workload python3 - "$TMP/long.wl" "$TMP/long.json" "$CAT" "$LONG" <<'PY'
import json, sys
w = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
run = r["Time"][sys.argv[3]][sys.argv[4]]
wl_mean_ms = w["job_ns"]["mean"] / 1e6
print("kernel avg %.3f ms, workload mean %.3f ms" % (run["Avg Time"], wl_mean_ms))
# kernel-side time is inside the user-side time, and close to it
sys.exit(0 if 0.5 * wl_mean_ms <= run["Avg Time"] <= wl_mean_ms * 1.05 + 0.01 else 1)
PY
fi

# 3. a concurrent non-target process is not recorded; with -a it is
accel_workload 1 200 2000 >"$TMP/other.wl" &
other=$!
accel_argv 1 30
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/filt.kxp" -- "${ACCEL_ARGV[@]}" >"$TMP/filt.wl" 2>/dev/null &&
	kx 0 report --json "$TMP/filt.kxp" >"$TMP/filt.json" &&
	check non_target_not_recorded $COUNTS "$TMP/filt.wl" "$TMP/filt.json" "$CAT"
wait $other

# -a: two unrelated processes (neither is kxprof's child) are both recorded
# (stopped with SIGINT once both have finished, however slow the machine)
"$KXPROF" record "${ACCEL_DEV[@]}" -a -o "$TMP/all.kxp" 2>"$TMP/all.err" &
rec=$!
wait_attached $rec || fail record_all_attached "the recorder never attached: $(cat "$TMP/all.err")"
accel_workload 1 40 >"$TMP/a1.wl" &
a1=$!
accel_workload 1 30 >"$TMP/a2.wl"
wait $a1
kill -INT $rec
if wait_rc record_all $rec 0 && kx 0 report --json "$TMP/all.kxp" >"$TMP/all.json"; then
	check all_records_everyone python3 - "$TMP/a1.wl" "$TMP/a2.wl" "$TMP/all.json" "$CAT" "$ACCEL_JOB" <<'PY'
import json, sys
job = sys.argv[5]
a = json.load(open(sys.argv[1]))["ioctls"][job] + json.load(open(sys.argv[2]))["ioctls"][job]
got = json.load(open(sys.argv[3]))["Time"][sys.argv[4]][job]["Total Count"]
print("workloads issued", a, "recorded", got)
sys.exit(0 if got >= a else 1)
PY
fi

# 4. -p PID: attach to a running process (jobs until it is stopped, however
# long loading takes; 0.5 s recorded)
accel_argv 1 1000000 2000
"${ACCEL_ARGV[@]}" >"$TMP/p.wl" &
p=$!
sleep 0.3
kx 0 record "${ACCEL_DEV[@]}" -p "$p" -o "$TMP/p.kxp" -d 0.5 2>"$TMP/p.err" &&
	kx 0 report --json "$TMP/p.kxp" >"$TMP/p.json" &&
	check pid_attach test "$(jget "$TMP/p.json" \
		'0 < d["Time"]["'$CAT'"]["'$ACCEL_JOB'"]["Total Count"] < 1000')" = True
kill -TERM $p
wait $p

# 5. children (fork) and threads of -- CMD are followed
accel_argv 3 20 "" -f
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/fork.kxp" -- "${ACCEL_ARGV[@]}" >"$TMP/fork.wl" 2>/dev/null &&
	kx 0 report --json "$TMP/fork.kxp" >"$TMP/fork.json" &&
	check children_and_threads_followed $COUNTS "$TMP/fork.wl" "$TMP/fork.json" "$CAT"
check child_counts_present test "$(jget "$TMP/fork.wl" 'len(d["children"])')" -ge 1

# 6. exit status of the command is propagated
"$KXPROF" record "${ACCEL_DEV[@]}" -o "$TMP/st.kxp" -- sh -c 'exit 7' 2>/dev/null
check exit_status_propagated test $? -eq 7
