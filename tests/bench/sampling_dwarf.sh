#!/usr/bin/env bash
# The cost of DWARF call graphs (a part of `make bench-sampling`; alone:
# tests/bench/sampling_dwarf.sh): build/tests/dwarf_workload (a hot
# function three calls deep in a library without frame pointers) sampled at
# HZ (default 999) by kxprof record --call-graph fp, by kxprof record
# --call-graph dwarf and by perf record --call-graph dwarf (cpu-clock), the
# variants alternating round by round. For each: the workload's rounds per
# second of its own CPU, the recorder's CPU per sample (kxprof unwinds while
# it records; perf unwinds afterwards, so perf script's CPU is added), bytes
# per sample (the kxprof ring record: what is copied per sample; the record
# file; perf.data), and the share of samples that unwind to main.
#
# Prints a markdown section on stdout. Environment: BENCH_ROUNDS (default
# 5), BENCH_QUICK=1 (short runs), BUILD_DIR (default build), DWARF_HZ.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=${BUILD_DIR:-$ROOT/build}
KX=$B/kxprof
WL=$B/tests/dwarf_workload
HERE=$ROOT/tests/bench
ROUNDS=${BENCH_ROUNDS:-5}
HZ=${DWARF_HZ:-999}
SECS=5
[ "${BENCH_QUICK:-0}" = 1 ] && { ROUNDS=2 SECS=1; }

die() { echo "bench-sampling (dwarf): $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (it loads BPF programs and opens perf events)"
for f in "$KX" "$WL"; do [ -x "$f" ] || die "$f missing: run make"; done
command -v perf >/dev/null || die "perf missing (Debian linux-perf; scripts/install-deps.sh)"
TMP=$(mktemp -d /tmp/kxdwarf.XXXXXX)
# (in this shell only: a child forked for `cmd &` and signalled before its
# exec would run it too; see tests/integration/lib.sh's at_exit)
trap 'if [ "$BASHPID" = "$$" ]; then rm -rf "$TMP"; fi' EXIT
RAW=$TMP/raw.tsv
: >"$RAW"
put() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; } # variant round metric value
jget() { python3 "$HERE/jget.py" "$@"; }
cpu_of() { awk '{print $2 + $3}' "$1"; } # /usr/bin/time -f '%e %U %S'

# Fraction of the samples whose stack holds main (perf script output).
perf_main_share() {
	python3 -c '
import sys
n = m = 0
for block in open(sys.argv[1]).read().split("\n\n"):
    lines = [l for l in block.splitlines() if l.strip()]
    if not lines or "dwarf_workload" not in lines[0]:
        continue
    n += 1
    m += any(l.split()[1:2] == ["main"] for l in lines[1:])
print("%d %d" % (m, n))' "$1"
}
kx_main_share() {
	"$KX" convert "$1" --folded - 2>/dev/null | awk '/^dwarf_workload;/ { n += $NF; if ($0 ~ /;main;/) m += $NF } END { print m + 0, n + 0 }'
}

run() {
	local v=$1 m n
	rm -f "$TMP/x.kxp" "$TMP/perf.data"
	case $v in
	kxprof-fp) set -- "$KX" record -F "$HZ" --no-jobs --call-graph fp -o "$TMP/x.kxp" -- "$WL" "$SECS" ;;
	kxprof-dwarf) set -- "$KX" record -F "$HZ" --no-jobs --call-graph dwarf -o "$TMP/x.kxp" -- "$WL" "$SECS" ;;
	perf-dwarf) set -- perf record -e cpu-clock -F "$HZ" --call-graph dwarf -q -o "$TMP/perf.data" -- "$WL" "$SECS" ;;
	esac
	/usr/bin/time -f '%e %U %S' -o "$TMP/time.txt" "$@" 2>"$TMP/err.txt" | grep '^{"workload"' >"$TMP/wl.json"
	[ -s "$TMP/wl.json" ] || { echo "bench-sampling (dwarf): $v: no result ($(head -c 300 "$TMP/err.txt"))" >&2; return 1; }
	wl=$(jget "$TMP/wl.json" 'd["cpu_ns"] / 1e9')
	put "$v" "$r" work "$(jget "$TMP/wl.json" 'd["rounds"] / (d["cpu_ns"] / 1e9)')"
	put "$v" "$r" rec_cpu "$(python3 -c "print(max(0.0, $(cpu_of "$TMP/time.txt") - $wl))")"
	case $v in
	kxprof-*)
		read -r m n < <(kx_main_share "$TMP/x.kxp")
		put "$v" "$r" post_cpu 0
		put "$v" "$r" file_bytes "$(stat -c %s "$TMP/x.kxp")"
		;;
	perf-*)
		/usr/bin/time -f '%e %U %S' -o "$TMP/ptime.txt" perf script -i "$TMP/perf.data" -F comm,ip,sym \
			>"$TMP/script.txt" 2>/dev/null
		put "$v" "$r" post_cpu "$(cpu_of "$TMP/ptime.txt")"
		put "$v" "$r" file_bytes "$(stat -c %s "$TMP/perf.data")"
		read -r m n < <(perf_main_share "$TMP/script.txt")
		;;
	esac
	put "$v" "$r" samples "$n"
	put "$v" "$r" to_main "$m"
}

VARIANTS=(kxprof-fp kxprof-dwarf perf-dwarf)
nv=${#VARIANTS[@]}
for r in $(seq "$ROUNDS"); do
	for i in $(seq 0 $((nv - 1))); do
		run "${VARIANTS[$(((i + r) % nv))]}" && printf '.' >&2
	done
done
echo " dwarf call graphs done" >&2

python3 - "$RAW" "$ROUNDS" "$HZ" "$SECS" <<'PYEOF'
import statistics, sys
raw, rounds, hz, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
d = {}
for line in open(raw):
    v, r, k, x = line.rstrip("\n").split("\t")
    d.setdefault(v, {}).setdefault(k, []).append(float(x))
names = {
    "kxprof-fp": "kxprof record --call-graph fp",
    "kxprof-dwarf": "**kxprof record --call-graph dwarf** (8 KiB copies)",
    "perf-dwarf": "perf record --call-graph dwarf (8 KiB) + perf script",
}
ring = {"kxprof-fp": "0", "kxprof-dwarf": "8,192 + 17 registers", "perf-dwarf": "8,192 + registers"}
print("## DWARF call graphs: %s Hz on build/tests/dwarf_workload (%s s, %d rounds, medians)\n" % (hz, secs, rounds))
print("| variant | workload rounds per CPU s | recorder CPU µs per sample (recording + unwinding afterwards) | stack copied per sample, bytes | file bytes per sample | samples unwound to main |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for v in ("kxprof-fp", "kxprof-dwarf", "perf-dwarf"):
    if v not in d:
        continue
    x = d[v]
    med = lambda k: statistics.median(x[k])
    n = sum(x["samples"])
    per = [(a + b) / s * 1e6 for a, b, s in zip(x["rec_cpu"], x["post_cpu"], x["samples"]) if s]
    fb = [f / s for f, s in zip(x["file_bytes"], x["samples"]) if s]
    share = 100.0 * sum(x["to_main"]) / n if n else 0
    print("| %s | %.0f | %.1f (%.1f + %.1f) | %s | %.0f | %.1f%% |" % (
        names[v], med("work"), statistics.median(per) if per else 0,
        statistics.median([a / s * 1e6 for a, s in zip(x["rec_cpu"], x["samples"]) if s] or [0]),
        statistics.median([b / s * 1e6 for b, s in zip(x["post_cpu"], x["samples"]) if s] or [0]),
        ring[v], statistics.median(fb) if fb else 0, share))
print()
print("Recorder CPU: the recording command's CPU less the workload's own; perf's"
      " unwinding happens in perf script, whose CPU is added. kxprof unwinds while it"
      " records and stores resolved frames.")
PYEOF
