#!/usr/bin/env bash
# Annotation attach against a root daemon (`serve --socket`), as ordinary
# users (setpriv: uid 65534, and 65533 as another user), and in root's own
# captures; each part performs an attack of the security review:
#  - swap (1.5): the user's process maps its copy of libkxprof_annotate.so;
#    the moment the daemon opens that file for the user's session, the user
#    renames a symlink to root's decoy copy over the path (the copy is
#    bloated with notes, so the old attach-by-path parsed it, reopened the
#    path and attached the decoy, every time). No probe byte and
#    no semaphore of root's process mapping the decoy changes, the decoy is
#    unchanged, and the user's own annotations are recorded exactly;
#  - pid scope (1.4): another user's process mapping the very file the
#    user records keeps its probe bytes and semaphores (0) during the session;
#  - many copies (4): a process mapping 100 distinct copies; the daemon's
#    session and root's `record -p` neither crash nor attach past the cap,
#    which the record reports (warning, copies_capped), and the copies
#    within it are recorded exactly; `record -a` runs beside such a process.
# kxtest: alone (a process maps 100 copies of the annotation library; a host-wide capture beside it sees them)
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # the system's: users other than root can run it
command -v setpriv >/dev/null || { skip daemon_annotate "setpriv not installed"; exit 0; }
[ -x "$PY" ] || { skip daemon_annotate "no $PY"; exit 0; }
LIB=$BUILD_DIR/libkxprof_annotate.so
DPID=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	# Stopped workloads get SIGTERM only once continued.
	kill -CONT $(jobs -p) 2>/dev/null
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
cp "$WL/annotate_copies" "$HERE/swap_on_open.py" "$BIN/"
chmod 755 "$BIN" "$BIN"/*
SOCK=$TMP/run/kxprof.sock
PEEK="$PY $HERE/usdt_peek.py"

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
# wait_stopped PID: until PID is stopped (SIGSTOP), up to 20 s.
wait_stopped() {
	for _ in $(seq 1 200); do
		[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
		sleep 0.1
	done
	return 1
}
# peek PID FILE EXPR: usdt_peek's probes of FILE in PID, EXPR over them (p).
# The notes are read from LIB (FILE is a copy): FILE itself is never opened.
peek() {
	$PEEK "$1" "$2" "$LIB" | python3 -c 'import json,sys; p=json.load(sys.stdin)["probes"]; print(eval(sys.argv[1]))' "$3"
}
# Original bytes (no breakpoint) and semaphores 0 at every probe.
untouched() { [ "$(peek "$1" "$2" 'len(p) > 0 and all(x["byte"] != 0xcc and not x["semaphore"] for x in p)')" = True ]; }
# check_untouched NAME PID FILE: PASS when FILE's probes in PID are untouched.
# A host-wide capture running elsewhere on the host (record -a, serve, top)
# rightly puts probes in every process; CTRL, an untraced root process on a
# copy of its own, shows one: the check then waits until it has gone.
check_untouched() {
	for _ in $(seq 1 300); do
		if untouched "$CTRL" "$TMP/ctrl/lib.so"; then
			untouched "$2" "$3" && { pass "$1"; return; }
			untouched "$CTRL" "$TMP/ctrl/lib.so" && { fail "$1" "probes in $2 ($3)"; return; }
		fi
		sleep 0.2
	done
	skip "$1" "a host-wide capture elsewhere kept probes in every process for 60 s"
}
# Every semaphore raised: the probes are attached in that process.
all_raised() { [ "$(peek "$1" "$2" 'len(p) > 0 and all(x["semaphore"] for x in p)')" = True ]; }
wait_mapped() {
	for _ in $(seq 1 150); do
		[ "$(peek "$1" "$2" 'len(p) > 0')" = True ] && return 0
		sleep 0.1
	done
	return 1
}
wait_raised() {
	for _ in $(seq 1 150); do
		all_raised "$1" "$2" && return 0
		sleep 0.1
	done
	return 1
}
# count JSON NAME: Total Count of annotation NAME in a report --json.
count() { jget "$1" "d['Time'].get('annotation', {}).get('$2', {}).get('Total Count', 0)" 2>/dev/null; }

"$KXPROF" serve --socket "$SOCK" --idle-timeout 10 --session-limit 120 2>"$TMP/serve.log" &
DPID=$!
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { fail daemon_annotate_setup "no socket: $(cat "$TMP/serve.log")"; exit 0; }

mkdir -m 755 "$TMP/ctrl"
cp "$LIB" "$TMP/ctrl/lib.so"
"$WL/annotate_copies" -n 0 -H -T 300 "$TMP/ctrl/lib.so" >/dev/null &
CTRL=$!

# ---- 1.5: the mapped path swapped for a symlink to root's file ----
# Root's decoy: a copy with probes, in a root directory, mapped by a root process.
mkdir -m 755 "$TMP/root"
cp "$LIB" "$TMP/root/libdecoy.so"
chmod 644 "$TMP/root/libdecoy.so"
DECOY_SUM=$(sha256sum <"$TMP/root/libdecoy.so")
"$WL/annotate_copies" -n 0 -H -T 120 "$TMP/root/libdecoy.so" >/dev/null &
DECOY=$!
mkdir -m 755 "$TMP/u1" "$TMP/keep" && chown 65534 "$TMP/u1"
# The user's copy carries 300000 notes of another provider besides its own:
# every parse of it is slow, so the swap lands between two opens of it.
"$PY" "$HERE/bloat_notes.py" "$LIB" "$TMP/notes.bin" 300000 &&
	objcopy --update-section .note.stapsdt="$TMP/notes.bin" "$LIB" "$TMP/u1/lib.so" &&
	chown 65534 "$TMP/u1/lib.so"
ln "$TMP/u1/lib.so" "$TMP/keep/lib.so" # the user's file, for peeking after the swap
as_bg 65534 "$BIN/annotate_copies" -n 7 -S -T 120 "$TMP/u1/lib.so" >"$TMP/swap.wl"
UPID=$!
wait_stopped "$UPID" && wait_mapped "$DECOY" "$TMP/root/libdecoy.so" &&
	wait_mapped "$CTRL" "$TMP/ctrl/lib.so"
check swap_setup test $? -eq 0
as 65534 "$PY" "$BIN/swap_on_open.py" "$TMP/u1/lib.so" "$TMP/root/libdecoy.so" 1 60 \
	>"$TMP/swapper.out" 2>&1 &
SWAPPER=$!
for _ in $(seq 1 100); do grep -q ready "$TMP/swapper.out" && break; sleep 0.1; done
as_bg 65534 "$BIN/kxprof" record --no-jobs -p "$UPID" -o "$OUT/swap.kxp" 2>"$TMP/swap.err"
REC=$!
wait_raised "$UPID" "$TMP/keep/lib.so"
check swap_user_copy_attached test $? -eq 0
wait "$SWAPPER"
check swap_swapped grep -q "swapped after open" "$TMP/swapper.out"
check_untouched swap_decoy_untouched_during "$DECOY" "$TMP/root/libdecoy.so"
kill -CONT "$UPID"
wait_stopped "$UPID"
check_untouched swap_decoy_untouched_after_calls "$DECOY" "$TMP/root/libdecoy.so"
kill -CONT "$UPID"
wait "$REC"
rc=$?
"$KXPROF" report --json "$OUT/swap.kxp" >"$TMP/swap.json" 2>/dev/null
check swap_user_recorded_exactly test $rc -eq 0 -a "$(count "$TMP/swap.json" c1/outer) $(count "$TMP/swap.json" c1/tick)" = "7 7"
check swap_decoy_file_unchanged test "$(sha256sum <"$TMP/root/libdecoy.so")" = "$DECOY_SUM"
check swap_daemon_alive kill -0 "$DPID"

# ---- 1.4: another user's process mapping the same file gets no probe ----
mkdir -m 755 "$TMP/shared" && chown 65534 "$TMP/shared"
as 65534 cp "$LIB" "$TMP/shared/lib.so"
as_bg 65533 "$BIN/annotate_copies" -n 0 -H -T 120 "$TMP/shared/lib.so" >/dev/null
OTHER=$!
as_bg 65534 "$BIN/annotate_copies" -n 6 -S -T 120 "$TMP/shared/lib.so" >/dev/null
UPID=$!
wait_stopped "$UPID" && wait_mapped "$OTHER" "$TMP/shared/lib.so"
check scope_setup test $? -eq 0
as_bg 65534 "$BIN/kxprof" record --no-jobs -p "$UPID" -o "$OUT/scope.kxp" 2>"$TMP/scope.err"
REC=$!
wait_raised "$UPID" "$TMP/shared/lib.so"
check scope_user_attached test $? -eq 0
check_untouched scope_other_user_untouched "$OTHER" "$TMP/shared/lib.so"
check_untouched scope_root_decoy_untouched "$DECOY" "$TMP/root/libdecoy.so"
kill -CONT "$UPID"
wait_stopped "$UPID"
check_untouched scope_other_user_untouched_after_calls "$OTHER" "$TMP/shared/lib.so"
kill -CONT "$UPID"
wait "$REC"
rc=$?
"$KXPROF" report --json "$OUT/scope.kxp" >"$TMP/scope.json" 2>/dev/null
check scope_user_recorded_exactly test $rc -eq 0 -a "$(count "$TMP/scope.json" c1/outer)" = 6
kill "$OTHER" "$DECOY" 2>/dev/null

# ---- 4: a process mapping 100 copies ----
NC=100
mkdir -m 755 "$TMP/many" && chown 65534 "$TMP/many"
COPIES=()
for i in $(seq 1 $NC); do
	COPIES+=("$TMP/many/c$i.so")
done
as 65534 sh -c 'for f; do cp "$0" "$f"; done' "$LIB" "${COPIES[@]}"
# many_session NAME RUNNER...: a stopped 100-copy process recorded with -p by
# RUNNER (as the user through the daemon, or root); checks the cap is
# reported and the copies within it are recorded exactly.
many_session() {
	local name=$1 pid rc
	shift
	as_bg 65534 "$BIN/annotate_copies" -n 5 -S -T 120 "${COPIES[@]}" >/dev/null
	pid=$!
	wait_stopped "$pid" || { fail "${name}_setup" "the workload did not stop"; return; }
	"$@" record --no-jobs -p "$pid" -o "$OUT/$name.kxp" 2>"$TMP/$name.err" &
	local rec=$!
	# Attached: the daemon or record holds a steady number of links.
	wait_attached "$([ "$1" = as ] && echo "$DPID" || echo "$rec")"
	kill -CONT "$pid"
	wait_stopped "$pid"
	kill -CONT "$pid"
	wait "$rec"
	rc=$?
	"$KXPROF" report --json "$OUT/$name.kxp" >"$TMP/$name.json" 2>/dev/null
	check "${name}_exit_0" test $rc -eq 0
	[ $rc -eq 0 ] || sed 's/^/# /' "$TMP/$name.err"
	check "${name}_cap_counted" test "$(jget "$TMP/$name.json" 'd["Annotations"]["copies_capped"] > 0')" = True
	check "${name}_cap_warned" grep -q "not attached: past the capture's cap" "$TMP/$name.err"
	check "${name}_within_cap_exact" python3 - "$TMP/$name.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
ann = d["Time"].get("annotation", {})
att = [int(re.search(r"/c(\d+)\.so$", c["path"]).group(1))
       for c in d["Annotations"]["copies"] if c["probes_attached"] == 5]
rec = sorted(int(k[1:].split("/")[0]) for k in ann if k.endswith("/outer"))
ok = 0 < len(att) <= 16 and sorted(att) == rec
ok = ok and all(ann["c%d/outer" % k]["Total Count"] == 5 and ann["c%d/tick" % k]["Total Count"] == 5
                for k in att)
if not ok:
    print("# attached %s, recorded %s" % (sorted(att), rec))
sys.exit(0 if ok else 1)
PY
}
many_session many_daemon as 65534 "$BIN/kxprof"
check many_daemon_alive kill -0 "$DPID"
many_session many_root "$KXPROF"

# Host-wide: record -a beside a process holding the 100 copies.
as_bg 65534 "$BIN/annotate_copies" -n 0 -H -T 120 "${COPIES[@]}" >/dev/null
HOLD=$!
for _ in $(seq 1 100); do
	[ "$(grep -c "$TMP/many/c" "/proc/$HOLD/maps" 2>/dev/null)" -ge $NC ] && break
	sleep 0.1
done
"$KXPROF" record -a -d 2 --no-jobs -o "$OUT/all.kxp" 2>"$TMP/all.err"
rc=$?
"$KXPROF" report --json "$OUT/all.kxp" >"$TMP/all.json" 2>/dev/null
check many_all_survives test $rc -eq 0
check many_all_cap_counted test "$(jget "$TMP/all.json" 'd["Annotations"]["copies_capped"] > 0')" = True
kill "$HOLD" "$CTRL" 2>/dev/null

kill -TERM "$DPID"
wait "$DPID"
check daemon_annotate_exit_0 test $? -eq 0
