#!/usr/bin/env bash
# The daemon's authorisation and limits under attack by ordinary users
# (setpriv as 65534, 65533 and a few more uids; all in nogroup) against a
# root `kxprof serve --socket`, started with systemd's default soft limit of
# 1024 open files (hard 4096). Traced device: /dev/null.
# Checked:
#  - processes the kernel protects from their own user are refused at attach,
#    each with one line: not dumpable, saved uid 0 (setuid-root, then
#    setresuid(u,u,0)), setgid-root, file capabilities; a plain sibling is
#    traced;
#  - a traced child that execs a setgid or a file-capability program leaves
#    the capture: nothing of it in the file (no ioctl, no sample), its plain
#    siblings recorded exactly, and the file's warnings count it;
#  - 256 copies of one pid in a request, 4 sessions at once: the daemon's fds
#    stay bounded and another user still records;
#  - a device path under a root-only directory gets the same message whether
#    the file exists or not;
#  - a newline in a device spec is refused and forges no log line;
#  - 32 idle connections of 8 uids do not keep another user out.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # the system's: users other than root can run it
command -v setpriv >/dev/null || { skip daemon_auth "setpriv not installed"; exit 0; }
command -v prlimit >/dev/null || { skip daemon_auth "prlimit not installed"; exit 0; }
[ -x "$PY" ] || { skip daemon_auth "no $PY"; exit 0; }
DPID=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	rm -rf "$TMP"
}
at_exit cleanup

chmod 755 "$TMP"
BIN=$TMP/bin
OUT=$TMP/out
mkdir -p "$BIN" "$OUT" "$TMP/run"
chmod 1777 "$OUT"
cp "$KXPROF" "$BIN/kxprof"
cp "$WL/auth_victim" "$BIN/victim"
cp "$HERE/daemon_client.py" "$BIN/"
chmod 755 "$BIN" "$BIN"/*
SOCK=$TMP/run/kxprof.sock
DEV=(--device /dev/null)
as() {
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid=65534 --clear-groups --inh-caps=-all \
		env KXPROF_SOCKET="$SOCK" "$@"
}
as_bg() {
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid=65534 --clear-groups --inh-caps=-all \
		env KXPROF_SOCKET="$SOCK" "$@" &
}
IDLE_FDS=()
d_fds() { ls /proc/"$DPID"/fd | wc -l; }

prlimit --nofile=1024:4096 "$KXPROF" serve --socket "$SOCK" --idle-timeout 10 \
	--session-limit 120 --max-sessions 32 --max-user-sessions 4 2>"$TMP/serve.log" &
DPID=$!
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
if [ ! -S "$SOCK" ]; then
	fail daemon_auth_starts "no socket after 10 s: $(cat "$TMP/serve.log")"
	exit 0
fi

# The protected copies: setuid-root, setgid-root, a file capability. The
# set-id bits need a file system mounted without nosuid.
SETID=1
if findmnt -no OPTIONS -T "$TMP" | tr , '\n' | grep -qx nosuid; then
	SETID=0
	skip daemon_auth_setid "$TMP is on a nosuid file system"
fi
install -o root -g root -m 4755 "$BIN/victim" "$BIN/victim_suid"
install -o root -g root -m 2755 "$BIN/victim" "$BIN/victim_sgid"
cp "$BIN/victim" "$BIN/victim_fcap"
FCAP=1
if ! command -v setcap >/dev/null || ! setcap cap_net_raw=ep "$BIN/victim_fcap"; then
	FCAP=0
	skip daemon_auth_fcap "setcap (libcap2-bin) missing or refused here"
fi

# ---- at attach: each protected process refused with one line ----
# victim NAME BINARY SETUP: runs it as 65534 for 60 s; VPID is its pid once set up.
victim() {
	as_bg 65534 "$BIN/$2" "$3" 0 0 60 >/dev/null 2>"$TMP/$1.ready"
	VPID=$!
	VICTIMS+=("$VPID")
	for _ in $(seq 1 100); do grep -q ready "$TMP/$1.ready" && return 0; sleep 0.05; done
	return 1
}
refused() { # name, expected text, pid
	as 65534 "$BIN/kxprof" record "${DEV[@]}" -o "$OUT/r.kxp" -p "$3" -d 1 >/dev/null 2>"$TMP/$1.err"
	local rc=$?
	if [ $rc -eq 1 ] && grep -q "kxprof daemon at $SOCK: .*$2" "$TMP/$1.err" &&
		[ "$(wc -l <"$TMP/$1.err")" -eq 1 ]; then
		pass "$1"
	else
		fail "$1" "exit $rc: $(cat "$TMP/$1.err")"
	fi
}
VICTIMS=()
victim plain victim none && PLAIN=$VPID
victim nodump victim nodump && refused daemon_auth_refuses_nondumpable "is not dumpable" "$VPID"
if [ $SETID -eq 1 ]; then
	victim keep0 victim_suid keep0 && refused daemon_auth_refuses_saved_uid_0 "keeps another saved or fs uid" "$VPID"
	victim sgid victim_sgid dump1 && refused daemon_auth_refuses_setgid "runs with a group other than your gid" "$VPID"
fi
[ $FCAP -eq 1 ] && victim fcap victim_fcap dump1 &&
	refused daemon_auth_refuses_file_caps "holds capabilities" "$VPID"
as 65534 "$BIN/kxprof" record "${DEV[@]}" -o "$OUT/plain.kxp" -p "$PLAIN" -d 1 >/dev/null 2>"$TMP/plain.err"
check daemon_auth_plain_sibling_traced test $? -eq 0
kill "${VICTIMS[@]}" 2>/dev/null

# ---- at exec: a traced child that execs a protected program leaves ----
# Plain, setgid, file-capability, plain: each its own ioctl number and 0.3 s
# of CPU in victim_secret_loop at 99 Hz.
if [ $SETID -eq 1 ] && [ $FCAP -eq 1 ]; then
	as 65534 "$BIN/kxprof" record "${DEV[@]}" -F 99 -o "$OUT/exec.kxp" -- sh -c "
		$BIN/victim none 3 0x41 0.3 >$OUT/e1.wl 2>/dev/null &&
		$BIN/victim_sgid none 5 0x42 0.3 >$OUT/e2.wl 2>$OUT/e2.err &&
		$BIN/victim_fcap none 7 0x43 0.3 >$OUT/e3.wl 2>$OUT/e3.err &&
		$BIN/victim none 11 0x44 0.3 >$OUT/e4.wl 2>/dev/null" 2>"$TMP/exec.err"
	rc=$?
	[ $rc -eq 0 ] || cat "$TMP/exec.err" "$OUT/e2.err" "$OUT/e3.err" | sed 's/^/# /' >&3
	"$KXPROF" report --json "$OUT/exec.kxp" >"$TMP/exec.json" 2>"$TMP/exec.rep"
	$PY -c 'import json,sys; print(json.dumps({"ioctls":{}, "children":[json.load(open(f)) for f in sys.argv[1:]]}))' \
		"$OUT/e1.wl" "$OUT/e4.wl" >"$TMP/e14.wl"
	check daemon_auth_exec_ran test $rc -eq 0 -a "$(jget "$OUT/e2.wl" 'd["pid"]>0 and d["ioctls"]["unknown:0x6b42"]')" = 5 \
		-a "$(jget "$OUT/e3.wl" 'd["ioctls"]["unknown:0x6b43"]')" = 7
	# Exactly the plain siblings' ioctls (no 0x42 or 0x43 at all).
	check daemon_auth_exec_protected_left $PY "$HERE/counts.py" "$TMP/e14.wl" "$TMP/exec.json" ioctl/unknown
	# Samples of the plain siblings only: the protected ones spun as long
	# (about 30 samples each at 99 Hz) but left at their exec; a sample of
	# the forked shell before its exec may carry the same pid (2 at most).
	check daemon_auth_exec_no_samples $PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
bad = {json.load(open(f))["pid"] for f in sys.argv[2:]}
procs = [p for p in d["Profile"]["Processes"] if p["Total"]]
plain = {p["pid"] for p in procs} - bad
before_exec = sum(p["Total"] for p in procs if p["pid"] in bad)
print("# samples: plain pids %s, protected pids %d (before their exec)" % (sorted(plain), before_exec))
sys.exit(0 if plain and before_exec <= 2 else 1)' "$TMP/exec.json" "$OUT/e2.wl" "$OUT/e3.wl"
	check daemon_auth_exec_counted grep -q '"2 processes left the capture: exec of a protected program' "$TMP/exec.json"
fi

# ---- clients for the limits: request bytes as daemon_client.py makes them ----
cat >"$BIN/auth_client.py" <<'EOF'
"""dups N: N sessions each asking for 256 copies of this process's pid; says
"opened K" and holds them until stdin closes. idle N: N connections that send
nothing; says "held" and holds them until stdin closes. spec TEXT: asks for
this process with device spec TEXT; prints the daemon's answer."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_client import OPEN, OPENED, ERROR, connect, frame, recv_msg, request

path, mode = sys.argv[1], sys.argv[2]
if mode == "dups":
    socks, opened = [], 0
    for _ in range(int(sys.argv[3])):
        s = connect(path)
        s.sendall(frame(OPEN, request([os.getpid()] * 256)))
        m = recv_msg(s)
        opened += m is not None and m[0] == OPENED
        if m and m[0] == ERROR:
            print("ERROR " + m[1].decode(errors="replace"), flush=True)
        socks.append(s)
    print("opened %d" % opened, flush=True)
    sys.stdin.read()
elif mode == "idle":
    socks = [connect(path) for _ in range(int(sys.argv[3]))]
    print("held", flush=True)
    sys.stdin.read()
else:
    s = connect(path)
    s.sendall(frame(OPEN, request([os.getpid()], device=sys.argv[3].encode())))
    m = recv_msg(s)
    print("closed" if m is None else ("ERROR " if m[0] == ERROR else "type %d " % m[0])
          + m[1].decode(errors="replace"))
EOF
chmod 755 "$BIN/auth_client.py"
# Another user's short recording: 0 on success.
other_records() {
	as 65533 "$BIN/kxprof" record "${DEV[@]}" -o "$OUT/$1.kxp" -- "$BIN/victim" none 2 0x45 0 \
		>/dev/null 2>"$TMP/$1.err"
}

# ---- 256 copies of one pid x 4 sessions: fds bounded, others still served ----
F0=$(d_fds)
exec 5> >(as 65534 $PY "$BIN/auth_client.py" "$SOCK" dups 4 >"$TMP/dups.out" 2>&1)
for _ in $(seq 1 300); do grep -q opened "$TMP/dups.out" && break; sleep 0.1; done
F1=$(d_fds)
other_records dups_other
rc=$?
exec 5>&-
echo "# daemon fds: $F0 before, $F1 with 4 sessions of 256 copies of one pid" >&3
check daemon_auth_dup_pids_opened grep -qx "opened 4" "$TMP/dups.out"
check daemon_auth_dup_pids_fds_bounded test $((F1 - F0)) -lt 400
check daemon_auth_dup_pids_others_served test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/dups_other.err" >&3

# ---- a device path under a root-only directory: no answer about the file ----
mkdir -m 0700 "$TMP/hidden"
touch "$TMP/hidden/present"
# Asked of the daemon directly (record would look the path up as the user first).
for f in present absent; do
	as 65534 $PY "$BIN/auth_client.py" "$SOCK" spec "$TMP/hidden/$f" >"$TMP/hidden_$f.err" 2>&1
	sed "s/$f/FILE/g" "$TMP/hidden_$f.err" >"$TMP/hidden_$f.said"
done
check daemon_auth_device_no_oracle cmp -s "$TMP/hidden_present.said" "$TMP/hidden_absent.said"
check daemon_auth_device_refused grep -q "^ERROR .*$TMP/hidden/FILE" "$TMP/hidden_absent.said"
cat "$TMP/hidden_present.err" "$TMP/hidden_absent.err" | sed 's/^/# /' >&3

# ---- a newline in a device spec: refused, no forged log line ----
FORGED="kxprof serve: session 7 (uid 0, pid 1): tracing 1 process (tp_btf), 4 devices"
as 65534 $PY "$BIN/auth_client.py" "$SOCK" spec "/nonexistent
$FORGED" >"$TMP/newline.out" 2>&1
check daemon_auth_newline_refused grep -q "^ERROR a device spec in the request holds a control character" "$TMP/newline.out"
check daemon_auth_newline_no_forged_line test "$(grep -cx "$FORGED" "$TMP/serve.log")" -eq 0

# ---- 8 uids x 4 idle connections fill the 32 sessions: another user gets in ----
for u in $(seq 65000 65007); do
	exec {fd}> >(as "$u" $PY "$BIN/auth_client.py" "$SOCK" idle 4 >"$TMP/idle.$u" 2>&1)
	IDLE_FDS+=("$fd")
done
for _ in $(seq 1 100); do [ "$(cat "$TMP"/idle.* | grep -c held)" -eq 8 ] && break; sleep 0.05; done
other_records idle_other
rc=$?
for fd in "${IDLE_FDS[@]}"; do exec {fd}>&-; done
check daemon_auth_idle_connections_held test "$(cat "$TMP"/idle.* | grep -c held)" -eq 8
check daemon_auth_idle_others_served test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/idle_other.err" >&3

kill -TERM "$DPID"
wait "$DPID"
check daemon_auth_exit_0 test $? -eq 0
