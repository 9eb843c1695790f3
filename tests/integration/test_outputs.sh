#!/usr/bin/env bash
# record's output file: written to a temporary file and renamed at the end,
# the previous file kept as NAME.old, and nothing the user owns deleted or
# truncated when a run fails or the output is refused.
. "$(dirname "$0")/lib.sh"
need_kvm outputs || exit 0

KVM=("$WL/kvm_workload" -t 1 -j 5 -l 100)

# A device as the output: refused, and the device is still there.
"$KXPROF" record -o /dev/null -- "${KVM[@]}" >/dev/null 2>"$TMP/null.err"
check devnull_refused_exit test $? -eq 1
check devnull_refused_says grep -q 'not a regular file' "$TMP/null.err"
check devnull_kept test -c /dev/null

# The traced program as the output: refused, and the program is kept.
cp "$WL/kvm_workload" "$TMP/prog"
sum=$(md5sum <"$TMP/prog")
"$KXPROF" record -o "$TMP/prog" -- "$TMP/prog" -t 1 -j 5 -l 100 >/dev/null 2>"$TMP/prog.err"
check prog_refused_exit test $? -eq 1
check prog_kept test "$(md5sum <"$TMP/prog")" = "$sum"

# An empty path: refused.
"$KXPROF" record -o "" -- "${KVM[@]}" >/dev/null 2>"$TMP/empty.err"
check empty_path_refused test $? -eq 1

# A good capture, then a run whose command cannot run: the capture survives untouched.
"$KXPROF" record -o "$TMP/run.kxp" -- "${KVM[@]}" >/dev/null 2>"$TMP/run1.err"
check first_run_ok test $? -eq 0
sum=$(md5sum <"$TMP/run.kxp")
"$KXPROF" record -o "$TMP/run.kxp" -- /nonexistent/command >/dev/null 2>"$TMP/run2.err"
check failed_run_exit test $? -eq 127
check failed_run_keeps_file test "$(md5sum <"$TMP/run.kxp")" = "$sum"
check failed_run_no_old test ! -e "$TMP/run.kxp.old"
check failed_run_no_temp sh -c "! ls '$TMP' | grep -q '\.tmp$'"

# A second good capture: the first becomes run.kxp.old, both readable.
"$KXPROF" record -o "$TMP/run.kxp" -- "${KVM[@]}" >/dev/null 2>"$TMP/run3.err"
check second_run_ok test $? -eq 0
check old_is_previous test "$(md5sum <"$TMP/run.kxp.old")" = "$sum"
"$KXPROF" report "$TMP/run.kxp" >"$TMP/rep.txt" 2>&1
check new_readable test $? -eq 0
"$KXPROF" report "$TMP/run.kxp.old" >"$TMP/rep_old.txt" 2>&1
check old_readable test $? -eq 0
check no_temp_left sh -c "! ls '$TMP' | grep -q '\.tmp$'"
