#!/usr/bin/env bash
# Counter records (record --counters) that report and convert read as a
# stream, where a read into memory used to be needed: generated captures
# (test_report_stream's counted capture, written by build/tests/kxp_gen)
# whose records come after later calls of their thread, and whose header
# names none of the counters. report -v says the file was streamed, and its
# JSON is the in-memory report's (report --in-memory; p50/p90/p99 within
# 1/256); convert -v says it read the file one window at a time, and every
# part of a split conversion is the bytes of the part written from the
# whole capture in memory (--in-memory).
# kxtest: check (no root, no BPF)
. "$(dirname "$0")/lib.sh"
GEN=$BUILD_DIR/tests/kxp_gen

for kind in late unnamed; do
	f=$TMP/$kind.kxp
	if ! "$GEN" "stream-counted-$kind" "$f" 4242 2>"$TMP/gen.err"; then
		fail "gen_$kind" "kxp_gen: $(cat "$TMP/gen.err")"
		continue
	fi
	kx 0 -v report --json "$f" >"$TMP/$kind.s.json" 2>"$TMP/$kind.s.err" &&
		kx 0 report --in-memory --json "$f" >"$TMP/$kind.m.json" 2>/dev/null || continue
	check "report_streamed_$kind" grep -q "was streamed" "$TMP/$kind.s.err"
	grep "read into memory whole" "$TMP/$kind.s.err" | sed 's/^/# /'
	check "report_same_$kind" python3 "$(dirname "$0")/same_report.py" \
		"$TMP/$kind.s.json" "$TMP/$kind.m.json"
	if [ $kind = late ]; then
		check report_counted_late python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["Counters"]
sys.exit(not (c and c["Rows"] and c["Unmatched"] > 0))' "$TMP/$kind.s.json"
	else
		check report_no_table_unnamed python3 -c '
import json, sys
sys.exit(json.load(open(sys.argv[1])).get("Counters") is not None)' "$TMP/$kind.s.json"
	fi
	for m in w m; do
		opt=(-v convert)
		[ $m = m ] && opt=(convert --in-memory)
		mkdir -p "$TMP/$kind.$m"
		kx 0 "${opt[@]}" "$f" --split-events 6000 --xplane "$TMP/$kind.$m/x" \
			--chrome "$TMP/$kind.$m/p.json" >/dev/null 2>"$TMP/$kind.$m.err"
	done
	check "convert_windowed_$kind" grep -q "read one window at a time" "$TMP/$kind.w.err"
	check "convert_parts_$kind" test "$(ls "$TMP/$kind.w"/p.*.json 2>/dev/null | wc -l)" -ge 3
	check "convert_same_chrome_$kind" sh -c "cd '$TMP/$kind.w' && for f in p.*.json; do cmp -s \$f ../$kind.m/\$f || exit 1; done"
	check "convert_same_xspace_$kind" bash -c "a=\$(cd '$TMP/$kind.w/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2); b=\$(cd '$TMP/$kind.m/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2); test -n \"\$a\" -a \"\$a\" = \"\$b\""
done
