"""The PyPI nvtx package as a real NVTX client (run by test_nvtx_real.sh
inside `kxprof record`, NVTX_INJECTION64_PATH naming libkxprof_nvtx.so):
N rounds of a domain range around driver jobs (nvtx.annotate, its message
a registered string), a default-domain push/pop, a mark and a
start/end range; the jobs issued are written to ARGV[1] as JSON.
"""

import json
import sys
import threading

import nvtx

import accel_jobs

ROUNDS = 5
JOBS = 3


def main():
    jobs = accel_jobs.Jobs()
    for _ in range(ROUNDS):
        with nvtx.annotate("step", domain="app"):
            jobs.run(JOBS)
        nvtx.push_range("outer")
        nvtx.mark("tick", domain="app")
        nvtx.pop_range()
        rid = nvtx.start_range("xrange", domain="app")
        nvtx.end_range(rid)
    with open(sys.argv[1], "w") as f:
        json.dump({"tid": threading.get_native_id(), "rounds": ROUNDS,
                   "ioctls": sum(jobs.counts.values()) // ROUNDS}, f)


if __name__ == "__main__":
    main()
