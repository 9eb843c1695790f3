#!/usr/bin/env python3
"""Mutation testing: does the suite catch realistic faults?

Usage: tests/mutate/run.sh [-l LIST] [-k] [--baseline] [ID...]

Reads the list of mutations (tests/mutate/mutations.txt: its header says
the format), copies the tree (the files git tracks or would track, with
their times, and the normal build directory, so that make rebuilds only
what a mutation touches) into a temporary directory, and there, for each
mutation (or those numbered ID), one at a time: replaces the exact code in
the file (it must occur exactly once), rebuilds the binaries the expected
tests run, runs those tests only (an integration script stops at its first
FAIL line), restores the file. A mutation is caught when one of its tests
fails (a unit test's non-zero exit or FAIL line, a script's FAIL line or
non-zero exit, or a timeout), survived otherwise. Prints one line per
mutation and the ratio; exits 1 when less than 90% were caught among those
not marked equivalent, or when a mutation no longer applies.

--baseline first runs every test the list names on the unmutated copy: a
test that fails there would make its mutations look caught (exit 1).
-k keeps the copy and the logs (always printed: the results directory).
The checkout itself is never written: everything happens in the copy.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = int(os.environ.get("KX_MUTATE_TIMEOUT", "400"))


class Mutation:
    def __init__(self, num, lineno, path, old, new, tests, note):
        self.num, self.lineno, self.path = num, lineno, path
        self.old, self.new, self.tests, self.note = old, new, tests, note
        self.equivalent = note.startswith("equivalent")


def unescape(s):
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], s)


def parse(path):
    out = []
    for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = line.split("\t")
        if len(f) < 4:
            sys.exit(f"{path}:{lineno}: want FILE<TAB>OLD<TAB>NEW<TAB>TESTS[<TAB>NOTE], "
                     f"got {len(f)} fields")
        tests = [t.strip() for t in f[3].split(",") if t.strip()]
        out.append(Mutation(len(out) + 1, lineno, f[0].strip(), unescape(f[1]), unescape(f[2]),
                            tests, f[4].strip() if len(f) > 4 else ""))
    return out


def copy_tree(dst):
    """The files git tracks or would track (times kept) and build/."""
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = os.path.join(ROOT, f)
        if not os.path.lexists(src):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f), follow_symlinks=False)
    build = os.path.join(ROOT, "build")
    if not os.path.isfile(os.path.join(build, "kxprof")):
        sys.exit("mutate: build the tree first (make): the copy rebuilds only what changed")
    subprocess.run(["cp", "-a", build, os.path.join(dst, "build")], check=True)


def find_test(tree, name):
    """('unit', binary) or ('script', path) for a test named NAME (or NAME.sh)."""
    if name.endswith(".sh"):
        for d, _, fs in os.walk(os.path.join(tree, "tests")):
            if name in fs:
                return "script", os.path.join(d, name)
        return None
    if name.endswith(".py"):
        for d, _, fs in os.walk(os.path.join(tree, "tests")):
            if name in fs:
                return "python", os.path.join(d, name)
        return None
    for d, _, fs in os.walk(os.path.join(tree, "tests")):
        if name + ".c" in fs:
            return "unit", os.path.join(tree, "build", "tests", name)
    return None


def targets(tree, tests):
    """The make targets the tests run: the CLI, the plugins, the workloads
    and tools, and each unit test named."""
    t = ["build/kxprof"]
    t += ["build/" + f for f in sorted(os.listdir(os.path.join(tree, "build"))) if f.endswith(".so")]
    for sub in ("workloads", "tools"):
        for f in sorted(os.listdir(os.path.join(tree, "tests", sub))):
            if f.endswith(".c"):
                t.append("build/tests/" + f[:-2])
    for name in tests:
        kind = find_test(tree, name)
        if kind and kind[0] == "unit":
            t.append(os.path.relpath(kind[1], tree))
    return t


def run_test(tree, name, log):
    """0 passed, 1 failed (caught), 2 not found."""
    kind = find_test(tree, name)
    if not kind:
        log.write(f"mutate: no test named {name}\n")
        return 2
    env = dict(os.environ, KXPROF=os.path.join(tree, "build", "kxprof"),
               BUILD_DIR=os.path.join(tree, "build"))
    if kind[0] == "script":
        cmd = ["bash", kind[1]]
    elif kind[0] == "python":
        cmd = [sys.executable, kind[1]]
    else:
        cmd = [kind[1]]
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    p = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True, text=True,
                         errors="replace")
    failed, start = False, time.time()

    def stop():
        # SIGTERM first: the script's EXIT trap removes its loop devices,
        # daemons and temporary files; what is left after 15 s is killed.
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    import threading
    timer = threading.Timer(TIMEOUT, stop)
    timer.start()
    for line in p.stdout:
        log.write(line)
        if line.startswith("FAIL"):
            failed = True
            break
    if failed:
        stop()
    p.stdout.close()
    rc = p.wait()
    timer.cancel()
    if time.time() - start >= TIMEOUT:
        log.write(f"mutate: {name} timed out after {TIMEOUT} s\n")
        return 1
    return 1 if failed or rc != 0 else 0


def apply(tree, m):
    """The file's text before the mutation, or an error message (str, None)."""
    path = os.path.join(tree, m.path)
    if not os.path.isfile(path):
        return None, f"no file {m.path}"
    text = open(path, encoding="utf-8").read()
    n = text.count(m.old)
    if n != 1:
        return None, f"the code occurs {n} times in {m.path} (want once): update the list"
    open(path, "w", encoding="utf-8").write(text.replace(m.old, m.new, 1))
    return text, None


def restore(tree, m, text):
    open(os.path.join(tree, m.path), "w", encoding="utf-8").write(text)


def make(tree, tgts, log):
    log.write(f"$ make -j2 {' '.join(tgts)}\n")
    log.flush()
    r = subprocess.run(["make", "-j2", "-s"] + tgts, cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    return r.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-l", "--list", default=os.path.join(HERE, "mutations.txt"))
    ap.add_argument("-k", "--keep", action="store_true")
    ap.add_argument("--baseline", action="store_true")
    ap.add_argument("ids", nargs="*", type=int)
    a = ap.parse_args()
    muts = parse(a.list)
    chosen = [m for m in muts if not a.ids or m.num in a.ids]
    work = tempfile.mkdtemp(prefix="kxprof-mutate.")
    tree, logs = os.path.join(work, "tree"), os.path.join(work, "logs")
    os.makedirs(logs)
    print(f"mutate: copying the tree to {tree}", flush=True)
    copy_tree(tree)
    bad = 0
    if a.baseline:
        names = sorted({t for m in chosen for t in m.tests})
        with open(os.path.join(logs, "baseline.log"), "w") as log:
            if make(tree, targets(tree, names), log):
                sys.exit(f"mutate: the unmutated copy does not build: see {logs}/baseline.log")
            for name in names:
                t0 = time.time()
                r = run_test(tree, name, log)
                print(f"baseline {name}: {'passes' if r == 0 else 'FAILS'} ({time.time() - t0:.0f} s)",
                      flush=True)
                bad += r != 0
        if bad:
            print(f"mutate: {bad} tests fail unmutated: fix them first (see {logs}/baseline.log)")
            sys.exit(1)
    caught = survived = equiv = broken = 0
    survivors = []
    t_all = time.time()
    for m in chosen:
        t0 = time.time()
        with open(os.path.join(logs, f"{m.num:03d}.log"), "w") as log:
            orig, err = apply(tree, m)
            if err:
                print(f"{m.num:3d} ERROR  {err}", flush=True)
                broken += 1
                continue
            try:
                if make(tree, targets(tree, m.tests), log):
                    by, result = "the mutated code does not build", 2
                else:
                    by, result = None, 0
                    for name in m.tests:
                        r = run_test(tree, name, log)
                        if r == 2:
                            result, by = 2, f"no test named {name}"
                            break
                        if r == 1:
                            result, by = 1, name
                            break
            finally:
                restore(tree, m, orig)
        dt = time.time() - t0
        if result == 2:
            broken += 1
            print(f"{m.num:3d} ERROR  {m.path}: {by}", flush=True)
        elif result == 1:
            caught += 1
            print(f"{m.num:3d} caught   by {by:28s} {dt:5.0f} s  {m.path}", flush=True)
        elif m.equivalent:
            equiv += 1
            print(f"{m.num:3d} survived (equivalent: explained in the list) {dt:5.0f} s  {m.path}",
                  flush=True)
        else:
            survived += 1
            survivors.append(m)
            print(f"{m.num:3d} SURVIVED {dt:5.0f} s  {m.path} (list line {m.lineno})", flush=True)
    counted = caught + survived
    ratio = caught / counted if counted else 0.0
    print(f"mutate: {caught} of {counted} mutations caught ({ratio:.1%}); {equiv} equivalent, "
          f"{broken} not applied; {time.time() - t_all:.0f} s; logs in {logs}")
    for m in survivors:
        print(f"  survivor {m.num}: {m.path}: {m.old!r} -> {m.new!r} ({', '.join(m.tests)})")
    if not a.keep:
        shutil.rmtree(tree, ignore_errors=True)
    return 0 if counted and ratio >= 0.9 and not broken else 1


if __name__ == "__main__":
    sys.exit(main())
