"""XProf's own converter (pip xprof, in build/venv) on a TensorFlow profile
tf_real.py left (LOGDIR/session.json): kxprof's ioctls in the host process
on the row of the thread that issued them, exact per thread and name, and
the traced device as a process of its own with its jobs, in the legacy
trace viewer and trace_viewer@; overview_page converts. PASS/FAIL lines.

    xprof_check.py SESSION_JSON RUN_DIR
"""

import collections
import json
import os
import shutil
import sys

from xprof.convert import raw_to_tool_data

fails = 0


def check(name, ok, detail=""):
    global fails
    if ok:
        print("PASS %s" % name)
    else:
        fails += 1
        print("FAIL %s: %s" % (name, detail))


def trace(path, tool):
    data, _ = raw_to_tool_data.xspace_to_tool_data([path], tool, {"use_saved_result": False})
    return json.loads(data)["traceEvents"]


def procs(ev):
    return {e["pid"]: e["args"]["name"] for e in ev
            if e.get("ph") == "M" and e.get("name") == "process_name"}


def check_viewer(tag, ev, host_name, want, job):
    """want: {(row, name): n}, row the thread's line id; host_name: the host
    process's name."""
    ps = procs(ev)
    host = [p for p, n in ps.items() if n == host_name]
    names = {n for (_, n) in want}
    got = collections.Counter((e["tid"], e["name"]) for e in ev
                              if e.get("ph") == "X" and host and e["pid"] == host[0]
                              and e["name"] in names)
    check(tag + "_host_rows_exact", got == collections.Counter(want),
          "host pid %s: %s; issued %s" % (host, dict(got), want))
    dev = [p for p, n in ps.items() if "/device:CUSTOM:" in n]
    jobs = sum(1 for e in ev if e.get("ph") == "X" and e["pid"] in dev and e["name"] == job)
    issued = sum(c for (_, n), c in want.items() if n == job)
    check(tag + "_device_process_jobs", len(dev) >= 1 and jobs == issued,
          "device processes %s: %d jobs, %d issued" % ([ps[p] for p in dev], jobs, issued))


def main():
    s = json.load(open(sys.argv[1]))
    run = sys.argv[2]
    if not s["xplane"]:
        check("xprof_input", False, "no .xplane.pb from the TensorFlow run")
        return 1
    # A fresh run directory: the tools write their caches beside the file.
    os.makedirs(run, exist_ok=True)
    path = os.path.join(run, os.path.basename(s["xplane"]))
    shutil.copy(s["xplane"], path)
    host = os.path.basename(path)[:-len(".xplane.pb")]
    # The viewers' tid of a row: its line id's low 32 bits.
    want = {(t & 0xFFFFFFFF, n): c for t, n, c in s["jobs"]}
    tools = raw_to_tool_data.xspace_to_tool_names([path])
    check("xprof_tools", "trace_viewer@" in tools and "overview_page" in tools, str(tools))
    check_viewer("xprof_trace_viewer", trace(path, "trace_viewer"), "/host:CPU", want, s["job"])
    check_viewer("xprof_trace_viewer_at", trace(path, "trace_viewer@"), host + " /host:CPU", want,
                 s["job"])
    data, _ = raw_to_tool_data.xspace_to_tool_data([path], "overview_page",
                                                   {"use_saved_result": False})
    check("xprof_overview_page", bool(data), "no data")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
