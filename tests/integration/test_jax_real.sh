#!/usr/bin/env bash
# Real JAX (build/venv, `make pyenv`): jax.profiler.start_trace/stop_trace
# around a jitted function while the process's threads issue driver jobs
# under `kxprof record` (framework_merge.py), then `kxprof convert --merge
# PROFILE.xplane.pb --xplane OUT`: OUT keeps JAX's profile and holds every
# call on JAX's own row of the issuing thread (or a new row by tid where JAX
# has none), inside that thread's time, exact per thread and name; calls
# outside the profile are counted exactly; XProf's converter shows them
# (framework_merge_check.py). A missing package fails, never skips.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
ANNOT=$ROOT/build/libkxprof_annotate.so

if ! "$PY" -c 'import jax, xprof' >/dev/null 2>&1; then
	fail jax_real_venv "no jax or xprof in $VENV: run make pyenv"
	exit 0
fi
[ -f "$ANNOT" ] || { fail jax_real_built "no $ANNOT: run make"; exit 0; }
if [ "$ACCEL" = loop ]; then
	truncate -s 16M "$TMP/loop.img"
	KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") || { fail jax_real_loop "losetup failed"; exit 0; }
	export KX_LOOP_DEV
	trap 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"' EXIT
fi
export PYTHONPATH=$ROOT/tests/integration:$ROOT/plugin/python KXPROF_ANNOTATE_LIB=$ANNOT
export PYTHONDONTWRITEBYTECODE=1 TF_CPP_MIN_LOG_LEVEL=3

. "$ROOT/tests/integration/framework_merge.sh"

run_case jax jax own
run_case jax_notracer jax-notracer new

# The merge refuses what it cannot merge into.
printf 'not a protobuf {' >"$TMP/bad.pb"
kx 1 convert "$ROOT/tests/fixtures/h100_pytorch.kxp" --merge "$TMP/bad.pb" --xplane "$TMP/o.pb" \
	>/dev/null 2>"$TMP/e1" && check xmerge_damaged_input grep -q "not an XSpace" "$TMP/e1"
check xmerge_damaged_leaves_nothing test ! -e "$TMP/o.pb"
