#!/usr/bin/env python3
"""Reads `go tool pprof -traces` output and answers questions about it.

Usage: pprof_traces.py TRACES_FILE CHECK [ARGS...]   (prints one line, exits 1 when the check fails)

Each trace of -traces output is a block of label lines ("key:  value"), then
the stack leaf first, its first line led by the trace's value. Checks:
  call CALL USER_FRAME KERNEL_PART  traces whose frames hold the call frame
      CALL: in each, every frame after it (the callers) is a user frame (no
      system call entry, driver frame or KERNEL_PART frame) and kernel
      frames come before it; some trace has USER_FRAME among the callers
      and a kernel frame containing KERNEL_PART under the call
  callleaf CALL USER_FRAME  traces whose frames hold CALL: in every one it
      is the leaf (no kernel frame under it: a user not given kernel-mode
      profiling), and some trace has USER_FRAME among its callers
  pidframe PID FRAME  some trace of process PID (its pid label) holds FRAME
  nopidframe PID FRAME  no trace of process PID holds FRAME (the file
      holds traces: a failed go tool pprof does not pass)
  unwind LEAF CALLER...  traces whose leaf is LEAF: at least 95% of their
      samples (traces weighted by value; identical stacks are one trace)
      have the CALLERs, in this order, above it
  labels CALL  every trace holding CALL carries the label driver_call=CALL
  task FRAME PID TID THREAD  some trace holds FRAME, and every one that
      does is labelled pid=PID, tid=TID and thread=THREAD
  total CALL LO HI  the values of the traces holding CALL (times, in
      seconds) add up to between LO and HI
A file that is not -traces output (no trace in it, e.g. an error of go
tool pprof) fails every check.
"""
import re
import sys

SEP = re.compile(r"^-+\+-+$")
LABEL = re.compile(r"^\s*([A-Za-z_]+):\s+(.*)$")
VALUE = re.compile(r"^\s*(\S+)\s{2,}(.*)$")
# A kernel frame of a system call's entry (x86-64, arm64).
SYSCALL = re.compile(r"do_syscall|entry_SYSCALL|__x64_sys_|__arm64_sys_|el0_svc")
# A driver call's frame: "[loop] BLKFLSBUF".
DRIVER = re.compile(r"^\[[^\]]+\] [A-Z]")


def parse(path):
    """The traces: labels, value and frames (leaf first) of each."""
    traces, cur = [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if SEP.match(line):
            cur = {"labels": {}, "frames": [], "value": None}
            traces.append(cur)
        elif cur is None or not line.strip():
            continue
        elif cur["frames"]:
            cur["frames"].append(line.strip())
        elif VALUE.match(line) and re.match(r"^\s*[0-9.]", line):
            v = VALUE.match(line)
            cur["value"] = v.group(1)
            cur["frames"].append(v.group(2).strip())
        elif LABEL.match(line):
            m = LABEL.match(line)
            cur["labels"][m.group(1)] = m.group(2).strip()
    return [t for t in traces if t["frames"]]


def check_call(traces, call, user_frame, kernel_part):
    with_call = [t for t in traces if call in t["frames"]]
    if not with_call:
        return False, f"no trace holds {call}"
    good, bad = 0, []
    for t in with_call:
        fr = t["frames"]
        i = fr.index(call)
        callers, under = fr[i + 1:], fr[:i]
        # Every trace: the call has callers and none of them is a kernel
        # frame (the system call's entry, the kernel part) or a driver
        # frame, and kernel frames are under it (the system call's entry
        # among them unless the kernel stack was cut at its depth limit).
        if (not callers or not under
                or any(SYSCALL.search(f) or kernel_part in f or DRIVER.match(f) for f in callers)):
            bad.append(fr)
        if user_frame in callers and any(kernel_part in f for f in under):
            good += 1
    msg = (f"{len(with_call)} traces hold {call}; {good} have {user_frame} above and a *{kernel_part}* "
           f"frame under it; {len(bad)} with a kernel or driver frame above it or none under it"
           f"{': ' + ';'.join(bad[0]) if bad else ''}")
    bad = len(bad)
    return good > 0 and bad == 0, msg


def check_callleaf(traces, call, user_frame):
    with_call = [t for t in traces if call in t["frames"]]
    if not with_call:
        return False, f"no trace holds {call}"
    leaf = sum(t["frames"][0] == call for t in with_call)
    above = sum(user_frame in t["frames"][1:] for t in with_call)
    msg = f"{len(with_call)} traces hold {call}: {leaf} as the leaf, {above} with {user_frame} above"
    return leaf == len(with_call) and above > 0, msg


def check_pidframe(traces, pid, frame):
    mine = [t for t in traces if t["labels"].get("pid") == pid]
    hits = sum(frame in t["frames"] for t in mine)
    return hits > 0, f"{len(mine)} traces of pid {pid}, {hits} holding {frame}"


UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "hrs": 3600.0,
         "mins": 60.0}


def weight(t):
    """The trace's value as a number (a count, or a time in seconds)."""
    m = re.match(r"^([0-9.]+)([^0-9.]*)$", t["value"] or "")
    if not m:
        return 1.0
    return float(m.group(1)) * UNITS.get(m.group(2), 1.0)


def check_unwind(traces, leaf, callers):
    with_leaf = [t for t in traces if t["frames"][0] == leaf]
    if not with_leaf:
        return False, f"no trace has the leaf {leaf}"
    ok = total = 0.0
    for t in with_leaf:
        fr = t["frames"][1:]
        pos = -1
        for c in callers:
            try:
                pos = fr.index(c, pos + 1)
            except ValueError:
                pos = None
                break
        total += weight(t)
        ok += weight(t) * (pos is not None)
    msg = (f"{ok / total:.1%} of the samples of {len(with_leaf)} traces with leaf {leaf} "
           f"unwind through {' '.join(callers)}")
    return ok >= 0.95 * total, msg


def check_labels(traces, call):
    with_call = [t for t in traces if call in t["frames"]]
    bad = [t for t in with_call if t["labels"].get("driver_call") != call]
    msg = f"{len(with_call)} traces hold {call}, {len(bad)} without the label driver_call={call}"
    return bool(with_call) and not bad, msg


def check_task(traces, frame, pid, tid, thread):
    mine = [t for t in traces if frame in t["frames"]]
    bad = [t["labels"] for t in mine
           if (t["labels"].get("pid"), t["labels"].get("tid"), t["labels"].get("thread"))
           != (pid, tid, thread)]
    msg = (f"{len(mine)} traces hold {frame}; {len(bad)} not labelled pid {pid}, tid {tid}, "
           f"thread {thread}{': e.g. ' + str(bad[0]) if bad else ''}")
    return bool(mine) and not bad, msg


def check_total(traces, call, lo, hi):
    with_call = [t for t in traces if call in t["frames"]]
    total = sum(weight(t) for t in with_call)
    msg = f"{len(with_call)} traces hold {call}, {total:.6f} s in all (want {lo} to {hi})"
    return bool(with_call) and float(lo) <= total <= float(hi), msg


def main():
    traces = parse(sys.argv[1])
    what, args = sys.argv[2], sys.argv[3:]
    if not traces:
        print(f"no trace in {sys.argv[1]}")
        return 1
    if what == "call":
        ok, msg = check_call(traces, args[0], args[1], args[2])
    elif what == "callleaf":
        ok, msg = check_callleaf(traces, args[0], args[1])
    elif what == "pidframe":
        ok, msg = check_pidframe(traces, args[0], args[1])
    elif what == "unwind":
        ok, msg = check_unwind(traces, args[0], args[1:])
    elif what == "labels":
        ok, msg = check_labels(traces, args[0])
    elif what == "task":
        ok, msg = check_task(traces, *args[:4])
    elif what == "total":
        ok, msg = check_total(traces, *args[:3])
    elif what == "nopidframe":
        ok, msg = check_pidframe(traces, args[0], args[1])
        ok = not ok
    else:
        print(f"unknown check {what}")
        return 2
    print(msg)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
