#!/usr/bin/env bash
# Perf maps: code with no ELF behind it named through /tmp/perf-PID.map.
#  - build/tests/jit_workload copies a loop into an anonymous executable
#    buffer, names it kxjit_spin in its own perf map and spins there: most
#    of its samples are kxjit_spin (module /tmp/perf-PID.map), read while it
#    ran or at the end;
#  - --call-graph dwarf through JIT code (no CFI): jit_workload --stub calls
#    a C leaf through a trampoline that keeps a frame pointer, in a program
#    without frame pointers: the walk steps the trampoline by its frame
#    pointer and goes on with CFI (main;kx_jit_caller;kxjit_stub;kx_jit_leaf
#    on one line); --stub-nofp's trampoline keeps none: the walks stop there,
#    the recording counts them as stopped at JIT code and does not advise a
#    larger copy; --stub-py's keeps none either but is named as CPython
#    names its -X perf trampolines (py::...): stepped by its known layout
#    (main;kx_jit_caller;py::kxjit_py;kx_jit_leaf), and counted;
#  - a perf map that is not the process's user's own file (a symlink) is not
#    read, and the recording says so;
#  - Python >= 3.12 (/usr/bin/python3) with -X perf and --call-graph dwarf
#    (the unwinding distribution Pythons, built without frame pointers,
#    need): the Python function names of the program show, kx_py_hot above
#    kx_py_leaf on one stack, whether or not the interpreter keeps frame
#    pointers (its trampolines are stepped as such). Skipped with the reason
#    on older Pythons (Debian 12 has 3.11, which writes no perf map).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip perfmap "needs root (loads BPF, opens perf events)"
	exit 0
fi
MAPS=()
at_exit 'rm -f "${MAPS[@]}"; rm -rf "$TMP"'

# jit_record NAME CHECK CALL_GRAPH WORKLOAD_ARGS...: jit_workload recorded into
# $TMP/NAME.kxp (its JSON line in NAME.json, record's stderr in NAME.err; no
# --call-graph when CALL_GRAPH is empty), CHECK_record_exit checked, its perf
# map removed at exit.
jit_record() {
	local name=$1 chk=$2 cg=$3
	shift 3
	"$KXPROF" record -F 499 ${cg:+--call-graph "$cg"} -o "$TMP/$name.kxp" -- "$WL/jit_workload" "$@" \
		>"$TMP/$name.json" 2>"$TMP/$name.err"
	check "${chk}_record_exit" [ $? -eq 0 ]
	MAPS+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["map"])' "$TMP/$name.json")")
}
# share CHECK FOLDED FRAMES: at least 50 jit_workload samples, 80% of them
# with the frames FRAMES (";"-separated, in caller order) on their stack.
share() {
	check "$1" python3 -c '
import sys
total = hit = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    if not stack.startswith("jit_workload;"):
        continue
    total += int(n)
    hit += int(n) * ((";%s;" % sys.argv[2]) in (";%s;" % stack))
print("# %d of %d jit_workload samples %s" % (hit, total, sys.argv[2]))
sys.exit(total < 50 or hit * 10 < total * 8)' "$2" "$3"
}

# ---- a JIT of our own ----
jit_record j jit "" 2
"$KXPROF" convert "$TMP/j.kxp" --folded "$TMP/j.folded" >/dev/null
check jit_convert_exit [ $? -eq 0 ]
share jit_named "$TMP/j.folded" kxjit_spin

# ---- --call-graph dwarf through JIT code ----
jit_record d jit_dwarf dwarf 2 --stub
"$KXPROF" convert "$TMP/d.kxp" --folded "$TMP/d.folded" >/dev/null
# Most samples are in kx_jit_leaf: nearly all of them go up to main.
share jit_dwarf_steps "$TMP/d.folded" "main;kx_jit_caller;kxjit_stub;kx_jit_leaf"
check jit_dwarf_steps_counted grep -q "JIT code (no CFI): [1-9][0-9]* frames stepped" "$TMP/d.err"
jit_record n jit_nofp dwarf 1 --stub-nofp
check jit_nofp_stops_counted grep -q "[1-9][0-9]* stacks stopped there (no usable frame pointer)" \
	"$TMP/n.err"
check jit_nofp_said grep -q "most stacks stopped at JIT code that keeps no frame pointer" "$TMP/n.err"
check jit_nofp_no_copy_advice bash -c '! grep -q "a larger copy (--call-graph" "$1"' _ "$TMP/n.err"
# Not named as a CPython trampoline: not stepped as one.
check jit_nofp_not_stepped bash -c '! grep -q "[1-9][0-9]* CPython trampolines stepped" "$1"' _ "$TMP/n.err"
jit_record y jit_py dwarf 2 --stub-py
"$KXPROF" convert "$TMP/y.kxp" --folded "$TMP/y.folded" >/dev/null
share jit_py_steps "$TMP/y.folded" "main;kx_jit_caller;py::kxjit_py:/x.py;kx_jit_leaf"
check jit_py_steps_counted grep -q "[1-9][0-9]* CPython trampolines stepped" "$TMP/y.err"

# ---- a perf map that is not the process's own file is not read ----
# The workload's pid is known only once it runs: a symlink planted by a
# wrapper shell that then execs it (same pid) stands in for another's file.
echo "0 ffffffffffff kx_planted" >"$TMP/planted.map"
"$KXPROF" record -F 499 -o "$TMP/s.kxp" -- sh -c \
	'ln -sf "$1" /tmp/perf-$$.map; echo $$ >"$2"; exec "$3" 1 --no-map' _ \
	"$TMP/planted.map" "$TMP/s.pid" "$WL/jit_workload" >/dev/null 2>"$TMP/s.err"
check symlink_record_exit [ $? -eq 0 ]
[ -s "$TMP/s.pid" ] && MAPS+=("/tmp/perf-$(cat "$TMP/s.pid").map")
"$KXPROF" convert "$TMP/s.kxp" --folded "$TMP/s.folded" >/dev/null
check symlink_not_read bash -c '! grep -q kx_planted "$1"' _ "$TMP/s.folded"
check symlink_said grep -q "perf-[0-9]*\.map.*not read\|cannot open /tmp/perf" "$TMP/s.err"

# ---- Python -X perf ----
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
	skip python_perf_names "$PY is $("$PY" -V 2>&1 || echo missing): -X perf needs Python 3.12 or newer"
	exit 0
fi
cat >"$TMP/hot.py" <<'PYEOF'
import time
def kx_py_leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def kx_py_hot():
    end = time.monotonic() + 2
    while time.monotonic() < end:
        kx_py_leaf(20000)
kx_py_hot()
import os
print(os.getpid())
PYEOF
"$KXPROF" record -F 499 --call-graph dwarf -o "$TMP/py.kxp" -- "$PY" -X perf "$TMP/hot.py" \
	>"$TMP/py.pid" 2>"$TMP/py.err"
check python_record_exit [ $? -eq 0 ]
MAPS+=("/tmp/perf-$(cat "$TMP/py.pid").map")
"$KXPROF" convert "$TMP/py.kxp" --folded "$TMP/py.folded" >/dev/null
check python_perf_leaf grep -q "py::kx_py_leaf" "$TMP/py.folded"
# Built without frame pointers (Debian 13) its trampolines keep none:
# stepped as CPython trampolines all the same.
check python_perf_chain grep -q "py::kx_py_hot[^ ]*;.*py::kx_py_leaf" "$TMP/py.folded"
