#!/usr/bin/env bash
# Profiling without root: `kxprof serve --socket` as root, clients as other
# users (setpriv; uid 65534 "nobody", and 65533 as a second user). The
# stand-in accelerator is kvm where /dev/kvm exists (the users' group gets a
# node of it, as a host's kvm group would), else a loop device root attached
# and gave to the users' group (nogroup).
# Checked:
#  - record as nobody goes through the daemon (and says so): exact per-ioctl
#    counts, a complete file owned by the user, received + dropped == emitted;
#  - refusals with their reason: pid 1, a root process, another user's
#    process, a kernel thread, -a; --no-daemon refuses the daemon;
#  - two users recording at once while root runs the same workload: each file
#    holds exactly its own user's ioctls;
#  - a child that execs a setuid program leaves the capture (its ioctls are
#    not recorded, its siblings' are);
#  - a stopped (slow) client: its session's drops are counted in its file,
#    received + dropped == emitted, another session meanwhile is exact; a
#    client that never reads is cut off at the idle limit;
#  - 50 clients at once, all exact; session limits per user and the time
#    limit; the socket's mode and group;
#  - clients killed at every stage over 1000 sessions, and a fuzzer's
#    malformed, truncated, oversized and out-of-order messages: afterwards
#    the daemon holds no BPF object, as many fds as before and about the same
#    memory (counted in /proc/<daemon> only), and still serves;
#  - socket activation (LISTEN_FDS, systemd-socket-activate) and the units
#    `make install` places (systemd-analyze verify);
#  - SIGTERM ends the daemon with exit 0 and removes its socket.
# kxtest: both (the daemon's memory stays flat: normal build; leaks: sanitizer build)
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3 # the system's: users other than root can run it
command -v setpriv >/dev/null || { skip daemon "setpriv not installed"; exit 0; }
[ -x "$PY" ] || { skip daemon "no $PY"; exit 0; }
command -v losetup >/dev/null || { skip daemon "losetup not installed"; exit 0; }
SAN=0
nm -D "$KXPROF" 2>/dev/null | grep -q __asan_init && SAN=1
# Killed sessions: 1000; 200 in the sanitizer pass, where LeakSanitizer checks
# the daemon's heap at its exit and each session costs several times more.
KILLED=${KILLED:-$([ $SAN -eq 1 ] && echo 200 || echo 1000)}
LOOPDEV=
DPID=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	rm -rf "$TMP"
}
at_exit cleanup

# Everything the users run lives where they can reach it.
chmod 755 "$TMP"
BIN=$TMP/bin
OUT=$TMP/out
mkdir -p "$BIN" "$OUT" "$TMP/run"
chmod 1777 "$OUT"
cp "$KXPROF" "$BIN/kxprof"
cp "$WL/loop_workload" "$BIN/"
[ -x "$WL/kvm_workload" ] && cp "$WL/kvm_workload" "$BIN/"
# annotate_workload finds the annotation library at $ORIGIN/.. (RUNPATH).
cp "$WL/annotate_workload" "$BIN/" && cp "$BUILD_DIR/libkxprof_annotate.so" "$TMP/"
cp "$HERE/daemon_client.py" "$BIN/"
chmod 755 "$BIN" "$BIN"/* "$TMP/libkxprof_annotate.so"
SOCK=$TMP/run/kxprof.sock
COUNTS="$PY $HERE/counts.py"

# A loop device for the users, whatever the accelerator: given to nogroup.
truncate -s 32M "$TMP/backing"
LOOPDEV=$(losetup -f --show "$TMP/backing") || { fail daemon_setup "losetup failed"; exit 0; }
chgrp 65534 "$LOOPDEV" && chmod g+rw "$LOOPDEV"

# The users reach kvm through their group (nogroup), as a host's kvm group
# would give it; where no node can be made for them, the loop device stands in.
if [ "$ACCEL" = kvm ] && ! user_kvm "$TMP" 65534; then
	echo "# no kvm node for the users here: the loop device stands in" >&3
	ACCEL=loop
fi
# as UID CMD...: runs CMD as UID (group nogroup), with the daemon's socket in
# KXPROF_SOCKET.
USER_GROUPS=(--clear-groups)
as() {
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid=65534 "${USER_GROUPS[@]}" --inh-caps=-all \
		env KXPROF_SOCKET="${SOCKET_OVERRIDE:-$SOCK}" "$@"
}
# The same in the background: $! is then the command's own pid.
as_bg() {
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid=65534 "${USER_GROUPS[@]}" --inh-caps=-all \
		env KXPROF_SOCKET="${SOCKET_OVERRIDE:-$SOCK}" "$@" &
}
# The users' workload on the stand-in accelerator: WL_ARGV (THREADS JOBS) and
# the record options naming its device, REC_DEV.
user_workload() {
	if [ "$ACCEL" = kvm ]; then
		WL_ARGV=("$BIN/kvm_workload" -t "$1" -j "$2" -l 0)
		REC_DEV=()
		WL_CAT=ioctl/kvm
	else
		WL_ARGV=("$BIN/loop_workload" -D "$LOOPDEV" -t "$1" -j "$2" -k zero -g 3)
		REC_DEV=(--device "$LOOPDEV")
		WL_CAT=ioctl/loop
	fi
}
wait_socket() { # path
	for _ in $(seq 1 100); do
		[ -S "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# The daemon's own fds, the BPF objects among them, its RSS (KiB).
d_fds() { ls /proc/"$DPID"/fd | wc -l; }
d_bpf() { grep -lE '^(prog_type|map_type|link_type):' /proc/"$DPID"/fdinfo/* 2>/dev/null | wc -l; }
d_rss() { awk '/^VmRSS/{print $2}' /proc/"$DPID"/status; }
# Seconds since T0 (date +%s.%N), one decimal.
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }
# Waits (up to 60 s) until the daemon holds no BPF object and FDS fds.
d_settle() {
	for _ in $(seq 1 600); do
		[ "$(d_bpf)" -eq 0 ] && [ "$(d_fds)" -le "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# (ready once listening: the socket's mode is set between its bind and listen)
KXPROF_READY_FILE=$TMP/ready1 "$KXPROF" serve --socket "$SOCK" --idle-timeout 5 \
	--session-limit 300 --max-sessions 64 --max-user-sessions 60 2>"$TMP/serve.log" &
DPID=$!
if ! wait_ready "$TMP/ready1" "$DPID"; then
	fail daemon_starts "not listening after 60 s: $(cat "$TMP/serve.log")"
	exit 0
fi
check daemon_socket_mode test "$(stat -c %a "$SOCK")" = 666
check daemon_says_where grep -q "capture sessions on $SOCK (mode 0666)" "$TMP/serve.log"

# ---- record as a user: through the daemon, exact ----
user_workload 2 10
as 65534 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/own.kxp" -- "${WL_ARGV[@]}" \
	>"$TMP/own.wl" 2>"$TMP/own.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail daemon_record "exit $rc: $(cat "$TMP/own.err")"
else
	check daemon_record_says_so grep -q "no BPF privilege here: recording through the kxprof daemon at $SOCK" "$TMP/own.err"
	"$KXPROF" report --json "$OUT/own.kxp" >"$TMP/own.json"
	check daemon_record_exact $COUNTS "$TMP/own.wl" "$TMP/own.json" "$WL_CAT"
	check daemon_record_lossless test "$(jget "$TMP/own.json" 'd["Capture"]["emitted"] == d["Capture"]["received"] + d["Capture"]["dropped"] and d["Capture"]["dropped"] == 0 and d["Capture"]["truncated"] == False')" = True
	check daemon_record_file_is_users test "$(stat -c %u "$OUT/own.kxp")" = 65534
	"$KXPROF" convert "$OUT/own.kxp" --chrome "$TMP/own.json.gz" >/dev/null 2>"$TMP/own.conv"
	check daemon_record_converts test $? -eq 0
	check daemon_session_logged grep -q "uid 65534, pid [0-9]*): ended (stopped by the client)" "$TMP/serve.log"
fi
D_FDS0=$(d_fds)

# Annotations come through too: the daemon attaches the probes of the user's
# copy of the library, which holds its constructor until they are.
if [ "$ACCEL" = kvm ]; then ADEV=(-i "$USER_KVM"); else ADEV=(-i "$LOOPDEV" -z); fi
as 65534 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/ann.kxp" -- "$BIN/annotate_workload" \
	-t 2 -n 5 -s 1000 "${ADEV[@]}" >"$TMP/ann.wl" 2>"$TMP/ann.err"
rc=$?
"$KXPROF" report --json "$OUT/ann.kxp" >"$TMP/ann.json" 2>/dev/null
check daemon_record_annotations_exit test $rc -eq 0
# Exact, unless the recording states that the daemon attached late.
check_ann daemon_record_annotations "$TMP/ann.json" test "$(jget "$TMP/ann.json" '[d["Time"]["annotation"][k]["Total Count"] for k in ("outer", "inner", "tick")]' 2>/dev/null)" = "[10, 10, 10]"
# Both counts read (a lookup that fails leaves an empty string, which must
# not pass as equal), at least one ioctl, the same number.
got=$(jget "$TMP/ann.json" 'sum(r["Total Count"] for c, rows in d["Time"].items() if c.startswith("ioctl/") for r in rows.values())' 2>"$TMP/ann.jget")
want=$(jget "$TMP/ann.wl" 'sum(d["ioctls"].values())' 2>>"$TMP/ann.jget")
check daemon_record_annotations_ioctls bash -c 'echo "# report $1 ioctls, workload $2 $3"; [[ $1 =~ ^[0-9]+$ && $1 -gt 0 && $1 = "$2" ]]' \
	_ "$got" "$want" "$(head -c 200 "$TMP/ann.jget")"

# ---- refusals, each one line with the reason ----
as_bg 65533 sleep 60
OTHER=$!
# Until it runs as sleep (setpriv and env exec'd), uid 65533.
for _ in $(seq 1 100); do [ "$(cat /proc/$OTHER/comm 2>/dev/null)" = sleep ] && break; sleep 0.05; done
refused() { # name, expected text, record args...
	local name=$1 want=$2
	shift 2
	as 65534 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/r.kxp" "$@" >/dev/null 2>"$TMP/$name.err"
	local rc=$?
	if [ $rc -eq 1 ] && grep -q "kxprof daemon at $SOCK: .*$want" "$TMP/$name.err" &&
		[ "$(wc -l <"$TMP/$name.err")" -eq 1 ]; then
		pass "$name"
	else
		fail "$name" "exit $rc: $(cat "$TMP/$name.err")"
	fi
}
refused daemon_refuses_pid1 "pid 1 (init) is never traced" -p 1 -d 1
refused daemon_refuses_root_process "runs as uid 0" -p "$DPID" -d 1
refused daemon_refuses_other_user "runs as uid 65533 (effective 65533): you (uid 65534) may trace only your own processes" -p "$OTHER" -d 1
refused daemon_refuses_kernel_thread "kernel thread" -p 2 -d 1
# The user's own process running a setuid-root program (real uid the
# user's, effective and saved 0) is not the user's to trace: refused for its
# effective uid.
cp "$(command -v sleep)" "$BIN/suidsleep"
chmod 4755 "$BIN/suidsleep"
as_bg 65534 "$BIN/suidsleep" 60
SUIDP=$!
for _ in $(seq 100); do
	grep -q "^Uid:[[:space:]]*65534[[:space:]]*0[[:space:]]" "/proc/$SUIDP/status" 2>/dev/null && break
	sleep 0.05
done
refused daemon_refuses_own_setuid_root \
	"process $SUIDP (suidsleep) runs as uid 65534 (effective 0): you (uid 65534) may trace only your own processes" \
	-p "$SUIDP" -d 1
kill "$SUIDP" 2>/dev/null
refused daemon_refuses_all "-a (every process) needs root" -a -d 1
kill "$OTHER" 2>/dev/null
as 65534 "$BIN/kxprof" record --no-daemon "${REC_DEV[@]}" -o "$OUT/nd.kxp" -- true >/dev/null 2>"$TMP/nd.err"
rc=$?
check daemon_no_daemon_option test $rc -eq 1 -a -n "$(grep 'CAP_BPF' "$TMP/nd.err")" -a ! -e "$OUT/nd.kxp"

# ---- two users at once, and root's own run: each sees only its own ----
user_workload 2 7
as_bg 65534 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/a.kxp" -- "${WL_ARGV[@]}" >"$TMP/a.wl" 2>"$TMP/a.err"
pa=$!
user_workload 3 5
as_bg 65533 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/b.kxp" -- "${WL_ARGV[@]}" >"$TMP/b.wl" 2>"$TMP/b.err"
pb=$!
user_workload 1 9
"${WL_ARGV[@]}" >/dev/null 2>&1 &
pr=$!
wait $pa
ra=$?
wait $pb
rb=$?
wait $pr
if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
	fail daemon_isolation "exit $ra/$rb: $(cat "$TMP/a.err" "$TMP/b.err")"
else
	"$KXPROF" report --json "$OUT/a.kxp" >"$TMP/a.json"
	"$KXPROF" report --json "$OUT/b.kxp" >"$TMP/b.json"
	check daemon_isolation_user_a $COUNTS "$TMP/a.wl" "$TMP/a.json" "$WL_CAT"
	check daemon_isolation_user_b $COUNTS "$TMP/b.wl" "$TMP/b.json" "$WL_CAT"
fi

# ---- a child that execs a setuid program leaves the capture ----
cp "$BIN/loop_workload" "$BIN/suid_workload"
chown root:root "$BIN/suid_workload"
chmod 4755 "$BIN/suid_workload"
LW=("-D" "$LOOPDEV" -t 1 -k zero)
as 65534 "$BIN/kxprof" record --device "$LOOPDEV" -o "$OUT/suid.kxp" -- sh -c "
	$BIN/loop_workload ${LW[*]} -j 2 -g 3 >$OUT/s1.wl &&
	$BIN/suid_workload ${LW[*]} -j 4 -g 7 >$OUT/s2.wl &&
	$BIN/loop_workload ${LW[*]} -j 1 -g 5 >$OUT/s3.wl" 2>"$TMP/suid.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail daemon_setuid_child "exit $rc: $(cat "$TMP/suid.err")"
else
	"$KXPROF" report --json "$OUT/suid.kxp" >"$TMP/suid.json"
	$PY -c 'import json,sys; print(json.dumps({"ioctls":{}, "children":[json.load(open(f)) for f in sys.argv[1:]]}))' \
		"$OUT/s1.wl" "$OUT/s3.wl" >"$TMP/s13.wl"
	check daemon_setuid_child_ran test "$(jget "$OUT/s2.wl" 'd["ioctls"]["BLKGETSIZE64"]')" = 8
	check daemon_setuid_child_leaves $COUNTS "$TMP/s13.wl" "$TMP/suid.json" ioctl/loop
fi

# ---- a client that stops reading: its drops, counted; others unaffected ----
KXPROF_READY_FILE=$OUT/slow.ready as_bg 65534 "$BIN/kxprof" record --device "$LOOPDEV" \
	--ringbuf-mb 0.0625 -o "$OUT/slow.kxp" -- \
	"$BIN/loop_workload" -D "$LOOPDEV" -t 1 -j 1 -k zero -g 3000000 >"$TMP/slow.wl" 2>"$TMP/slow.err"
ps=$!
wait_ready "$OUT/slow.ready" $ps || fail daemon_slow_client_started "record never said it was attached"
kill -STOP $ps
user_workload 1 4
as_bg 65533 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/meanwhile.kxp" -- "${WL_ARGV[@]}" >"$TMP/mw.wl" 2>"$TMP/mw.err"
mw=$!
# Stopped while the other session runs, for 3 s at most: well inside the
# idle limit (5 s) however long that session takes on a busy machine.
for _ in $(seq 1 60); do kill -0 $mw 2>/dev/null || break; sleep 0.05; done
kill -CONT $ps
wait $mw
rc=$?
wait $ps
rs=$?
if [ $rs -ne 0 ] || [ $rc -ne 0 ]; then
	fail daemon_slow_client "exit $rs/$rc: $(cat "$TMP/slow.err" "$TMP/mw.err")"
else
	"$KXPROF" report --json "$OUT/slow.kxp" >"$TMP/slow.json"
	"$KXPROF" report --json "$OUT/meanwhile.kxp" >"$TMP/mw.json"
	check daemon_slow_client_drops_counted test "$(jget "$TMP/slow.json" 'd["Capture"]["dropped"] > 0 and d["Capture"]["emitted"] == d["Capture"]["received"] + d["Capture"]["dropped"]')" = True
	check daemon_slow_client_all_accounted test "$(jget "$TMP/slow.json" 'd["Capture"]["emitted"]')" = \
		"$(jget "$TMP/slow.wl" 'sum(d["ioctls"].values())')"
	check daemon_slow_client_others_exact $COUNTS "$TMP/mw.wl" "$TMP/mw.json" "$WL_CAT"
fi

# A client that never reads: cut off at the idle limit (5 s); meanwhile another is exact.
as_bg 65534 "$PY" "$BIN/daemon_client.py" "$SOCK" noread 20 >"$TMP/noread.out" 2>&1
pn=$!
sleep 1
user_workload 1 3
as 65533 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/mw2.kxp" -- "${WL_ARGV[@]}" >"$TMP/mw2.wl" 2>"$TMP/mw2.err"
rc=$?
wait $pn
rn=$?
check daemon_nonreader_cut_off test $rn -eq 0 -a -n "$(grep -E '^closed after' "$TMP/noread.out")"
# the daemon logs after closing the connection: give the line a moment
for _ in $(seq 1 100); do
	grep -q "the client read nothing for the idle limit: session aborted" "$TMP/serve.log" && break
	sleep 0.1
done
check daemon_nonreader_logged grep -q "the client read nothing for the idle limit: session aborted" "$TMP/serve.log"
"$KXPROF" report --json "$OUT/mw2.kxp" >"$TMP/mw2.json" 2>/dev/null
check daemon_nonreader_others_exact test $rc -eq 0 -a -n "$($COUNTS "$TMP/mw2.wl" "$TMP/mw2.json" "$WL_CAT" && echo ok)"

# ---- 50 clients at once ----
t0=$(date +%s.%N)
pids=()
for i in $(seq 1 50); do
	as_bg 65534 "$BIN/kxprof" record --device "$LOOPDEV" --ringbuf-mb 0.25 -o "$OUT/c$i.kxp" -- \
		"$BIN/loop_workload" -D "$LOOPDEV" -t 1 -j 2 -k zero -g $((i % 7 + 1)) \
		>"$TMP/c$i.wl" 2>"$TMP/c$i.err"
	pids+=($!)
done
bad=0
for i in $(seq 1 50); do
	wait "${pids[$((i - 1))]}" || { bad=$((bad + 1)); echo "client $i: $(cat "$TMP/c$i.err")"; continue; }
	"$KXPROF" report --json "$OUT/c$i.kxp" >"$TMP/c$i.json" &&
		$COUNTS "$TMP/c$i.wl" "$TMP/c$i.json" ioctl/loop >/dev/null || {
		bad=$((bad + 1))
		echo "client $i: counts differ"
	}
done
echo "50 concurrent clients: $(since "$t0") s"
check daemon_50_concurrent_exact test $bad -eq 0

# ---- killed clients and a fuzzer: nothing left behind ----
# Warm-up: the allocator's arenas and libbpf's one-time state exist from here.
as 65534 "$PY" "$BIN/daemon_client.py" "$SOCK" kill 30 6 >/dev/null 2>&1
d_settle "$D_FDS0"
fds0=$(d_fds) rss0=$(d_rss)
t0=$(date +%s.%N)
as 65534 "$PY" "$BIN/daemon_client.py" "$SOCK" kill "$KILLED" 6 >"$TMP/kill.out" 2>&1
rk=$?
cat "$TMP/kill.out"
echo "$KILLED killed clients: $(since "$t0") s"
as 65534 "$PY" "$BIN/daemon_client.py" "$SOCK" fuzz 240 >"$TMP/fuzz.out" 2>&1
rf=$?
cat "$TMP/fuzz.out"
d_settle "$fds0"
settled=$?
fds1=$(d_fds) rss1=$(d_rss) bpf1=$(d_bpf)
echo "daemon: fds $fds0 -> $fds1, BPF objects $bpf1, RSS $rss0 -> $rss1 KiB"
check daemon_killed_clients_ran test $rk -eq 0
check daemon_fuzz_each_closed test $rf -eq 0
check daemon_nothing_left_fds test $settled -eq 0 -a "$fds1" -eq "$fds0"
check daemon_nothing_left_bpf test "$bpf1" -eq 0
# ASan keeps freed memory in quarantine: RSS means nothing there (LeakSanitizer
# checks the daemon's heap at its exit instead).
if [ $SAN -eq 0 ]; then
	check daemon_memory_flat test $((rss1 - rss0)) -lt 8192
else
	skip daemon_memory_flat "sanitizer build: ASan's quarantine keeps freed memory (LeakSanitizer checks the heap at exit)"
fi
user_workload 1 2
as 65534 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/after.kxp" -- "${WL_ARGV[@]}" >"$TMP/after.wl" 2>"$TMP/after.err"
rc=$?
"$KXPROF" report --json "$OUT/after.kxp" >"$TMP/after.json" 2>/dev/null
check daemon_serves_after_abuse test $rc -eq 0 -a -n "$($COUNTS "$TMP/after.wl" "$TMP/after.json" "$WL_CAT" && echo ok)"

# ---- limits, time limit, socket mode and group: a second daemon ----
SOCK2=$TMP/run2/kxprof.sock
KXPROF_READY_FILE=$TMP/ready2 "$KXPROF" serve --socket "$SOCK2" --max-user-sessions 1 \
	--session-limit 2 --socket-mode 0660 --socket-group 65534 2>"$TMP/serve2.log" &
D2=$!
wait_ready "$TMP/ready2" "$D2"
check daemon_socket_group test "$(stat -c '%a %g' "$SOCK2")" = "660 65534"
SOCKET_OVERRIDE=$SOCK2 as_bg 65534 "$BIN/kxprof" record --device "$LOOPDEV" -o "$OUT/tl.kxp" -- sleep 30 \
	>/dev/null 2>"$TMP/tl.err"
ptl=$!
for _ in $(seq 1 100); do grep -q "recording through" "$TMP/tl.err" && break; sleep 0.1; done
SOCKET_OVERRIDE=$SOCK2 as 65534 "$BIN/kxprof" record --device "$LOOPDEV" -o "$OUT/lim.kxp" -- true \
	>/dev/null 2>"$TMP/lim.err"
rc=$?
check daemon_user_session_limit test $rc -eq 1 -a -n "$(grep 'uid 65534 has its limit of 1 sessions open' "$TMP/lim.err")"
wait $ptl
rc=$?
check daemon_time_limit test $rc -eq 143 -a -n "$(grep 'the daemon ended the session: time limit (2 s): stopping' "$TMP/tl.err")"
"$KXPROF" report --json "$OUT/tl.kxp" >"$TMP/tl.json" 2>/dev/null
check daemon_time_limit_file_complete test "$(jget "$TMP/tl.json" 'd["Capture"]["truncated"]')" = False
# A user outside the socket's group cannot connect at all.
chgrp 65533 "$SOCK2"
SOCKET_OVERRIDE=$SOCK2 as 65534 "$BIN/kxprof" record --device "$LOOPDEV" -o "$OUT/grp.kxp" -- true \
	>/dev/null 2>"$TMP/grp.err"
rc=$?
check daemon_socket_group_enforced test $rc -eq 1 -a -n "$(grep 'no permission to use the kxprof daemon' "$TMP/grp.err")"
kill -TERM $D2
wait $D2
check daemon2_exit_0 test $? -eq 0

# ---- socket activation: systemd passes the listening socket as fd 3 ----
if command -v systemd-socket-activate >/dev/null; then
	SOCK3=$TMP/run3/kxprof.sock
	mkdir -p "$TMP/run3" && chmod 755 "$TMP/run3"
	(umask 000 && exec systemd-socket-activate -l "$SOCK3" "$KXPROF" serve --socket "$SOCK3") \
		2>"$TMP/serve3.log" &
	D3=$!
	wait_socket "$SOCK3"
	chmod 666 "$SOCK3" # systemd sets SocketMode= itself
	user_workload 1 3
	SOCKET_OVERRIDE=$SOCK3 as 65534 "$BIN/kxprof" record "${REC_DEV[@]}" -o "$OUT/act.kxp" -- \
		"${WL_ARGV[@]}" >"$TMP/act.wl" 2>"$TMP/act.err"
	rc=$?
	"$KXPROF" report --json "$OUT/act.kxp" >"$TMP/act.json" 2>/dev/null
	check daemon_socket_activation test $rc -eq 0 -a -n "$($COUNTS "$TMP/act.wl" "$TMP/act.json" "$WL_CAT" && echo ok)"
	check daemon_socket_activation_said grep -q "capture sessions on $SOCK3 (from systemd)" "$TMP/serve3.log"
	kill -TERM $D3
	wait $D3
	check daemon_socket_activation_exit_0 test $? -eq 0
else
	skip daemon_socket_activation "systemd-socket-activate not installed"
fi

# ---- the units make install places ----
san_make=0
[ $SAN -eq 1 ] && san_make=1
if make -s -C "$ROOT" SAN=$san_make BUILD="$(basename "$BUILD_DIR")" install PREFIX="$TMP/inst" \
	>"$TMP/install.log" 2>&1; then
	U=$TMP/inst/lib/systemd/system
	check daemon_units_installed test -f "$U/kxprof.socket" -a -f "$U/kxprof.service"
	check daemon_unit_execstart grep -qx "ExecStart=$TMP/inst/bin/kxprof serve --socket /run/kxprof/kxprof.sock" "$U/kxprof.service"
	check daemon_unit_listen grep -qx "ListenStream=/run/kxprof/kxprof.sock" "$U/kxprof.socket"
	if command -v systemd-analyze >/dev/null; then
		# verify runs man for each man: link of Documentation=: the pages
		# make install placed beside the units.
		check daemon_units_verify env MANPATH="$TMP/inst/share/man" \
			systemd-analyze verify "$U/kxprof.socket" "$U/kxprof.service"
	else
		skip daemon_units_verify "systemd-analyze not installed"
	fi
else
	fail daemon_units_installed "make install failed: $(tail -5 "$TMP/install.log")"
fi

# ---- SIGTERM: exit 0, socket removed, no leak report ----
kill -TERM "$DPID"
wait "$DPID"
rc=$?
check daemon_sigterm_exit_0 test $rc -eq 0
check daemon_socket_removed test ! -e "$SOCK"
check daemon_no_leak_report test -z "$(grep -E 'LeakSanitizer|AddressSanitizer|runtime error' "$TMP/serve.log")"
