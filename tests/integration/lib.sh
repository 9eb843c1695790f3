# Shared helpers for the integration tests (sourced). Tests run as root
# against real drivers; each check prints PASS/FAIL/SKIP lines.
set -u
KXPROF=${KXPROF:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kxprof}
BUILD_DIR=${BUILD_DIR:-$(dirname "$KXPROF")}
WL=$BUILD_DIR/tests
TMP=$(mktemp -d /tmp/kxprof-test.XXXXXX)
# at_exit CMDS: runs CMDS when the script ends, in the script's own shell
# only. Bash runs its EXIT trap when a fatal signal reaches it, and a child it
# has forked for `cmd &` but not yet exec'd is still bash with the trap: a
# test that signals such a child at once would otherwise remove $TMP (or kill
# its siblings) under the running script.
at_exit() {
	trap 'if [ "$BASHPID" = "$$" ]; then '"$1"'
fi' EXIT
}
at_exit 'rm -rf "$TMP"'

# fd 3 is the script's own stdout: helpers report there even when the caller
# sends a command's output to a file.
exec 3>&1

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
# check NAME CONDITION-COMMAND... : PASS when the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

# ann_late_said REPORT.json: succeeds when the report states that
# annotations may be missing (a copy of the annotation library whose probes
# attached after its wait: listed in Annotations.late and said in Warnings),
# and prints what it says.
ann_late_said() {
	python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
late = r.get("Annotations", {}).get("late", [])
said = [w for w in r.get("Warnings", []) if "may be missing from" in w]
print("\n".join(said))
sys.exit(0 if late and len(said) >= len(late) else 1)
PY
}

# check_ann NAME REPORT.json CONDITION-COMMAND...: check, for exact counts of
# annotations. A failure passes only where REPORT.json states that
# annotations may be missing (a loaded machine can keep the capture from
# attaching within the library's wait); the statement is shown. Else FAIL.
check_ann() {
	local name=$1 json=$2 said
	shift 2
	if "$@"; then
		pass "$name"
	elif said=$(ann_late_said "$json" 2>/dev/null); then
		pass "$name"
		echo "# $name: counts short, as the report states: ${said%%$'\n'*}"
	else
		fail "$name" "$*"
	fi
}

# kx WANT ARGS...: runs kxprof ARGS (with the caller's redirections); unless
# it exits WANT, a FAIL line goes to the script's stdout and kx returns 1.
# Every call of the product goes through kx, run_bg/wait_rc or a check of $?.
kx() {
	local want=$1 rc
	shift
	"$KXPROF" "$@"
	rc=$?
	[ "$rc" -eq "$want" ] && return 0
	echo "FAIL kxprof_exit_status: kxprof $* exited $rc (wanted $want)" >&3
	return 1
}

# wait_rc NAME PID WANT: waits for a background kxprof; FAIL NAME unless it exited WANT.
wait_rc() {
	local rc
	wait "$2"
	rc=$?
	[ "$rc" -eq "$3" ] && return 0
	fail "$1" "kxprof (pid $2) exited $rc (wanted $3)"
	return 1
}

# wait_attached PID: waits (up to 60 s) until the kxprof process PID holds BPF
# links and their number has stopped growing: its hooks are attached. Counts
# only PID's own file descriptors. Returns 1 if it never got there.
wait_attached() {
	local n prev=-1 same=0 i
	for i in $(seq 1 600); do
		kill -0 "$1" 2>/dev/null || return 1
		n=$(ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'anon_inode:bpf_link')
		if [ "$n" -gt 0 ] && [ "$n" -eq "$prev" ]; then
			same=$((same + 1))
			[ "$same" -ge 3 ] && return 0
		else
			same=0
		fi
		prev=$n
		sleep 0.1
	done
	return 1
}

# wait_ready FILE PID: waits (up to 60 s) until the kxprof process PID, started
# with KXPROF_READY_FILE=FILE in its environment, has written FILE: record,
# top and serve write it once attached and capturing (user/cli/ready.c).
# Returns 1 if PID ended first or the file never came.
wait_ready() {
	local i
	for i in $(seq 1 1200); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || { [ -s "$1" ]; return; }
		sleep 0.05
	done
	return 1
}

# wait_gone PID: waits (up to 10 s) until PID no longer runs (no such pid, or
# a zombie). Returns 1 if it still runs.
wait_gone() {
	local i st
	for i in $(seq 1 200); do
		st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
		[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ] && return 0
		sleep 0.05
	done
	return 1
}

# jq-like lookups with python3: jget FILE 'expr on d' (d = parsed JSON)
jget() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

need_kvm() {
	[ -c /dev/kvm ] || { skip "$1" "no /dev/kvm"; return 1; }
}

# The driver standing in for an accelerator: kvm where /dev/kvm exists (a
# KVM_RUN is one job), else the loop block driver (a BLKZEROOUT is one job:
# block requests queued, run and completed inside the call), which is not in
# the default device set and is named with --device loop.
#   ACCEL        driver name (ioctl/$ACCEL and jobs/$ACCEL in a report)
#   ACCEL_DEV    the options that trace it: put after every record/top/serve
#   ACCEL_JOB    the ioctl that submits a job and waits for it
#   ACCEL_CHEAP  a cheap ioctl of the same driver (no job)
#   ACCEL_WL     the workload's name (its processes' comm)
#   ACCEL_FLOOD  a command flooding ACCEL_CHEAP (append -n N, -t T or -w S)
if [ -c /dev/kvm ]; then
	ACCEL=kvm
	ACCEL_DEV=()
	ACCEL_JOB=KVM_RUN
	ACCEL_CHEAP=KVM_GET_API_VERSION
	ACCEL_WL=kvm_workload
	ACCEL_FLOOD=("$WL/ioctl_flood")
else
	ACCEL=loop
	ACCEL_DEV=(--device loop)
	ACCEL_JOB=BLKZEROOUT
	ACCEL_CHEAP=BLKGETSIZE64
	ACCEL_WL=loop_workload
	ACCEL_FLOOD=("$WL/ioctl_flood" -L)
fi
# accel_argv THREADS JOBS [PERIOD_US [ARGS...]]: sets ACCEL_ARGV to a command
# whose THREADS threads each submit JOBS jobs to the stand-in driver (it
# prints the workload's JSON: ioctls, tids, main_thread, threads, job_ns,
# children). PERIOD_US makes each job last about that long: a longer guest
# loop under kvm, a pause between a thread's jobs under loop. ARGS go to the
# workload as they are; both workloads take -g N (N cheap calls from the main
# thread) and -f (a forked child runs one thread of jobs too).
# accel_workload THREADS JOBS ... runs it.
accel_argv() {
	local t=$1 j=$2 period=${3:-}
	shift 2
	[ $# -gt 0 ] && shift
	if [ "$ACCEL" = kvm ]; then
		ACCEL_ARGV=("$WL/kvm_workload" -t "$t" -j "$j" ${period:+-l "$period"} "$@")
	else
		ACCEL_ARGV=("$WL/loop_workload" -s 16 -p "$TMP" -t "$t" -j "$j" -k zero
			${period:+-i "$period"} "$@")
	fi
}
accel_workload() {
	accel_argv "$@"
	"${ACCEL_ARGV[@]}"
}

# user_kvm DIR GID: how a user of group GID reaches the kvm device. Sets
# USER_KVM to a path that user can open read-write: /dev/kvm itself when its
# group is GID's or others may use it, else a node of the same device made in
# DIR for group GID (mode 0660), as a host's kvm group gives it; exports it in
# KXW_KVM, which the workloads open. Returns 1 (with USER_KVM empty) when
# there is no /dev/kvm or no node can be made there.
user_kvm() {
	local dir=$1 gid=$2 mode grp
	USER_KVM=
	[ -c /dev/kvm ] || return 1
	mode=$(stat -c %a /dev/kvm)
	grp=$(stat -c %g /dev/kvm)
	if [ $((8#$mode & 8#006)) -eq 6 ] || { [ "$grp" = "$gid" ] && [ $((8#$mode & 8#060)) -eq 48 ]; }; then
		USER_KVM=/dev/kvm
	else
		mknod -m 0660 "$dir/kvm" c "$((16#$(stat -c %t /dev/kvm)))" "$((16#$(stat -c %T /dev/kvm)))" 2>/dev/null &&
			chgrp "$gid" "$dir/kvm" || return 1
		USER_KVM=$dir/kvm
	fi
	export KXW_KVM=$USER_KVM
}
