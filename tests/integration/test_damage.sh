#!/usr/bin/env bash
# A real capture of many chunks (the stand-in accelerator, lib.sh), damaged on purpose: a bit flipped in the
# first chunk's data or header costs that chunk alone (the rest of the events
# and the trailer are reported, exit 0, the warning names chunk 1); a file
# without its trailer prints its unknown figures as unknown; cut short and
# corrupt are worded apart; convert warns the same way.
. "$(dirname "$0")/lib.sh"

# run NAME CMD...: runs the command, output in $TMP/NAME.out/.err; FAIL unless it exits 0.
run() {
	local name=$1
	shift
	if "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"; then
		return 0
	fi
	fail "$name" "exit $? from $*: $(head -c 400 "$TMP/$name.err")"
	return 1
}

# chunks FILE: "offset length" of each chunk (32-byte headers, see user/io/kxp_layout.h)
chunks() {
	python3 - "$1" <<'EOF'
import struct, sys
b = open(sys.argv[1], 'rb').read()
off = struct.unpack_from('<I', b, 12)[0]
while off + 32 <= len(b):
    clen = struct.unpack_from('<I', b, off + 12)[0]
    print(off, 32 + clen)
    off += 32 + clen
EOF
}

# flip FILE OFFSET OUT: OUT is FILE with one bit of byte OFFSET flipped
flip() {
	python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[int(sys.argv[2])] ^= 0x10
open(sys.argv[3], "wb").write(b)' "$1" "$2" "$3"
}

# summarized NAME: the ioctl count of report NAME's JSON
summarized() {
	jget "$TMP/$1.out" 'sum(r["Total Count"] for c, rows in d["Time"].items() if c.startswith("ioctl/") for r in rows.values())'
}

accel_argv 1 20 "" -g 300000
run record "$KXPROF" record "${ACCEL_DEV[@]}" -o "$TMP/full.kxp" -- "${ACCEL_ARGV[@]}" || exit 0
chunks "$TMP/full.kxp" >"$TMP/chunks"
nch=$(wc -l <"$TMP/chunks")
check many_chunks test "$nch" -ge 4
read -r off1 len1 < <(sed -n 1p "$TMP/chunks")
trailer_off=$(tail -n 1 "$TMP/chunks" | cut -d' ' -f1)

run full "$KXPROF" report --json "$TMP/full.kxp" || exit 0
all=$(summarized full)
emitted=$(jget "$TMP/full.out" 'd["Capture"]["emitted"]')
# The first chunk's ioctls: the file cut after it.
head -c $((off1 + len1)) "$TMP/full.kxp" >"$TMP/first.kxp"
run first "$KXPROF" report --json "$TMP/first.kxp" || exit 0
in_first=$(summarized first)
check first_chunk_has_ioctls test "$in_first" -gt 0

# A bit flipped in the first chunk's data, then in its header.
for where in data header; do
	if [ $where = data ]; then at=$((off1 + 32 + len1 / 2)); else at=$((off1 + 9)); fi
	flip "$TMP/full.kxp" "$at" "$TMP/bad_$where.kxp"
	run "bad_$where" "$KXPROF" report --json "$TMP/bad_$where.kxp" || continue
	got=$(summarized "bad_$where")
	check "bad_${where}_keeps_the_rest" test "$got" -eq $((all - in_first))
	check "bad_${where}_keeps_the_trailer" test "$(jget "$TMP/bad_$where.out" \
		'(d["Capture"]["truncated"], d["Capture"]["emitted"])')" = "(False, $emitted)"
	check "bad_${where}_names_chunk_1" grep -q \
		"is damaged: chunk 1 at offset $off1 is corrupt (.*): skipped, $len1 bytes lost" \
		"$TMP/bad_$where.err"
	check "bad_${where}_warns_in_report" test "$(jget "$TMP/bad_$where.out" \
		'sum(w.startswith("record file is corrupt: 1 damaged stretch skipped (first at chunk 1)") for w in d["Warnings"])')" = 1
done

# No trailer: the figures only it holds are unknown, not 0; not called corrupt.
head -c "$trailer_off" "$TMP/full.kxp" >"$TMP/notrailer.kxp"
if run notrailer "$KXPROF" report "$TMP/notrailer.kxp"; then
	check no_trailer_unknown grep -q "duration unknown; events emitted unknown (no trailer), received $all, dropped unknown, not stored unknown; $all ioctls summarized" "$TMP/notrailer.out"
	check no_trailer_warned grep -q "is incomplete: no trailer after chunk $((nch - 1))" "$TMP/notrailer.err"
	check no_trailer_not_corrupt sh -c "! grep -q corrupt '$TMP/notrailer.err' '$TMP/notrailer.out'"
fi
if run notrailer_json "$KXPROF" report --json "$TMP/notrailer.kxp"; then
	check no_trailer_json_null test "$(jget "$TMP/notrailer_json.out" \
		'(d["Capture"]["duration_ms"], d["Capture"]["emitted"], d["Capture"]["received"], d["Capture"]["truncated"])')" = "(None, None, $all, True)"
fi

# Cut inside the last events chunk (half its data gone; its size varies
# with the run and the compressor): cut short, not corrupt.
read -r _ lenlast < <(sed -n "$((nch - 1))p" "$TMP/chunks")
gone=$(((lenlast - 31) / 2))
head -c $((trailer_off - gone)) "$TMP/full.kxp" >"$TMP/cut.kxp"
if run cut "$KXPROF" report "$TMP/cut.kxp"; then
	check cut_short_worded grep -q "is incomplete: file cut short inside chunk $((nch - 1)) at offset .* ($((lenlast - gone)) bytes ignored)" "$TMP/cut.err"
	check cut_not_corrupt sh -c "! grep -q corrupt '$TMP/cut.err'"
fi

# convert reads around the damage too, and its outputs carry the warning.
if run convert "$KXPROF" convert "$TMP/bad_data.kxp" --chrome "$TMP/bad.json" --xplane "$TMP/logdir"; then
	check convert_names_chunk_1 grep -q "is damaged: chunk 1 at offset $off1" "$TMP/convert.err"
	check convert_chrome_warns grep -q "record file is corrupt: 1 damaged stretch" "$TMP/bad.json"
	check convert_xspace_warns grep -rqa "record file is corrupt: 1 damaged stretch" "$TMP/logdir"
fi

# --help says what happens to a damaged file, in the words of docs/kxp-format.md.
for cmd in report convert; do
	if run "help_$cmd" "$KXPROF" "$cmd" --help; then
		check "help_${cmd}_damage" grep -q "^A damaged FILE is read around the damage (exit 0): corrupt chunks are skipped" "$TMP/help_$cmd.out"
		check "docs_${cmd}_damage" grep -q "A damaged FILE is read around the damage (exit 0): corrupt chunks are" "$(dirname "$0")/../../docs/kxp-format.md"
	fi
done
