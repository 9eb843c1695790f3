#!/usr/bin/env bash
# Real JAX (build/venv, `make pyenv`): jax.profiler.start_trace/stop_trace
# around a jitted function while the process's threads issue driver jobs
# under `kxprof record` (jax_merge.py), then `kxprof convert --merge
# PROFILE.xplane.pb --xplane OUT`: OUT keeps JAX's profile and holds every
# call on JAX's own row of the issuing thread (or a new row by tid where JAX
# has none), inside that thread's time, exact per thread and name; calls
# outside the profile are counted exactly; XProf's converter shows them
# (jax_merge_check.py). A missing package fails, never skips.
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

# sum ISSUED PHASE: the calls issued in that phase, all threads.
calls() { jget "$1" "sum(sum(v.values()) for v in d['$2'].values())"; }

# One run: TAG, then jax_merge.py's mode ("" or notracer).
run_case() {
	local tag=$1 mode=$2 d=$TMP/$1 t0 pb
	mkdir -p "$d"
	t0=$(date +%s%N)
	if ! kx 0 record "${ACCEL_DEV[@]}" -o "$d/t.kxp" -- "$PY" "$ROOT/tests/integration/jax_merge.py" \
		"$d/log" "$d/issued.json" $mode >"$d/rec.out" 2>"$d/rec.err"; then
		fail "${tag}_record" "$(grep -v '^[WIE]0' "$d/rec.err" | tail -5)"
		return
	fi
	pb=$(ls "$d"/log/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1)
	[ -n "$pb" ] || { fail "${tag}_profile" "JAX wrote no .xplane.pb"; return; }
	if ! kx 0 convert "$d/t.kxp" --merge "$pb" --xplane "$d/merged.xplane.pb" \
		>"$d/m.out" 2>"$d/m.err"; then
		fail "${tag}_merge" "$(tail -3 "$d/m.err")"
		return
	fi
	check "${tag}_prints_output" grep -qx "$d/merged.xplane.pb" "$d/m.out"
	# Calls outside the profile's window: exactly those issued before and after it
	# (the ranges all lie inside).
	local b a
	b=$(calls "$d/issued.json" before) a=$(calls "$d/issued.json" after)
	check "${tag}_left_out_counted" grep -q "left out $b before and $a after its span" "$d/m.err"
	"$PY" "$ROOT/tests/integration/jax_merge_check.py" "$tag" "$pb" "$d/merged.xplane.pb" \
		"$d/issued.json" "$d/run" >"$d/check.out" 2>"$d/check.err"
	local rc=$?
	grep -E '^(PASS|FAIL) ' "$d/check.out"
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$d/check.out"; then
		fail "${tag}_check" "exited $rc: $(tail -3 "$d/check.err")"
	fi
	echo "$tag: $((($(date +%s%N) - t0) / 1000000)) ms" >&2
}

run_case jax ""
run_case jax_notracer notracer

# The merge refuses what it cannot merge into.
printf 'not a protobuf {' >"$TMP/bad.pb"
kx 1 convert "$ROOT/tests/fixtures/h100_pytorch.kxp" --merge "$TMP/bad.pb" --xplane "$TMP/o.pb" \
	>/dev/null 2>"$TMP/e1" && check xmerge_damaged_input grep -q "not an XSpace" "$TMP/e1"
check xmerge_damaged_leaves_nothing test ! -e "$TMP/o.pb"
