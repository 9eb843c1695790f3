#!/usr/bin/env bash
# DWARF unwinding on real frameworks (the pinned venv, build/venv): a
# PyTorch matmul loop and a TensorFlow tf.function loop, each recorded with
# -F 199 --call-graph dwarf,SIZE (SIZE: DWARF_SIZE, default 65528; see
# docs/stacks.md on Python's deep C stack). Prints, for each, of the samples
# with a frame inside libtorch_cpu.so / libtensorflow*.so, the share whose
# walk reached the interpreter's main (the outermost frame _start) and the
# share that reached the root of a thread the framework started (clone3),
# read from go tool pprof -raw of convert --pprof.
# Usage: tests/bench/frameworks_dwarf.sh (root; BUILD_DIR default build).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=${BUILD_DIR:-$ROOT/build}
KX=$B/kxprof
PY=$B/venv/bin/python
SIZE=${DWARF_SIZE:-65528}
die() { echo "frameworks_dwarf: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (it loads BPF programs)"
[ -x "$PY" ] || die "$PY missing: the pinned framework venv (make pyenv)"
command -v go >/dev/null || die "go missing (Debian golang-go): go tool pprof reads the profile"
TMP=$(mktemp -d /tmp/kxfw.XXXXXX)
# (in this shell only: a child forked for `cmd &` and signalled before its
# exec would run it too; see tests/integration/lib.sh's at_exit)
trap 'if [ "$BASHPID" = "$$" ]; then [ -n "${KEEP:-}" ] || rm -rf "$TMP"; fi' EXIT
export HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
mkdir -p "$HOME"

share() { # RAW MODULE_REGEX LABEL
	python3 "$ROOT/tests/integration/fw_share.py" "$@"
}

echo "## DWARF unwinding on frameworks: -F 199 --call-graph dwarf,$SIZE"
echo
echo "| workload | samples | with a frame in the framework's library | of them, to the interpreter's main | to a thread's root |"
echo "| --- | ---: | ---: | ---: | ---: |"
for w in torch tf; do
	"$KX" record -F 199 --no-jobs --call-graph "dwarf,$SIZE" -o "$TMP/$w.kxp" -- "$PY" "$ROOT/tests/integration/fw_loop_${w}.py" 4 \
		>"$TMP/$w.out" 2>"$TMP/$w.err" || die "$w: $(tail -3 "$TMP/$w.err")"
	"$KX" convert "$TMP/$w.kxp" --pprof "$TMP/$w.pb.gz" >/dev/null || die "$w: convert failed"
	go tool pprof -raw "$TMP/$w.pb.gz" >"$TMP/$w.raw" 2>/dev/null || die "$w: go tool pprof failed"
	case $w in
	torch) share "$TMP/$w.raw" 'libtorch_cpu\.so' "PyTorch matmul + tanh loop (libtorch_cpu.so)" ;;
	tf) share "$TMP/$w.raw" 'libtensorflow[^/]*\.so' "TensorFlow tf.function loop (libtensorflow*.so)" ;;
	esac
	grep "DWARF unwinding" "$TMP/$w.err" | sed "s/^kxprof record: /<!-- $w: /; s/$/ -->/"
done
