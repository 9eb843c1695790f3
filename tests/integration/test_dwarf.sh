#!/usr/bin/env bash
# DWARF unwinding (record --call-graph dwarf) end to end, on a workload built
# without frame pointers (build/tests/dwarf_workload: -O2
# -fomit-frame-pointer, its hot function three calls deep in libkxdw.so,
# built the same way): with dwarf at least 95% of its samples in the library
# unwind to main through the right callers (main;kxdw_run;kxdw_outer;
# kxdw_middle;kxdw_inner), checked on convert --folded; with fp (the
# default) they do not, so the test shows the difference. Then the same
# through the daemon as uid 65534 while root runs the same program under
# another name: the user's stacks unwind, every stack copy made belongs to a
# sample of the user's own (the copies are counted with the samples), and
# nothing of root's process shows. Off-CPU: the same program blocking in
# BLKZEROOUTs on a loop device three calls deep in the library
# (main;kxdw_io_run;kxdw_io_outer;kxdw_io_middle;kxdw_io_inner), recorded
# with --off-cpu: with dwarf 95% of the time blocked unwinds to main
# through those callers (convert --off-cpu --folded, in microseconds), with
# fp it does not. --call-graph auto: the dwarf result on this workload,
# and on profile_workload (built with frame pointers) the frame-pointer
# walks kept, reaching main.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip dwarf "needs root (loads BPF, opens perf events)"
	exit 0
fi
[ -x "$WL/dwarf_workload" ] || { fail dwarf_workload "$WL/dwarf_workload is missing (make)"; exit 0; }

# share FOLDED [CHAIN [FRAME]]: of the samples with a frame in libkxdw.so
# (or with FRAME), the share whose stack from main up is CHAIN (default
# main;kxdw_run;kxdw_outer;kxdw_middle;kxdw_inner), or a prefix of it
# through its second frame, for samples taken in a caller.
share() {
	python3 -c '
import sys
chain = (sys.argv[2] if len(sys.argv) > 2 else
         "main;kxdw_run;kxdw_outer;kxdw_middle;kxdw_inner").split(";")
total = good = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    ours = [f for f in frames if f.startswith("kxdw_") or f in sys.argv[3:]]
    if not ours:
        continue
    total += int(n)
    if "main" not in frames:
        continue
    i = frames.index("main")
    user = frames[i:i + 1] + [f for f in frames[i + 1:] if f.startswith("kxdw_")]
    # the library frames follow main directly, in order, and end the user part
    seq = frames[i:i + len(user)]
    if seq == user and user == chain[:len(user)] and len(user) >= 2:
        good += int(n)
print("%d %d" % (good, total))' "$@"
}

# ---- dwarf ----
"$KXPROF" record -F 499 --call-graph dwarf -o "$TMP/d.kxp" -- "$WL/dwarf_workload" 2 \
	>"$TMP/d.json" 2>"$TMP/d.err"
check dwarf_record_exit [ $? -eq 0 ]
check dwarf_record_says grep -q "DWARF unwinding ([0-9]* copies of 8192 bytes)" "$TMP/d.err"
"$KXPROF" convert "$TMP/d.kxp" --folded "$TMP/d.folded" >/dev/null
check dwarf_convert_exit [ $? -eq 0 ]
read -r good total < <(share "$TMP/d.folded")
echo "# dwarf: $good of $total library samples unwind to main through the right callers"
check dwarf_enough_samples [ "$total" -ge 100 ]
check dwarf_unwinds_95pct [ $((good * 100)) -ge $((total * 95)) ]
# libc's detached debug file (libc6-dbg), where installed, names the local
# function between __libc_start_main and main.
LIBC=$(ldd "$WL/dwarf_workload" | awk '/libc\.so/ {print $3}')
LIBC_ID=$(readelf -n "$LIBC" 2>/dev/null | awk '/Build ID/ {print $3}')
if [ -n "$LIBC_ID" ] && [ -f "/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug" ]; then
	check dwarf_debug_file_names_libc grep -q "__libc_start_call_main;main;kxdw_run" "$TMP/d.folded"
else
	skip dwarf_debug_file_names_libc "no detached debug file for $LIBC (Debian libc6-dbg)"
fi
# The file keeps the counts: report shows them.
check dwarf_file_says python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["Profile"]
d = p.get("Dwarf", {})
print("# profile:", {k: p.get(k) for k in ("Samples", "Received", "Dropped")}, "dwarf:", d)
sys.exit(d.get("StackBytes") != 8192 or d.get("Unwound", 0) < 0.95 * p["Received"])' \
	<("$KXPROF" report "$TMP/d.kxp" --json)
check dwarf_report_says bash -c '"$1" report "$2" | grep -q "^DWARF unwinding (8192-byte stack copies): [0-9]* stacks to their root"' \
	_ "$KXPROF" "$TMP/d.kxp"

# ---- fp: the same program, its callers lost ----
"$KXPROF" record -F 499 --call-graph fp -o "$TMP/f.kxp" -- "$WL/dwarf_workload" 2 \
	>"$TMP/f.json" 2>"$TMP/f.err"
check fp_record_exit [ $? -eq 0 ]
check fp_no_dwarf_line bash -c '! grep -q "DWARF unwinding" "$1"' _ "$TMP/f.err"
check fp_report_no_dwarf bash -c '! "$1" report "$2" | grep -q "DWARF unwinding"' _ "$KXPROF" "$TMP/f.kxp"
"$KXPROF" convert "$TMP/f.kxp" --folded "$TMP/f.folded" >/dev/null
read -r fgood ftotal < <(share "$TMP/f.folded")
echo "# fp: $fgood of $ftotal library samples unwind to main through the right callers"
check fp_enough_samples [ "$ftotal" -ge 100 ]
check fp_loses_callers [ $((fgood * 100)) -lt $((ftotal * 50)) ]

# ---- auto: DWARF where frame pointers fail, the walk kept where they hold ----
"$KXPROF" record -F 499 --call-graph auto -o "$TMP/a.kxp" -- "$WL/dwarf_workload" 2 \
	>"$TMP/a.json" 2>"$TMP/a.err"
check auto_record_exit [ $? -eq 0 ]
"$KXPROF" convert "$TMP/a.kxp" --folded "$TMP/a.folded" >/dev/null
read -r agood atotal < <(share "$TMP/a.folded")
echo "# auto: $agood of $atotal library samples unwind to main through the right callers"
check auto_enough_samples [ "$atotal" -ge 100 ]
check auto_unwinds_95pct [ $((agood * 100)) -ge $((atotal * 95)) ]
check auto_no_fp_kept bash -c '! grep -q "frame-pointer walks kept" "$1"' _ "$TMP/a.err"
# profile_workload is built with frame pointers: its walks are kept, and
# they reach main.
"$KXPROF" record -F 499 --call-graph auto -o "$TMP/ap.kxp" -- "$WL/profile_workload" -s 2 \
	>"$TMP/ap.json" 2>"$TMP/ap.err"
check auto_fp_record_exit [ $? -eq 0 ]
check auto_fp_walks_kept python3 -c '
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) CPU samples", t).group(1))
m = re.search(r"auto: (\d+) frame-pointer walks kept", t)
kept = int(m.group(1)) if m else 0
print("# auto on profile_workload: %d of %d walks kept" % (kept, n))
sys.exit(n < 100 or kept < 0.9 * n)' "$TMP/ap.err"
"$KXPROF" convert "$TMP/ap.kxp" --folded "$TMP/ap.folded" >/dev/null
check auto_fp_reach_main python3 -c '
import sys
tot = ok = 0
for l in open(sys.argv[1]):
    st, _, n = l.rstrip("\n").rpartition(" ")
    if "kxw_heavy" in st or "kxw_light" in st:
        tot += int(n)
        ok += int(n) * (";main;kxw_spin_phase;" in st)
print("# %d of %d kxw_heavy/kxw_light samples through main;kxw_spin_phase" % (ok, tot))
sys.exit(tot < 100 or ok < 0.95 * tot)' "$TMP/ap.folded"

# ---- off-CPU: blocked in BLKZEROOUT three calls deep in the library ----
LOOPDEV=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	rm -rf "$TMP"
}
at_exit cleanup
truncate -s 16M "$TMP/loop.img"
for _ in 1 2 3 4 5; do # a free device can be taken between find and attach
	LOOPDEV=$(losetup --find --show "$TMP/loop.img" 2>"$TMP/losetup.err") && break
	sleep 0.2
done
IOCHAIN="main;kxdw_io_run;kxdw_io_outer;kxdw_io_middle;kxdw_io_inner"
if [ -z "$LOOPDEV" ]; then
	fail offcpu_loop_attach "losetup: $(cat "$TMP/losetup.err")"
else
	for mode in dwarf fp; do
		# An 8 KiB copy a switch-out, a dozen thousand a second: under the
		# sanitizers on a slow host the default 8 MiB ring filled and copies
		# were lost (said, and those stacks kept their frame-pointer walk,
		# which stops in libc), so the share below measured the host.
		rb=()
		[ $mode = dwarf ] && rb=(--ringbuf-mb 64)
		"$KXPROF" record --off-cpu --call-graph $mode "${rb[@]}" --device loop -o "$TMP/o$mode.kxp" \
			-- "$WL/dwarf_workload" 2 "$LOOPDEV" >"$TMP/o$mode.json" 2>"$TMP/o$mode.err"
		check offcpu_${mode}_record_exit [ $? -eq 0 ]
		"$KXPROF" convert "$TMP/o$mode.kxp" --off-cpu --folded "$TMP/o$mode.folded" >/dev/null
		check offcpu_${mode}_convert_exit [ $? -eq 0 ]
		read -r ogood ototal < <(share "$TMP/o$mode.folded" "$IOCHAIN" "[loop] BLKZEROOUT")
		echo "# off-CPU $mode: $ogood of $ototal us blocked unwind to main through the right callers"
		grep "DWARF unwinding\|lost\|dropped" "$TMP/o$mode.err" | sed 's/^/# /'
		check offcpu_${mode}_enough_time [ "${ototal:-0}" -ge 100000 ]
		if [ $mode = dwarf ]; then
			# A host too busy for the consumer loses copies even in 64 MiB (record
			# says how many; those stacks keep the frame-pointer walk): the share is
			# asked of the time whose stacks had a copy, and every stack that had
			# one must reach its root.
			read -r root early noframe nocopy < <(sed -n 's/.*DWARF unwinding ([0-9]* copies of [0-9]* bytes): \([0-9]*\) stacks to their root, \([0-9]*\) stopped early, \([0-9]*\) without a frame, \([0-9]*\) without a copy.*/\1 \2 \3 \4/p' "$TMP/odwarf.err")
			copied=$((${root:-0} + ${early:-0} + ${noframe:-0}))
			[ "${nocopy:-0}" -gt 0 ] && echo "# $nocopy of $((copied + nocopy)) stacks had no copy (said by record): the share is of those that had one"
			check offcpu_dwarf_unwinds_95pct \
				[ $((ogood * 100 * (copied + ${nocopy:-0}))) -ge $((ototal * 95 * copied)) -a "$copied" -gt 0 ]
			check offcpu_dwarf_copies_reach_root [ $((${root:-0} * 100)) -ge $((copied * 95)) ]
			check offcpu_dwarf_record_says grep -q "DWARF unwinding ([1-9][0-9]* copies" "$TMP/odwarf.err"
		else
			check offcpu_fp_loses_callers [ $((ogood * 100)) -lt $((ototal * 50)) ]
		fi
	done
fi

# ---- errors ----
"$KXPROF" record -F 99 --call-graph dwarf,70000 -o "$TMP/e.kxp" -- true 2>"$TMP/e.err"
check size_too_big_refused [ $? -ne 0 ]
check size_too_big_says grep -q "65528" "$TMP/e.err"
"$KXPROF" record -F 99 --call-graph lbr -o "$TMP/e.kxp" -- true 2>"$TMP/e.err"
check mode_unknown_refused [ $? -ne 0 ]
check mode_unknown_says grep -q "not fp, dwarf" "$TMP/e.err"

# ---- through the daemon, as uid 65534 ----
command -v setpriv >/dev/null || { skip dwarf_daemon "setpriv not installed"; exit 0; }
chmod 755 "$TMP"
BIN=$TMP/bin
mkdir -p "$BIN" "$TMP/out" "$TMP/run"
chmod 1777 "$TMP/out"
cp "$KXPROF" "$WL/dwarf_workload" "$WL/libkxdw.so" "$BIN/"
cp "$WL/dwarf_workload" "$BIN/dw_root" # root's, by another name
chmod 755 "$BIN" "$BIN"/*
SOCK=$TMP/run/kxprof.sock
"$KXPROF" serve --socket "$SOCK" --idle-timeout 10 2>"$TMP/serve.log" &
DPID=$!
for _ in $(seq 1 100); do
	[ -S "$SOCK" ] && break
	sleep 0.1
done
[ -S "$SOCK" ] || { fail dwarf_daemon_starts "no socket after 10 s: $(cat "$TMP/serve.log")"; exit 0; }
"$BIN/dw_root" 4 >/dev/null &
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all env KXPROF_SOCKET="$SOCK" \
	"$BIN/kxprof" record -F 499 --call-graph dwarf -o "$TMP/out/u.kxp" -- "$BIN/dwarf_workload" 2 \
	>"$TMP/u.json" 2>"$TMP/u.err"
check daemon_record_exit [ $? -eq 0 ]
check daemon_record_says grep -q "DWARF unwinding" "$TMP/u.err"
"$KXPROF" convert "$TMP/out/u.kxp" --folded "$TMP/u.folded" >/dev/null
read -r ugood utotal < <(share "$TMP/u.folded")
echo "# daemon: $ugood of $utotal library samples unwind to main through the right callers"
check daemon_enough_samples [ "$utotal" -ge 100 ]
check daemon_unwinds_95pct [ $((ugood * 100)) -ge $((utotal * 95)) ]
check daemon_not_roots bash -c '! grep -q "^dw_root" "$1"' _ "$TMP/u.folded"
# Every copy belongs to a sample kept (of the user's own threads).
check daemon_copies_are_samples python3 -c '
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) CPU samples", t).group(1))
m = re.search(r"DWARF unwinding \((\d+) copies.*: (\d+) stacks to their root, (\d+) stopped early, (\d+) without a frame, (\d+) without a copy", t)
copies = int(m.group(1))
d = sum(int(x) for x in m.groups()[1:])
print("# samples %d, copies %d, dwarf outcomes %d" % (n, copies, d))
sys.exit(d != n or copies > n or n < 100)' "$TMP/u.err"
# Off-CPU through the daemon: the user's own blocked thread, its stacks
# unwound (the loop device made the user's for the test).
if [ -n "$LOOPDEV" ] && chown 65534 "$LOOPDEV"; then
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all env KXPROF_SOCKET="$SOCK" \
		"$BIN/kxprof" record --off-cpu --call-graph dwarf --device loop -o "$TMP/out/uo.kxp" \
		-- "$BIN/dwarf_workload" 2 "$LOOPDEV" >"$TMP/uo.json" 2>"$TMP/uo.err"
	check daemon_offcpu_record_exit [ $? -eq 0 ]
	"$KXPROF" convert "$TMP/out/uo.kxp" --off-cpu --folded "$TMP/uo.folded" >/dev/null
	read -r uogood uototal < <(share "$TMP/uo.folded" "$IOCHAIN" "[loop] BLKZEROOUT")
	echo "# daemon off-CPU: $uogood of $uototal us blocked unwind to main through the right callers"
	check daemon_offcpu_enough_time [ "${uototal:-0}" -ge 100000 ]
	# A copy lost to a full ring keeps its frame-pointer walk (90%, not 95). A
	# loaded machine loses more: below 90% the loss must be counted (copies
	# "without a copy") and the copies that came must unwind (at most 1 in 20
	# stopped early or without a frame).
	grep "DWARF unwinding" "$TMP/uo.err" | sed 's/^/# /'
	check daemon_offcpu_unwinds_90pct python3 - "$uogood" "$uototal" "$TMP/uo.err" <<'PY'
import re, sys
good, total = int(sys.argv[1]), int(sys.argv[2])
if good * 100 >= total * 90:
    sys.exit(0)
m = re.search(r"(\d+) stacks to their root, (\d+) stopped early, (\d+) without a frame, "
              r"(\d+) without a copy", open(sys.argv[3]).read())
unwound, early, failed, nocopy = (int(x) for x in m.groups()) if m else (0, 0, 0, 0)
sys.exit(0 if nocopy > 0 and (early + failed) * 20 <= unwound else
         "%d of %d us unwound; stacks: %d to root, %d early, %d no frame, %d no copy"
         % (good, total, unwound, early, failed, nocopy))
PY
fi
