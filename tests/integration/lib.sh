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
