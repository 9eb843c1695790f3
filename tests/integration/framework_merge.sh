# Sourced by test_jax_real.sh and test_tf_merge.sh (after lib.sh, with ROOT
# set): merge_setup checks and prepares what both need; run_case records
# framework_merge.py, merges the profile the framework wrote with `kxprof
# convert --merge PROFILE.xplane.pb --xplane OUT` and checks OUT
# (framework_merge_check.py).
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
ANNOT=$ROOT/build/libkxprof_annotate.so

# merge_setup TAG MODULES: fails (status 1, and a FAIL line) unless the venv
# imports MODULES ("jax, xprof") and the annotation library is built; a loop
# device of the test's own where the stand-in driver is loop; the Python
# path and the library for framework_merge.py.
merge_setup() {
	local tag=$1 modules=$2
	if ! "$PY" -c "import $modules" >/dev/null 2>&1; then
		fail "${tag}_venv" "no $modules in $VENV: run make pyenv"
		return 1
	fi
	[ -f "$ANNOT" ] || { fail "${tag}_built" "no $ANNOT: run make"; return 1; }
	if [ "$ACCEL" = loop ]; then
		truncate -s 16M "$TMP/loop.img"
		KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") ||
			{ fail "${tag}_loop" "losetup failed"; return 1; }
		export KX_LOOP_DEV
		at_exit 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"'
	fi
	export PYTHONPATH=$ROOT/tests/integration:$ROOT/plugin/python KXPROF_ANNOTATE_LIB=$ANNOT
	export PYTHONDONTWRITEBYTECODE=1 TF_CPP_MIN_LOG_LEVEL=3
}

# sum ISSUED PHASE: the calls issued in that phase, all threads.
calls() { jget "$1" "sum(sum(v.values()) for v in d['$2'].values())"; }

# One run: TAG, framework_merge.py's MODE, where the plain thread's calls go
# (framework_merge_check.py's PLAIN_LINE).
run_case() {
	local tag=$1 mode=$2 plain=$3 d=$TMP/$1 t0 pb
	mkdir -p "$d"
	t0=$(date +%s%N)
	if ! kx 0 record "${ACCEL_DEV[@]}" -o "$d/t.kxp" -- "$PY" "$ROOT/tests/integration/framework_merge.py" \
		"$d/log" "$d/issued.json" "$mode" >"$d/rec.out" 2>"$d/rec.err"; then
		fail "${tag}_record" "$(grep -v '^[WIE]0' "$d/rec.err" | tail -5)"
		return
	fi
	pb=$(ls "$d"/log/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1)
	[ -n "$pb" ] || { fail "${tag}_profile" "the framework wrote no .xplane.pb"; return; }
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
	"$PY" "$ROOT/tests/integration/framework_merge_check.py" "$tag" "$pb" "$d/merged.xplane.pb" \
		"$d/issued.json" "$d/run" "$plain" >"$d/check.out" 2>"$d/check.err"
	local rc=$?
	grep -E '^(PASS|FAIL) ' "$d/check.out"
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$d/check.out"; then
		fail "${tag}_check" "exited $rc: $(tail -3 "$d/check.err")"
	fi
	echo "$tag: $((($(date +%s%N) - t0) / 1000000)) ms" >&2
}

