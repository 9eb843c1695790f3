#!/usr/bin/env bash
# DWARF unwinding on the real frameworks (build/venv, `make pyenv`): a
# PyTorch matmul loop and a TensorFlow tf.function loop, recorded with
# -F 199 --call-graph dwarf,65528 and with the default frame-pointer walk.
# Of the samples with a frame inside libtorch_cpu.so / libtensorflow*.so, the
# share whose stack reaches the interpreter's main (_start) or a thread's
# root is printed (go tool pprof -raw of convert --pprof, fw_share.py); with
# dwarf it must be at least MIN_ROOT percent, and above the frame-pointer
# walk's. Samples inside MKL's assembly kernels (no CFI) stop early in
# either mode: docs/stacks.md gives the measured shares.
# kxtest: normal (the recorder's unwinding is checked in both builds by test_dwarf; here the frameworks' own code)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
MIN_ROOT=${MIN_ROOT:-5}

if [ "$(id -u)" -ne 0 ]; then
	skip dwarf_frameworks "needs root (loads BPF, opens perf events)"
	exit 0
fi
if ! "$PY" -c 'import torch, tensorflow' >/dev/null 2>&1; then
	fail dwarf_frameworks_venv "no torch or tensorflow in $VENV: run make pyenv"
	exit 0
fi
command -v go >/dev/null || { fail dwarf_frameworks_go "go missing (Debian golang-go)"; exit 0; }
# go tool pprof, offline: its caches in the test's own directory, no network.
export HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
mkdir -p "$HOME"

# root_share NAME MODE MODULE_REGEX: records NAME's loop with MODE, prints
# fw_share.py's row, and sets $pct to the share that reached a root.
root_share() {
	local name=$1 mode=$2 re=$3 row
	pct=
	if ! "$KXPROF" record -F 199 --no-jobs --call-graph "$mode" -o "$TMP/$name-$mode.kxp" \
		-- "$PY" "$ROOT/tests/integration/fw_loop_${name}.py" 3 >"$TMP/$name.out" 2>"$TMP/$name-$mode.err"; then
		fail "dwarf_${name}_record_$mode" "$(tail -3 "$TMP/$name-$mode.err")"
		return
	fi
	"$KXPROF" convert "$TMP/$name-$mode.kxp" --pprof "$TMP/$name-$mode.pb.gz" >/dev/null 2>&1 &&
		go tool pprof -raw "$TMP/$name-$mode.pb.gz" >"$TMP/$name-$mode.raw" 2>/dev/null ||
		{ fail "dwarf_${name}_pprof_$mode" "convert --pprof or go tool pprof -raw failed"; return; }
	row=$(python3 "$(dirname "$0")/fw_share.py" "$TMP/$name-$mode.raw" "$re" "$name $mode")
	echo "# $row"
	pct=$(echo "$row" | python3 -c '
import re, sys
cells = [c.strip() for c in sys.stdin.read().strip().strip("|").split("|")]
lib = int(cells[2]); main = int(cells[3].split()[0]); thr = int(cells[4].split()[0])
print("%.1f" % (100.0 * (main + thr) / lib if lib else 0.0))')
}

for fw in "torch libtorch_cpu\\.so" "tf libtensorflow[^/]*\\.so"; do
	set -- $fw
	root_share "$1" "dwarf,65528" "$2"
	dw=$pct
	root_share "$1" fp "$2"
	fp=$pct
	check "dwarf_${1}_reaches_root" bash -c 'echo "# dwarf ${1:-none}% of the framework samples reach a root (fp ${2:-none}%), at least $3% wanted"
		[ -n "$1" ] && [ -n "$2" ] && awk -v d="$1" -v f="$2" -v m="$3" "BEGIN { exit !(d >= m && d > f) }"' _ "$dw" "$fp" "$MIN_ROOT"
done
