#!/usr/bin/env bash
# The ways kxprof reads a record file give the same outputs (a differential
# test): in memory (--in-memory), streamed (report's default) and one time
# window at a time (convert split by --split-events, with an XSpace beside
# the Chrome file and a Chrome file alone, written from slices). Over every
# replay fixture (as `kxprof replay` writes it, and written as a recorder
# writes it: ioctls at their return, job records in time order), the real
# captures tests/fixtures/h100_pytorch.kxp and h200_pytorch.kxp, the unit tests' generated
# captures (test_wread's, test_report_stream's, kxp_gen.h's: written by
# build/tests/kxp_gen, among them annotation ranges around calls that submit
# xe jobs or KVM_RUNs (18,000 xe jobs, some done 120 ms late, which report
# streams too), 22,000 gpu_scheduler jobs whose sdma ring
# never links, past the budget of jobs waiting for its device, and calls the
# nesting rule shortens among annotation ranges, and calls spanning the end
# of a range of their thread, which report streams and a split reads a
# window at a time), a KVM job
# capture with CPU samples and an annotated capture (both recorded here; the
# KVM one needs /dev/kvm):
#   - report --json: the same JSON streamed and in memory (p50/p90/p99 within
#     1/256, same_report.py), the same messages;
#   - convert --chrome --xplane, unsplit: the same bytes read either way;
#   - split into about four parts: every part's Chrome file and XSpace the
#     same bytes windowed and in memory, the same messages; the parts hold
#     the whole trace's events, each once (its global warnings in every
#     part), and the XSpace parts the whole's events per plane and name; a
#     Chrome file alone, written from slices, the in-memory part's lines.
# Where a file is read whole today, -v gives the reason: printed as a "# "
# line (today's answers compare trivially equal there). The live views'
# job and annotation aggregates against the in-memory analysis, for every
# file of the corpus: build/tests/test_live_paths FILE... (its unit test,
# tests/unit/test_live_paths.c, says what is compared).
# tests/tools/outputs-snapshot.sh writes every output of the same corpus.
# KX_PATHS_ONLY=REGEX (an extended regular expression on the names the
# checks print, e.g. 'kvm|gen_wread') compares only the files it names.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
GEN=$BUILD_DIR/tests/kxp_gen
VERBOSE_RE='^kxprof [a-z]*: (.* was streamed: |.* is read into memory whole: |read one window at a time: )'

# whole WHAT ERRFILE: appends to WHOLE why -v says WHAT read the file whole
# (unless an earlier reading said so).
whole() {
	local why
	why=$(sed -n 's/^kxprof [a-z]*: .* is read into memory whole: //p' "$2")
	[ -z "$why" ] || [[ "$WHOLE" == *"$why"* ]] || WHOLE="$WHOLE${WHOLE:+; }$1: $why"
}

# same_messages NAME A.err B.err: the same stderr but for -v's lines.
same_messages() {
	check "$1" cmp -s <(grep -Ev "$VERBOSE_RE" "$2") <(grep -Ev "$VERBOSE_RE" "$3")
}

# same_xspace NAME DIR_A DIR_B: the same .xplane.pb files, byte for byte, by
# relative path (a run folder's time aside: the clock's where the capture has
# no realtime start).
same_xspace() {
	local a b
	a=$(cd "$2" && find . -name '*.xplane.pb' -exec md5sum {} + | sed -E 's#/[0-9]{4}(_[0-9]{2}){5}#/RUN#' | sort -k2)
	b=$(cd "$3" && find . -name '*.xplane.pb' -exec md5sum {} + | sed -E 's#/[0-9]{4}(_[0-9]{2}){5}#/RUN#' | sort -k2)
	check "$1" test -n "$a" -a "$a" = "$b"
}

# wanted NAME: whether KX_PATHS_ONLY (when set) names the file NAME.
wanted() {
	[[ -z "${KX_PATHS_ONLY:-}" || "$1" =~ $KX_PATHS_ONLY ]]
}

# paths NAME FILE: every check above, for one record file.
CORPUS=()
paths() {
	local n=$1 f=$2 d=$TMP/$1 m lim parts
	wanted "$n" || return 0
	CORPUS+=("$f")
	WHOLE=
	mkdir -p "$d"
	# report: streamed and in memory
	kx 0 -v report --json "$f" >"$d/r.s.json" 2>"$d/r.s.err" &&
		kx 0 report --in-memory --json "$f" >"$d/r.m.json" 2>"$d/r.m.err" || return
	check "${n}_report_json" python3 "$HERE/same_report.py" "$d/r.s.json" "$d/r.m.json"
	same_messages "${n}_report_messages" "$d/r.s.err" "$d/r.m.err"
	whole report "$d/r.s.err"
	# convert, unsplit: the default read and in memory
	for m in s m; do
		opt=(-v convert)
		[ $m = m ] && opt=(convert --in-memory)
		kx 0 "${opt[@]}" "$f" --chrome "$d/c.$m.json" --xplane "$d/x.$m" >/dev/null \
			2>"$d/c.$m.err" || return
	done
	check "${n}_chrome_bytes" cmp -s "$d/c.s.json" "$d/c.m.json"
	same_xspace "${n}_xspace_bytes" "$d/x.s" "$d/x.m"
	same_messages "${n}_convert_messages" "$d/c.s.err" "$d/c.m.err"
	whole convert "$d/c.s.err"
	# convert split into about four parts (a third of its complete events,
	# at least 2): windowed and in memory: a third of its complete events, at least 2
	lim=$(($(grep -o '"ph":"X"' "$d/c.m.json" | wc -l) / 3))
	[ "$lim" -ge 2 ] || lim=2
	for m in w m; do
		opt=(-v convert)
		[ $m = m ] && opt=(convert --in-memory)
		mkdir -p "$d/p.$m"
		kx 0 "${opt[@]}" "$f" --split-events "$lim" --chrome "$d/p.$m/p.json" \
			--xplane "$d/p.$m/x" >/dev/null 2>"$d/p.$m.err" || return
	done
	parts=$(cd "$d/p.m" && ls p.*.json 2>/dev/null | wc -l)
	check "${n}_split_parts" test "$parts" -gt 1 -a \
		"$(cd "$d/p.w" && ls p.*.json 2>/dev/null | wc -l)" -eq "$parts"
	check "${n}_split_chrome_bytes" bash -c "cd '$d/p.m' && for p in p.*.json; do cmp -s \$p ../p.w/\$p || exit 1; done"
	same_xspace "${n}_split_xspace_bytes" "$d/p.w/x" "$d/p.m/x"
	same_messages "${n}_split_messages" "$d/p.w.err" "$d/p.m.err"
	whole "convert split" "$d/p.w.err"
	SPLIT_READ=whole # how the split read the file (-v), for the checks below
	grep -q '^kxprof convert: read one window at a time: ' "$d/p.w.err" && SPLIT_READ=windows
	# a Chrome file alone, split: written from slices of each window
	mkdir -p "$d/q"
	kx 0 -v convert "$f" --split-events "$lim" --chrome "$d/q/p.json" >/dev/null 2>"$d/q.err" ||
		return
	whole "convert split, Chrome alone" "$d/q.err"
	# the parts against the whole, and the Chrome parts written alone
	python3 "$HERE/paths_equal.py" "$n" "$d" || fail "${n}_paths_equal_py" "exit status $?"
	if [ -n "$WHOLE" ]; then echo "# $n is read whole by $WHOLE"; fi
	rm -rf "$d"
}

# ---- the corpus ----
for fx in "$HERE"/../fixtures/*.jsonl; do
	b=$(basename "$fx" .jsonl)
	wanted "fixture_$b" || wanted "recorded_$b" || continue
	kx 0 replay "$fx" -o "$TMP/$b.kxp" >/dev/null 2>"$TMP/replay.err" &&
		paths "fixture_$b" "$TMP/$b.kxp"
	# as a recorder writes it (where that is not the bytes replay wrote)
	if "$GEN" recorded "$TMP/$b.rec.kxp" "$fx" 2>"$TMP/gen.err"; then
		cmp -s "$TMP/$b.kxp" "$TMP/$b.rec.kxp" || paths "recorded_$b" "$TMP/$b.rec.kxp"
	else
		fail "recorded_$b" "kxp_gen: $(cat "$TMP/gen.err")"
	fi
done
paths h100_pytorch "$HERE/../fixtures/h100_pytorch.kxp"
paths h200_pytorch "$HERE/../fixtures/h200_pytorch.kxp"

for g in "wread 8000" "wread-annotated 8000" "wread-job 2000" "wread-nested 8000" \
	"wread-cut 8000" "annjobs 400" "annjobs-kvm 400" "annjobs-done 9000" "stream 20000" \
	"stream-annotated 1" "stream-counted 4242" "stream-counted-late 4242" "stream-counted-unnamed 4242" \
	"events 8000" "fence-gpu_scheduler-sdma 12000" "vmdisk 50000"; do
	set -- $g
	wanted "gen_${1//-/_}" || continue
	if "$GEN" "$1" "$TMP/$1.kxp" "$2" 2>"$TMP/gen.err"; then
		paths "gen_${1//-/_}" "$TMP/$1.kxp"
		# Calls the nesting rule shortens, among annotation ranges (and
		# calls spanning the end of a range of their thread): report
		# streams them and the split is read a window at a time.
		[[ "$1" != wread-nested && "$1" != wread-cut ]] ||
			check "gen_${1//-/_}_not_whole" bash -c \
				'[[ "$0" != *report* && "$1" == windows ]]' "$WHOLE" "$SPLIT_READ"
		# Annotation ranges around calls that submit jobs: the split is
		# read a window at a time too.
		[[ "$1" != annjobs* ]] ||
			check "gen_${1//-/_}_windows" test "$SPLIT_READ" = windows
		# 18,000 xe jobs, 120 ms-late ones among them, more calls inside
		# ranges waiting for them than 16,384: report streams them too.
		[[ "$1" != annjobs-done ]] ||
			check "gen_${1//-/_}_streamed" bash -c '[[ "$0" != *report* ]]' "$WHOLE"
		# 50,000 KVM jobs beside a disk's 151 block requests, whose records
		# wait for earlier ones while more KVM jobs are made than the
		# device timelines hold: report streams it too.
		[[ "$1" != vmdisk ]] ||
			check "gen_${1//-/_}_streamed" bash -c '[[ "$0" != *report* ]]' "$WHOLE"
	else
		fail "gen_$1" "kxp_gen: $(cat "$TMP/gen.err")"
	fi
done

# A KVM job capture (two vCPU threads, 300 jobs each) with CPU samples.
if wanted kvm_jobs && need_kvm kvm_jobs; then
	kx 0 record -F 499 -o "$TMP/kvm.kxp" -- "$WL/kvm_workload" -t 2 -j 300 \
		>"$TMP/kvm.out" 2>"$TMP/kvm.err" && paths kvm_jobs "$TMP/kvm.kxp"
fi

# An annotated capture (libkxprof_annotate.so: nested, cross-thread, open,
# unbalanced and too deep ranges; with /dev/kvm, ioctls inside them).
DEVOPT=()
[ -c /dev/kvm ] && DEVOPT=(-i /dev/kvm)
if wanted annotated && kx 0 record -o "$TMP/ann.kxp" -- "$WL/annotate_workload" -t 3 -n 10 -s 2000 -x 4 -u 2 \
	-D 40 -O 2 "${DEVOPT[@]}" >"$TMP/ann.out" 2>"$TMP/ann.err"; then
	kx 0 report --json "$TMP/ann.kxp" >"$TMP/ann.json" 2>/dev/null
	# (short only where the report says its probes attached late: check_ann)
	check_ann annotated_has_ranges "$TMP/ann.json" \
		test "$(jget "$TMP/ann.json" 'len(d["Time"].get("annotation", {}))')" -gt 0
	paths annotated "$TMP/ann.kxp"
fi

# The live path: the job and annotation aggregates of top and serve fed each
# file's records in ring order, against the in-memory analysis.
if [ ${#CORPUS[@]} -gt 0 ]; then
	"$BUILD_DIR/tests/test_live_paths" "${CORPUS[@]}" >"$TMP/live.out" 2>&1
	rc=$?
	grep -E "^FAIL |live's (default limits|busy intervals)" "$TMP/live.out" | sort -u
	check live_aggregates_equal test $rc -eq 0
fi
