#!/usr/bin/env python3
"""Checks the include graph of user/ and plugin/ against kxprof's layering.

Usage: check-layering.py [ROOT]   (ROOT: the checkout, default: this script's parent)

Reads every `#include "..."` of user/*/*.[ch] and plugin/**/*.[ch] and prints one
PASS or FAIL line per rule, with a line per violation naming the file, what it
includes and the rule it breaks. Exits 1 on any violation.

The layers, lowest first (a folder may include itself and the folders listed
for it, nothing else):
  util      generic algorithms: nothing of ours
  model     the event model and its containers
  registry  devices, drivers, ioctl names and decoders
  symbol    symbolisation of code addresses
  io        the record file and replayed fixtures
  analysis  offline analysis of a capture
  export    the output formats
  capture   loading BPF and receiving its records
  live      in-kernel aggregates, online pairing and on-demand profiles over a
            running capture
  daemon    the privileged daemon's listener, authorisation and client sessions
  cli, plugin: the front ends, on top (plugin never includes cli)
BPF skeletons (X.skel.h) are included by their loaders in capture/ only.
Besides the folder rules, no two modules (a .c and its .h) may include each
other, directly or through others, and no file name (less .c/.h) repeats
across user/'s folders: files are named by their role, not the stage.
"""
import os
import re
import sys

ALLOWED = {
    "util": {"util"},
    "model": {"model", "util"},
    "registry": {"registry", "model", "util"},
    "symbol": {"symbol", "model", "util"},
    "io": {"io", "registry", "model", "util"},
    "analysis": {"analysis", "symbol", "io", "registry", "model", "util"},
    "export": {"export", "analysis", "symbol", "registry", "model", "util"},
    "capture": {"capture", "symbol", "io", "registry", "model", "util"},
    "live": {"live", "capture", "export", "analysis", "symbol", "registry", "model", "util"},
    "daemon": {"daemon", "capture", "io", "registry", "model", "util"},
}
FRONT_ENDS = {"cli", "plugin"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    for base in ("user", "plugin"):
        for d, _, files in os.walk(os.path.join(root, base)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def folder(path):
    parts = path.split(os.sep)
    return parts[1] if parts[0] == "user" else "plugin"


def module(path):
    """user/capture/session.c and .h are one module: capture/session."""
    stem = os.path.splitext(path)[0]
    return stem[len("user/"):] if stem.startswith("user/") else stem


def check_folders(root, graph):
    bad = []
    for src, incs in graph.items():
        f = folder(src)
        for inc in incs:
            top = inc.split("/")[0] if "/" in inc else None
            if inc.endswith(".skel.h"):
                if f != "capture":
                    bad.append(f"{src}: includes {inc}: only capture/ loads BPF objects")
                continue
            if top is None or top not in ALLOWED and top not in FRONT_ENDS:
                continue  # bpf/ headers, system headers, same-folder plugin headers
            if f in FRONT_ENDS:
                if top == "cli" and f != "cli":
                    bad.append(f"{src}: includes {inc}: nothing but cli/ includes cli/")
                continue
            if top not in ALLOWED[f]:
                bad.append(f"{src}: includes {inc}: {f}/ may include only "
                           f"{', '.join(sorted(ALLOWED[f]))}")
    return bad


def check_cycles(graph):
    edges = {}
    for src, incs in graph.items():
        m = module(src)
        for inc in incs:
            if "/" in inc and inc.split("/")[0] in ALLOWED | dict.fromkeys(FRONT_ENDS):
                dst = os.path.splitext(inc)[0]
                if dst != m:
                    edges.setdefault(m, set()).add(dst)
    bad, state, stack = [], {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                cyc = stack[stack.index(n):] + [n]
                bad.append("include cycle: " + " -> ".join(cyc))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    return bad


def check_stems(graph):
    where = {}
    for src in graph:
        if src.startswith("user/"):
            stem = os.path.splitext(os.path.basename(src))[0]
            where.setdefault(stem, set()).add(folder(src))
    return ["file name %s in user/%s" % (stem, ", user/".join(sorted(f)))
            for stem, f in sorted(where.items()) if len(f) > 1]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    graph = {}
    for src in sources(root):
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as fh:
            graph[src] = INCLUDE.findall(fh.read())
    if not graph:
        print(f"FAIL layering: no sources under {root}/user")
        return 1
    rc = 0
    for name, bad in (("layering_folders", check_folders(root, graph)),
                      ("layering_cycles", check_cycles(graph)),
                      ("layering_stems", check_stems(graph))):
        if bad:
            rc = 1
            print(f"FAIL {name}: {len(bad)} violation(s)")
            for b in bad:
                print(f"  {b}")
        else:
            print(f"PASS {name} ({len(graph)} files)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
