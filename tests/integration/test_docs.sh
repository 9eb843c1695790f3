#!/usr/bin/env bash
# The documentation agrees with the program: each command's page in docs/
# holds its --help verbatim and names every option, `kxprof help CMD` is
# `kxprof CMD --help`, `make install` puts the man pages where `man` finds
# them and each names every option, the README stays a front door (at most
# 300 lines), and every relative link in README.md, tests/README.md and
# docs/*.md resolves.
# Needs no root and no BPF.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CMDS="record report convert list replay top serve"

# The options a --help names: long ones anywhere, short ones where an option
# line starts ("  -o, --output").
options() {
	python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
opts = set(re.findall(r'(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]', t))
opts |= set(re.findall(r'(?m)^\s+(-[A-Za-z]),', t))
print('\n'.join(sorted(opts)))
PY
}

# every_option HELP FILE: each option of HELP occurs in FILE as a word.
every_option() {
	local o missing=""
	for o in $(options "$1"); do
		grep -qe "\(^\|[^[:alnum:]-]\)$o\([^[:alnum:]-]\|$\)" "$2" || missing="$missing $o"
	done
	[ -z "$missing" ] && return 0
	echo "  not in $2:$missing" >&3
	return 1
}

# help_block PAGE HELP: the page's code block that starts with HELP's first
# line is HELP, byte for byte.
help_block() {
	python3 - "$1" "$2" <<'PY'
import sys
page, want = open(sys.argv[1]).read(), open(sys.argv[2]).read()
first = want.split('\n', 1)[0]
i = page.find('```\n' + first + '\n')
if i < 0:
    sys.exit('no block starting with %r in %s' % (first, sys.argv[1]))
i += 4
got = page[i:page.index('```', i)]
if got != want:
    import difflib
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True), '--help', sys.argv[1]))
    sys.exit(1)
PY
}

kx 0 --help >"$TMP/help-kxprof.txt" 2>&1 &&
	check top_help_in_docs help_block "$ROOT/docs/kxprof.md" "$TMP/help-kxprof.txt"
for c in $CMDS; do
	page=$ROOT/docs/kxprof-$c.md
	kx 0 "$c" --help >"$TMP/help-$c.txt" 2>&1 || continue
	kx 0 help "$c" >"$TMP/helpcmd-$c.txt" 2>&1 &&
		check "help_${c}_is_${c}_help" cmp -s "$TMP/help-$c.txt" "$TMP/helpcmd-$c.txt"
	if [ ! -f "$page" ]; then
		fail "docs_$c" "no $page"
		continue
	fi
	check "docs_${c}_holds_help" help_block "$page" "$TMP/help-$c.txt"
	check "docs_${c}_every_option" every_option "$TMP/help-$c.txt" "$page"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES "EXIT STATUS" FILES ENVIRONMENT "SEE ALSO"; do
		grep -qx "# $s" "$page" || fail "docs_${c}_sections" "no '# $s' in $page"
	done
done
kx 2 help no-such-command >/dev/null 2>&1
check help_unknown_command_exit_2 test $? -eq 0

# make install: the man pages under PREFIX/share/man/man1, where man -M finds
# them, each naming every option of its command's --help.
if [ "$(basename "$BUILD_DIR")" = build-san ] && [ "$BUILD_DIR" -ef "$ROOT/build-san" ]; then
	san=1
elif [ "$BUILD_DIR" -ef "$ROOT/build" ]; then
	san=0
else
	san=
fi
if ! command -v man >/dev/null; then
	skip man_pages "no man here (apt-get install man-db)"
elif [ -z "$san" ]; then
	skip man_pages "BUILD_DIR $BUILD_DIR is not $ROOT/build or build-san: make install would build another tree"
elif ! make -s -C "$ROOT" SAN="$san" install DESTDIR="$TMP/root" PREFIX=/usr >"$TMP/install.log" 2>&1; then
	fail make_install "$(tail -5 "$TMP/install.log")"
else
	M=$TMP/root/usr/share/man
	for c in kxprof $CMDS; do
		name=kxprof-$c help=$TMP/help-$c.txt
		[ "$c" = kxprof ] && name=kxprof help=$TMP/help-kxprof.txt
		check "man_${c}_installed" test -f "$M/man1/$name.1"
		check "man_${c}_found" test "$(man -M "$M" -w "$name" 2>/dev/null)" = "$M/man1/$name.1"
		LC_ALL=C MANWIDTH=200 man -M "$M" "$name" 2>"$TMP/man-$c.err" | col -bx >"$TMP/man-$c.txt"
		# groff's only allowed complaint: a table wider than the line (groff
		# 1.22: "... line width", 1.23: "... line length minus indentation").
		check "man_${c}_renders" test -s "$TMP/man-$c.txt" -a -z "$(grep -v -e 'table wider than line \(width\|length\)' \
			-e "^warning: file '<standard input>', around line [0-9]*:\$" "$TMP/man-$c.err")"
		[ -f "$help" ] && check "man_${c}_every_option" every_option "$help" "$TMP/man-$c.txt"
	done
	# The usage line survives roff whole (no line taken for a macro).
	check man_record_usage grep -q "usage: kxprof record \[-o FILE\]" "$TMP/man-record.txt"
	check man_kxprof_help_line grep -q "'kxprof help COMMAND' (or 'kxprof COMMAND --help')" "$TMP/man-kxprof.txt"
fi

lines=$(wc -l <"$ROOT/README.md")
check "readme_at_most_300_lines_($lines)" test "$lines" -le 300

# Every relative link of README.md, tests/README.md and docs/*.md names an existing file, and
# its #anchor a heading of that file (GitHub's rule for heading anchors).
python3 - "$ROOT" >"$TMP/links.out" <<'PY'
import glob, os, re, sys
root = sys.argv[1]
def slug(h):
    h = re.sub(r'[^\w\- ]', '', h.strip().lower())
    return h.replace(' ', '-')
def anchors(path):
    out, fence = set(), False
    for line in open(path):
        if line.startswith('```'):
            fence = not fence
        elif not fence and re.match(r'#{1,6} ', line):
            out.add(slug(line.lstrip('#')))
    return out
bad = 0
for f in [os.path.join(root, 'README.md'), os.path.join(root, 'tests', 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md'))):
    fence = False
    for n, line in enumerate(open(f), 1):
        if line.startswith('```'):
            fence = not fence
            continue
        if fence:
            continue
        for target in re.findall(r'\]\(([^)\s]+)\)', re.sub(r'`[^`]*`', '', line)):
            if re.match(r'[a-z]+:', target):
                continue
            path, _, anchor = target.partition('#')
            full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            where = '%s:%d: %s' % (os.path.relpath(f, root), n, target)
            if not os.path.isfile(full):
                print('missing file', where); bad += 1
            elif anchor and full.endswith('.md') and anchor not in anchors(full):
                print('missing anchor', where); bad += 1
sys.exit(1 if bad else 0)
PY
rc=$?
check links_resolve test "$rc" -eq 0
[ "$rc" -eq 0 ] || sed 's/^/  /' "$TMP/links.out"
