#!/usr/bin/env python3
"""The tracer's own CPU while a workload runs under it (tests/bench/run.sh).

  tracer_cpu.py ROOT_PID WORKLOAD_COMM [WINDOW_S]

Waits until a process named WORKLOAD_COMM runs among the descendants of
ROOT_PID, lets it settle (0.4 x WINDOW_S), then measures for WINDOW_S (default 0.5)
the on-CPU time (/proc/PID/task/TID/schedstat, ns) of every other process in
the tree: the tracer and its helper threads, not the workload, whose own
slowdown the workload measures itself. Prints the CPUs they kept busy
(0.25 = a quarter of one CPU), or nothing if the workload never showed up
or ended before the window did (a process gone takes its CPU time along).
Setup costs (BPF load, compilers) fall outside the window by design.
"""
import os
import sys
import time


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: fields follow the last ')'.
        comm = s[s.index("(") + 1 : s.rindex(")")]
        ppid = int(s[s.rindex(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append((int(d), comm))
    return kids


def tree(root):
    kids = children_map()
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c, comm in kids.get(p, []):
            out.append((c, comm))
            todo.append(c)
    return out


def comm_of(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return False
    return s[s.rindex(")") + 2] not in "ZX"


def on_cpu_ns(pid):
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def tracer_pids(root, workload):
    pids = [root] if comm_of(root) != workload else []
    return pids + [p for p, comm in tree(root) if comm != workload]


def main():
    root, workload = int(sys.argv[1]), sys.argv[2][:15]
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    for _ in range(500):
        wl = [p for p, comm in tree(root) if comm == workload]
        if wl:
            break
        time.sleep(0.01)
    else:
        return
    time.sleep(0.4 * window)
    pids = tracer_pids(root, workload)
    a = sum(on_cpu_ns(p) for p in pids)
    t0 = time.monotonic_ns()
    time.sleep(window)
    b = sum(on_cpu_ns(p) for p in pids)
    t1 = time.monotonic_ns()
    if all(alive(p) for p in pids + wl):
        print(f"{(b - a) / (t1 - t0):.4f}")


if __name__ == "__main__":
    main()
