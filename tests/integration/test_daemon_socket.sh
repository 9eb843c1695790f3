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
#    (no raw escape sequence reaches the terminal);
#  - the installed service unit: `systemd-analyze security` exposure under
#    4.0; started under a real systemd where PID 1 is one, else (here) the
#    daemon under exactly the unit's capability bounding set records a
#    user's workload with symbols resolved and annotations attached, and
#    every system call it makes meanwhile (strace) passes the unit's filter.
# kxtest: both (the system calls under strace in the normal build, leaks in the sanitizer one)
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3 # the system's: users other than root can run it
command -v setpriv >/dev/null || { skip daemon_socket "setpriv not installed"; exit 0; }
[ -x "$PY" ] || { skip daemon_socket "no $PY"; exit 0; }
FAKEPID=
cleanup() {
	[ -n "$FAKEPID" ] && kill "$FAKEPID" 2>/dev/null
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
at_exit cleanup
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
	timeout 5 "$KXPROF" serve --socket "$2" >"$TMP/$1.log" 2>&1
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
# Started without the as function: $! is then the fake daemon itself.
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$PY" "$BIN/fake_daemon.py" "$FAKE" "$TMP/fake/log" 2>"$TMP/fake.err" &
FAKEPID=$!
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

# ---- the units `make install` places: hardening and capabilities ----
SAN=0
nm -D "$KXPROF" 2>/dev/null | grep -q __asan_init && SAN=1
if ! make -s -C "$ROOT" SAN=$SAN BUILD="$(basename "$BUILD_DIR")" install PREFIX="$TMP/inst" \
	>"$TMP/install.log" 2>&1; then
	fail daemon_units_installed "make install failed: $(tail -5 "$TMP/install.log")"
	exit 0
fi
UNIT=$TMP/inst/lib/systemd/system/kxprof.service
if command -v systemd-analyze >/dev/null; then
	systemd-analyze security --offline=yes "$UNIT" >"$TMP/security.txt" 2>&1
	EXPOSURE=$(sed -n 's/.*Overall exposure level for kxprof.service: \([0-9.]*\).*/\1/p' "$TMP/security.txt")
	echo "# systemd-analyze security: exposure ${EXPOSURE:-?} (systemd $(systemd-analyze --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'))"
	check daemon_unit_exposure_under_4 awk -v e="${EXPOSURE:-99}" 'BEGIN { exit !(e < 4.0) }'
else
	skip daemon_unit_exposure_under_4 "systemd-analyze not installed"
fi
# Starting the installed units needs systemd as PID 1 (a socket unit, a
# service with mount namespaces and seccomp); where it is not (a container
# without systemd, as here), the service's capability set is what can be
# checked: the daemon runs under exactly the unit's bounding set with no
# new privileges, and a user's record gets symbols and annotations.
if [ "$(cat /proc/1/comm 2>/dev/null)" != systemd ]; then
	echo "# PID 1 is $(cat /proc/1/comm 2>/dev/null), not systemd: the units cannot be started here; their capability set is emulated with setpriv" >&3
fi
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr ' ' '\n' | sed -n 's/^CAP_//p' |
	tr 'A-Z' 'a-z' | sed 's/^/+/' | paste -sd, -)
check daemon_unit_no_new_privs grep -qx 'NoNewPrivileges=yes' "$UNIT"
check daemon_unit_nofile grep -qx 'LimitNOFILE=65536' "$UNIT"
cp "$BUILD_DIR/tests/profile_workload" "$BUILD_DIR/tests/annotate_workload" "$BIN/"
cp "$BUILD_DIR/libkxprof_annotate.so" "$TMP/" # annotate_workload: $ORIGIN/..
chmod 755 "$BIN"/* "$TMP/libkxprof_annotate.so"
mkdir "$TMP/run"
CSOCK=$TMP/run/kxprof.sock
# Under strace too (where installed): the system calls the daemon makes are
# checked against the unit's SystemCallFilter= below.
TRACE=()
# Not in the sanitizer pass: LeakSanitizer cannot run under ptrace.
[ $SAN -eq 0 ] && command -v strace >/dev/null && command -v systemd-analyze >/dev/null &&
	TRACE=(strace -f -qq -o "$TMP/capd.strace")
setpriv --bounding-set=-all,"$CAPS" --inh-caps=-all --no-new-privs \
	"${TRACE[@]}" "$KXPROF" serve --socket "$CSOCK" 2>"$TMP/capd.log" &
CAPD=$!
for _ in $(seq 1 200); do [ -S "$CSOCK" ] && break; sleep 0.1; done
DAEMON=$CAPD
[ ${#TRACE[@]} -gt 0 ] && DAEMON=$(pgrep -P $CAPD | head -1)
echo "# daemon under the unit's set ($CAPS): $(grep CapEff /proc/$DAEMON/status 2>/dev/null)" >&3
as 65534 env KXPROF_SOCKET="$CSOCK" "$BIN/kxprof" record -F 199 --device /dev/null \
	-o "$OUT/caps.kxp" -- "$BIN/profile_workload" -s 1 >"$TMP/caps.wl" 2>"$TMP/caps.err"
rc=$?
"$KXPROF" convert "$OUT/caps.kxp" --folded "$TMP/caps.folded" >/dev/null 2>&1
check daemon_unit_caps_symbols test $rc -eq 0 -a -n "$(grep ';main;kxw_spin_phase;kxw_heavy ' "$TMP/caps.folded")"
[ $rc -eq 0 ] || sed 's/^/# /' "$TMP/caps.err" | tail -3
if ! grep -q ';main;kxw_spin_phase;kxw_heavy ' "$TMP/caps.folded"; then
	# What the capture holds instead: its heaviest stacks and symbol facts.
	sort -t' ' -k2 -nr "$TMP/caps.folded" | head -3 | sed 's/^/# folded: /'
	"$KXPROF" report "$OUT/caps.kxp" 2>&1 | grep -E 'CPU profile|unknown|process|symbol' | sed 's/^/# report: /'
fi
as 65534 env KXPROF_SOCKET="$CSOCK" "$BIN/kxprof" record --device /dev/null -o "$OUT/cann.kxp" \
	-- "$BIN/annotate_workload" -t 1 -n 5 -s 1000 >"$TMP/cann.wl" 2>"$TMP/cann.err"
rc=$?
"$KXPROF" report --json "$OUT/cann.kxp" >"$TMP/cann.json" 2>/dev/null
check daemon_unit_caps_annotations_exit test $rc -eq 0
# Exact, unless the recording states that the daemon attached after the
# library's wait (strace slows the daemon's attach).
check_ann daemon_unit_caps_annotations "$TMP/cann.json" test "$(jget "$TMP/cann.json" '[d["Time"]["annotation"][k]["Total Count"] for k in ("outer", "inner", "tick")]' 2>/dev/null)" = "[5, 5, 5]"
grep -q 'did not attach' "$TMP/cann.err" && sed 's/^/# /' "$TMP/cann.err" | head -2
kill -TERM $DAEMON
wait $CAPD
check daemon_unit_caps_exit_0 test $? -eq 0
# The unit's system call filter: an allow list, then groups taken out of it.
expand_sc() { # a system call or @group: the calls it names
	case "$1" in
	@*) systemd-analyze syscall-filter "$1" 2>/dev/null | tail -n +2 | sed 's/^ *//' |
		grep -v '^#' | while read -r x; do [ -n "$x" ] && expand_sc "$x"; done ;;
	*) echo "$1" ;;
	esac
}
if [ ${#TRACE[@]} -gt 0 ]; then
	for x in $(sed -n 's/^SystemCallFilter=\([^~]\)/\1/p' "$UNIT"); do expand_sc "$x"; done |
		sort -u >"$TMP/sc.allowed"
	for x in $(sed -n 's/^SystemCallFilter=~//p' "$UNIT"); do expand_sc "$x"; done |
		sort -u >"$TMP/sc.denied"
	sed -n 's/^[0-9][0-9]* *\([a-z0-9_]*\)(.*/\1/p' "$TMP/capd.strace" | sort -u >"$TMP/sc.used"
	BAD=$( (comm -23 "$TMP/sc.used" "$TMP/sc.allowed"; comm -12 "$TMP/sc.used" "$TMP/sc.denied") | sort -u | paste -sd' ' -)
	echo "# the daemon made $(wc -l <"$TMP/sc.used") distinct system calls; the unit allows $(comm -23 "$TMP/sc.allowed" "$TMP/sc.denied" | wc -l)" >&3
	check daemon_unit_syscall_filter test -z "$BAD" -a -s "$TMP/sc.used" -a -s "$TMP/sc.allowed"
	[ -z "$BAD" ] || echo "# not allowed by the unit: $BAD" >&3
else
	skip daemon_unit_syscall_filter "not traced: sanitizer build (checked in the normal pass), or strace or systemd-analyze missing"
fi
check daemon_unit_caps_no_leak_report test -z "$(grep -E 'LeakSanitizer|AddressSanitizer|runtime error' "$TMP/capd.log")"
