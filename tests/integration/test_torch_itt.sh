#!/usr/bin/env bash
# Real PyTorch (build/venv, `make pyenv`) through kxprof's ITT collector:
# under emit_itt() every operator call and record_function scope is a
# kxprof range of category PyTorch, counted against torch's own profiler,
# with the driver ioctls its thread issues nested inside, in the report,
# Chrome and XSpace (tests/integration/torch_itt.py, torch_check.py). The
# libraries that load into other processes need no glibc above 2.31.
# kxtest: normal (the libraries under test are built without sanitizers)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
# The libraries are built without sanitizers in every build tree.
ITT=$ROOT/build/libkxprof_itt.so
ANNOT=$ROOT/build/libkxprof_annotate.so

case "$BUILD_DIR" in
*san*)
	skip torch_itt "sanitizer build (the libraries under test are built without sanitizers)"
	exit 0
	;;
esac
if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
	fail torch_itt_venv "no torch in $VENV: run make pyenv"
	exit 0
fi
[ -f "$ITT" ] || { fail torch_itt_built "no $ITT: run make"; exit 0; }

exports=$(nm -D --defined-only "$ITT" | awk '{print $NF}' | sort -u)
check itt_exports_only_entry test "$exports" = "__itt_api_init"
for lib in "$ITT" "$ANNOT" "$ROOT/build/libkxprof_nvtx.so"; do
	newest=$(objdump -T "$lib" | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -n 1)
	check "glibc_at_most_2_31_$(basename "$lib" .so)" \
		test "$(printf '%s\nGLIBC_2.31\n' "$newest" | sort -V | tail -n 1)" = GLIBC_2.31
done

if [ "$ACCEL" = loop ]; then
	truncate -s 16M "$TMP/loop.img"
	KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") || { fail torch_loop "losetup failed"; exit 0; }
	export KX_LOOP_DEV
	at_exit 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"'
fi
export PYTHONPATH=$ROOT/tests/integration:$ROOT/plugin/python KXPROF_ANNOTATE_LIB=$ANNOT
export PYTHONDONTWRITEBYTECODE=1

t0=$(date +%s%N)
if kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/t.kxp" -- "$PY" "$ROOT/tests/integration/torch_itt.py" \
	"$TMP/wl.json" >"$TMP/rec.out" 2>"$TMP/rec.err"; then
	echo "torch workload recorded: $((($(date +%s%N) - t0) / 1000000)) ms" >&2
	kx 0 report --json "$TMP/t.kxp" >"$TMP/rep.json" 2>"$TMP/rep.err" &&
		kx 0 convert "$TMP/t.kxp" --chrome "$TMP/t.json.gz" --xplane "$TMP/xp" >/dev/null 2>&1 &&
		"$PY" "$ROOT/tests/integration/torch_check.py" "$TMP/wl.json" "$TMP/rep.json" \
			"$TMP/t.json.gz" "$TMP/xp"
	[ $? -eq 0 ] || [ -s "$TMP/rep.json" ] || fail torch_itt_outputs "$(tail -3 "$TMP/rep.err")"
else
	fail torch_itt_record "$(tail -5 "$TMP/rec.err")"
fi

# make install puts the collector beside the annotation library.
if make -s -C "$ROOT" install-annotate DESTDIR="$TMP/inst" PREFIX=/usr >"$TMP/install.log" 2>&1; then
	check itt_installed cmp -s "$ITT" "$TMP/inst/usr/lib/libkxprof_itt.so"
else
	fail itt_install "make install-annotate failed: $(tail -3 "$TMP/install.log")"
fi
