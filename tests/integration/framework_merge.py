"""A framework's own profiler around driver jobs, for test_jax_real.sh and
test_tf_merge.sh under `kxprof record`: jobs on the main thread before the
profiler's window, inside it (in a kxprof range, around a compiled
function) and after it; inside it also a thread that runs the function and
jobs (the framework gives it a line of its own) and a thread that only
issues jobs.

    framework_merge.py LOGDIR ISSUED.json MODE

MODE: "jax" (jax.profiler.start_trace/stop_trace around a jitted function:
its Python tracer gives every Python thread a line), "jax-notracer" (the
same with python_tracer_level=0: the plain thread has no line), "tf"
(tf.profiler.experimental.start/stop around a tf.function, TensorFlow
without kxprof's plugin: the plain thread has no line). What was issued
goes to ISSUED.json:

  {"pid", "main": tid, "fw_worker": tid, "plain_worker": tid,
   "idents": {tid: pthread_t}, "window": [t0_ns, t1_ns],
   "before"/"inside"/"after": {tid: {name: n}},
   "spans": {tid: [[t0_ns, t1_ns], ...]}   (CLOCK_REALTIME around each batch),
   "ranges": {tid: [name, ...]}, "versions": {package: version}}
"""

import collections
import json
import os
import sys
import threading
import time

import accel_jobs
import kxprof_annotate as kx


class Phases:
    def __init__(self):
        self.jobs = accel_jobs.Jobs()
        self.seen = collections.Counter()
        self.spans = collections.defaultdict(list)
        self.ranges = collections.defaultdict(list)
        self.lock = threading.Lock()

    def batch(self, n, rng=None):
        """n jobs on this thread; returns {(tid, name): count} they added."""
        t0 = time.time_ns()
        if rng:
            with kx.range(rng):
                self.jobs.run(n)
        else:
            self.jobs.run(n)
        t1 = time.time_ns()
        with self.lock:
            self.spans[threading.get_native_id()].append([t0, t1])
            if rng:
                self.ranges[threading.get_native_id()].append(rng)

    def take(self):
        """The ioctls issued since the last take, {tid: {name: n}}."""
        with self.lock:
            now = collections.Counter(self.jobs.counts)
            new = now - self.seen
            self.seen = now
        out = collections.defaultdict(dict)
        for (tid, name), c in new.items():
            out[str(tid)][name] = c
        return out


class Jax:
    def __init__(self, tracer):
        import jax
        import jax.numpy as jnp
        self.jax, self.tracer = jax, tracer
        f = jax.jit(lambda x: jnp.tanh(x @ x) + 1.0)
        x = jnp.ones((32, 32))
        self.run = lambda: f(x).block_until_ready()
        self.versions = {"jax": jax.__version__, "jaxlib": jax.lib.__version__}

    def start(self, logdir):
        opts = None
        if not self.tracer:
            opts = self.jax.profiler.ProfileOptions()
            opts.python_tracer_level = 0
        self.jax.profiler.start_trace(logdir, profiler_options=opts)

    def stop(self):
        self.jax.profiler.stop_trace()


class TensorFlow:
    def __init__(self):
        import tensorflow as tf
        self.tf = tf
        f = tf.function(lambda x: tf.tanh(tf.matmul(x, x)) + 1.0)
        x = tf.ones((32, 32))
        self.run = lambda: f(x).numpy()
        self.versions = {"tensorflow": tf.__version__}

    def start(self, logdir):
        self.tf.profiler.experimental.start(logdir)

    def stop(self):
        self.tf.profiler.experimental.stop()


def main():
    logdir, issued, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    fw = TensorFlow() if mode == "tf" else Jax(mode == "jax")
    ph = Phases()
    fw.run()  # compiled before the window
    ph.batch(3)
    before = ph.take()
    tids = {}

    def fw_worker():
        tids["fw_worker"] = threading.get_native_id()
        fw.run()
        ph.batch(4, "fw_worker_jobs")
        fw.run()

    def plain_worker():
        tids["plain_worker"] = threading.get_native_id()
        ph.batch(5, "plain_jobs")

    w0 = time.time_ns()
    fw.start(logdir)
    fw.run()
    ph.batch(6, "main_jobs")
    threads = [threading.Thread(target=fw_worker, name="fw_worker"),
               threading.Thread(target=plain_worker, name="plain_worker")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fw.run()
    fw.stop()
    w1 = time.time_ns()
    inside = ph.take()
    ph.batch(4)
    after = ph.take()
    out = {"pid": os.getpid(), "main": threading.get_native_id(), **tids,
           "idents": {str(k): v for k, v in ph.jobs.idents.items()},
           "window": [w0, w1], "before": before, "inside": inside, "after": after,
           "spans": {str(k): v for k, v in ph.spans.items()},
           "ranges": {str(k): v for k, v in ph.ranges.items()},
           "versions": fw.versions}
    with open(issued, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
