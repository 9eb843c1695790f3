#!/usr/bin/env bash
# kxprof help CMD is CMD --help; -v/--verbose is taken before or after the
# subcommand (but never from a traced command's arguments); every message of
# a subcommand starts with "kxprof CMD: ".
. "$(dirname "$0")/lib.sh"

FIX=$(cd "$(dirname "$0")/../fixtures" && pwd)
CMDS="record report convert list replay top serve"

# run NAME WANT-RC OUT ERR -- CMD...: runs CMD, fails NAME on another exit status.
run() {
	local name=$1 want=$2 out=$3 err=$4 rc
	shift 5
	"$@" >"$out" 2>"$err"
	rc=$?
	[ "$rc" -eq "$want" ] && return 0
	fail "$name" "exit $rc (wanted $want): $* ; stderr: $(head -c 300 "$err" | tr "\n" " ")"
	return 1
}

# help CMD prints exactly what CMD --help prints, and exits 0 like it.
for c in $CMDS; do
	run "help_$c" 0 "$TMP/help.out" "$TMP/help.err" -- "$KXPROF" help "$c" &&
		run "help_$c" 0 "$TMP/opt.out" "$TMP/opt.err" -- "$KXPROF" "$c" --help &&
		if [ -s "$TMP/help.out" ] && cmp -s "$TMP/help.out" "$TMP/opt.out"; then
			pass "help_$c"
		else
			fail "help_$c" "kxprof help $c differs from kxprof $c --help"
		fi
done
run help_alone 0 "$TMP/h.out" "$TMP/h.err" -- "$KXPROF" help &&
	run help_alone 0 "$TMP/h2.out" "$TMP/h2.err" -- "$KXPROF" --help &&
	check help_alone cmp -s "$TMP/h.out" "$TMP/h2.out"
check usage_names_help grep -q "kxprof help COMMAND" "$TMP/h.out"
run help_unknown 2 "$TMP/u.out" "$TMP/u.err" -- "$KXPROF" help frobnicate &&
	check help_unknown grep -q "^kxprof help: unknown command 'frobnicate'" "$TMP/u.err"

# -v after the subcommand, anywhere among its options: same report.
run verbose_plain 0 "$TMP/plain.txt" "$TMP/plain.err" -- "$KXPROF" report "$FIX/kvm.jsonl"
for form in first last long; do
	case $form in
	first) args=(-v "$FIX/kvm.jsonl") ;;
	last) args=("$FIX/kvm.jsonl" -v) ;;
	long) args=(--verbose "$FIX/kvm.jsonl") ;;
	esac
	run "verbose_after_$form" 0 "$TMP/v.txt" "$TMP/v.err" -- "$KXPROF" report "${args[@]}" &&
		check "verbose_after_$form" cmp -s "$TMP/plain.txt" "$TMP/v.txt"
done
run verbose_among_options 0 "$TMP/v.txt" "$TMP/v.err" -- "$KXPROF" report --hist -v \
	"$FIX/kvm.jsonl" && check verbose_among_options grep -q "usecs" "$TMP/v.txt"
run verbose_before 0 "$TMP/vb.txt" "$TMP/vb.err" -- "$KXPROF" -v report "$FIX/kvm.jsonl" &&
	check verbose_before cmp -s "$TMP/plain.txt" "$TMP/vb.txt"

# Every subcommand's messages carry its name: a bad option (a usage text may
# follow the message), a missing input.
for c in $CMDS; do
	run "prefix_$c" 2 "$TMP/p.out" "$TMP/p.err" -- "$KXPROF" "$c" --no-such-option || continue
	if head -n 1 "$TMP/p.err" | grep -q "^kxprof $c: .*no-such-option" &&
		! grep -Eq "^(kxprof|$c):" "$TMP/p.err"; then
		pass "prefix_$c"
	else
		fail "prefix_$c" "not every message starts 'kxprof $c: ': $(head -c 300 "$TMP/p.err" | tr "\n" " ")"
	fi
done
run prefix_report_missing 1 "$TMP/m.out" "$TMP/m.err" -- "$KXPROF" report "$TMP/none.kxp" &&
	check prefix_report_missing grep -q "^kxprof report: .*none.kxp" "$TMP/m.err"
run prefix_convert_missing 1 "$TMP/m.out" "$TMP/m.err" -- "$KXPROF" convert "$TMP/none.kxp" \
	--chrome "$TMP/x.json" &&
	check prefix_convert_missing grep -q "^kxprof convert: .*none.kxp" "$TMP/m.err"

# record: -v among its options is kxprof's; after the command it is the command's.
accel_argv 1 5
run record_verbose 0 "$TMP/r.out" "$TMP/r.err" -- "$KXPROF" record "${ACCEL_DEV[@]}" -v \
	-o "$TMP/r.kxp" -- "${ACCEL_ARGV[@]}" &&
	check record_verbose grep -q "^kxprof record: .* -> $TMP/r.kxp" "$TMP/r.err"
run record_cmd_keeps_v 0 "$TMP/c.out" "$TMP/c.err" -- "$KXPROF" record "${ACCEL_DEV[@]}" \
	-o "$TMP/c.kxp" sh -c 'echo "arg:$1"' sh -v &&
	check record_cmd_keeps_v grep -qx "arg:-v" "$TMP/c.out"
