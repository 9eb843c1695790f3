#!/usr/bin/env bash
# Each CPU sample is its own task's: record -F of spin_tasks (a main thread,
# a second thread and a forked child process, spinning at once, each in a
# function of its own) and every output's pid and tid for each function's
# samples are the task's that ran it: pprof's pid, tid and thread labels,
# folded stacks' thread name, Chrome's cpu_sample instants, speedscope's
# per-thread profiles. A pid and tid swapped anywhere, or one written for
# the other, puts the second thread's samples on the main thread.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip sample_tasks "needs root (loads BPF, opens perf events)"
	exit 0
fi
export HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
mkdir -p "$HOME"
TRACES=$(dirname "$0")/pprof_traces.py

"$KXPROF" record -F 499 -o "$TMP/t.kxp" -- "$WL/spin_tasks" -s 1 >"$TMP/wl.json" 2>"$TMP/rec.err"
rc=$?
check tasks_record_exit [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { cat "$TMP/rec.err"; exit 0; }
P=$(jget "$TMP/wl.json" 'd["pid"]')
T=$(jget "$TMP/wl.json" 'd["tid_thread"]')
C=$(jget "$TMP/wl.json" 'd["child_pid"]')
check tasks_workload_ids python3 -c 'import sys; a = sys.argv[1:]; sys.exit(not (all(x.isdigit() for x in a) and len(set(a)) == 3))' "$P" "$T" "$C"
"$KXPROF" convert "$TMP/t.kxp" --pprof "$TMP/t.pb.gz" --folded "$TMP/t.folded" \
	--chrome "$TMP/t.json" --speedscope "$TMP/t.ss.json" >/dev/null 2>"$TMP/conv.err"
check tasks_convert_exit [ $? -eq 0 ]

# pprof: every trace holding a task's function carries that task's labels.
if command -v go >/dev/null; then
	go tool pprof -traces "$TMP/t.pb.gz" >"$TMP/t.traces" 2>&1
	check tasks_pprof_exit [ $? -eq 0 ]
	check tasks_pprof_main python3 "$TRACES" "$TMP/t.traces" task kxw_task_main "$P" "$P" spin_tasks
	check tasks_pprof_thread python3 "$TRACES" "$TMP/t.traces" task kxw_task_thread "$P" "$T" kxw_thread
	check tasks_pprof_child python3 "$TRACES" "$TMP/t.traces" task kxw_task_child "$C" "$C" kxw_child
else
	fail tasks_pprof_tool "go is missing (Debian golang-go; scripts/install-deps.sh installs it)"
fi

# folded: each task's lines lead with its own thread's name.
check tasks_folded python3 - "$TMP/t.folded" <<'PY'
import sys
want = {"kxw_task_main": "spin_tasks", "kxw_task_thread": "kxw_thread", "kxw_task_child": "kxw_child"}
seen, bad = {f: 0 for f in want}, []
for l in open(sys.argv[1]):
    frames = l.rsplit(" ", 1)[0].split(";")
    for f, name in want.items():
        if f in frames[1:]:
            seen[f] += 1
            if frames[0] != name:
                bad.append(l.strip())
print("# lines per function %s; %d under another thread's name %s" % (seen, len(bad), bad[:2]))
sys.exit(bool(bad) or not all(seen.values()))
PY

# Chrome: each cpu_sample instant named after a task's function is on it.
check tasks_chrome python3 - "$TMP/t.json" "$P" "$T" "$C" <<'PY'
import json, sys
p, t, c = map(int, sys.argv[2:5])
want = {"kxw_task_main": (p, p), "kxw_task_thread": (p, t), "kxw_task_child": (c, c)}
d = json.load(open(sys.argv[1]))
seen, bad = {f: 0 for f in want}, []
for e in d["traceEvents"]:
    if e.get("cat") == "cpu_sample" and e.get("name") in want:
        seen[e["name"]] += 1
        if (e.get("pid"), e.get("tid")) != want[e["name"]]:
            bad.append((e["name"], e.get("pid"), e.get("tid")))
print("# instants per function %s; %d on another task %s" % (seen, len(bad), bad[:2]))
sys.exit(bool(bad) or not all(seen.values()))
PY

# speedscope: each thread's CPU profile holds its own function's samples only.
check tasks_speedscope python3 - "$TMP/t.ss.json" "$P" "$T" "$C" <<'PY'
import json, re, sys
p, t, c = map(int, sys.argv[2:5])
want = {(p, p): "kxw_task_main", (p, t): "kxw_task_thread", (c, c): "kxw_task_child"}
d = json.load(open(sys.argv[1]))
names = [f["name"] for f in d["shared"]["frames"]]
found, bad = {}, []
for prof in d["profiles"]:
    m = re.search(r"\(pid (\d+), tid (\d+)\): CPU samples$", prof["name"])
    if not m:
        continue
    key = (int(m.group(1)), int(m.group(2)))
    fns = {names[i] for s in prof["samples"] for i in s} & set(want.values())
    for f in fns:
        found[f] = found.get(f, 0) + 1
        if want.get(key) != f:
            bad.append((prof["name"], f))
print("# profiles holding each function %s; misplaced %s" % (found, bad[:2]))
sys.exit(bool(bad) or sorted(found) != sorted(want.values()) or any(v != 1 for v in found.values()))
PY
