#!/usr/bin/env bash
# `kxprof convert --merge`: kxprof's calls merged into real PyTorch's own
# Chrome trace (Kineto, CPU) of the same run, recorded with jobs before,
# inside and after the profiler's window (torch_merge.py, merge_check.py);
# the refusals of what cannot be merged.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python

# What is refused before any work (exit 2), and a trace that is not one (exit 1).
printf '{"traceEvents":[{"ph":"X","name":"op","pid":1,"tid":1,"ts":5,"dur":1}]}' >"$TMP/min.json"
fx=$ROOT/tests/fixtures/h100_pytorch.kxp
kx 2 convert "$fx" --merge "$TMP/min.json" --xplane "$TMP/o.pb" --chrome "$TMP/o.json" \
	>/dev/null 2>"$TMP/e1" && check merge_refuses_two_outputs grep -q "one output" "$TMP/e1"
kx 1 convert "$fx" --merge "$TMP/min.json" --xplane "$TMP/o.pb" >/dev/null 2>"$TMP/e1" &&
	check merge_xplane_needs_xspace grep -q "not an XSpace" "$TMP/e1"
kx 2 convert "$fx" --merge "$TMP/min.json" >/dev/null 2>&1 && pass merge_needs_chrome
kx 2 convert "$fx" --merge "$TMP/min.json" --chrome "$TMP/o.json" --gpu >/dev/null 2>&1 &&
	pass merge_refuses_other_options
kx 2 convert "$fx" --merge "$TMP/min.json" --chrome "$TMP/min.json" >/dev/null 2>&1 &&
	pass merge_refuses_output_over_input
printf '{"traceEvents":[{"ph":"M","name":"x"}' >"$TMP/bad.json"
kx 1 convert "$fx" --merge "$TMP/bad.json" --chrome "$TMP/o.json" >/dev/null 2>"$TMP/e2" &&
	check merge_damaged_input grep -q "not a Chrome trace" "$TMP/e2"
check merge_damaged_leaves_nothing test ! -e "$TMP/o.json"
# A trace far from the capture's time (1970): every call left out, after it, and counted.
kx 0 convert "$fx" --merge "$TMP/min.json" --chrome "$TMP/o.json" >/dev/null 2>"$TMP/e3" &&
	check merge_all_left_out_counted grep -q "merged 0 calls .* left out 0 before and 551 after" "$TMP/e3"
# A Kineto-form trace over the middle of the recorded capture: the calls
# inside, before and after its span counted exactly.
if kx 0 convert "$fx" --chrome "$TMP/own.json" >/dev/null &&
	python3 "$ROOT/tests/integration/merge_window.py" "$TMP/own.json" "$TMP/w.json" "$TMP/w.exp" &&
	kx 0 convert "$fx" --merge "$TMP/w.json" --chrome "$TMP/w.out.json" >/dev/null 2>&1; then
	check merge_window_counts test "$(jget "$TMP/w.out.json" 'sorted((k, v) for k, v in d["kxprofMerge"].items() if k in ("merged", "left_out_before", "left_out_after"))')" = \
		"$(jget "$TMP/w.exp" 'sorted(d.items())')"
	# The same, gzipped in and out.
	gzip -c "$TMP/w.json" >"$TMP/w.json.gz"
	kx 0 convert "$fx" --merge "$TMP/w.json.gz" --chrome "$TMP/w.out.json.gz" >/dev/null 2>&1 &&
		gunzip -c "$TMP/w.out.json.gz" >"$TMP/w.gz.json" &&
		check merge_gzip_in_out cmp -s "$TMP/w.gz.json" "$TMP/w.out.json"
else
	fail merge_window "merging into a trace over the capture's middle failed"
fi

# The usage block of docs/kxprof-convert.md is what --help prints.
kx 0 convert --help >"$TMP/help.out" 2>&1 &&
	python3 - "$ROOT/docs/kxprof-convert.md" "$TMP/help.out" >"$TMP/docs.diff" <<'PY'
import sys
r = open(sys.argv[1]).read()
i = r.index("```\nusage: kxprof convert") + 4
sys.exit(r[i:r.index("```", i)] != open(sys.argv[2]).read())
PY
check merge_docs_usage_is_help test $? -eq 0

if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
	fail merge_torch_venv "no torch in $VENV: run make pyenv"
	exit 0
fi
if [ "$ACCEL" = loop ]; then
	truncate -s 16M "$TMP/loop.img"
	KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") || { fail merge_loop "losetup failed"; exit 0; }
	export KX_LOOP_DEV
	at_exit 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"'
fi
export PYTHONPATH=$ROOT/tests/integration:$ROOT/plugin/python PYTHONDONTWRITEBYTECODE=1
export KXPROF_ANNOTATE_LIB=$ROOT/build/libkxprof_annotate.so
t0=$(date +%s%N)
if ! kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/t.kxp" -- "$PY" "$ROOT/tests/integration/torch_merge.py" \
	"$TMP/kineto.json" "$TMP/issued.json" >"$TMP/rec.out" 2>"$TMP/rec.err"; then
	fail merge_torch_record "$(tail -5 "$TMP/rec.err")"
	exit 0
fi
echo "torch workload recorded: $((($(date +%s%N) - t0) / 1000000)) ms" >&2
if kx 0 convert "$TMP/t.kxp" --merge "$TMP/kineto.json" --chrome "$TMP/merged.json" \
	>"$TMP/m.out" 2>"$TMP/m.err"; then
	check merge_prints_output grep -qx "$TMP/merged.json" "$TMP/m.out"
	check merge_says_counts grep -q "^kxprof convert: merged [1-9][0-9]* calls into" "$TMP/m.err"
	if out=$(python3 "$ROOT/tests/integration/merge_check.py" "$TMP/kineto.json" \
		"$TMP/merged.json" "$TMP/issued.json" 2>&1); then
		pass merge_torch_chrome
		echo "$out" >&2
	else
		fail merge_torch_chrome "$out"
	fi
fi

