"""Real PyTorch under kxprof (run by test_torch_itt.sh inside `kxprof record`
in the pinned venv): torch_ranges() points torch's ITT at libkxprof_itt.so
before the import, then a small model's forward and backward run under
emit_itt(), with a record_function scope inside that issues driver jobs. The same code then runs under torch's own profiler, which
counts the operator calls; written to ARGV[1] as JSON with the jobs issued.
"""

import collections
import json
import sys
import threading

import kxprof_annotate as kx

kx.torch_ranges()  # before `import torch`
import torch  # noqa: E402

import accel_jobs  # noqa: E402

JOBS = 12


def step(model, x, jobs):
    with torch.autograd.profiler.record_function("train_step"):
        loss = model(x).pow(2).mean()
        loss.backward()
        # emit_itt() observes the thread it was entered on.
        with torch.autograd.profiler.record_function("submit"):
            jobs.run(JOBS)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    x = torch.randn(32, 8)
    step(model, x, accel_jobs.Jobs())  # warm-up: first calls take other paths
    jobs = accel_jobs.Jobs()
    with torch.autograd.profiler.emit_itt():
        step(model, x, jobs)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step(model, x, accel_jobs.Jobs())
    # The raw events: prof.events() merges some nested calls of one operator.
    ops = collections.Counter(e.name() for e in prof.profiler.kineto_results.events())
    out = {"ops": ops, "tid": threading.get_native_id(),
           "jobs": [[t, n, c] for (t, n), c in jobs.counts.items()],
           "torch": torch.__version__, "itt": torch.profiler.itt.is_available()}
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
