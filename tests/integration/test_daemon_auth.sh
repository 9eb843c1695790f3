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
trap cleanup EXIT

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
