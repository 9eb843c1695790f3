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
. "$ROOT/tests/integration/framework_merge.sh"
merge_setup jax_real "jax, xprof" || exit 0

run_case jax jax own
run_case jax_notracer jax-notracer new

# The merge refuses what it cannot merge into.
printf 'not a protobuf {' >"$TMP/bad.pb"
kx 1 convert "$ROOT/tests/fixtures/h100_pytorch.kxp" --merge "$TMP/bad.pb" --xplane "$TMP/o.pb" \
	>/dev/null 2>"$TMP/e1" && check xmerge_damaged_input grep -q "not an XSpace" "$TMP/e1"
check xmerge_damaged_leaves_nothing test ! -e "$TMP/o.pb"
