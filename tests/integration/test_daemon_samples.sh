#!/usr/bin/env bash
# CPU samples, off-CPU stacks and counters through the daemon: `kxprof serve
# --socket` as root, `record -F 999 --off-cpu --counters ...` as uid 65534
# (setpriv) of its own profile_workload (a spin phase, then BLKZEROOUT on a
# loop device root attached and gave to the users' group), while a root
# process and a process of uid 65533 spin at the same time. Checked:
#  - the user's file holds samples of the user's own processes only (neither
#    the root nor the other user's pid, thread or function shows), unwinding
#    to main, with the driver-call frame [loop] BLKZEROOUT over main, opened
#    by `go tool pprof`; received + dropped == emitted;
#  - kernel-mode profiling as the daemon gives it: with --user-kernel no the
#    driver-call frame is the leaf (no kernel frame, the skipped hook says
#    why); with --user-kernel yes kernel functions show under it by name, and
#    no kernel address is in the user's pprof;
#  - a traced child that execs a setuid program is not sampled from then on
#    (the kernel checks the sampled thread's real and effective uid), its
#    sibling is;
#  - nothing of a program its user may only execute: the exec makes it not
#    dumpable, so (the kernel's rule, as for perf) it leaves the capture,
#    counted, and none of its symbols are read;
#  - --off-cpu: the blocked BLKZEROOUTs of the user's threads only;
#  - --counters: every BLKZEROOUT measured, a context switch each;
#  - -F over serve --max-sample-hz is refused with the limit (exit 1), and a
#    daemon's lower limit is what it says.
# Where /dev/kvm exists, a user's busy KVM_RUN shows its driver-call frame.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # the system's: users other than root can run it
TRACES=$HERE/pprof_traces.py
if [ "$(id -u)" -ne 0 ]; then
	skip daemon_samples "needs root (runs the daemon, changes uids)"
	exit 0
fi
command -v setpriv >/dev/null || { skip daemon_samples "setpriv not installed"; exit 0; }
command -v losetup >/dev/null || { skip daemon_samples "losetup not installed"; exit 0; }
# go tool pprof, offline: its caches in the test's own directory, no network.
export HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
mkdir -p "$HOME"
PPROF_OK=1
command -v go >/dev/null || { fail pprof_tool "go is missing (Debian golang-go; scripts/install-deps.sh installs it)"; PPROF_OK=0; }
LOOPDEV=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	rm -rf "$TMP"
}
at_exit cleanup

# Everything the users run lives where they can reach it.
chmod 755 "$TMP"
BIN=$TMP/bin
OUT=$TMP/out
mkdir -p "$BIN" "$OUT" "$TMP/run"
chmod 1777 "$OUT"
cp "$KXPROF" "$BIN/kxprof"
cp "$WL/profile_workload" "$BIN/"
[ -x "$WL/kvm_workload" ] && cp "$WL/kvm_workload" "$BIN/"
chmod 755 "$BIN" "$BIN"/*
SOCK=$TMP/run/kxprof.sock

truncate -s 32M "$TMP/backing"
LOOPDEV=$(losetup -f --show "$TMP/backing") || { fail daemon_samples_setup "losetup failed"; exit 0; }
chgrp 65534 "$LOOPDEV" && chmod g+rw "$LOOPDEV"

USER_GROUPS=(--clear-groups)
# The users reach kvm through their group (nogroup), as a host's kvm group would give it.
user_kvm "$TMP" 65534
# as UID CMD...: runs CMD as UID (group nogroup), with the daemon's socket.
as() {
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid=65534 "${USER_GROUPS[@]}" --inh-caps=-all \
		env KXPROF_SOCKET="$SOCK" "$@"
}
DPID=
# serve_socket ARGS...: (re)starts the daemon on $SOCK with ARGS.
serve_socket() {
	stop_daemon
	"$KXPROF" serve --socket "$SOCK" --idle-timeout 10 "$@" 2>"$TMP/serve.log" &
	DPID=$!
	for _ in $(seq 1 100); do
		[ -S "$SOCK" ] && return 0
		sleep 0.1
	done
	fail daemon_starts "no socket after 10 s: $(cat "$TMP/serve.log")"
	return 1
}
stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill -TERM "$DPID"
	wait_rc daemon_exit "$DPID" 0
	DPID=
}
# own_only TRACES PID: the traces (go tool pprof -traces) are of process PID
# and its own threads and children only: PID among their pid labels, no
# thread named other than the workload (a sanitizer build's leak check
# clones a child of the workload at exit, which shows as another pid), or
# than kxprof: samples keep the name in force when taken, and the process
# record launched is kxprof's child until its exec.
own_only() {
	python3 -c '
import sys
lines = [l.strip() for l in open(sys.argv[1])]
pids = {l.split(":", 1)[1].strip() for l in lines if l.startswith("pid:")}
names = {l.split(":", 1)[1].strip() for l in lines if l.startswith("thread:")}
print("# pids:", sorted(pids), "threads:", sorted(names))
sys.exit(sys.argv[2] not in pids or "profile_workloa" not in names
         or not names <= {"profile_workloa", "kxprof"})' "$@"
}

# ---- record -F --off-cpu --counters as uid 65534, others spinning ----
serve_socket --user-kernel no || exit 0
"$WL/profile_workload" -s 8 >"$TMP/root.json" &
ROOTWL=$!
as 65533 "$BIN/profile_workload" -s 8 >"$TMP/other.json" &
OTHERWL=$!
as 65534 "$BIN/kxprof" record -F 999 --off-cpu --counters context-switches,page-faults \
	--device "$LOOPDEV" -o "$OUT/u.kxp" -- "$BIN/profile_workload" -s 1 -D "$LOOPDEV" -z 2 \
	>"$TMP/u.json" 2>"$TMP/u.err"
rc=$?
wait "$ROOTWL" "$OTHERWL"
if [ $rc -ne 0 ]; then
	fail user_record "exit $rc: $(cat "$TMP/u.err")"
	exit 0
fi
check user_record_through_daemon grep -q "recording through the kxprof daemon" "$TMP/u.err"
check user_record_says_samples grep -q "CPU samples, 0 dropped" "$TMP/u.err"
check user_record_says_no_kernel grep -q "user frames only, no kernel frames: not for users on this daemon (kxprof serve --user-kernel no)" "$TMP/u.err"
kx 0 report --json "$OUT/u.kxp" >"$TMP/u.r.json" || exit 0
check user_samples_accounted python3 -c '
import json,sys
d = json.load(open(sys.argv[1]))
p, o = d["Profile"], d["OffCpuProfile"]
print("# cpu:", {k: p[k] for k in ("Samples", "Emitted", "Received", "Dropped", "InCalls")},
      "off-cpu:", {k: o[k] for k in ("Samples", "Emitted", "Received", "Dropped")})
cpu = json.load(open(sys.argv[2]))["cpu_ns"] / 1e9
print("# %.2f s of the workload'"'"'s CPU: %d samples at 999 Hz expected" % (cpu, 999 * cpu))
sys.exit(not (p["Received"] + p["Dropped"] == p["Emitted"] and p["Samples"] > 0.5 * 999 * cpu
              and p["InCalls"] > 0 and o["Received"] + o["Dropped"] == o["Emitted"]
              and o["Samples"] > 10))' "$TMP/u.r.json" "$TMP/u.json"
check user_kernel_skipped_said python3 -c '
import json,sys
t = open(sys.argv[1]).read()
sys.exit("kernel stacks" not in t or "--user-kernel no" not in t)' "$TMP/u.r.json"
check user_counters python3 -c '
import json,sys
d = json.load(open(sys.argv[1]))
wl = json.load(open(sys.argv[2]))
c = d["Counters"]
row = c["Rows"]["ioctl/loop"]["BLKZEROOUT"]
print("# BLKZEROOUT: %d issued, %d measured; context-switches %s" % (wl["ioctls"]["BLKZEROOUT"], row["Calls"], row["context-switches"]))
sys.exit(not (c["Received"] + c["Dropped"] == c["Emitted"] and c["ReadFailures"] == 0
              and row["Calls"] == wl["ioctls"]["BLKZEROOUT"] > 0 and row["context-switches"]["Mean"] >= 0.99))' \
	"$TMP/u.r.json" "$TMP/u.json"
kx 0 convert "$OUT/u.kxp" --pprof "$TMP/u.pb.gz" --folded "$TMP/u.folded" >/dev/null || exit 0
kx 0 convert "$OUT/u.kxp" --off-cpu --pprof "$TMP/uoff.pb.gz" --folded "$TMP/uoff.folded" >/dev/null || exit 0
UPID=$(jget "$TMP/u.json" 'd["pid"]')
ROOTPID=$(jget "$TMP/root.json" 'd["pid"]')
OTHERPID=$(jget "$TMP/other.json" 'd["pid"]')
# Both others spun through the whole capture: had they been sampled, their
# kxw_heavy would be thousands of samples.
check others_spun python3 -c '
import json,sys
sys.exit(not all(json.load(open(f))["spin"]["heavy_units"] > 0 for f in sys.argv[1:]))' "$TMP/root.json" "$TMP/other.json"
if [ "$PPROF_OK" -eq 1 ]; then
	go tool pprof -traces "$TMP/u.pb.gz" >"$TMP/u.traces" 2>"$TMP/u.traces.err"
	check user_pprof_opens [ $? -eq 0 ]
	check user_samples_own_only own_only "$TMP/u.traces" "$UPID"
	check user_samples_no_others bash -c '! grep -Eq "^ *pid: *($1|$2)\$" "$3"' _ "$ROOTPID" "$OTHERPID" "$TMP/u.traces"
	check user_driver_frame_leaf python3 "$TRACES" "$TMP/u.traces" callleaf "[loop] BLKZEROOUT" main
	go tool pprof -traces "$TMP/uoff.pb.gz" >"$TMP/uoff.traces" 2>&1
	check user_offcpu_pprof_opens [ $? -eq 0 ]
	check user_offcpu_own_only own_only "$TMP/uoff.traces" "$UPID"
	check user_offcpu_frame_leaf python3 "$TRACES" "$TMP/uoff.traces" callleaf "[loop] BLKZEROOUT" main
fi
# Counted from the folded stacks too: the others' samples would be kxw_heavy
# leaves far beyond the user's one second of spinning.
check user_folded_spin_bounded python3 -c '
import json,sys
n = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[1]) if ";kxw_heavy " in l)
cpu = json.load(open(sys.argv[2]))["cpu_ns"] / 1e9
print("# kxw_heavy samples %d for the user'"'"'s %.2f s of CPU" % (n, cpu))
sys.exit(not (0 < n < 1.3 * 999 * cpu))' "$TMP/u.folded" "$TMP/u.json"
# User stacks unwind to main: nearly every kxw_heavy sample (a sample in a
# function's first instructions, before its frame exists, misses its caller).
check user_unwind python3 -c '
import sys
n = ok = 0
for l in open(sys.argv[1]):
    stack, c = l.rsplit(" ", 1)
    if stack.endswith(";kxw_heavy"):
        n += int(c)
        ok += int(c) * (";main;kxw_spin_phase;kxw_heavy" in stack)
print("# %d of %d kxw_heavy samples unwind through kxw_spin_phase to main" % (ok, n))
sys.exit(not (n > 0 and ok >= 0.95 * n))' "$TMP/u.folded"
check user_offcpu_no_kernel bash -c '! grep -q "schedule" "$1"' _ "$TMP/uoff.folded"

# ---- a child that execs a setuid program is not sampled ----
# The user's shell runs a setuid-root copy of the workload (real uid the
# user's, effective 0), then the workload itself: the kernel keeps no sample
# of the first once it has exec'd (the sampled thread's real and effective
# uid must both be the user's), the second is sampled.
cp "$WL/profile_workload" "$BIN/suidspin"
chmod 4755 "$BIN/suidspin"
as 65534 "$BIN/kxprof" record -F 999 --device "$LOOPDEV" -o "$OUT/s.kxp" -- sh -c \
	"$BIN/suidspin -s 1 >$OUT/suid.json && $BIN/profile_workload -s 0.5 >$OUT/own.json" \
	2>"$TMP/s.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail setuid_record "exit $rc: $(cat "$TMP/s.err")"
elif [ "$PPROF_OK" -eq 1 ]; then
	kx 0 convert "$OUT/s.kxp" --pprof "$TMP/s.pb.gz" >/dev/null
	go tool pprof -traces "$TMP/s.pb.gz" >"$TMP/s.traces" 2>&1
	check setuid_pprof_exit [ $? -eq 0 ]
	SUIDPID=$(jget "$OUT/suid.json" 'd["pid"]')
	OWNPID=$(jget "$OUT/own.json" 'd["pid"]')
	check setuid_pids_read bash -c '[[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $1 != "$2" ]]' _ "$SUIDPID" "$OWNPID"
	check setuid_child_ran python3 -c '
import json,sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["spin"]["heavy_units"] > 0 and d["cpu_ns"] > 0))' "$OUT/suid.json"
	# nopidframe fails on a file without traces (go tool pprof's error).
	check setuid_child_not_sampled python3 "$TRACES" "$TMP/s.traces" nopidframe "$SUIDPID" kxw_heavy
	check setuid_sibling_sampled python3 "$TRACES" "$TMP/s.traces" pidframe "$OWNPID" kxw_heavy
fi

# ---- nothing of a program the user may only execute ----
# An execute-only copy of the workload (mode 0711) runs as the user, but it
# is not the user's to read: the kernel makes it not dumpable at its exec,
# and the daemon's exec rule drops it there (counted), as perf would.
cp "$WL/profile_workload" "$BIN/xonly"
chmod 711 "$BIN/xonly"
as 65534 "$BIN/kxprof" record -F 999 --device "$LOOPDEV" -o "$OUT/x.kxp" -- "$BIN/xonly" -s 0.5 \
	>/dev/null 2>"$TMP/x.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail xonly_record "exit $rc: $(cat "$TMP/x.err")"
else
	kx 0 report --json "$OUT/x.kxp" >"$TMP/x.json"
	# No sample of it (there may be none at all: no folded stacks then).
	check xonly_no_samples python3 -c '
import json, sys
p = json.load(open(sys.argv[1])).get("Profile", {})
sys.exit(any(q["comm"] == "xonly" or any("kxw_" in f["Function"] for f in q["Functions"])
             for q in p.get("Processes", [])))' "$TMP/x.json"
	check xonly_left_counted grep -q '"1 processes left the capture: exec of a protected program' "$TMP/x.json"
fi

# ---- nothing of a process while it is not dumpable ----
# The user's own workload makes itself not dumpable for its spin (-n), as the
# exec of a program its user may not read does before anything of that
# program runs: the user could not read it then (ptrace's rule), so none of
# its samples are taken then; its BLKZEROOUT calls after, dumpable again,
# are all traced.
as 65534 "$BIN/kxprof" record -F 999 --device "$LOOPDEV" -o "$OUT/n.kxp" -- \
	"$BIN/profile_workload" -n -s 0.4 -D "$LOOPDEV" -z 0.2 >"$TMP/n.json" 2>"$TMP/n.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail undumpable_record "exit $rc: $(cat "$TMP/n.err")"
else
	kx 0 report --json "$OUT/n.kxp" >"$TMP/n.r.json"
	check undumpable_not_sampled python3 -c '
import json, sys
r, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fns = [f["Function"] for q in r.get("Profile", {}).get("Processes", []) for f in q["Functions"]]
spin = sum(f in ("kxw_heavy", "kxw_light", "kxw_spin_phase") for f in fns)
calls = r["Time"].get("ioctl/loop", {}).get("BLKZEROOUT", {}).get("Total Count")
print("# spin frames %d; BLKZEROOUT traced %s of %d; %d spin units" % (
    spin, calls, w["ioctls"]["BLKZEROOUT"], w["spin"]["heavy_units"]))
sys.exit(spin != 0 or w["spin"]["heavy_units"] == 0 or calls != w["ioctls"]["BLKZEROOUT"] > 0)' \
		"$TMP/n.r.json" "$TMP/n.json"
fi

# ---- the frequency limit ----
as 65534 "$BIN/kxprof" record -F 1000 --device "$LOOPDEV" -o "$OUT/hi.kxp" -- true 2>"$TMP/hi.err"
check over_limit_exit1 [ $? -eq 1 ]
check over_limit_says grep -q "sampling at 1000 Hz is over this daemon's limit of 999 Hz" "$TMP/hi.err"
check over_limit_no_file [ ! -e "$OUT/hi.kxp" ]

# ---- --user-kernel yes, a lower limit ----
serve_socket --user-kernel yes --max-sample-hz 500 || exit 0
as 65534 "$BIN/kxprof" record -F 501 --device "$LOOPDEV" -o "$OUT/hi.kxp" -- true 2>"$TMP/hi2.err"
check lower_limit_exit1 [ $? -eq 1 ]
check lower_limit_says grep -q "over this daemon's limit of 500 Hz" "$TMP/hi2.err"
as 65534 "$BIN/kxprof" record -F 499 --off-cpu --device "$LOOPDEV" -o "$OUT/k.kxp" -- \
	"$BIN/profile_workload" -s 0.2 -D "$LOOPDEV" -z 1.5 >"$TMP/k.json" 2>"$TMP/k.err"
rc=$?
check kernel_record_exit [ $rc -eq 0 ]
if [ $rc -eq 0 ] && [ "$PPROF_OK" -eq 1 ]; then
	kx 0 convert "$OUT/k.kxp" --pprof "$TMP/k.pb.gz" >/dev/null
	kx 0 convert "$OUT/k.kxp" --off-cpu --pprof "$TMP/koff.pb.gz" >/dev/null
	go tool pprof -traces "$TMP/k.pb.gz" >"$TMP/k.traces" 2>&1
	check kernel_pprof_opens [ $? -eq 0 ]
	check kernel_driver_frame python3 "$TRACES" "$TMP/k.traces" call "[loop] BLKZEROOUT" main zeroout
	go tool pprof -traces "$TMP/koff.pb.gz" >"$TMP/koff.traces" 2>&1
	check kernel_offcpu_frame python3 "$TRACES" "$TMP/koff.traces" call "[loop] BLKZEROOUT" main schedule
	# Kernel frames by name, under stand-in addresses (symbol/kmask.h: from
	# 0xfffe000000000000): none is a real kernel address (0xffff8... up).
	go tool pprof -raw "$TMP/k.pb.gz" >"$TMP/k.raw" 2>&1
	check kernel_stand_ins grep -Eq "^ +[0-9]+: 0xfffe[0-9a-f]{12} .*\[kernel.kallsyms\]" "$TMP/k.raw"
	check kernel_no_address bash -c '! grep -Eiq "0xffff[89a-f][0-9a-f]{11}" "$1"' _ "$TMP/k.raw"
fi

# ---- KVM: a user's busy KVM_RUN, where /dev/kvm exists ----
# (under this daemon's limit of 500 Hz)
if [ -n "$USER_KVM" ]; then
	as 65534 "$BIN/kxprof" record -F 400 -o "$OUT/kvm.kxp" -- "$BIN/profile_workload" -s 0.3 -- \
		"$BIN/kvm_workload" -t 1 -j 10 -l 50000 >/dev/null 2>"$TMP/kvm.err"
	rc=$?
	[ $rc -eq 0 ] || sed 's/^/# /' "$TMP/kvm.err"
	check kvm_user_record_exit [ $rc -eq 0 ]
	kx 0 convert "$OUT/kvm.kxp" --folded "$TMP/kvm.folded" >/dev/null
	check kvm_user_driver_frame grep -q ";\[kvm\] KVM_RUN" "$TMP/kvm.folded"
else
	skip kvm_user_driver_frame "no /dev/kvm, or no node of it can be made for the users"
fi
stop_daemon
