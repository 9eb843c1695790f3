#!/usr/bin/env bash
# Benchmarks (`make bench`; separate from the tests): kxprof's overhead,
# throughput and export speed, side by side with the hook floor, bpftrace,
# perf trace and strace; what kxprof charges the rest of the host (other
# syscalls, context switches) per attach mechanism; and CPU sampling against
# perf record (tests/bench/sampling.sh). Every comparison runs in this one
# invocation, the variants alternating round by round; results are medians
# with min-max. Prints the markdown tables and rewrites tests/bench/RESULTS.md
# (machine, kernel, date, exact commands, tables, then tests/bench/history.md).
# Needs root. The accelerator is /dev/kvm where it exists, else a loop device
# over a tmpfs file (the flood then issues BLKGETSIZE64, the jobs are
# BLKZEROOUT). Reports where kxprof stands; never fails on a missed target
# (exit 1 only when it cannot measure at all).
#
# Environment: BENCH_ROUNDS (default 5), BENCH_QUICK=1 (small sizes, for a
# smoke run; RESULTS.md is then left alone), BUILD_DIR (default build),
# BENCH_BASELINE=path/to/another/kxprof (adds its record and convert rows to
# the same alternating runs: before/after comparisons of a change).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=${BUILD_DIR:-$ROOT/build}
KX=$B/kxprof
FLOOD=$B/tests/ioctl_flood
KVMW=$B/tests/kvm_workload
LOOPW=$B/tests/loop_workload
SYSL=$B/tests/syscall_loop
FLOOR=$B/bench/floor
BT=$ROOT/tests/bench/ioctl_latency.bt
HERE=$ROOT/tests/bench
ROUNDS=${BENCH_ROUNDS:-5}
QUICK=${BENCH_QUICK:-0}
BASE=${BENCH_BASELINE:-}

# Sizes: long enough for stable medians, short enough for ~10 minutes in all.
FLOOD_S=1			# seconds per flood run (ioctl_flood -w)
KVMRUN_JOBS=20000		# shortest KVM_RUN jobs per run (~0.25 s untraced)
JOB_ARGS="-t 2 -j 300 -l 2000"	# realistic jobs: ~1.7 ms each, 2 vCPU threads
LOOPRUN_JOBS=5000		# shortest loop jobs (BLKZEROOUT of 4 KiB) without /dev/kvm
LOOPJOB_ARGS="-t 2 -j 300 -k zero -z 256"	# longer loop jobs without /dev/kvm
TPUT_S=3			# seconds per throughput run
EXPORT_PER_THREAD=2600000	# x 2 threads: the >= 5 M event capture
EXPORT_ROUNDS=3			# conversions of it, alternating builds
GROW_EVENTS="1500000 15000000"	# synthetic captures reported streamed and in memory
GROW_ONE=1000000		# a synthetic capture that fits one trace, converted
GROW_ONE_INSTR=200000		# the same, its instructions counted (callgrind)
GROW_ANNJOBS=100000		# steps a thread of the annotated GPU-job capture (200,000 jobs)
GROW_ANNJOBS_SPLIT=100000	# its convert's --split-events (it fits one trace of 1,000,000)
HOST_S=0.5			# seconds per part of syscall_loop (getppid, then ping-pong)
if [ "$QUICK" = 1 ]; then
	ROUNDS=2 FLOOD_S=0.3 KVMRUN_JOBS=500 JOB_ARGS="-t 2 -j 30 -l 2000" TPUT_S=1
	LOOPRUN_JOBS=300 LOOPJOB_ARGS="-t 2 -j 30 -k zero -z 256"
	EXPORT_PER_THREAD=100000 EXPORT_ROUNDS=1 HOST_S=0.2 GROW_EVENTS="100000 1000000" GROW_ONE=200000 GROW_ONE_INSTR=50000
	GROW_ANNJOBS=10000 GROW_ANNJOBS_SPLIT=10000
fi

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (it loads BPF programs and traces a driver)"
for f in "$KX" "$FLOOD" "$KVMW" "$LOOPW" "$SYSL" "$FLOOR" "$B/bench/bench_export" \
	"$B/bench/bench_chrome" "$B/bench/bench_annotate" "$B/bench/bench_kxpgen"; do
	[ -x "$f" ] || die "$f missing: run make bench"
done
scripts/install-deps.sh || die "missing dependencies (scripts/install-deps.sh)"
# bpftrace and perf trace use classic tracepoints: they need tracefs.
if [ ! -d /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
		echo "bench: tracefs not mounted and mount failed: bpftrace/perf rows will be empty" >&2
fi

# Tracing programs of other tools (or other kxprof instances) run on every
# syscall of the workloads too: wait a while for them to go, then say so.
foreign() { bpftool prog show 2>/dev/null | grep -cE '^[0-9]+: (tracing|raw_tracepoint|tracepoint|kprobe|perf_event) '; }
for _ in $(seq "${BENCH_WAIT:-120}"); do
	[ "$(foreign)" -eq 0 ] && break
	sleep 1
done
FOREIGN_START=$(foreign)
[ "$FOREIGN_START" -eq 0 ] ||
	echo "bench: $FOREIGN_START tracing BPF programs of others are attached: they add to every variant" >&2

# In memory (tmpfs) when possible: disk writeback would time the disk, not kxprof.
TMP=$(mktemp -d /dev/shm/kxbench.XXXXXX 2>/dev/null || mktemp -d /tmp/kxbench.XXXXXX)
RAW=$TMP/raw.tsv
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
LOOPDEV=""
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS" 2>/dev/null
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	rm -rf "$TMP"
}
# (in this shell only: a child forked for `cmd &` and signalled before its
# exec would run it too; see tests/integration/lib.sh's at_exit)
trap 'if [ "$BASHPID" = "$$" ]; then cleanup; fi' EXIT
: >"$RAW"
cd "$TMP" || die "cannot enter $TMP"

# The accelerator: kvm, else a loop device standing in for it. KXDEV is what
# kxprof needs to trace it (loop is not in the default device set).
if [ -c /dev/kvm ]; then
	ACCEL=kvm
	KXDEV=()
	FLOODCMD=("$FLOOD")
else
	ACCEL=loop
	truncate -s 64M "$TMP/accel.img" || die "cannot make the loop device's backing file"
	LOOPDEV=$(losetup -f --show "$TMP/accel.img") || die "no free loop device (losetup -f)"
	KXDEV=(--device "$LOOPDEV")
	FLOODCMD=("$FLOOD" -D "$LOOPDEV")
	echo "bench: no /dev/kvm: the loop device $LOOPDEV stands in for the accelerator" >&2
fi

# The mechanisms this kernel allows, and the default of each mode (kxprof list).
"$KX" list --json >"$TMP/list.json" 2>/dev/null || die "kxprof list failed"
read -r MECH_TARGETED MECH_HOST MECHS_OK < <(python3 "$HERE/jget.py" --mechs "$TMP/list.json")
[ -n "$MECHS_OK" ] || die "no ioctl attach mechanism works here (kxprof list)"
HAVE_FENTRY=0
case " $MECHS_OK " in *" fentry "*) HAVE_FENTRY=1 ;; esac
echo "bench: ioctl hooks here: $MECHS_OK; defaults: targeted $MECH_TARGETED, host-wide $MECH_HOST" >&2
# One untraced run of each driver workload first: the first run warms what
# every later one finds warm (the loop device's backing pages, caches).
"${FLOODCMD[@]}" -w 0.2 >/dev/null 2>&1
[ "$ACCEL" = loop ] && "$LOOPW" -D "$LOOPDEV" $LOOPJOB_ARGS >/dev/null 2>&1

put() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; }	# row variant round metric value
jget() { python3 "$HERE/jget.py" "$@"; }			# FILE EXPR -> value

# Aggregation mode (kxprof top), when this build has it.
HAVE_AGG=0
"$KX" top --help >/dev/null 2>&1 && HAVE_AGG=1

# Waits until process $1 holds at least $2 BPF links (its programs are attached).
wait_links() {
	local i n
	for i in $(seq 200); do
		n=$(grep -l '^link_type' /proc/"$1"/fdinfo/* 2>/dev/null | wc -l)
		[ "$n" -ge "$2" ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# Runs the workload under `kxprof top` (in-kernel aggregation, no records):
# the workload is held until top has attached with its pid in the filter.
# MECHOPT: --attach MECH, or nothing for the default.
under_aggregate() {
	local go=$TMP/go wl tp
	rm -f "$go"
	mkfifo "$go"
	(read -r _ <"$go"; exec "$@") >"$TMP/agg.out" &
	wl=$!
	"$KX" top --batch -i 0.5 -p "$wl" "${KXDEV[@]}" "${MECHOPT[@]}" >"$TMP/top.txt" 2>"$TMP/top.err" &
	tp=$!
	if ! wait_links "$tp" 2; then
		echo "bench: kxprof top did not attach: $(head -c 300 "$TMP/top.err")" >&2
	fi
	echo go >"$go"
	wait "$wl"
	kill -INT "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
	cat "$TMP/agg.out"
}

# Runs the workload while `kxprof serve` is attached (every process, the
# daemon's default), started before it and stopped after it; "$1" is
# --no-offcpu or "".
under_serve() {
	local extra=$1 sv i
	shift
	rm -f "$TMP/serve.err"
	"$KX" serve --listen 127.0.0.1:0 "${KXDEV[@]}" "${MECHOPT[@]}" $extra 2>"$TMP/serve.err" &
	sv=$!
	for i in $(seq 200); do
		grep -q 'kxprof serve: http://' "$TMP/serve.err" 2>/dev/null && break
		kill -0 "$sv" 2>/dev/null || break
		sleep 0.05
	done
	grep -q 'kxprof serve: http://' "$TMP/serve.err" ||
		echo "bench: kxprof serve did not start: $(head -c 300 "$TMP/serve.err")" >&2
	"$@"
	kill -TERM "$sv" 2>/dev/null
	wait "$sv" 2>/dev/null
}

# Runs "$@" (a workload printing one JSON line) under variant $1; prints that
# line. With CPU_COMM set (the workload's process name), the tracer's own CPU
# in the middle of the run also goes to $TMP/tracer_cpu (tracer_cpu.py).
under() {
	local root
	rm -f "$TMP/tracer_cpu"
	if [ -z "${CPU_COMM:-}" ]; then
		under_run "$@"
		return
	fi
	under_run "$@" >"$TMP/under.out" &
	root=$!
	python3 "$HERE/tracer_cpu.py" "$root" "$CPU_COMM" "$CPU_WINDOW" >"$TMP/tracer_cpu"
	wait "$root"
	cat "$TMP/under.out"
}
# Variants are NAME or NAME@MECH (kxprof with --attach MECH).
under_run() {
	local v=${1%@*} MECHOPT=()
	[ "$1" != "$v" ] && MECHOPT=(--attach "${1#*@}")
	shift
	case $v in
	untraced) "$@" ;;
	floor) "$FLOOR" -- "$@" ;;
	clock | latency | tslat | tpempty | fenempty | swempty) "$FLOOR" -m "$v" -- "$@" ;;
	tsrec) "$FLOOR" -m tsrec -- "$@" 2>/dev/null ;;
	record) "$KX" record "${KXDEV[@]}" "${MECHOPT[@]}" -o "$TMP/rec.kxp" -- "$@" \
		2>"$TMP/record.err" ;;
	baseline) "$BASE" record "${KXDEV[@]}" -o "$TMP/rec.kxp" -- "$@" 2>"$TMP/record.err" ;;
	reca) "$KX" record -a "${KXDEV[@]}" "${MECHOPT[@]}" -o "$TMP/rec.kxp" -- "$@" \
		2>"$TMP/record.err" ;;
	aggregate) under_aggregate "$@" ;;
	serve) under_serve "" "$@" ;;
	servenooff) under_serve --no-offcpu "$@" ;;
	bpftrace) bpftrace -f json "$BT" -c "$*" 2>"$TMP/bpftrace.err" >"$TMP/bpftrace.out"
		grep -v '^{"type"' "$TMP/bpftrace.out" ;;
	perf) perf trace -s -e ioctl -o "$TMP/perf.txt" -- "$@" ;;
	perfa) perf trace -a -s -e ioctl -o "$TMP/perf.txt" -- "$@" ;;
	strace) strace -c -f -e trace=ioctl -o "$TMP/strace.txt" -- "$@" ;;
	esac | grep '^{"workload"' | tail -1
}

# How many ioctls variant $1 saw in its last run (coverage check), or "".
seen() {
	case ${1%@*} in
	record | baseline) "$KX" report "$TMP/rec.kxp" --json >"$TMP/rep.json" 2>/dev/null &&
		jget "$TMP/rep.json" 'd["Capture"]["received"]' ;;
	bpftrace) python3 "$HERE/jget.py" --bpftrace-hist "$TMP/bpftrace.out" ;;
	perf) awk '$1 == "ioctl" { n += $2 } END { print n + 0 }' "$TMP/perf.txt" ;;	# per thread
	strace) awk '$NF == "ioctl" { print $4 }' "$TMP/strace.txt" ;;
	*) echo "" ;;
	esac
}

# The share of both CPUs busy over 0.3 s (others' builds and tests share
# this machine): each run starts only once it is under 15%, or after
# BENCH_WAIT_RUN seconds (counted in the report as runs on a busy machine).
busy_pct() {
	local a b
	a=($(head -1 /proc/stat))
	sleep 0.3
	b=($(head -1 /proc/stat))
	local idle=$((b[4] + b[5] - a[4] - a[5])) total=0 i
	for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
	[ "$total" -gt 0 ] || { echo 0; return; }
	echo $((100 * (total - idle) / total))
}
BUSY_RUNS=0
wait_quiet() {
	local end=$((SECONDS + ${BENCH_WAIT_RUN:-20}))
	while [ "$(busy_pct)" -ge 15 ]; do
		if [ "$SECONDS" -ge "$end" ]; then
			BUSY_RUNS=$((BUSY_RUNS + 1))
			return
		fi
		sleep 0.5
	done
}

# One measured section: variants alternate within each round; the start
# variant rotates so no variant always runs first (or after the same one).
#   section NAME METRIC VARIANTS -- WORKLOAD...
# METRIC is an expression on the workload's JSON d (row NAME, metric value),
# or ROW=EXPR|ROW=EXPR... for several rows from each run (metric
# "value" of each ROW; a ROW:METRIC=EXPR entry adds another metric to ROW).
section() {
	local name=$1 expr=$2 vars=() r i n v line spec row
	shift 2
	while [ "$1" != "--" ]; do vars+=("$1"); shift; done
	shift
	n=${#vars[@]}
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${vars[$(((i + r) % n))]}
			wait_quiet
			line=$(under "$v" "$@")
			if [ -z "$line" ]; then
				echo "bench: $name/$v round $r: no result" >&2
				continue
			fi
			echo "$line" >"$TMP/wl.json"
			case $expr in
			*=*) IFS='|' read -ra spec <<<"$expr" ;;
			*) spec=("$name=$expr") ;;
			esac
			for row in "${spec[@]}"; do
				local rn=${row%%=*} metric=value
				[ "${rn#*:}" != "$rn" ] && metric=${rn#*:} rn=${rn%%:*}
				put "$rn" "$v" "$r" "$metric" "$(jget "$TMP/wl.json" "${row#*=}")"
			done
			[ -s "$TMP/tracer_cpu" ] &&
				put "$name" "$v" "$r" tracer_cpu "$(cat "$TMP/tracer_cpu")"
			if [ "$r" -eq 1 ]; then
				put "$name" "$v" "$r" issued "$(jget "$TMP/wl.json" 'sum(d["ioctls"].values())')"
				put "$name" "$v" "$r" seen "$(seen "$v")"
				# the record file's size on this workload (bytes per event differ by workload)
				[ "$v" = record ] && put "$name" "$v" "$r" kxp_bytes "$(stat -c %s "$TMP/rec.kxp")"
			fi
			printf '.' >&2
		done
	done
	echo " $name done" >&2
}

VARIANTS=(untraced floor record)
[ -n "$BASE" ] && VARIANTS+=(baseline)
[ "$HAVE_AGG" = 1 ] && VARIANTS+=(aggregate)
VARIANTS+=(bpftrace perf strace)
# The other mechanisms, forced (the defaults run as record and aggregate).
MECH_VARIANTS=()
for m in $MECHS_OK; do
	[ "$m" != "$MECH_TARGETED" ] && MECH_VARIANTS+=("record@$m")
	[ "$HAVE_AGG" = 1 ] && [ "$m" != "$MECH_HOST" ] && MECH_VARIANTS+=("aggregate@$m")
done
START=$(date +%s)

# ---- 1a. per-ioctl cost, tight loop of a cheap ioctl ----
echo "bench: 1a. ioctl flood, $ROUNDS rounds x $((${#VARIANTS[@]} + ${#MECH_VARIANTS[@]} + 4)) variants" >&2
# The tracers' own CPU is sampled here too (steady state, setup excluded).
CPU_COMM=ioctl_flood CPU_WINDOW=$(python3 -c "print($FLOOD_S / 2)") \
	section flood 'd["ns_per_ioctl"]' "${VARIANTS[@]}" "${MECH_VARIANTS[@]}" clock latency tslat \
	tsrec -- "${FLOODCMD[@]}" -w "$FLOOD_S"

# ---- 1b. per-job cost, shortest jobs ----
if [ "$ACCEL" = kvm ]; then
	echo "bench: 1b. short KVM_RUN jobs" >&2
	section kvmrun 'd["kvm_run_ns"]["mean"]' "${VARIANTS[@]}" -- "$KVMW" -t 1 -j "$KVMRUN_JOBS" -l 0
else
	echo "bench: 1b. short loop jobs (BLKZEROOUT of 4 KiB)" >&2
	section kvmrun 'd["jobs"]["job_ns"]["mean"]' "${VARIANTS[@]}" -- \
		"$LOOPW" -D "$LOOPDEV" -t 1 -j "$LOOPRUN_JOBS" -k zero -z 4
fi

# ---- 4. workload overhead, realistic jobs ----
if [ "$ACCEL" = kvm ]; then
	echo "bench: 4. KVM job workload" >&2
	# shellcheck disable=SC2086
	section jobs 'd["elapsed_ns"]' "${VARIANTS[@]}" -- "$KVMW" $JOB_ARGS
else
	echo "bench: 4. loop job workload" >&2
	# shellcheck disable=SC2086
	section jobs 'd["jobs"]["elapsed_ns"]' "${VARIANTS[@]}" -- "$LOOPW" -D "$LOOPDEV" $LOOPJOB_ARGS
fi

# ---- 6. host cost: other syscalls and context switches ----
# Nothing here issues an ioctl: what each tracer, left attached host-wide,
# charges a getppid() and a pipe ping-pong round trip (2 context switches,
# 4 syscalls), in CPU time of the workload's threads.
HOST_VARIANTS=(untraced floor tpempty swempty)
[ "$HAVE_FENTRY" = 1 ] && HOST_VARIANTS+=(fenempty)
[ "$HAVE_AGG" = 1 ] && HOST_VARIANTS+=(serve servenooff)
HOST_VARIANTS+=(reca)
for m in $MECHS_OK; do
	[ "$m" != "$MECH_HOST" ] && HOST_VARIANTS+=("reca@$m")
done
HOST_VARIANTS+=(bpftrace perfa)
echo "bench: 6. host cost, $ROUNDS rounds x ${#HOST_VARIANTS[@]} variants" >&2
section host 'hostsys=d["getppid"]["ns_per_call"]|hostsw=d["pingpong"]["ns_per_round_trip"]|hostsw:switches=d["pingpong"]["switches_per_round_trip"]' \
	"${HOST_VARIANTS[@]}" -- "$SYSL" -w "$HOST_S"

# ---- BPF program cost (run-time statistics) ----
# Stats cost two clock reads per program run: a separate pass, never timed.
# Programs are the tracer's own: the ids its process holds (other tools'
# programs on the machine are not counted).
echo "bench: BPF program run time (kernel.bpf_stats_enabled)" >&2
tracer_pids() { # variant: the pids of its tracer processes
	case ${1%@*} in
	record | reca | aggregate | serve | servenooff) pgrep -f "^$KX " ;;
	baseline) pgrep -f "^$BASE " ;;
	bpftrace) pgrep -f "bpftrace -f json $BT" ;;
	*) pgrep -f "^$FLOOR " ;;
	esac
}
progstats() { # row variant workload...
	local row=$1 v=$2 bg p i
	shift 2
	wait_quiet
	sysctl -qw kernel.bpf_stats_enabled=1
	under "$v" "$@" >/dev/null 2>&1 &
	bg=$!
	# Once the workload runs (the tracer has attached: its start-up is not
	# counted), a second of it.
	for i in $(seq 200); do
		pgrep -f "^$1" >/dev/null && break
		sleep 0.05
	done
	sleep 1.2
	bpftool prog show -j >"$TMP/progs.json" 2>/dev/null
	for p in $(tracer_pids "$v"); do
		grep -h '^prog_id:' /proc/"$p"/fdinfo/* 2>/dev/null | awk '{print $2}'
	done | sort -u >"$TMP/progids"
	wait "$bg"
	sysctl -qw kernel.bpf_stats_enabled=0
	python3 "$HERE/jget.py" --progstats "$TMP/progs.json" "$TMP/progids" "$v" "$row" >"$TMP/ps.tsv"
	[ -s "$TMP/ps.tsv" ] || echo "bench: $row/$v: no program of the tracer ran 10000 times" \
		"($(wc -l <"$TMP/progids") programs held)" >&2
	cat "$TMP/ps.tsv" >>"$RAW"
}
for v in floor tslat tsrec record "${MECH_VARIANTS[@]}" baseline aggregate bpftrace; do
	[ "$v" = baseline ] && [ -z "$BASE" ] && continue
	[ "$v" = aggregate ] && [ "$HAVE_AGG" != 1 ] && continue
	progstats progstats "$v" "${FLOODCMD[@]}" -w 2.5
done
# The off-CPU program against an empty one on sched_switch, on the ping-pong.
for v in "${HOST_VARIANTS[@]}"; do
	case $v in swempty | serve | reca*) progstats progstats_sw "$v" "$SYSL" -m pingpong -w 2.5 ;; esac
done

# ---- 2. event throughput ----
echo "bench: 2. throughput and drop accounting" >&2
tput() { # label, ringbuf-mb ("" = default), flood threads
	local label=$1 mb=$2 t=$3 opt=()
	[ -n "$mb" ] && opt=(--ringbuf-mb "$mb")
	"$KX" record "${KXDEV[@]}" "${opt[@]}" -o "$TMP/tp.kxp" -- "${FLOODCMD[@]}" -t "$t" -w "$TPUT_S" \
		>"$TMP/tp.json" 2>"$TMP/tp.err"
	"$KX" report "$TMP/tp.kxp" --json >"$TMP/tp.rep" 2>/dev/null
	put tput "$label" 1 issued "$(jget "$TMP/tp.json" 'sum(d["ioctls"].values())')"
	put tput "$label" 1 rate "$(jget "$TMP/tp.json" 'd["ioctls_per_sec"]')"
	put tput "$label" 1 ns "$(jget "$TMP/tp.json" 'd["ns_per_ioctl"]')"
	put tput "$label" 1 emitted "$(jget "$TMP/tp.rep" 'd["Capture"]["emitted"]')"
	put tput "$label" 1 received "$(jget "$TMP/tp.rep" 'd["Capture"]["received"]')"
	put tput "$label" 1 dropped "$(jget "$TMP/tp.rep" 'd["Capture"]["dropped"]')"
	put tput "$label" 1 ring "${mb:-8}"
	put tput "$label" 1 threads "$t"
}
tput "1 thread, default ring" "" 1
tput "2 threads, default ring" "" 2
tput "2 threads, 64 KiB ring (overload)" 0.0625 2

# ---- 3. export ----
echo "bench: 3. export of a >= 5 M event capture" >&2
"$KX" record "${KXDEV[@]}" --ringbuf-mb 64 -o "$TMP/big.kxp" -- "${FLOODCMD[@]}" -t 2 \
	-n "$EXPORT_PER_THREAD" >/dev/null 2>"$TMP/big.err"
"$KX" report "$TMP/big.kxp" --json >"$TMP/big.rep" 2>/dev/null
NEV=$(jget "$TMP/big.rep" 'd["Capture"]["received"]')
put export capture 1 events "$NEV"
put export capture 1 dropped "$(jget "$TMP/big.rep" 'd["Capture"]["dropped"]')"
put export capture 1 kxp_bytes "$(stat -c %s "$TMP/big.kxp")"
timed() { # label, output size command, then the command
	local label=$1 sizecmd=$2
	shift 2
	wait_quiet
	if ! /usr/bin/time -f '%e %M' -o "$TMP/time.txt" "$@" >/dev/null 2>"$TMP/conv.err"; then
		# e.g. a baseline build that predates the capture's format version: no row.
		echo "bench: $label failed: $(head -c 300 "$TMP/conv.err")" >&2
		return
	fi
	put export "$label" "$r" wall_s "$(awk '{print $1}' "$TMP/time.txt")"
	put export "$label" "$r" rss_kib "$(awk '{print $2}' "$TMP/time.txt")"
	put export "$label" "$r" out_bytes "$(eval "$sizecmd")"
}
# Output bytes: every run of the logdir, every Chrome file (all the parts of a split one).
XP_SIZE='find "$TMP/xp" -name "*.xplane.pb" -exec stat -c %s {} + | awk "{s += \$1} END {print s}"'
GZ_SIZE='stat -c %s "$TMP"/big.*json.gz | awk "{s += \$1} END {print s}"'
# One output whatever the size (--split-events 0), for builds that split captures.
one_output() { "$1" convert --help 2>/dev/null | grep -q -- --split-events && echo --split-events 0; }
for r in $(seq "$EXPORT_ROUNDS"); do
	for k in "$KX" $BASE; do
		sfx=""
		[ "$k" = "$KX" ] || sfx=_base
		one=$(one_output "$k")
		rm -rf "$TMP/xp"
		timed "xplane$sfx" "$XP_SIZE" "$k" convert "$TMP/big.kxp" $one --xplane "$TMP/xp"
		rm -rf "$TMP/xp"
		timed "chrome_gz$sfx" "$GZ_SIZE" "$k" convert "$TMP/big.kxp" $one --chrome "$TMP/big.json.gz"
		rm -f "$TMP"/big*.json.gz
		if [ "$k" = "$KX" ]; then # the same with zlib (KXPROF_GZIP=zlib)
			timed chrome_gz_zlib "$GZ_SIZE" env KXPROF_GZIP=zlib "$k" convert "$TMP/big.kxp" \
				$one --chrome "$TMP/big.json.gz"
			rm -f "$TMP"/big*.json.gz
		fi
		if [ "$k" = "$KX" ] && [ "$r" = 1 ]; then
			# The default: split by time into parts of at most 1,000,000 events
			# (one round: the cost of splitting, next to the single outputs).
			timed xplane_split "$XP_SIZE" "$k" convert "$TMP/big.kxp" --xplane "$TMP/xp"
			put export xplane_split "$r" parts "$(find "$TMP/xp" -name '*.xplane.pb' | wc -l)"
			rm -rf "$TMP/xp"
			timed chrome_gz_split "$GZ_SIZE" "$k" convert "$TMP/big.kxp" --chrome "$TMP/big.json.gz"
			put export chrome_gz_split "$r" parts "$(find "$TMP" -maxdepth 1 -name 'big*.json.gz' | wc -l)"
			rm -f "$TMP"/big*.json.gz
			# The same parts from the whole capture in memory (--in-memory).
			if "$k" convert --help 2>/dev/null | grep -q -- --in-memory; then
				timed xplane_split_mem "$XP_SIZE" "$k" convert "$TMP/big.kxp" --in-memory \
					--xplane "$TMP/xp"
				rm -rf "$TMP/xp"
				timed chrome_gz_split_mem "$GZ_SIZE" "$k" convert "$TMP/big.kxp" --in-memory \
					--chrome "$TMP/big.json.gz"
				rm -f "$TMP"/big*.json.gz
			fi
		fi
		timed "report$sfx" 'echo 0' "$k" report "$TMP/big.kxp"
	done
	printf '.' >&2
done
echo " export done" >&2
rm -f "$TMP/big.kxp"
NSYN=5000000
[ "$QUICK" = 1 ] && NSYN=200000
"$B/bench/bench_export" -n "$NSYN" >"$TMP/be.txt" 2>&1
"$B/bench/bench_chrome" "$NSYN" "$TMP" >"$TMP/bc.txt" 2>&1
python3 "$HERE/jget.py" --bench-lines "$TMP/be.txt" "$TMP/bc.txt" >>"$RAW"

# ---- 3b. report and convert as the capture grows: streamed (one window at a
# time for convert) against in memory ----
echo "bench: 3b. report and convert of growing captures" >&2
# time_report ROW N ROUND MODE FILE: report --json's wall time and peak RSS,
# streamed (MODE stream) or --in-memory (memory); -v's lines in grow.err.
time_report() {
	local row=$1 n=$2 r=$3 mode=$4 f=$5 opt=()
	[ "$mode" = memory ] && opt=(--in-memory)
	wait_quiet
	/usr/bin/time -f '%e %M' -o "$TMP/time.txt" "$KX" -v report "${opt[@]}" --json "$f" \
		>"$TMP/grow.$mode.json" 2>"$TMP/grow.err" ||
		{ echo "bench: $row report $mode failed: $(head -c 300 "$TMP/grow.err")" >&2; return 1; }
	put "$row" "$n" "$r" "${mode}_wall_s" "$(awk '{print $1}' "$TMP/time.txt")"
	put "$row" "$n" "$r" "${mode}_rss_kib" "$(awk '{print $2}' "$TMP/time.txt")"
}
# time_convert ROW N ROUND MODE FILE [OPTION...]: convert to .json.gz, split
# by default (or as the options say), one window at a time (MODE stream) or
# read whole (memory): wall time, peak RSS and the parts' bytes; -v's lines
# in grow.err.
time_convert() {
	local row=$1 n=$2 r=$3 mode=$4 f=$5 opt=()
	shift 5
	[ "$mode" = memory ] && opt=(--in-memory)
	wait_quiet
	rm -f "$TMP"/grow*.json.gz
	/usr/bin/time -f '%e %M' -o "$TMP/time.txt" "$KX" -v convert "${opt[@]}" "$@" "$f" \
		--chrome "$TMP/grow.json.gz" >/dev/null 2>"$TMP/grow.err" ||
		{ echo "bench: $row convert $mode failed: $(head -c 300 "$TMP/grow.err")" >&2; return 1; }
	put "$row" "$n" "$r" "conv_${mode}_wall_s" "$(awk '{print $1}' "$TMP/time.txt")"
	put "$row" "$n" "$r" "conv_${mode}_rss_kib" "$(awk '{print $2}' "$TMP/time.txt")"
	put "$row" "$n" "$r" "conv_${mode}_out_bytes" \
		"$(stat -c %s "$TMP"/grow*.json.gz | awk '{s += $1} END {print s}')"
	rm -f "$TMP"/grow*.json.gz
}
for n in $GROW_EVENTS; do
	"$B/bench/bench_kxpgen" -n "$n" -o "$TMP/grow.kxp" >/dev/null 2>"$TMP/grow.err" ||
		{ echo "bench: bench_kxpgen failed: $(head -c 300 "$TMP/grow.err")" >&2; continue; }
	put grow "$n" 1 kxp_bytes "$(stat -c %s "$TMP/grow.kxp")"
	for r in $(seq "$EXPORT_ROUNDS"); do
		for mode in stream memory; do
			time_report grow "$n" "$r" "$mode" "$TMP/grow.kxp" || continue
			time_convert grow "$n" "$r" "$mode" "$TMP/grow.kxp"
		done
		printf '.' >&2
	done
	put grow "$n" 1 events "$(jget "$TMP/grow.stream.json" 'd["Capture"]["received"]')"
	rm -f "$TMP/grow.kxp"
done
# A capture that fits one trace (the usual case) is converted whole: by
# default (the first read keeps it), --in-memory (read whole at once) and
# the baseline's default, alternating, the same file.
n=$((GROW_ONE))
# Variant $1's kxprof and options: k, opt.
one_trace_variant() {
	k=$KX opt=()
	[ "$1" = memory ] && opt=(--in-memory)
	[ "$1" = baseline ] && k=$BASE
	return 0
}
if "$B/bench/bench_kxpgen" -n "$n" -o "$TMP/grow.kxp" >/dev/null 2>"$TMP/grow.err"; then
	for r in $(seq "$EXPORT_ROUNDS"); do
		for v in kxprof memory ${BASE:+baseline}; do
			one_trace_variant "$v"
			wait_quiet
			rm -f "$TMP"/grow*.json.gz
			/usr/bin/time -f '%e %M' -o "$TMP/time.txt" "$k" convert "${opt[@]}" "$TMP/grow.kxp" \
				--chrome "$TMP/grow.json.gz" >/dev/null 2>"$TMP/grow.err" ||
				{ echo "bench: convert of the one-trace capture failed ($v): $(head -c 300 "$TMP/grow.err")" >&2; continue; }
			put growone "$v" "$r" wall_s "$(awk '{print $1}' "$TMP/time.txt")"
			put growone "$v" "$r" rss_kib "$(awk '{print $2}' "$TMP/time.txt")"
		done
	done
	put growone kxprof 1 events "$n"
	rm -f "$TMP/grow.kxp" "$TMP"/grow*.json.gz
else
	echo "bench: bench_kxpgen failed: $(head -c 300 "$TMP/grow.err")" >&2
fi
# The same, counted in instructions (callgrind: exact, where this VM's wall
# times spread by 10-30% from run to run), on a smaller capture.
n=$((GROW_ONE_INSTR))
if command -v valgrind >/dev/null &&
	"$B/bench/bench_kxpgen" -n "$n" -o "$TMP/grow.kxp" >/dev/null 2>"$TMP/grow.err"; then
	for v in kxprof memory ${BASE:+baseline}; do
		one_trace_variant "$v"
		rm -f "$TMP"/grow*.json.gz
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "$k" convert "${opt[@]}" \
			"$TMP/grow.kxp" --chrome "$TMP/grow.json.gz" >/dev/null 2>"$TMP/grow.err" ||
			{ echo "bench: callgrind of the one-trace convert failed ($v): $(tail -c 300 "$TMP/grow.err")" >&2; continue; }
		put growone_instr "$v" 1 instructions "$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/grow.err")"
	done
	put growone_instr kxprof 1 events "$n"
	rm -f "$TMP/grow.kxp" "$TMP"/grow*.json.gz
fi
# The report and convert of an annotated capture of the largest size
# (bench_kxpgen -a: NVTX-like ranges around the calls): the ranges paired as
# the file streams by.
n=${GROW_EVENTS##* }
if "$B/bench/bench_kxpgen" -a -n "$n" -o "$TMP/grow.kxp" >/dev/null 2>"$TMP/grow.err"; then
	put growann "$n" 1 kxp_bytes "$(stat -c %s "$TMP/grow.kxp")"
	for r in $(seq "$EXPORT_ROUNDS"); do
		for mode in stream memory; do
			time_report growann "$n" "$r" "$mode" "$TMP/grow.kxp" || continue
			[ "$mode" = stream ] && ! grep -q "was streamed" "$TMP/grow.err" &&
				echo "bench: the annotated capture was not streamed: $(head -c 300 "$TMP/grow.err")" >&2
			time_convert growann "$n" "$r" "$mode" "$TMP/grow.kxp" || continue
			[ "$mode" = stream ] && grep -q "read into memory whole" "$TMP/grow.err" &&
				echo "bench: the annotated capture was not converted in windows: $(head -c 300 "$TMP/grow.err")" >&2
		done
	done
	put growann "$n" 1 events \
		"$(jget "$TMP/grow.stream.json" 'd["Capture"]["received"] + d["Annotations"]["events"]')"
	rm -f "$TMP/grow.kxp"
else
	echo "bench: bench_kxpgen -a failed: $(head -c 300 "$TMP/grow.err")" >&2
fi
# The report and convert of an annotated GPU-job capture (kxp_gen
# annjobs-done: 2 threads of ranges around xe execs, 200,000 jobs, every 5th
# done 40 us after its range, every 97th 120 ms after, at 87,000 jobs a
# second): the jobs paired as the file streams by, each giving its device
# time to the ranges around its call, within the ranges' walk's budget
# (rangewalk.h: 16 MiB of calls waiting for their jobs) and the device
# timelines' (jobflow.h: 32,768 jobs held behind a job done late). Its 850,000 trace events fit one
# trace: convert splits it into parts of 100,000 to be read in windows.
n=$GROW_ANNJOBS
if "$B/tests/kxp_gen" annjobs-done "$TMP/grow.kxp" "$n" >/dev/null 2>"$TMP/grow.err"; then
	put growannjobs "$n" 1 kxp_bytes "$(stat -c %s "$TMP/grow.kxp")"
	for r in $(seq "$EXPORT_ROUNDS"); do
		for mode in stream memory; do
			time_report growannjobs "$n" "$r" "$mode" "$TMP/grow.kxp" || continue
			[ "$mode" = stream ] && ! grep -q "was streamed" "$TMP/grow.err" &&
				echo "bench: the annotated GPU-job capture was not streamed: $(head -c 300 "$TMP/grow.err")" >&2
			time_convert growannjobs "$n" "$r" "$mode" "$TMP/grow.kxp" \
				--split-events "$GROW_ANNJOBS_SPLIT" || continue
			[ "$mode" = stream ] && grep -q "read into memory whole" "$TMP/grow.err" &&
				echo "bench: the annotated GPU-job capture was not converted in windows: $(head -c 300 "$TMP/grow.err")" >&2
		done
	done
	put growannjobs "$n" 1 events \
		"$(jget "$TMP/grow.stream.json" 'd["Capture"]["received"] + d["Annotations"]["events"]')"
	put growannjobs "$n" 1 jobs \
		"$(jget "$TMP/grow.stream.json" 'sum(v["jobs"] for v in d["Jobs"]["devices"].values())')"
	rm -f "$TMP/grow.kxp"
else
	echo "bench: kxp_gen annjobs-done failed: $(head -c 300 "$TMP/grow.err")" >&2
fi
# The same capture with 4 threads and every 11th job never done (kxp_gen
# annjobs): a job never done holds its ring's lane to the capture's end, so
# its rings have thousands of lanes, and holds more than 32,768 later jobs
# back (the device timelines count it as never done then, jobflow.h; past
# the ranges' walk's budget, the calls no job record to come links to go,
# rangewalk.h). Streamed and read a window at a time; convert writes both
# outputs, the XSpace one lane by lane.
if "$B/tests/kxp_gen" annjobs "$TMP/grow.kxp" "$n" >/dev/null 2>"$TMP/grow.err"; then
	put growannopen "$n" 1 kxp_bytes "$(stat -c %s "$TMP/grow.kxp")"
	for r in $(seq "$EXPORT_ROUNDS"); do
		for mode in stream memory; do
			time_report growannopen "$n" "$r" "$mode" "$TMP/grow.kxp" || continue
			[ "$mode" = stream ] && ! grep -q "was streamed" "$TMP/grow.err" &&
				echo "bench: the capture with jobs never done was not streamed: $(head -c 300 "$TMP/grow.err")" >&2
			time_convert growannopen "$n" "$r" "$mode" "$TMP/grow.kxp" --xplane "$TMP/growx" ||
				continue
			[ "$mode" = stream ] && grep -q "read into memory whole" "$TMP/grow.err" &&
				echo "bench: the capture with jobs never done was not converted in windows: $(head -c 300 "$TMP/grow.err")" >&2
			rm -rf "$TMP/growx"
		done
	done
	put growannopen "$n" 1 events \
		"$(jget "$TMP/grow.stream.json" 'd["Capture"]["received"] + d["Annotations"]["events"]')"
	rm -f "$TMP/grow.kxp"
else
	echo "bench: kxp_gen annjobs failed: $(head -c 300 "$TMP/grow.err")" >&2
fi
# A live capture with device timelines (the stand-in accelerator's shortest
# jobs): report pairs KVM jobs and loop block requests as they pass
# (analysis/jobflow.h), keeping none.
if [ "$ACCEL" = kvm ]; then
	JOBCAP=("$KVMW" -t 2 -j $((KVMRUN_JOBS * 5)) -l 0)
else
	JOBCAP=("$LOOPW" -D "$LOOPDEV" -t 2 -j $((LOOPRUN_JOBS * 5)) -k zero -z 4)
fi
if "$KX" record "${KXDEV[@]}" -o "$TMP/grow.kxp" -- "${JOBCAP[@]}" >/dev/null 2>"$TMP/grow.err"; then
	put growjobs 1 1 kxp_bytes "$(stat -c %s "$TMP/grow.kxp")"
	for r in $(seq "$EXPORT_ROUNDS"); do
		for mode in stream memory; do
			time_report growjobs 1 "$r" "$mode" "$TMP/grow.kxp" || continue
			[ "$mode" = stream ] && ! grep -q "was streamed" "$TMP/grow.err" &&
				echo "bench: the job capture was not streamed: $(head -c 300 "$TMP/grow.err")" >&2
			# Its events fit one trace: convert reads it whole either way
			# (one with device jobs that does not is read a window at a
			# time: the annotated GPU-job capture above).
			time_convert growjobs 1 "$r" "$mode" "$TMP/grow.kxp"
		done
	done
	put growjobs 1 1 events "$(jget "$TMP/grow.stream.json" 'd["Capture"]["received"]')"
	put growjobs 1 1 jobs \
		"$(jget "$TMP/grow.stream.json" 'sum(v["jobs"] for v in d["Jobs"]["devices"].values())')"
	rm -f "$TMP/grow.kxp"
else
	echo "bench: recording the job capture failed: $(head -c 300 "$TMP/grow.err")" >&2
fi
echo " report done" >&2

# ---- 5. annotations: what a call of libkxprof_annotate.so costs ----
echo "bench: 5. annotations" >&2
"$B/bench/bench_annotate" -r "$ROUNDS" >>"$RAW" 2>"$TMP/ba.err" ||
	echo "bench: bench_annotate failed: $(head -c 300 "$TMP/ba.err")" >&2

# ---- 5b. the DRM usage sampler: CPU per process per pass ----
echo "bench: 5b. DRM usage sampler" >&2
# (from the repository root: it reads tests/fixtures/fdinfo)
(cd "$ROOT" && "$B/bench/bench_drmusage" -r "$ROUNDS") >>"$RAW" 2>"$TMP/bd.err" ||
	echo "bench: bench_drmusage failed: $(head -c 300 "$TMP/bd.err")" >&2

# ---- 7. CPU sampling against perf record (tests/bench/sampling.sh) ----
echo "bench: 7. CPU sampling" >&2
BENCH_ROUNDS=$ROUNDS BENCH_QUICK=$QUICK BUILD_DIR=$B bash "$HERE/sampling.sh" >"$TMP/sampling.md" ||
	echo "bench: the sampling section failed" >&2

ELAPSED=$(($(date +%s) - START))
echo "bench: measured in ${ELAPSED} s" >&2

# ---- report ----
{
	echo "ROUNDS=$ROUNDS"
	echo "ACCEL=$ACCEL"
	echo "KXDEV=${KXDEV[*]}"
	echo "FLOOD=${FLOODCMD[*]#"$ROOT"/} -w $FLOOD_S"
	if [ "$ACCEL" = kvm ]; then
		echo "KVMRUN=${KVMW#"$ROOT"/} -t 1 -j $KVMRUN_JOBS -l 0"
		echo "JOBS=${KVMW#"$ROOT"/} $JOB_ARGS"
	else
		echo "KVMRUN=${LOOPW#"$ROOT"/} -D $LOOPDEV -t 1 -j $LOOPRUN_JOBS -k zero -z 4"
		echo "JOBS=${LOOPW#"$ROOT"/} -D $LOOPDEV $LOOPJOB_ARGS"
	fi
	echo "HOST=${SYSL#"$ROOT"/} -w $HOST_S"
	echo "MECHS_OK=$MECHS_OK"
	echo "MECH_TARGETED=$MECH_TARGETED"
	echo "MECH_HOST=$MECH_HOST"
	echo "TPUT_S=$TPUT_S"
	echo "EXPORT=${KX#"$ROOT"/} record ${KXDEV[*]} --ringbuf-mb 64 -o big.kxp -- ${FLOODCMD[*]#"$ROOT"/} -t 2 -n $EXPORT_PER_THREAD"
	echo "NSYN=$NSYN"
	echo "ELAPSED=$ELAPSED"
	echo "HAVE_AGG=$HAVE_AGG"
	echo "BASELINE=$BASE"
	echo "FOREIGN_START=$FOREIGN_START"
	echo "BUSY_RUNS=$BUSY_RUNS"
	echo "EXPORT_ROUNDS=$EXPORT_ROUNDS"
	echo "GROW=${B#"$ROOT"/}/bench/bench_kxpgen -n N -o grow.kxp; ${KX#"$ROOT"/} report [--in-memory] --json grow.kxp"
	echo "GROWJOBS=${KX#"$ROOT"/} record ${KXDEV[*]} -o jobs.kxp -- ${JOBCAP[*]#"$ROOT"/}"
	echo "GROWANNJOBS=${B#"$ROOT"/}/tests/kxp_gen annjobs-done aj.kxp $GROW_ANNJOBS; ${KX#"$ROOT"/} report [--in-memory] --json aj.kxp; ${KX#"$ROOT"/} convert [--in-memory] --split-events $GROW_ANNJOBS_SPLIT aj.kxp --chrome aj.json.gz"
	echo "GROWANNOPEN=${B#"$ROOT"/}/tests/kxp_gen annjobs ao.kxp $GROW_ANNJOBS; ${KX#"$ROOT"/} report [--in-memory] --json ao.kxp; ${KX#"$ROOT"/} convert [--in-memory] ao.kxp --chrome ao.json.gz --xplane aox"
	echo "FOREIGN_END=$(foreign)"
	echo "LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$TMP/config"
python3 "$HERE/report.py" "$RAW" "$TMP/config" "$ROOT" >"$TMP/tables.md" || die "report failed"
[ -s "$TMP/sampling.md" ] && { echo; cat "$TMP/sampling.md"; } >>"$TMP/tables.md"
cat "$TMP/tables.md"
if [ "$QUICK" != 1 ]; then
	python3 "$HERE/report.py" --machine "$ROOT" >"$TMP/machine.md"
	{
		echo "# kxprof benchmarks"
		echo
		echo "Generated by \`make bench\` (tests/bench/run.sh); do not edit by hand:"
		echo "the next run rewrites this file. Before/after notes: tests/bench/history.md,"
		echo "appended below."
		echo
		cat "$TMP/machine.md"
		cat "$TMP/tables.md"
		echo
		cat "$HERE/history.md" 2>/dev/null
	} >"$HERE/RESULTS.md"
	echo "bench: wrote tests/bench/RESULTS.md" >&2
fi
