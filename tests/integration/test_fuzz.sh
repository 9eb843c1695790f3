#!/usr/bin/env bash
# libFuzzer runs, for a fixed time each, of what a root daemon parses from
# ordinary users (make fuzz builds tests/fuzz/fuzz_*.c with the library under
# ASan/UBSan into build-fuzz/):
#  - fuzz_wire: the daemon protocol as both ends read it (frames, the capture
#    request, the replies) and the record stream it carries, from the seeds
#    in tests/fuzz/corpus/wire;
#  - fuzz_elf: the symbolizer's ELF reader fed mutated copies of real shared
#    objects (header, program and section headers, symbol and string tables
#    damaged by libFuzzer's mutations), looking up addresses across them.
# Fails on any crash, leak or sanitizer report. The mutation seed is fixed
# (FUZZ_SEED), so a run is repeatable; FUZZ_SECONDS sets the time per target.
# Run in the normal pass only: the targets carry their own sanitizers.
# kxtest: normal (the fuzz targets are built with their own sanitizers, from the normal tree)
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SECS=${FUZZ_SECONDS:-25}
SEED=${FUZZ_SEED:-1}
if nm -D "$KXPROF" 2>/dev/null | grep -q __asan_init; then
	skip fuzz "run in the normal pass (the fuzz targets are built with their own sanitizers)"
	exit 0
fi
CLANG=${CLANG:-clang}
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }\n' >"$TMP/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$TMP/probe.c" -o "$TMP/probe" 2>"$TMP/probe.err"; then
	skip fuzz "$CLANG cannot link libFuzzer (install libclang-rt-$("$CLANG" -dumpversion | cut -d. -f1)-dev): $(tail -1 "$TMP/probe.err")"
	exit 0
fi
if ! make -s -j2 -C "$ROOT" fuzz >"$TMP/build.log" 2>&1; then
	fail fuzz_build "make fuzz failed: $(tail -5 "$TMP/build.log")"
	exit 0
fi
FZ=$ROOT/build-fuzz/fuzz

# run_fuzz NAME SEED_DIR...: NAME for SECS seconds from the seeds; PASS when
# it ends without a finding.
run_fuzz() {
	local name=$1 rc
	shift
	mkdir -p "$TMP/$name.corpus" "$TMP/$name.art"
	UBSAN_OPTIONS=print_stacktrace=1 "$FZ/$name" -max_total_time="$SECS" -seed="$SEED" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$TMP/$name.art/" "$TMP/$name.corpus" "$@" \
		>"$TMP/$name.log" 2>&1
	rc=$?
	echo "# $name: $(grep -E '^stat::number_of_executed_units' "$TMP/$name.log" | awk '{print $2}') inputs in ${SECS} s, $(ls "$TMP/$name.corpus" | wc -l) in its corpus" >&3
	if [ $rc -eq 0 ] && ! grep -qE '^(==[0-9]+==ERROR|SUMMARY: )|runtime error' "$TMP/$name.log"; then
		pass "$name"
	else
		fail "$name" "exit $rc; finding in $(ls "$TMP/$name.art" | head -1): $(grep -m3 -E 'ERROR|runtime error|SUMMARY' "$TMP/$name.log" | tr '\n' ' ')"
		# Keep the finding: the temporary directory goes at exit.
		mkdir -p "$ROOT/build-fuzz/findings" && cp -r "$TMP/$name.art/." "$TMP/$name.log" "$ROOT/build-fuzz/findings/" 2>/dev/null
	fi
}

run_fuzz fuzz_wire "$ROOT/tests/fuzz/corpus/wire"
# Real shared objects as the ELF seeds: the annotation library (symbols,
# USDT notes) and the C library's smallest neighbour present.
mkdir -p "$TMP/elf.seeds"
cp "$BUILD_DIR/libkxprof_annotate.so" "$TMP/elf.seeds/" 2>/dev/null
for f in /lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/libpthread.so.0 \
	/lib/aarch64-linux-gnu/libdl.so.2; do
	[ -f "$f" ] && cp "$f" "$TMP/elf.seeds/"
done
if [ -z "$(ls "$TMP/elf.seeds")" ]; then
	skip fuzz_elf "no shared object to start from"
else
	run_fuzz fuzz_elf "$TMP/elf.seeds"
fi
