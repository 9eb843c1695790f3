#!/usr/bin/env bash
# The daemon's socket set-up and the client's trust in it (security review
# 5.1), as an ordinary user (nobody, 65534; 65533 as a second user) against
# root:
#  - `serve --socket` in a directory a user owns, or one writable by others
#    without the sticky bit, is refused with the reason; so is a path with a
#    symbolic link to a directory on the way (the socket is not created
#    behind it);
#  - a daemon that is not root (a fake one run by another user at the path
#    the client is pointed at) is refused by the client, which sends it
#    nothing; a daemon's text is printed with its control characters escaped
#    (no raw escape sequence reaches the terminal).
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # the system's: users other than root can run it
command -v setpriv >/dev/null || { skip daemon_socket "setpriv not installed"; exit 0; }
[ -x "$PY" ] || { skip daemon_socket "no $PY"; exit 0; }
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
chmod 755 "$TMP"
BIN=$TMP/bin
OUT=$TMP/out
mkdir -p "$BIN" "$OUT"
chmod 1777 "$OUT"
cp "$KXPROF" "$BIN/kxprof"
cp "$HERE/fake_daemon.py" "$BIN/"
chmod 755 "$BIN" "$BIN"/*
as() { # UID CMD...: CMD as UID (group nogroup)
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid=65534 --clear-groups --inh-caps=-all "$@"
}
# refused NAME PATH WHAT: serve --socket PATH exits 1 at once, saying WHAT.
refused() {
	timeout 20 "$KXPROF" serve --socket "$2" >"$TMP/$1.log" 2>&1
	local rc=$?
	check "$1" test $rc -eq 1 -a -n "$(grep -F -- "$3" "$TMP/$1.log")"
	[ $rc -eq 1 ] || sed 's/^/# /' "$TMP/$1.log" | tail -3
}

# ---- the daemon refuses socket directories others control ----
mkdir "$TMP/userdir" && chown 65534 "$TMP/userdir"
refused daemon_socket_user_dir "$TMP/userdir/kxprof.sock" "$TMP/userdir is owned by uid 65534, not by root"
check daemon_socket_user_dir_no_socket test ! -e "$TMP/userdir/kxprof.sock"
# A user-owned directory higher up is as bad: the user can rename the rest.
mkdir -p "$TMP/userup/sub" && chown 65534 "$TMP/userup"
refused daemon_socket_user_ancestor "$TMP/userup/sub/kxprof.sock" "$TMP/userup is owned by uid 65534"
mkdir "$TMP/open" && chmod 0777 "$TMP/open"
refused daemon_socket_writable_dir "$TMP/open/kxprof.sock" "writable by group or others (mode 0777)"
# A user's symbolic link to a root-only directory: not followed.
mkdir "$TMP/rootonly" && chmod 0700 "$TMP/rootonly"
mkdir "$TMP/links" && chown 65534 "$TMP/links"
as 65534 ln -s "$TMP/rootonly" "$TMP/links/run"
refused daemon_socket_user_symlink "$TMP/links/run/kxprof.sock" "refusing --socket"
mkdir "$TMP/links2" && ln -s "$TMP/rootonly" "$TMP/links2/run"
refused daemon_socket_symlink_dir "$TMP/links2/run/kxprof.sock" "$TMP/links2/run is a symbolic link"
check daemon_socket_symlink_dir_no_socket test ! -e "$TMP/rootonly/kxprof.sock"
# A root-owned sticky directory (as /tmp) and a missing last directory are fine.
mkdir "$TMP/sticky" && chmod 1777 "$TMP/sticky"
"$KXPROF" serve --socket "$TMP/sticky/new/kxprof.sock" 2>"$TMP/ok.log" &
D=$!
for _ in $(seq 1 100); do [ -S "$TMP/sticky/new/kxprof.sock" ] && break; sleep 0.1; done
check daemon_socket_sticky_ok test -S "$TMP/sticky/new/kxprof.sock" -a "$(stat -c %a "$TMP/sticky/new/kxprof.sock")" = 666
kill -TERM $D
wait $D
check daemon_socket_sticky_exit_0 test $? -eq 0 -a ! -e "$TMP/sticky/new/kxprof.sock"

# ---- the client refuses a daemon that is not root ----
mkdir "$TMP/fake" && chown 65534 "$TMP/fake"
FAKE=$TMP/fake/kxprof.sock
as 65534 "$PY" "$BIN/fake_daemon.py" "$FAKE" "$TMP/fake/log" 2>"$TMP/fake.err" &
for _ in $(seq 1 100); do grep -q ready "$TMP/fake/log" 2>/dev/null && break; sleep 0.1; done
as 65533 env KXPROF_SOCKET="$FAKE" "$BIN/kxprof" record --device /dev/null -o "$OUT/x.kxp" -- true \
	>"$TMP/victim.out" 2>"$TMP/victim.err"
rc=$?
check daemon_client_refuses_fake test $rc -ne 0 -a -n "$(grep -F "refusing the kxprof daemon at $FAKE: it is run by uid 65534" "$TMP/victim.err")"
check daemon_client_sent_nothing test -z "$(grep -F 'KD' "$TMP/fake/log")"
check daemon_client_no_raw_escape_refused test -z "$(grep -l $'\x1b' "$TMP/victim.err" "$TMP/victim.out")"
# A daemon of the user's own uid is spoken to, and its text escaped.
as 65534 env KXPROF_SOCKET="$FAKE" "$BIN/kxprof" record --device /dev/null -o "$OUT/x.kxp" -- true \
	>"$TMP/own.out" 2>"$TMP/own.err"
rc=$?
check daemon_client_own_uid_spoken_to test -n "$(grep -F 'KD' "$TMP/fake/log")"
check daemon_client_escapes_text test $rc -ne 0 -a -n "$(grep -F 'kxprof daemon at '"$FAKE"': \x1b[2J\x1b[31mkxprof daemon: fake error' "$TMP/own.err")"
check daemon_client_no_raw_escape test -z "$(grep -l $'\x1b' "$TMP/own.err" "$TMP/own.out")"
[ $rc -ne 0 ] && grep -q 'fake error' "$TMP/own.err" || sed 's/^/# /' "$TMP/own.err" | tail -3
