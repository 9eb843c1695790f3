#!/usr/bin/env bash
# CPU sampling benchmark (a section of `make bench`; alone: `make
# bench-sampling`, which needs no /dev/kvm): what sampling at 99 and 999 Hz
# costs a workload, kxprof record -F against perf record -F -g on the same
# event (cpu-clock), variants alternating round by round in this one run;
# then captures of 60 seconds: the record file's, pprof's and folded sizes,
# and the time kxprof spent reading maps and resolving symbols; then the
# cost of DWARF call graphs (sampling_dwarf.sh).
#
# The workload (build/tests/profile_workload) spins in user code, then keeps
# BLKFLSBUF busy in the kernel on a loop device, for fixed times: its work
# done per second is the measure (higher is better). kxprof also traces the
# loop device's ioctls, for the driver frames (its job timelines are off,
# --no-jobs: they are not sampling); perf samples only.
#
# Prints a markdown section on stdout. Environment: BENCH_ROUNDS (default
# 5), BENCH_QUICK=1 (short runs, a smoke test), BUILD_DIR (default build).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=${BUILD_DIR:-$ROOT/build}
KX=$B/kxprof
WL=$B/tests/profile_workload
HERE=$ROOT/tests/bench
ROUNDS=${BENCH_ROUNDS:-5}
QUICK=${BENCH_QUICK:-0}
SPIN=5 FLUSH=5 LONG=60
[ "$QUICK" = 1 ] && { ROUNDS=2 SPIN=1 FLUSH=1 LONG=5; }

die() { echo "bench-sampling: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (it loads BPF programs and opens perf events)"
for f in "$KX" "$WL"; do [ -x "$f" ] || die "$f missing: run make"; done
command -v perf >/dev/null || die "perf missing (Debian linux-perf; scripts/install-deps.sh)"

TMP=$(mktemp -d /dev/shm/kxsample.XXXXXX 2>/dev/null || mktemp -d /tmp/kxsample.XXXXXX)
truncate -s 64M "$TMP/back.img"
LOOP=$(losetup -f --show "$TMP/back.img") || die "losetup failed"
cleanup() {
	losetup -d "$LOOP" 2>/dev/null
	rm -rf "$TMP"
}
# (in this shell only: a child forked for `cmd &` and signalled before its
# exec would run it too; see tests/integration/lib.sh's at_exit)
trap 'if [ "$BASHPID" = "$$" ]; then cleanup; fi' EXIT
RAW=$TMP/raw.tsv
: >"$RAW"
put() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; } # variant round metric value
jget() { python3 "$HERE/jget.py" "$@"; }

WORK=("$WL" -s "$SPIN" -D "$LOOP" -f "$FLUSH")

# Runs the workload under variant $1 (its JSON in $TMP/wl.json, the whole
# command's CPU seconds in $TMP/time.txt); the samples taken go to $TMP/n.
run() {
	local v=$1 hz=${1##*-}
	rm -f "$TMP/x.kxp" "$TMP/perf.data"
	case $v in
	untraced) set -- "${WORK[@]}" ;;
	kxprof-*) set -- "$KX" record -F "$hz" --no-jobs --device loop -o "$TMP/x.kxp" -- "${WORK[@]}" ;;
	perf-*) set -- perf record -e cpu-clock -F "$hz" -g -q -o "$TMP/perf.data" -- "${WORK[@]}" ;;
	esac
	/usr/bin/time -f '%e %U %S' -o "$TMP/time.txt" "$@" 2>"$TMP/err.txt" |
		grep '^{"workload"' >"$TMP/wl.json"
	case $v in
	kxprof-*) "$KX" report "$TMP/x.kxp" --json >"$TMP/r.json" 2>/dev/null &&
		jget "$TMP/r.json" 'd["Profile"]["Samples"]' >"$TMP/n" ;;
	perf-*) perf script -i "$TMP/perf.data" -F time 2>/dev/null | grep -c . >"$TMP/n" ;;
	*) echo 0 >"$TMP/n" ;;
	esac
}

VARIANTS=(untraced kxprof-99 perf-99 kxprof-999 perf-999)
n=${#VARIANTS[@]}
for r in $(seq "$ROUNDS"); do
	for i in $(seq 0 $((n - 1))); do
		v=${VARIANTS[$(((i + r) % n))]}
		run "$v"
		if [ ! -s "$TMP/wl.json" ]; then
			echo "bench-sampling: $v round $r: no result ($(head -c 200 "$TMP/err.txt"))" >&2
			continue
		fi
		put "$v" "$r" spin "$(jget "$TMP/wl.json" '(d["spin"]["heavy_units"] + d["spin"]["light_units"]) / d["spin"]["seconds"]')"
		put "$v" "$r" flush "$(jget "$TMP/wl.json" 'd["ioctls"].get("BLKFLSBUF", 0) / '"$FLUSH")"
		put "$v" "$r" wl_cpu "$(jget "$TMP/wl.json" 'd["cpu_ns"] / 1e9')"
		put "$v" "$r" all_cpu "$(awk '{print $2 + $3}' "$TMP/time.txt")"
		put "$v" "$r" wall "$(awk '{print $1}' "$TMP/time.txt")"
		put "$v" "$r" samples "$(cat "$TMP/n")"
		printf '.' >&2
	done
done
echo " sampling overhead done" >&2

# Captures of LONG seconds at 99 and 999 Hz: sizes, symbolisation, conversion.
for hz in 99 999; do
	half=$((LONG / 2))
	# The workload's watchdog (-T, default 60 s) past the capture's own length.
	"$KX" record -F "$hz" --no-jobs --device loop -o "$TMP/long.kxp" -- "$WL" -s "$half" -D "$LOOP" \
		-f "$half" -T $((LONG + 120)) >/dev/null 2>"$TMP/long.err" ||
		die "the $LONG s capture failed: $(cat "$TMP/long.err")"
	"$KX" report "$TMP/long.kxp" --json >"$TMP/long.json" 2>/dev/null
	put "long-$hz" 1 samples "$(jget "$TMP/long.json" 'd["Profile"]["Samples"]')"
	put "long-$hz" 1 sym_ms "$(jget "$TMP/long.json" 'd["Profile"]["SymbolizeNs"] / 1e6')"
	put "long-$hz" 1 kxp_bytes "$(stat -c %s "$TMP/long.kxp")"
	/usr/bin/time -f '%e %M' -o "$TMP/t.txt" "$KX" convert "$TMP/long.kxp" --pprof "$TMP/long.pb.gz" \
		--folded "$TMP/long.folded" >/dev/null 2>&1
	put "long-$hz" 1 convert_s "$(awk '{print $1}' "$TMP/t.txt")"
	put "long-$hz" 1 convert_rss_kib "$(awk '{print $2}' "$TMP/t.txt")"
	put "long-$hz" 1 pprof_bytes "$(stat -c %s "$TMP/long.pb.gz")"
	put "long-$hz" 1 folded_bytes "$(stat -c %s "$TMP/long.folded")"
	put "long-$hz" 1 folded_lines "$(grep -c . "$TMP/long.folded")"
	printf '.' >&2
done
echo " long captures done" >&2

python3 "$HERE/sampling_report.py" "$RAW" "$ROUNDS" "$SPIN" "$FLUSH" "$LONG" \
	"${WL#"$ROOT"/}" "${KX#"$ROOT"/}"
echo
# --call-graph dwarf against fp and against perf's DWARF mode.
"$HERE/sampling_dwarf.sh"
