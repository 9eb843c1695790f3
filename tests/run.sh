#!/usr/bin/env bash
# Runs every test: builds the normal and the sanitizer (ASan/UBSan) trees,
# runs the unit tests in both (and the analysis and export ones under
# valgrind), then the integration tests (root, real drivers) against the
# normal build and a sanitizer pass of the CLI.
# Each test prints PASS/FAIL/SKIP lines; the last line is the total.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG=$ROOT/build/test-logs
mkdir -p "$LOG"

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
# Python test's: its test_ functions).
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
		fail=$((fail + 1))
	elif [ "$got" -ne "$want" ]; then
		echo "FAIL $3: ran $got cases, its source has $want"
		fail=$((fail + 1))
	fi
}

build() {
	echo "== build $*"
	if ! make -s -j2 "$@" all >"$LOG/build$*.log" 2>&1; then
		cat "$LOG/build$*.log"
		echo "FAIL build $*: make failed" | tee -a "$LOG/summary"
		fail=$((fail + 1))
		return 1
	fi
	echo "PASS build $*"
	pass=$((pass + 1))
}

run_unit() { # build dir
	for t in "$1"/tests/test_*; do
		[ -x "$t" ] || continue
		local name out rc src
		name="$(basename "$1")/$(basename "$t")"
		out="$LOG/unit_$(basename "$1")_$(basename "$t").log"
		timeout 300 "$t" >"$out" 2>&1
		rc=$?
		echo "== $name"
		count "$out"
		src=tests/unit/$(basename "$t")
		[ -f "tests/kernel/$(basename "$t").c" ] && src=tests/kernel/$(basename "$t")
		check_cases "$out" "$src" "$name"
		if [ $rc -ne 0 ] && ! grep -Eq "$FAIL_RE" "$out"; then
			echo "FAIL $name: exited $rc"
			tail -20 "$out"
			fail=$((fail + 1))
		fi
	done
}

# Uninitialised reads, which the sanitizers do not see: the analysis and
# export unit tests under valgrind's memcheck.
run_memcheck() {
	local t out
	for t in test_wread test_xspace test_chrome test_annotations test_windows test_timeline; do
		out="$LOG/memcheck_$t.log"
		if timeout 600 valgrind -q --error-exitcode=9 "build/tests/$t" >"$out" 2>&1; then
			echo "PASS memcheck/$t"
			pass=$((pass + 1))
		else
			echo "FAIL memcheck/$t: valgrind found errors (see $out)"
			grep -m 8 '^==[0-9]*==' "$out"
			fail=$((fail + 1))
		fi
	done
}

run_integration() { # kxprof binary, label
	for t in tests/integration/test_*.sh; do
		local out rc name
		name="$2/$(basename "$t" .sh)"
		out="$LOG/integration_$(echo "$name" | tr / _).log"
		echo "== $name"
		KXPROF="$1" BUILD_DIR="$(dirname "$1")" timeout 900 bash "$t" >"$out" 2>&1
		rc=$?
		count "$out"
		if [ $rc -ne 0 ] && ! grep -Eq "$FAIL_RE" "$out"; then
			echo "FAIL $name: exited $rc"
			tail -30 "$out"
			fail=$((fail + 1))
		fi
	done
}

scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
if make -s format-check >"$LOG/format.log" 2>&1; then
	echo "PASS format (clang-format)"
	pass=$((pass + 1))
else
	echo "FAIL format: files differ from .clang-format (run make format):"
	grep -o '^[^:]*:' "$LOG/format.log" | sort -u | head -20
	fail=$((fail + 1))
fi
# Layering: no include cycle, no layer reaching above itself (and the
# check's own tests, on copies of the tree with violations injected).
python3 scripts/check-layering.py >"$LOG/layering.log" 2>&1
count "$LOG/layering.log"
grep -q '^PASS layering_cycles' "$LOG/layering.log" || { echo "FAIL layering: the check did not run"; fail=$((fail + 1)); }
python3 tests/unit/test_check_layering.py >"$LOG/unit_check_layering.log" 2>&1
count "$LOG/unit_check_layering.log"
check_cases "$LOG/unit_check_layering.log" tests/unit/test_check_layering check_layering
build && run_unit build && run_memcheck
build SAN=1 && run_unit build-san
if [ "$(id -u)" -eq 0 ]; then
	[ -x build/kxprof ] && run_integration "$ROOT/build/kxprof" build
	[ -x build-san/kxprof ] && SAN_PASS=1 run_integration "$ROOT/build-san/kxprof" build-san
else
	echo "SKIP integration: not root (the integration tests load BPF programs)"
	skip=$((skip + 1))
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
