# Shared helpers for the integration tests (sourced). Tests run as root
# against real drivers; each check prints PASS/FAIL/SKIP lines.
set -u
KXPROF=${KXPROF:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kxprof}
BUILD_DIR=${BUILD_DIR:-$(dirname "$KXPROF")}
WL=$BUILD_DIR/tests
TMP=$(mktemp -d /tmp/kxprof-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
# check NAME CONDITION-COMMAND... : PASS when the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "$*"; fi
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
if [ -c /dev/kvm ]; then
	ACCEL=kvm
	ACCEL_DEV=()
	ACCEL_JOB=KVM_RUN
else
	ACCEL=loop
	ACCEL_DEV=(--device loop)
	ACCEL_JOB=BLKZEROOUT
fi
# accel_argv THREADS JOBS: sets ACCEL_ARGV to a command whose THREADS threads
# each submit JOBS jobs to the stand-in driver (it prints the workload's JSON);
# accel_workload THREADS JOBS runs it.
accel_argv() {
	if [ "$ACCEL" = kvm ]; then
		ACCEL_ARGV=("$WL/kvm_workload" -t "$1" -j "$2")
	else
		ACCEL_ARGV=("$WL/loop_workload" -s 16 -p "$TMP" -t "$1" -j "$2" -k zero)
	fi
}
accel_workload() {
	accel_argv "$1" "$2"
	"${ACCEL_ARGV[@]}"
}
