#!/usr/bin/env bash
# A real NVTX client: the PyPI nvtx package (build/venv, `make pyenv`) with
# NVTX_INJECTION64_PATH naming libkxprof_nvtx.so. Its domain ranges (their
# messages registered strings), marks, start/end ranges and default-domain
# push/pop arrive as kxprof ranges, the domain as category, with the driver
# ioctls issued inside them (tests/integration/nvtx_real.py).
# kxtest: normal (the library under test is built without sanitizers)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
NVTX=$ROOT/build/libkxprof_nvtx.so

case "$BUILD_DIR" in
*san*)
	skip nvtx_real "sanitizer build (the library under test is built without sanitizers)"
	exit 0
	;;
esac
if ! "$PY" -c 'import nvtx' >/dev/null 2>&1; then
	fail nvtx_real_venv "no nvtx package in $VENV: run make pyenv"
	exit 0
fi
[ -f "$NVTX" ] || { fail nvtx_real_built "no $NVTX: run make"; exit 0; }
if [ "$ACCEL" = loop ]; then
	truncate -s 16M "$TMP/loop.img"
	KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") || { fail nvtx_loop "losetup failed"; exit 0; }
	export KX_LOOP_DEV
	at_exit 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"'
fi

t0=$(date +%s%N)
if kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/n.kxp" -- env NVTX_INJECTION64_PATH="$NVTX" \
	PYTHONPATH="$ROOT/tests/integration" PYTHONDONTWRITEBYTECODE=1 \
	"$PY" "$ROOT/tests/integration/nvtx_real.py" "$TMP/wl.json" >"$TMP/rec.out" 2>"$TMP/rec.err"; then
	echo "nvtx workload recorded: $((($(date +%s%N) - t0) / 1000000)) ms" >&2
	kx 0 report --json "$TMP/n.kxp" >"$TMP/rep.json" 2>"$TMP/rep.err"
	check_ann nvtx_real_ranges "$TMP/rep.json" python3 - "$TMP/rep.json" "$TMP/wl.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["Time"]
w = json.load(open(sys.argv[2]))
n, io = w["rounds"], w["ioctls"]
app, plain = t.get("annotation/app", {}), t.get("annotation", {})
row = lambda r, k: r.get(k, {})
ok = row(app, "step").get("Total Count") == n and row(app, "step").get("Ioctls") == n * io
ok = ok and row(app, "xrange").get("Total Count") == n
ok = ok and row(app, "tick").get("Kind") == "mark" and row(app, "tick").get("Total Count") == n
ok = ok and row(plain, "outer").get("Total Count") == n
sys.exit(0 if ok else "report: app %s, plain %s; %d rounds of %d ioctls" % (app, plain, n, io))
PY
else
	fail nvtx_real_record "$(tail -5 "$TMP/rec.err")"
fi
