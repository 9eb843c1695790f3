#!/usr/bin/env python3
"""Tests of scripts/check-layering.py: it passes on a clean tree and fails on a
layer violation, a cycle and a skeleton outside capture/ injected into copies of
the real tree. Prints PASS/FAIL lines and "CASES n" like the C unit tests."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-layering.py")
failed = 0
ran = 0


def run(tree):
    return subprocess.run([sys.executable, SCRIPT, tree], capture_output=True, text=True)


def copy_tree():
    d = tempfile.mkdtemp(prefix="kxprof-layering.")
    for sub in ("user", "plugin"):
        shutil.copytree(os.path.join(ROOT, sub), os.path.join(d, sub))
    return d


def inject(tree, path, line):
    with open(os.path.join(tree, path), "a", encoding="utf-8") as f:
        f.write("\n" + line + "\n")


def case(fn):
    global failed, ran
    ran += 1
    tree = copy_tree()
    try:
        fn(tree)
        print("PASS %s" % fn.__name__)
    except AssertionError as e:
        failed += 1
        print("FAIL %s: %s" % (fn.__name__, e))
    finally:
        shutil.rmtree(tree)
    sys.stdout.flush()


def test_clean_tree_passes(tree):
    r = run(tree)
    assert r.returncode == 0, r.stdout + r.stderr


def test_export_including_capture_fails(tree):
    inject(tree, "user/export/chrome.c", '#include "capture/session.h"')
    r = run(tree)
    assert r.returncode == 1, r.stdout
    assert "user/export/chrome.c: includes capture/session.h" in r.stdout, r.stdout


def test_repeated_stem_fails(tree):
    shutil.copy(os.path.join(tree, "user/live/annagg.h"), os.path.join(tree, "user/analysis/annagg.h"))
    r = run(tree)
    assert r.returncode == 1, r.stdout
    assert "file name annagg in user/analysis, user/live" in r.stdout, r.stdout


def test_model_including_analysis_fails(tree):
    inject(tree, "user/model/store.h", '#include "analysis/jobs.h"')
    r = run(tree)
    assert r.returncode == 1 and "user/model/store.h" in r.stdout, r.stdout


def test_cycle_fails(tree):
    # Both in util/: the folder rule allows it, only the cycle check can see it.
    inject(tree, "user/util/grow.h", '#include "util/fdio.h"')
    inject(tree, "user/util/fdio.h", '#include "util/grow.h"')
    r = run(tree)
    assert r.returncode == 1 and "include cycle:" in r.stdout, r.stdout
    assert "util/grow" in r.stdout and "util/fdio" in r.stdout, r.stdout


def test_skeleton_outside_capture_fails(tree):
    inject(tree, "user/live/aggregate.c", '#include "ioctl.skel.h"')
    r = run(tree)
    assert r.returncode == 1 and "only capture/ loads BPF objects" in r.stdout, r.stdout


def test_plugin_including_cli_fails(tree):
    inject(tree, "plugin/kxprof_tf.c", '#include "cli/cli.h"')
    r = run(tree)
    assert r.returncode == 1 and "nothing but cli/ includes cli/" in r.stdout, r.stdout


if __name__ == "__main__":
    for c in (test_clean_tree_passes, test_export_including_capture_fails,
              test_model_including_analysis_fails, test_cycle_fails,
              test_skeleton_outside_capture_fails, test_plugin_including_cli_fails,
              test_repeated_stem_fails):
        case(c)
    print("CASES %d" % ran)
    sys.exit(1 if failed else 0)
