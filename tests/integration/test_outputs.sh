#!/usr/bin/env bash
# Output files of record, convert and replay: written to a temporary file and
# renamed at the end (record and replay keep the previous file as NAME.old),
# refusals are usage errors (exit 2) and touch nothing, a failed run deletes
# or truncates nothing the user owns; convert writes both outputs or
# neither, each conversion in a run folder of its own, and a full disk or a
# signal at any point of a conversion leaves no temporary file, no run
# folder and the previous output as it was.
. "$(dirname "$0")/lib.sh"
SMALL=$TMP/small
at_exit 'mountpoint -q "$SMALL" && umount "$SMALL"; rm -rf "$TMP"'

accel_argv 1 5
WLCMD=("${ACCEL_ARGV[@]}")
# no_temp NAME DIR: no temporary file anywhere under DIR.
no_temp() { check "$1" sh -c "! find '$2' -name '*.tmp' | grep -q ."; }
md5() { md5sum <"$1" 2>/dev/null; }

## record

# A device as the output: refused before anything runs, the device kept.
kx 2 record "${ACCEL_DEV[@]}" -o /dev/null -- "${WLCMD[@]}" >/dev/null 2>"$TMP/null.err"
check devnull_refused_says grep -q 'is a device, not a regular file' "$TMP/null.err"
check devnull_kept test -c /dev/null

# The traced program as the output: refused, and the program is kept.
cp "${WLCMD[0]}" "$TMP/prog"
sum=$(md5 "$TMP/prog")
kx 2 record "${ACCEL_DEV[@]}" -o "$TMP/prog" -- "$TMP/prog" "${WLCMD[@]:1}" >/dev/null 2>"$TMP/prog.err"
check prog_kept test "$(md5 "$TMP/prog")" = "$sum"

# An empty path, a directory: refused.
kx 2 record "${ACCEL_DEV[@]}" -o "" -- "${WLCMD[@]}" >/dev/null 2>"$TMP/empty.err"
check empty_path_says grep -q 'empty output path' "$TMP/empty.err"
kx 2 record "${ACCEL_DEV[@]}" -o "$TMP" -- "${WLCMD[@]}" >/dev/null 2>"$TMP/dir.err"
# A directory that does not exist: a failure while running (exit 1), named.
kx 1 record "${ACCEL_DEV[@]}" -o "$TMP/no/such/dir/x.kxp" -- "${WLCMD[@]}" >/dev/null 2>"$TMP/nodir.err"
check nodir_names_path grep -q "$TMP/no/such/dir/x.kxp" "$TMP/nodir.err"

# A good capture, then a run whose command cannot run: the capture survives untouched.
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/run.kxp" -- "${WLCMD[@]}" >/dev/null 2>"$TMP/run1.err"
sum=$(md5 "$TMP/run.kxp")
kx 127 record "${ACCEL_DEV[@]}" -o "$TMP/run.kxp" -- /nonexistent/command >/dev/null 2>"$TMP/run2.err"
check failed_run_keeps_file test "$(md5 "$TMP/run.kxp")" = "$sum"
check failed_run_no_old test ! -e "$TMP/run.kxp.old"
no_temp failed_run_no_temp "$TMP"

# A second good capture: the first becomes run.kxp.old, both readable.
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/run.kxp" -- "${WLCMD[@]}" >/dev/null 2>"$TMP/run3.err"
check old_is_previous test "$(md5 "$TMP/run.kxp.old")" = "$sum"
kx 0 report "$TMP/run.kxp" >"$TMP/rep.txt" 2>&1
kx 0 report "$TMP/run.kxp.old" >"$TMP/rep_old.txt" 2>&1
no_temp no_temp_left "$TMP"

## convert

IN=$TMP/run.kxp
OUT=$TMP/out
mkdir -p "$OUT"
# Refused before any work (exit 2), with the reason; nothing is written.
kx 2 convert "$IN" --chrome "$IN" >/dev/null 2>"$TMP/c1.err"
check convert_onto_input_says grep -q 'same file as the input' "$TMP/c1.err"
ln -s "$IN" "$OUT/link.json"
kx 2 convert "$IN" --chrome "$OUT/link.json" >/dev/null 2>"$TMP/c2.err"
check convert_onto_input_via_link grep -q 'same file as the input' "$TMP/c2.err"
check convert_input_kept test "$(md5 "$IN")" = "$(md5 "$TMP/run.kxp")"
kx 2 convert "$IN" --xplane "" >/dev/null 2>"$TMP/c3.err"
check convert_empty_logdir_says grep -q 'empty directory path' "$TMP/c3.err"
kx 2 convert "$IN" --chrome "" >/dev/null 2>"$TMP/c4.err"
kx 2 convert "$IN" --chrome /dev/null >/dev/null 2>"$TMP/c5.err"
kx 2 convert "$IN" --xplane "$IN" >/dev/null 2>"$TMP/c6.err"
check convert_logdir_file_says grep -q 'not a directory' "$TMP/c6.err"
# A bad output with a good one: neither is written.
kx 2 convert "$IN" --xplane "$OUT/ld0" --chrome /dev/null >/dev/null 2>&1
check convert_refusal_writes_nothing test ! -e "$OUT/ld0"

# Each conversion gets a run folder of its own: the same capture (the same
# start second) twice makes <run> and <run>-2, the first untouched.
kx 0 convert "$IN" --xplane "$OUT/ld" --chrome "$OUT/t.json" >"$TMP/cv1.out" 2>"$TMP/cv1.err"
xp1=$(sed -n 1p "$TMP/cv1.out")
s1=$(md5 "$xp1")
kx 0 convert "$IN" --xplane "$OUT/ld" --gpu >"$TMP/cv2.out" 2>"$TMP/cv2.err"
xp2=$(sed -n 1p "$TMP/cv2.out")
check run_folders_unique test -s "$xp1" -a -s "$xp2" -a "$(dirname "$xp2")" = "$(dirname "$xp1")-2"
check first_run_untouched test "$(md5 "$xp1")" = "$s1"
check one_marker test "$(ls "$OUT/ld" | grep -c 'profile-empty$')" -eq 1
# Chrome to standard output: the trace on stdout, the other path on stderr.
kx 0 convert "$IN" --xplane "$OUT/ld" --chrome - >"$TMP/stdout.json" 2>"$TMP/stdout.err"
check chrome_stdout_parses python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/stdout.json"
check chrome_stdout_paths_on_stderr grep -q 'xplane.pb$' "$TMP/stdout.err"
# speedscope: onto the input refused; to a file or alone on standard
# output; '-' beside another output refused.
kx 2 convert "$IN" --speedscope "$IN" >/dev/null 2>"$TMP/ss1.err"
check speedscope_onto_input_says grep -q 'same file as the input' "$TMP/ss1.err"
kx 2 convert "$IN" --speedscope - --chrome "$OUT/t2.json" >/dev/null 2>"$TMP/ss2.err"
check speedscope_stdout_alone_says grep -q 'only output on standard output' "$TMP/ss2.err"
check speedscope_refusal_writes_nothing test ! -e "$OUT/t2.json"
kx 0 convert "$IN" --speedscope "$OUT/s.json" >"$TMP/ss3.out" 2>/dev/null
check speedscope_path_printed grep -qx "$OUT/s.json" "$TMP/ss3.out"
kx 0 convert "$IN" --speedscope - >"$TMP/ss.stdout.json" 2>/dev/null
check speedscope_stdout_same cmp -s "$TMP/ss.stdout.json" "$OUT/s.json"
no_temp convert_no_temp "$OUT"

# A capture with many events: its outputs fill a small disk, and converting
# it lasts long enough to be interrupted anywhere.
accel_argv 1 10 "" -g 400000
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/big.kxp" -- "${ACCEL_ARGV[@]}" >/dev/null 2>"$TMP/big.err"
IN=$TMP/big.kxp

# A full disk (a 64 KiB tmpfs): exit 1 naming the path and the cause, the
# previous file kept, no temporary file, no run folder, no new parents.
mkdir -p "$SMALL"
if mount -t tmpfs -o size=64k kxprof-test "$SMALL" 2>"$TMP/mount.err"; then
	echo previous >"$SMALL/t.json.gz"
	kx 1 convert "$IN" --chrome "$SMALL/t.json.gz" >/dev/null 2>"$TMP/full.err"
	check enospc_message grep -q "t.json.gz.*No space left" "$TMP/full.err"
	check enospc_previous_kept grep -qx previous "$SMALL/t.json.gz"
	kx 1 convert "$IN" --xplane "$SMALL/ld" --chrome "$OUT/full-pair.json" >/dev/null 2>"$TMP/full2.err"
	check enospc_xplane_names_path grep -q "$SMALL/ld/plugins/profile/.*No space left" "$TMP/full2.err"
	check enospc_no_run_folder test ! -e "$SMALL/ld"
	check enospc_pair_not_written test ! -e "$OUT/full-pair.json"
	check enospc_only_previous test "$(ls -A "$SMALL")" = t.json.gz
	# record onto the full disk: exit 1, nothing left behind but the previous file
	kx 1 record "${ACCEL_DEV[@]}" -o "$SMALL/t.json.gz" -- "${ACCEL_ARGV[@]}" >/dev/null 2>"$TMP/full3.err"
	check enospc_record_says grep -q "No space left" "$TMP/full3.err"
	check enospc_record_only_previous test "$(ls -A "$SMALL")" = t.json.gz
	umount "$SMALL"
else
	skip enospc "cannot mount a tmpfs: $(head -c 200 "$TMP/mount.err")"
fi

# Signals at random points of a conversion (SIGINT, SIGTERM, SIGHUP, SIGQUIT):
# killed, the conversion leaves no temporary file, no run folder and the
# previous Chrome file byte for byte (or, killed while committing, both new
# outputs complete); finished before the signal, both outputs are complete.
if [ -s "$IN" ]; then
	SIG=$TMP/sig
	mkdir -p "$SIG"
	start=$(date +%s%N)
	kx 0 convert "$IN" --chrome "$SIG/t.json.gz" --xplane "$SIG/ld" >/dev/null 2>&1
	took_us=$((($(date +%s%N) - start) / 1000))
	echo "one conversion takes ${took_us} us here"
	killed=0 finished=0 bad=0
	for i in $(seq 1 12); do
		sig=$(echo INT TERM HUP QUIT | cut -d' ' -f$((i % 4 + 1)))
		before=$(md5 "$SIG/t.json.gz")
		ino=$(stat -c %i "$SIG/t.json.gz")
		runs=$(ls "$SIG/ld/plugins/profile" | wc -l)
		delay=$(python3 -c "import random; print('%.6f' % (random.random() * $took_us / 1e6))")
		"$KXPROF" convert "$IN" --chrome "$SIG/t.json.gz" --xplane "$SIG/ld" >/dev/null 2>&1 &
		c=$!
		sleep "$delay"
		kill -"$sig" $c 2>/dev/null
		wait $c 2>/dev/null
		rc=$?
		leftovers=$(find "$SIG" -name '*.tmp' | wc -l)
		nruns=$(ls "$SIG/ld/plugins/profile" | wc -l)
		if [ "$rc" -eq 0 ]; then
			finished=$((finished + 1))
			# complete: a new run with its profile, a gzip trace that parses
			if [ "$nruns" -ne $((runs + 1)) ] || [ "$leftovers" -ne 0 ] ||
				! python3 -c 'import gzip,json,sys; json.load(gzip.open(sys.argv[1]))' "$SIG/t.json.gz"; then
				fail "signal_$i" "finished (rc 0) but runs $runs -> $nruns, $leftovers temporary files"
				bad=$((bad + 1))
			fi
		elif [ "$rc" -eq $((128 + $(kill -l "$sig"))) ]; then
			killed=$((killed + 1))
			# A signal that arrives while both outputs are being renamed
			# into place is held until they are: then both are new (a new
			# run, a new Chrome file), or neither is.
			nino=$(stat -c %i "$SIG/t.json.gz")
			if [ "$nruns" -eq $((runs + 1)) ] && [ "$nino" != "$ino" ] && [ "$leftovers" -eq 0 ] &&
				python3 -c 'import gzip,json,sys; json.load(gzip.open(sys.argv[1]))' "$SIG/t.json.gz"; then
				echo "signal_$i: SIG$sig arrived during the commit; both outputs complete"
			elif [ "$nruns" -ne "$runs" ] || [ "$leftovers" -ne 0 ] || [ "$nino" != "$ino" ] ||
				[ "$(md5 "$SIG/t.json.gz")" != "$before" ]; then
				fail "signal_$i" "SIG$sig after ${delay}s: runs $runs -> $nruns, $leftovers temporary files, previous trace changed: $([ "$(md5 "$SIG/t.json.gz")" != "$before" ] && echo yes || echo no)"
				bad=$((bad + 1))
			fi
		else
			fail "signal_$i" "convert exited $rc after SIG$sig at ${delay}s"
			bad=$((bad + 1))
		fi
	done
	echo "signals: $killed conversions killed, $finished finished first"
	check signals_leave_nothing test $bad -eq 0
	check signals_some_killed test $killed -ge 1
fi

## replay

FIX=$(cd "$(dirname "$0")/../fixtures" && pwd)
cp "$FIX/block.jsonl" "$OUT/f.jsonl"
kx 2 replay "$OUT/f.jsonl" -o "$OUT/f.jsonl" >/dev/null 2>"$TMP/r1.err"
check replay_onto_input_says grep -q 'same file as the input' "$TMP/r1.err"
check replay_input_kept cmp -s "$FIX/block.jsonl" "$OUT/f.jsonl"
kx 2 replay "$OUT/f.jsonl" -o /dev/null >/dev/null 2>&1
kx 0 replay "$OUT/f.jsonl" -o "$OUT/f.kxp" >/dev/null 2>&1
kx 0 replay "$OUT/f.jsonl" -o "$OUT/f.kxp" >/dev/null 2>&1
check replay_keeps_old test -s "$OUT/f.kxp.old"
no_temp replay_no_temp "$OUT"

# Safe output: each file is flushed to the disk (fsync of the temporary
# file's own descriptor) before it is renamed over its name: counted under
# strace for convert (a Chrome trace) and replay (a record file).
# LeakSanitizer cannot run under ptrace: off there.
if command -v strace >/dev/null; then
	for what in convert replay; do
		if [ $what = convert ]; then
			args=(convert "$IN" --chrome "$OUT/synced.json")
			final=$OUT/synced.json
		else
			args=(replay "$OUT/f.jsonl" -o "$OUT/synced.kxp")
			final=$OUT/synced.kxp
		fi
		env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq \
			-e trace=openat,open,creat,fsync,fdatasync,close,rename,renameat,renameat2 \
			-o "$TMP/sync.$what" "$KXPROF" "${args[@]}" >/dev/null 2>&1
		check "fsync_before_rename_$what" python3 - "$TMP/sync.$what" "$final" <<'PY'
import re, sys
final = sys.argv[2]
lines = [re.sub(r"^\d+\s+", "", l.strip()) for l in open(sys.argv[1])]
ren = [i for i, l in enumerate(lines)
       if re.match(r'rename(at2?)?\(.*"%s"' % re.escape(final), l) and l.endswith("= 0")]
if not ren:
    print("# no rename onto %s" % final); sys.exit(1)
i = ren[-1]
tmp = re.findall(r'"([^"]*)"', lines[i])[0]
opens = [(k, int(l.rsplit("= ", 1)[1])) for k, l in enumerate(lines[:i])
         if re.match(r'(openat|open|creat)\(.*"%s"' % re.escape(tmp), l) and re.search(r"= \d+$", l)]
if not opens:
    print("# %s: no open of %s" % (final, tmp)); sys.exit(1)
k, fd = opens[-1]
synced = closed = None
for j in range(k + 1, i):
    if synced is None and re.match(r"f(data)?sync\(%d\)\s+= 0" % fd, lines[j]):
        synced = j
    if closed is None and re.match(r"close\(%d\)" % fd, lines[j]):
        closed = j
print("# %s: opened as fd %d (line %d), fsync at %s, closed at %s, renamed at %d"
      % (tmp, fd, k, synced, closed, i))
sys.exit(not (synced is not None and (closed is None or synced < closed)))
PY
	done
else
	skip fsync_before_rename "strace is missing"
fi
