"""The Python annotation module (plugin/python/kxprof_annotate.py) with the
system python3: the library found by KXPROF_ANNOTATE_LIB, a clear import
error when it is absent, the context manager and the decorator end their
range on exceptions and keep the function's identity, cross-thread ids.
With --workload N (a traced process for test_annotate_capture): stops itself
once imported, then N times: range "py/step" around a decorated "py/work"
and a mark "py/tick"; one cross-thread range "py/x"; prints its pid.
--traced N does the same without stopping (under kxprof record, which
holds the library until its probes are attached).
Run through build/tests/test_annotate_py (made by make), which sets
KXPROF_ANNOTATE_LIB and PYTHONPATH.
"""

import os
import signal
import subprocess
import sys
import threading
import time

failed = 0
ran = 0


def case(fn):
    global failed, ran
    ran += 1
    try:
        fn()
        print("PASS %s" % fn.__name__)
    except Exception as e:  # a failed check or an error: both fail the case
        failed += 1
        print("FAIL %s: %r" % (fn.__name__, e))
    sys.stdout.flush()


def workload(n, stop=True):
    import kxprof_annotate as kxprof

    if stop:
        os.kill(os.getpid(), signal.SIGSTOP)

    @kxprof.annotate("py/work")
    def work():
        return 1

    for _ in range(n):
        with kxprof.range("py/step", category="py"):
            kxprof.mark("py/tick")
            work()
    rid = kxprof.range_start("py/x")
    time.sleep(0.003)  # longer than the capture test's minimum
    t = threading.Thread(target=kxprof.range_end, args=(rid,))
    t.start()
    t.join()
    print('{"workload":"python","pid":%d}' % os.getpid())


def test_library_found():
    import kxprof_annotate as kxprof
    assert kxprof.library_path == os.environ["KXPROF_ANNOTATE_LIB"], kxprof.library_path


def test_missing_library_says_where():
    env = dict(os.environ, KXPROF_ANNOTATE_LIB="/nonexistent/libkxprof_annotate.so")
    r = subprocess.run([sys.executable, "-c", "import kxprof_annotate"], env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "ImportError: kxprof_annotate: cannot load libkxprof_annotate.so" in r.stderr, r.stderr
    assert "/nonexistent/libkxprof_annotate.so" in r.stderr, r.stderr
    assert "KXPROF_ANNOTATE_LIB" in r.stderr


def test_range_ends_on_exception():
    import kxprof_annotate as kxprof
    try:
        with kxprof.range("boom"):
            raise ValueError("inside")
    except ValueError as e:
        assert str(e) == "inside"
    else:
        raise AssertionError("the exception was swallowed")


def test_decorator_keeps_function():
    import kxprof_annotate as kxprof

    @kxprof.annotate
    def add(a, b=2):
        """adds"""
        return a + b

    @kxprof.annotate("named", category="cat")
    def fail():
        raise KeyError("k")

    assert add(1) == 3 and add(1, b=5) == 6
    assert add.__name__ == "add" and add.__doc__ == "adds" and add.__wrapped__
    try:
        fail()
        raise AssertionError("no exception")
    except KeyError:
        pass


def test_range_ids():
    import kxprof_annotate as kxprof
    ids = set()
    lock = threading.Lock()

    def starter():
        for _ in range(1000):
            i = kxprof.range_start("x")
            with lock:
                ids.add(i)
            kxprof.range_end(i)

    ts = [threading.Thread(target=starter) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(ids) == 4000 and 0 not in ids, len(ids)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("--workload", "--traced"):
        workload(int(sys.argv[2]), sys.argv[1] == "--workload")
        sys.exit(0)
    for c in (test_library_found, test_missing_library_says_where, test_range_ends_on_exception,
              test_decorator_keeps_function, test_range_ids):
        case(c)
    print("CASES %d" % ran)  # the runner compares it with the test_ functions here
    sys.exit(1 if failed else 0)
