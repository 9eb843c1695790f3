#!/usr/bin/env bash
# Real TensorFlow (build/venv, `make pyenv`) without kxprof's plugin:
# tf.profiler.experimental.start/stop around a tf.function while the
# process's threads issue driver jobs under `kxprof record`
# (framework_merge.py), then `kxprof convert --merge PROFILE.xplane.pb
# --xplane OUT`: every call on TensorFlow's own row of the issuing thread (a
# new row by tid for the thread TensorFlow has none for), inside that
# thread's time, exact per thread and name; calls outside the profile counted
# exactly; XProf's converter shows them (framework_merge_check.py). A missing
# package fails, never skips.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
ANNOT=$ROOT/build/libkxprof_annotate.so

if ! "$PY" -c 'import tensorflow, xprof' >/dev/null 2>&1; then
	fail tf_merge_venv "no tensorflow or xprof in $VENV: run make pyenv"
	exit 0
fi
[ -f "$ANNOT" ] || { fail tf_merge_built "no $ANNOT: run make"; exit 0; }
if [ "$ACCEL" = loop ]; then
	truncate -s 16M "$TMP/loop.img"
	KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") || { fail tf_merge_loop "losetup failed"; exit 0; }
	export KX_LOOP_DEV
	trap 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"' EXIT
fi
export PYTHONPATH=$ROOT/tests/integration:$ROOT/plugin/python KXPROF_ANNOTATE_LIB=$ANNOT
export PYTHONDONTWRITEBYTECODE=1 TF_CPP_MIN_LOG_LEVEL=3
# TensorFlow alone: not kxprof's plugin by either route.
unset TF_PLUGGABLE_DEVICE_LIBRARY_PATH
. "$ROOT/tests/integration/framework_merge.sh"

run_case tf_merge tf new
