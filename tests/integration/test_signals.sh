#!/usr/bin/env bash
# kxprof record and signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT stop it
# cleanly (the file has its trailer: report shows a complete capture), with
# and without a command; the command it started is ended (SIGTERM, SIGKILL
# after the grace period when it ignores SIGTERM) and is gone, not left
# running under init, also when kxprof itself is killed; SIGUSR1/SIGUSR2 do
# not stop it; -p PID alone stops when PID exits; -d ends a command with
# SIGTERM (exit 143). Traces the stand-in accelerator (lib.sh).
# kxtest: timing (the SIGKILL grace and the -p stop are bounded in time)
. "$(dirname "$0")/lib.sh"
at_exit 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"'

# gone PID: the process no longer runs (no such pid, or a zombie of its new parent).
gone() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}
# complete NAME FILE: report reads FILE as a complete capture (trailer present).
complete() {
	local name=$1 f=$2
	if ! "$KXPROF" report --json "$f" >"$TMP/rep.json" 2>"$TMP/rep.err"; then
		fail "$name" "report exited non-zero: $(head -c 300 "$TMP/rep.err")"
	elif [ "$(jget "$TMP/rep.json" 'd["Capture"]["truncated"]')" != False ]; then
		fail "$name" "capture marked truncated: $(head -c 300 "$TMP/rep.err")"
	elif grep -q incomplete "$TMP/rep.err"; then
		fail "$name" "report warns: $(head -c 300 "$TMP/rep.err")"
	else
		pass "$name"
	fi
}
# wait_child RECORDER: the pid of the command record started (up to 5 s).
wait_child() {
	local c
	for _ in $(seq 1 50); do
		c=$(pgrep -P "$1" | head -1)
		[ -n "$c" ] && { echo "$c"; return 0; }
		sleep 0.1
	done
	return 1
}
# rec_bg NAME ARGS...: record ARGS in the background (k: its pid), saying in
# $TMP/NAME.ready when it is attached; started NAME waits for that.
rec_bg() {
	local name=$1
	shift
	KXPROF_READY_FILE="$TMP/$name.ready" "$KXPROF" record "$@" &
	k=$!
}
started() {
	wait_ready "$TMP/$1.ready" "$k" || fail "$1_started" "record never said it was attached"
}

for sig in INT TERM HUP QUIT; do
	# Without a command (-a): rc 0, a complete file.
	rec_bg "a-$sig" "${ACCEL_DEV[@]}" -a -o "$TMP/a-$sig.kxp" 2>"$TMP/a.err"
	started "a-$sig"
	accel_workload 1 5 >/dev/null
	kill -"$sig" $k
	wait $k
	rc=$?
	if [ $rc -eq 0 ] && grep -q "SIG$sig: stopping" "$TMP/a.err"; then
		pass "sig${sig}_all_stops_rc0"
	else
		fail "sig${sig}_all_stops_rc0" "rc=$rc $(head -c 300 "$TMP/a.err")"
	fi
	complete "sig${sig}_all_file_complete" "$TMP/a-$sig.kxp"

	# With a command: the command gets SIGTERM (exit 143) and is gone.
	rec_bg "c-$sig" "${ACCEL_DEV[@]}" -o "$TMP/c-$sig.kxp" -- sleep 60 2>"$TMP/c.err"
	c=$(wait_child $k) || c=
	started "c-$sig"
	kill -"$sig" $k
	wait $k
	rc=$?
	if [ -n "$c" ] && [ $rc -eq 143 ] && gone "$c"; then
		pass "sig${sig}_cmd_ended"
	else
		fail "sig${sig}_cmd_ended" "rc=$rc child=${c:-none} $(head -c 300 "$TMP/c.err")"
	fi
	complete "sig${sig}_cmd_file_complete" "$TMP/c-$sig.kxp"
done

# SIGUSR1 and SIGUSR2 do not stop record; a later SIGINT does, cleanly.
rec_bg usr "${ACCEL_DEV[@]}" -a -o "$TMP/usr.kxp" 2>"$TMP/usr.err"
started usr
check ready_file_holds_pid test "$(cat "$TMP/usr.ready")" = "$k"
kill -USR1 $k
kill -USR2 $k
sleep 0.5
if kill -0 $k 2>/dev/null; then pass usr_signals_ignored; else fail usr_signals_ignored "record ended"; fi
kill -INT $k
wait $k
check usr_then_int_rc0 test $? -eq 0
complete usr_file_complete "$TMP/usr.kxp"

# The command ignores SIGTERM: SIGKILL after the grace period (exit 137), said so.
# The grace is 2 s both ways: the command dies no sooner than 1.9 s after the
# SIGTERM and no later than 3.5 s (polled, apart from the time record takes
# to finish its file), and record ends within 6 s.
rec_bg ign "${ACCEL_DEV[@]}" -o "$TMP/ign.kxp" -- sh -c 'trap "" TERM; while :; do sleep 0.1; done' \
	2>"$TMP/ign.err"
c=$(wait_child $k) || c=
started ign
start=$(date +%s%N)
kill -TERM $k
cms=
for _ in $(seq 160); do
	if [ -n "$c" ] && gone "$c"; then
		cms=$((($(date +%s%N) - start) / 1000000))
		break
	fi
	sleep 0.05
done
wait $k
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ -n "$c" ] && [ $rc -eq 137 ] && gone "$c" && [ $ms -lt 6000 ] &&
	grep -q 'killed it (SIGKILL)' "$TMP/ign.err"; then
	pass sigterm_ignored_then_sigkill
else
	fail sigterm_ignored_then_sigkill "rc=$rc ${ms}ms child=${c:-none} $(head -c 300 "$TMP/ign.err")"
fi
check sigkill_after_grace bash -c 'echo "# the command died ${1:-never} ms after SIGTERM (grace 2000 ms)"; [ -n "$1" ] && [ "$1" -ge 1900 ] && [ "$1" -lt 3500 ]' _ "$cms"
complete sigkill_file_complete "$TMP/ign.kxp"

# The command starts with no signal ignored or blocked of those record
# handles or ignores itself (INT, TERM, HUP, QUIT, USR1, USR2, PIPE), and
# nothing blocked: its own /proc/PID/status says.
"$KXPROF" record "${ACCEL_DEV[@]}" -o "$TMP/sig.kxp" -- grep -E '^Sig(Ign|Blk):' /proc/self/status \
	>"$TMP/sig.out" 2>"$TMP/sig.err"
check command_signals_default python3 - "$TMP/sig.out" <<'PY'
import sys
f = dict(l.split(":") for l in open(sys.argv[1]).read().split("\n") if ":" in l)
ign, blk = int(f["SigIgn"], 16), int(f["SigBlk"], 16)
mine = {"HUP": 1, "INT": 2, "QUIT": 3, "USR1": 10, "USR2": 12, "PIPE": 13, "TERM": 15}
bad = [n for n, s in mine.items() if ign >> (s - 1) & 1]
print("# the command's SigIgn %016x SigBlk %016x; ignored of record's own: %s" % (ign, blk, bad))
sys.exit(bool(bad) or blk != 0)
PY

# kxprof killed outright (SIGKILL): the kernel ends the command too.
rec_bg kill "${ACCEL_DEV[@]}" -o "$TMP/kill.kxp" -- sleep 60 2>/dev/null
c=$(wait_child $k) || c=
started kill
kill -KILL $k
wait $k 2>/dev/null
if [ -n "$c" ] && wait_gone "$c"; then pass recorder_killed_cmd_gone; else
	fail recorder_killed_cmd_gone "child ${c:-none} still runs"
fi

# -d with a command: SIGTERM at the deadline, exit 143, complete file.
"$KXPROF" record "${ACCEL_DEV[@]}" -d 1 -o "$TMP/d.kxp" -- sleep 60 2>"$TMP/d.err"
rc=$?
if [ $rc -eq 143 ] && grep -q 'ending the command' "$TMP/d.err"; then pass duration_ends_cmd_143; else
	fail duration_ends_cmd_143 "rc=$rc $(head -c 300 "$TMP/d.err")"
fi
complete duration_file_complete "$TMP/d.kxp"

# -p PID alone: record stops by itself when PID exits, with a message.
sleep 2.5 &
p=$!
start=$(date +%s%N)
"$KXPROF" record "${ACCEL_DEV[@]}" -p $p -o "$TMP/p.kxp" 2>"$TMP/p.err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ $rc -eq 0 ] && [ $ms -lt 8000 ] && grep -q 'every process given with -p has exited' "$TMP/p.err"; then
	pass pid_exit_stops_record
else
	fail pid_exit_stops_record "rc=$rc ${ms}ms $(head -c 300 "$TMP/p.err")"
fi
complete pid_exit_file_complete "$TMP/p.kxp"
