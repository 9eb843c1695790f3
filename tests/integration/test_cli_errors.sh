#!/usr/bin/env bash
# Every failure says what failed in one line and exits non-zero; no libbpf
# dump without -v; a signal stops a capture cleanly with a valid file.
. "$(dirname "$0")/lib.sh"

# expect NAME EXPECTED-RC PATTERN -- CMD...: exit code and a one-line message
expect() {
	local name=$1 want=$2 pat=$3
	shift 4
	"$@" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	if [ "$want" = nonzero ] && [ $rc -ne 0 ] || [ "$rc" = "$want" ]; then
		if grep -q -- "$pat" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -le 2 ] &&
			! grep -q '^libbpf:' "$TMP/err"; then
			pass "$name"
		else
			fail "$name" "stderr was: $(head -c 600 "$TMP/err")"
		fi
	else
		fail "$name" "exit $rc (wanted $want); stderr: $(head -c 300 "$TMP/err")"
	fi
}

expect unknown_pid nonzero 'no such process: 999999' -- "$KXPROF" record -p 999999 -o "$TMP/x.kxp" -d 1
expect no_such_device 2 'no such device: /dev/nonexistent' -- "$KXPROF" record --device /dev/nonexistent -- true
expect not_a_device 2 'not a device' -- "$KXPROF" record --device /etc/passwd -- true
expect command_not_found 127 "cannot run 'no-such-command-kx'" -- "$KXPROF" record -o "$TMP/x.kxp" -- no-such-command-kx
check command_not_found_leaves_no_file test ! -e "$TMP/x.kxp"
expect nothing_to_trace 2 'nothing to trace' -- "$KXPROF" record
expect bad_attach nonzero "unknown attach mechanism" -- "$KXPROF" record --attach bogus -- true
expect report_missing_file 1 'no-such.kxp' -- "$KXPROF" report "$TMP/no-such.kxp"
head -c 4096 /dev/urandom >"$TMP/garbage.kxp"
expect report_garbage 1 'not a kxprof record file' -- "$KXPROF" report "$TMP/garbage.kxp"
expect unknown_command 2 "unknown command 'frobnicate'" -- "$KXPROF" frobnicate
expect bad_sort 2 "bad --sort-by" -- "$KXPROF" report --sort-by median "$TMP/garbage.kxp"

# Unprivileged: one clear line about privileges, no libbpf dump.
if command -v setpriv >/dev/null; then
	cp "$KXPROF" "$TMP/kxprof-unpriv" && chmod 755 "$TMP" "$TMP/kxprof-unpriv"
	expect unprivileged 1 'CAP_BPF' -- setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$TMP/kxprof-unpriv" record -o /tmp/kx-unpriv-$$.kxp -- true
	rm -f /tmp/kx-unpriv-$$.kxp
else
	skip unprivileged "setpriv not installed"
fi

# SIGINT and SIGTERM stop cleanly and leave a complete, readable file.
for sig in INT TERM; do
	"$KXPROF" record -a -o "$TMP/sig.kxp" 2>"$TMP/sig.err" &
	k=$!
	sleep 1.5
	"$WL/kvm_workload" -t 1 -j 10 >/dev/null
	sleep 0.3
	kill -"$sig" $k
	wait $k
	rc=$?
	"$KXPROF" report --json "$TMP/sig.kxp" >"$TMP/sig.json" 2>"$TMP/sig.rep.err"
	if [ $rc -eq 0 ] && [ "$(jget "$TMP/sig.json" 'd["Capture"]["truncated"]')" = False ] &&
		[ "$(jget "$TMP/sig.json" 'd["Time"]["ioctl/kvm"]["KVM_RUN"]["Total Count"]')" -ge 10 ]; then
		pass "sig${sig}_clean_stop"
	else
		fail "sig${sig}_clean_stop" "rc=$rc $(cat "$TMP/sig.err" "$TMP/sig.rep.err")"
	fi
done

# -d stops on time
start=$(date +%s%N)
"$KXPROF" record -a -d 1 -o "$TMP/d.kxp" 2>/dev/null
el=$(( ($(date +%s%N) - start) / 1000000 ))
check duration_stops_on_time test "$el" -lt 4000

# a record file cut short (as by a crash) is still reported, with a warning
"$KXPROF" record -o "$TMP/full.kxp" -- "$WL/kvm_workload" -t 1 -j 10 >/dev/null 2>&1
sz=$(stat -c %s "$TMP/full.kxp")
head -c $((sz - 10)) "$TMP/full.kxp" >"$TMP/cut.kxp"
"$KXPROF" report "$TMP/cut.kxp" >"$TMP/cut.out" 2>"$TMP/cut.err"
check truncated_file_reported grep -q 'incomplete' "$TMP/cut.err"
