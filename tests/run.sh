#!/usr/bin/env bash
# Runs the tests. Builds the normal and the sanitizer (ASan/UBSan) trees, then
# runs, several at a time (-j N; the number of CPUs by default), in turn:
#  1. what loads no BPF program: the format and layering checks, the unit
#     tests (tests/unit) in both builds, and the analysis and export ones
#     under valgrind's memcheck;
#  2. the tests marked alone (below), one after the other;
#  3. the kernel tests (tests/kernel: they load BPF programs, as root) and the
#     integration scripts (tests/integration: root, BPF, real drivers): once,
#     against the sanitizer build (which checks what the normal build does,
#     and memory errors too), unless their header says otherwise.
# Usage: tests/run.sh [--check] [-j N] [PATTERN]
#   --check  only what needs neither root nor BPF (`make check`): no kernel
#            tests, and only the integration scripts marked "check".
#   PATTERN  an extended regular expression: only the tests whose names match
#            run (names as printed: unit/build/test_hashmap, memcheck/test_wread,
#            kernel/build-san/test_attach, integration/build-san/test_daemon,
#            format, layering). The builds always run.
# An integration script's header line "# kxtest: WORD... (why)" (a kernel
# test's source: "/* kxtest: WORD... (why) */") says how it runs:
#   alone   with no other test beside it (what a host-wide capture beside it
#           would see or disturb; counts of CPU time)
#   timing  checks how long things take: against the normal build, alone
#   normal  against the normal build only (the line says why)
#   both    against both builds (checks that mean something in one build only)
#   check   needs neither root nor BPF: part of `make check`
# Each test's output goes to build/test-logs/, its seconds are printed as it
# ends (with the tail of its output when it failed), the ten slowest at the
# end. The last line is the total: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG=$ROOT/build/test-logs
mkdir -p "$LOG"

CHECK_ONLY=0 JOBS=$(nproc 2>/dev/null || echo 2) PATTERN=
while [ $# -gt 0 ]; do
	case "$1" in
	--check) CHECK_ONLY=1 ;;
	-j) JOBS=${2:?-j needs a number}; shift ;;
	-j*) JOBS=${1#-j} ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "tests/run.sh: unknown option $1 (see tests/run.sh --help)" >&2; exit 2 ;;
	*) PATTERN=$1 ;;
	esac
	shift
done
case "$JOBS" in '' | *[!0-9]* | 0) echo "tests/run.sh: -j wants a positive number, not '$JOBS'" >&2; exit 2 ;; esac

pass=0 fail=0 skip=0
# A FAIL counts wherever it starts: after output that had no newline too.
FAIL_RE='(^|[^[:alnum:]_])FAIL '
count() { # file with PASS/FAIL/SKIP lines
	local p f s
	p=$(grep -c '^PASS ' "$1" || true)
	f=$(grep -Ec "$FAIL_RE" "$1" || true)
	s=$(grep -c '^SKIP ' "$1" || true)
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	grep -E "$FAIL_RE|^SKIP " "$1" || true
}

# A unit binary ends with "CASES n": n must be its source's RUN() count (a
# Python test's: its test_ functions). Prints a FAIL line and returns 1 otherwise.
check_cases() { # log, source without extension, name
	local want got
	if [ -f "$2.py" ]; then
		want=$(grep -c '^def test_' "$2.py")
	else
		want=$(grep -c '^[[:space:]]*RUN(' "$2.c")
	fi
	got=$(sed -n 's/^CASES \([0-9]*\)$/\1/p' "$1" | tail -n 1)
	if [ -z "$got" ]; then
		echo "FAIL $3: stopped before its last case (no CASES line; $want cases expected)"
	elif [ "$got" -ne "$want" ]; then
		echo "FAIL $3: ran $got cases, its source has $want"
	else
		return 0
	fi
	return 1
}

build() {
	echo "== build $*"
	if ! make -s -j"$JOBS" "$@" all >"$LOG/build$*.log" 2>&1; then
		cat "$LOG/build$*.log"
		echo "FAIL build $*: make failed" | tee -a "$LOG/summary"
		fail=$((fail + 1))
		return 1
	fi
	echo "PASS build $*"
	pass=$((pass + 1))
}

# ---- the jobs: one per test, each with its own log ----
# Each job's command runs with its output in its log; it prints PASS/FAIL/SKIP
# lines there. J_CASES: the source (without extension) whose case count the
# log's CASES line must equal, or empty. J_PHASE: 1, what loads no BPF
# program (valgrind runs there: the uprobe a capture puts on the dynamic
# loader, in every process, stops a program under valgrind with SIGTRAP);
# 2, the tests that run alone, one after the other; 3, the others.
J_NAME=() J_CMD=() J_LOG=() J_PHASE=() J_CASES=()
add_job() { # name phase cases-source command...
	local name=$1 phase=$2 cases=$3
	shift 3
	[ -n "$PATTERN" ] && ! grep -Eq -- "$PATTERN" <<<"$name" && return 0
	J_NAME+=("$name") J_PHASE+=("$phase") J_CASES+=("$cases")
	J_LOG+=("$LOG/$(tr / _ <<<"$name").log")
	J_CMD+=("$(printf '%q ' "$@")")
}

# kxtest_words FILE: the words of its "kxtest:" header lines, up to a "(why)".
kxtest_words() {
	sed -n -e 's/^# kxtest: //p' -e 's|^/\* kxtest: \(.*\) \*/$|\1|p' "$1" | sed 's/(.*//' | tr '\n' ' '
}
has_word() { [[ " $1 " == *" $2 "* ]]; }
# plan WORDS: sets BUILDS (the builds it runs against) and PHASE for a test
# that loads BPF programs, from its kxtest words.
plan() {
	PHASE=3 BUILDS=build-san
	has_word "$1" alone && PHASE=2
	if has_word "$1" timing; then
		BUILDS=build PHASE=2
	elif has_word "$1" normal; then
		BUILDS=build
	elif has_word "$1" both; then
		BUILDS="build build-san"
	fi
}

job_format() {
	if make -s format-check >"$LOG/format-check.out" 2>&1; then
		echo "PASS format (clang-format)"
	else
		echo "FAIL format: files differ from .clang-format (run make format):"
		grep -o '^[^:]*:' "$LOG/format-check.out" | sort -u | head -20
	fi
}
# Layering: no include cycle, no layer reaching above itself.
job_layering() {
	local out
	out=$(python3 scripts/check-layering.py 2>&1)
	echo "$out"
	grep -q '^PASS layering_cycles' <<<"$out" || echo "FAIL layering: the check did not run"
}
# Uninitialised reads, which the sanitizers do not see: valgrind's memcheck.
job_memcheck() { # binary
	if timeout 600 valgrind -q --error-exitcode=9 "$1"; then
		echo "PASS memcheck/$(basename "$1")"
	else
		echo "FAIL memcheck/$(basename "$1"): valgrind found errors (see the log)"
	fi
}

# A script's background jobs ignore SIGINT and SIGQUIT: the tests get the
# dispositions a foreground command would.
DEFSIG=(env --default-signal=SIGINT,SIGQUIT)

add_static_jobs() {
	add_job format 1 "" job_format
	add_job layering 1 "" job_layering
	# The layering check's own tests, on copies of the tree with violations injected.
	add_job unit/check_layering 1 tests/unit/test_check_layering "${DEFSIG[@]}" python3 tests/unit/test_check_layering.py
}

add_unit_jobs() { # build dir
	local t base
	for t in "$1"/tests/test_*; do
		[ -x "$t" ] || continue
		base=$(basename "$t")
		if [ -f "tests/unit/$base.c" ] || [ -f "tests/unit/$base.py" ]; then
			add_job "unit/$1/$base" 1 "tests/unit/$base" "${DEFSIG[@]}" timeout 300 "$t"
		fi
	done
}

# The kernel tests: like the integration scripts, once, against the
# sanitizer build unless their kxtest words say otherwise.
add_kernel_jobs() {
	local src base b
	for src in tests/kernel/test_*.c; do
		base=$(basename "$src" .c)
		plan "$(kxtest_words "$src")"
		for b in $BUILDS; do
			[ -x "$b/tests/$base" ] || continue
			add_job "kernel/$b/$base" "$PHASE" "${src%.c}" "${DEFSIG[@]}" timeout 300 "$b/tests/$base"
		done
	done
}

add_memcheck_jobs() {
	local t
	for t in test_wread test_capread test_xspace test_chrome test_annotations test_windows \
		test_timeline test_tracewindows; do
		add_job "memcheck/$t" 1 "" job_memcheck "build/tests/$t"
	done
}

add_integration_jobs() {
	local t words name b
	for t in tests/integration/test_*.sh; do
		words=$(kxtest_words "$t")
		[ $CHECK_ONLY = 1 ] && ! has_word "$words" check && continue
		plan "$words"
		for b in $BUILDS; do
			name="integration/$b/$(basename "$t" .sh)"
			[ -x "$b/kxprof" ] || continue
			add_job "$name" "$PHASE" "" "${DEFSIG[@]}" KXPROF="$ROOT/$b/kxprof" BUILD_DIR="$ROOT/$b" \
				SAN_PASS="$([ "$b" = build-san ] && echo 1)" timeout 900 bash "$t"
		done
	done
}

# ---- running them ----
declare -A LAST_MS=()
TIMES=$LOG/times.tsv
# The previous run's times order the queue: the longest first, so that the
# last to end is a short one. Before a first run, tests/durations.tsv's.
for f in tests/durations.tsv "$TIMES"; do
	[ -f "$f" ] || continue
	while read -r ms name; do
		[[ $ms == [0-9]* ]] && LAST_MS[$name]=$ms
	done <"$f"
done
STATE=$(mktemp -d "${TMPDIR:-/tmp}/kxprof-run.XXXXXX")
# (in this shell only: a child forked for `cmd &` and signalled before its
# exec would run it too; see tests/integration/lib.sh's at_exit)
trap 'if [ "$BASHPID" = "$$" ]; then rm -rf "$STATE"; fi' EXIT
declare -A PID_JOB=()
RUNNING=0
declare -A NOW_MS=()

launch() { # job index
	local i=$1
	(
		start=$(date +%s%N)
		eval "${J_CMD[$i]}" >"${J_LOG[$i]}" 2>&1 </dev/null
		echo "$? $((($(date +%s%N) - start) / 1000000))" >"$STATE/$i"
	) &
	PID_JOB[$!]=$i
	RUNNING=$((RUNNING + 1))
}

finish() { # job index
	local i=$1 rc ms name=${J_NAME[$1]} log=${J_LOG[$1]} f0=$fail
	read -r rc ms <"$STATE/$i"
	NOW_MS[$name]=$ms
	printf '== %s (%d.%d s)\n' "$name" $((ms / 1000)) $((ms % 1000 / 100))
	count "$log"
	if [ -n "${J_CASES[$i]}" ] && ! check_cases "$log" "${J_CASES[$i]}" "$name"; then
		fail=$((fail + 1))
	fi
	if [ "$rc" -ne 0 ] && ! grep -Eq "$FAIL_RE" "$log"; then
		echo "FAIL $name: exited $rc$([ "$rc" -eq 124 ] && echo ' (timed out)')"
		fail=$((fail + 1))
	fi
	if [ $fail -gt $f0 ]; then
		echo "-- the last 30 lines of $log:"
		tail -n 30 "$log"
	fi
}

reap() { # waits for one running job to end
	local pid
	wait -n -p pid
	[ -n "${pid:-}" ] && [ -n "${PID_JOB[$pid]:-}" ] || return 0
	RUNNING=$((RUNNING - 1))
	finish "${PID_JOB[$pid]}"
	unset "PID_JOB[$pid]"
}

# Phase by phase (each waits for the one before to end), the longest first.
run_jobs() {
	local order p i phase=0 limit
	order=$(for i in "${!J_NAME[@]}"; do
		echo "${J_PHASE[$i]} ${LAST_MS[${J_NAME[$i]}]:-600000} $i"
	done | sort -k1,1n -k2,2nr -k3,3n | awk '{print $1, $3}')
	while read -r p i; do
		[ -n "$p" ] || continue
		if [ "$p" != "$phase" ]; then
			while [ $RUNNING -gt 0 ]; do reap; done
			phase=$p
		fi
		limit=$JOBS
		[ "$p" = 2 ] && limit=1
		while [ $RUNNING -ge "$limit" ]; do reap; done
		launch "$i"
	done <<<"$order"
	while [ $RUNNING -gt 0 ]; do reap; done
}

slowest() {
	local name
	for name in "${!LAST_MS[@]}"; do [ -n "${NOW_MS[$name]:-}" ] || echo "${LAST_MS[$name]} $name"; done >"$TIMES.new"
	for name in "${!NOW_MS[@]}"; do echo "${NOW_MS[$name]} $name"; done >>"$TIMES.new"
	sort -rn "$TIMES.new" >"$TIMES" && rm -f "$TIMES.new"
	[ ${#NOW_MS[@]} -gt 0 ] || return 0
	echo "== slowest tests (seconds):"
	for name in "${!NOW_MS[@]}"; do echo "${NOW_MS[$name]} $name"; done | sort -rn | head -n 10 |
		awk '{printf "%8.1f  %s\n", $1 / 1000, $2}'
}

T0=$(date +%s)
scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
add_static_jobs
if build; then
	add_unit_jobs build
	add_memcheck_jobs
fi
build SAN=1 && add_unit_jobs build-san
[ $CHECK_ONLY = 1 ] || add_kernel_jobs
if [ "$(id -u)" -eq 0 ] || [ $CHECK_ONLY = 1 ]; then
	add_integration_jobs
else
	echo "SKIP integration: not root (the kernel and integration tests load BPF programs)"
	skip=$((skip + 1))
fi
if [ -n "$PATTERN" ] && [ ${#J_NAME[@]} -eq 0 ]; then
	echo "FAIL pattern: no test name matches '$PATTERN'"
	fail=$((fail + 1))
fi
echo "== ${#J_NAME[@]} tests, $JOBS at a time"
run_jobs
slowest
echo "== $(($(date +%s) - T0)) s in all"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
