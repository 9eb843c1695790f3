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
. "$ROOT/tests/integration/framework_merge.sh"
merge_setup tf_merge "tensorflow, xprof" || exit 0
# TensorFlow alone: not kxprof's plugin by either route.
unset TF_PLUGGABLE_DEVICE_LIBRARY_PATH

run_case tf_merge tf new
