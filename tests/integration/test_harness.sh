#!/usr/bin/env bash
# kxtest: normal check (no kxprof run: the scripts' own library)
# The test library itself (lib.sh). at_exit's commands run in the script's own
# shell only: a signal that reaches a child bash has forked for `cmd &` but not
# yet exec'd (the signal tests kill a conversion at a random moment, at once
# included) leaves the script's $TMP in place, and the script's own end, by
# exit or by a signal, still removes it.
. "$(dirname "$0")/lib.sh"
LIB=$(cd "$(dirname "$0")" && pwd)/lib.sh

# child.sh MODE: sources lib.sh, prints its $TMP, then by MODE: race (400
# children signalled as soon as they are forked; says whether $TMP
# survived), exit, or wait (until a signal ends it).
cat >"$TMP/child.sh" <<EOF
. "$LIB"
echo "\$TMP"
case \$1 in
race)
	for i in \$(seq 1 100); do
		for s in INT TERM HUP QUIT; do
			/bin/true &
			kill -\$s \$! 2>/dev/null
			wait \$! 2>/dev/null
			[ -d "\$TMP" ] || { echo "\$TMP vanished at round \$i (SIG\$s)"; exit 1; }
		done
	done
	echo survived ;;
exit) exit 0 ;;
wait) while :; do sleep 0.05; done ;;
esac
EOF

bash "$TMP/child.sh" race >"$TMP/race.out" 2>&1
check harness_signalled_children_keep_tmp grep -qx survived "$TMP/race.out"
grep -v '^/tmp/' "$TMP/race.out" | grep -vx survived
check harness_race_tmp_removed_at_exit test ! -e "$(head -n 1 "$TMP/race.out")"

bash "$TMP/child.sh" exit >"$TMP/exit.out" 2>&1
check harness_exit_removes_tmp test -n "$(head -n 1 "$TMP/exit.out")" -a ! -e "$(head -n 1 "$TMP/exit.out")"

# Ended by SIGTERM: the script's own trap runs and removes its $TMP.
bash "$TMP/child.sh" wait >"$TMP/wait.out" 2>&1 &
w=$!
for _ in $(seq 1 100); do [ -s "$TMP/wait.out" ] && break; sleep 0.05; done
d=$(head -n 1 "$TMP/wait.out")
check harness_wait_made_tmp test -n "$d" -a -d "$d"
kill -TERM $w
wait $w
check harness_term_ends_script test $? -eq 143
check harness_term_removes_tmp test ! -e "$d"
