#!/usr/bin/env bash
# Writes every output of a build's kxprof for the differential test's corpus
# (tests/integration/test_paths_equal.sh) into OUTDIR, one folder a capture:
# report --json and the table (--wide --hist), streamed and --in-memory;
# convert's Chrome trace, XSpace, pprof, folded stacks and speedscope, read
# the default way and --in-memory (the off-CPU profile too); the parts of a
# conversion split in about four (--split-events), windowed and in memory;
# each command's -v messages and exit status. Two builds' snapshots compare
# with diff -r:
#   tests/tools/outputs-snapshot.sh build /tmp/a /tmp/caps
#   tests/tools/outputs-snapshot.sh ../other/build /tmp/b /tmp/caps
#   diff -r /tmp/a /tmp/b
# CAPTURES (default OUTDIR.captures) holds the record files read: made there
# when missing (the fixtures replayed and written as a recorder writes them,
# the unit tests' generated captures, and, as root, a KVM job capture with
# /dev/kvm and an annotated capture), then reused, so that both snapshots
# read the same files. Outputs name their paths relative to OUTDIR; XSpace
# run folders' times are written RUN (see normalize).
# usage: tests/tools/outputs-snapshot.sh BUILD_DIR OUTDIR [CAPTURES]
set -u
[ $# -ge 2 ] && [ $# -le 3 ] || {
	echo "usage: $0 BUILD_DIR OUTDIR [CAPTURES]" >&2
	exit 2
}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
KXPROF=$BUILD/kxprof
[ -x "$KXPROF" ] || {
	echo "$0: no $KXPROF: build it first (make, or make SAN=1)" >&2
	exit 2
}
mkdir -p "$2" "${3:-$2.captures}" || exit 1
OUT=$(cd "$2" && pwd)
CAP=$(cd "${3:-$2.captures}" && pwd)

# make NAME COMMAND...: CAP/NAME.kxp from COMMAND (writing $F) unless it is there.
make_capture() {
	local name=$1
	shift
	[ -s "$CAP/$name.kxp" ] && return 0
	F=$CAP/$name.kxp.new
	if "$@" >"$CAP/$name.log" 2>&1 && [ -s "$F" ]; then
		mv "$F" "$CAP/$name.kxp"
	else
		echo "$0: $name: not made ($(tail -1 "$CAP/$name.log"))" >&2
		rm -f "$F"
	fi
}
replay() { "$KXPROF" replay "$1" -o "$F"; }
recorded() { "$BUILD/tests/kxp_gen" recorded "$F" "$1"; }
gen() { "$BUILD/tests/kxp_gen" "$1" "$F" "$2"; }
record_kvm() { "$KXPROF" record -F 499 -o "$F" -- "$BUILD/tests/kvm_workload" -t 2 -j 300; }
record_ann() {
	local dev=()
	[ -c /dev/kvm ] && dev=(-i /dev/kvm)
	"$KXPROF" record -o "$F" -- "$BUILD/tests/annotate_workload" -t 3 -n 10 -s 2000 -x 4 -u 2 \
		-D 40 -O 2 "${dev[@]}"
}

for fx in "$ROOT"/tests/fixtures/*.jsonl; do
	b=$(basename "$fx" .jsonl)
	make_capture "fixture_$b" replay "$fx"
	make_capture "recorded_$b" recorded "$fx"
done
[ -s "$CAP/h100_pytorch.kxp" ] || cp "$ROOT/tests/fixtures/h100_pytorch.kxp" "$CAP/"
[ -s "$CAP/h200_pytorch.kxp" ] || cp "$ROOT/tests/fixtures/h200_pytorch.kxp" "$CAP/"
for g in "wread 8000" "wread-annotated 8000" "wread-job 2000" "wread-nested 8000" \
	"wread-cut 8000" "annjobs 400" "annjobs-kvm 400" "annjobs-done 9000" "stream 20000" "stream-annotated 1" "stream-counted 4242" \
	"stream-counted-late 4242" "stream-counted-unnamed 4242" "events 8000" \
	"fence-gpu_scheduler-sdma 12000" "vmdisk 50000"; do
	set -- $g
	make_capture "gen_${1//-/_}" gen "$1" "$2"
done
if [ "$(id -u)" -eq 0 ]; then
	[ -c /dev/kvm ] && make_capture kvm_jobs record_kvm
	make_capture annotated record_ann
fi

# run NAME ARGS...: kxprof ARGS in the current folder; NAME.out, NAME.err, NAME.rc.
run() {
	local name=$1
	shift
	"$KXPROF" "$@" >"$name.out" 2>"$name.err"
	echo $? >"$name.rc"
}

# XSpace run folders are named after the capture's start, or the clock's time
# where the capture has none (the generated ones): every run folder's time is
# written RUN, and the TensorBoard marker (named and made from that time)
# becomes an empty events.out.tfevents.WHEN.HOST.profile-empty.
normalize() {
	local p q
	find . -depth -name '*.profile-empty' -print | while read -r p; do
		q=$(dirname "$p")/$(basename "$p" | sed -E 's/tfevents\.[0-9]+\./tfevents.WHEN./')
		rm -f "$p"
		: >"$q"
	done
	find . -depth -type d -regextype posix-extended -regex '.*/[0-9]{4}(_[0-9]{2}){5}[^/]*' -print |
		while read -r p; do
			mv "$p" "$(dirname "$p")/$(basename "$p" | sed -E 's/^[0-9]{4}(_[0-9]{2}){5}/RUN/')"
		done
	sed -i -E 's#/[0-9]{4}(_[0-9]{2}){5}#/RUN#g' ./*.out
}

for f in "$CAP"/*.kxp; do
	n=$(basename "$f" .kxp)
	rm -rf "${OUT:?}/$n"
	mkdir -p "$OUT/$n"
	cd "$OUT/$n" || exit 1
	for m in stream mem; do
		opt=(-v)
		[ $m = mem ] && opt=(--in-memory)
		run "report.$m.json" report "${opt[@]}" --json "$f"
		run "report.$m.txt" report "${opt[@]}" --wide --hist "$f"
		run "convert.$m" convert "${opt[@]}" "$f" --chrome "chrome.$m.json" --xplane "xplane.$m" \
			--pprof "cpu.$m.pb.gz" --folded "cpu.$m.folded" --speedscope "speedscope.$m.json"
		run "convert.offcpu.$m" convert "${opt[@]}" "$f" --off-cpu --pprof "offcpu.$m.pb.gz" \
			--folded "offcpu.$m.folded"
	done
	lim=$(($(grep -o '"ph":"X"' chrome.mem.json 2>/dev/null | wc -l) / 3))
	[ "$lim" -ge 2 ] || lim=2
	for m in window mem; do
		opt=(-v)
		[ $m = mem ] && opt=(--in-memory)
		mkdir -p "split.$m" "sliced.$m"
		run "split.$m" convert "${opt[@]}" "$f" --split-events "$lim" --chrome "split.$m/p.json" \
			--xplane "split.$m/xplane"
		run "sliced.$m" convert "${opt[@]}" "$f" --split-events "$lim" --chrome "sliced.$m/p.json"
	done
	normalize
done
echo "$OUT: the outputs of $(ls "$CAP"/*.kxp | wc -l) captures (read from $CAP)"
