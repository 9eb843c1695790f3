"""Real PyTorch's own profiler (Kineto, CPU) around driver jobs, for
test_merge.sh under `kxprof record`: jobs before the profiler's window,
inside it (in a record_function scope on the main thread) and after it,
each batch inside a kxprof range of its own (RANGES).
Writes the Chrome trace to ARGV[1] and what was issued to ARGV[2] as JSON:
{"pid", "tid", "scope", "ranges", "before": {name: n}, "inside": {...}, "after": {...}}.
"""

import collections
import json
import os
import sys
import threading

import torch
from torch.profiler import ProfilerActivity, profile, record_function

import accel_jobs
import kxprof_annotate as kx

SCOPE = "kxprof_submit"
RANGES = {"before": "kx_before", "inside": "kx_inside", "after": "kx_after"}


def phase(jobs, n, last, rng):
    with kx.range(RANGES[rng]):
        jobs.run(n)
    now = collections.Counter({name: c for (_, name), c in jobs.counts.items()})
    return now - last, now


def main():
    torch.set_num_threads(1)
    jobs = accel_jobs.Jobs()
    before, seen = phase(jobs, 3, collections.Counter(), "before")
    x = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function(SCOPE):
            y = x @ x
            inside, seen2 = phase(jobs, 5, seen, "inside")
            y.sum()
    after, _ = phase(jobs, 4, seen2, "after")
    prof.export_chrome_trace(sys.argv[1])
    out = {"pid": os.getpid(), "tid": threading.get_native_id(), "scope": SCOPE, "ranges": RANGES,
           "before": before, "inside": inside, "after": after}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
