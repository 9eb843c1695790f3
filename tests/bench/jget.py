#!/usr/bin/env python3
"""Small extractors for tests/bench/run.sh (one concern: turn tool output
into numbers).

  jget.py FILE EXPR                 first JSON object in FILE as d; print eval(EXPR)
  jget.py --bpftrace-hist FILE      total count of the histograms in bpftrace -f json output
  jget.py --progstats NOW IDS LABEL ROW
                                    a `bpftool prog show -j` snapshot: for the programs
                                    whose ids are in the file IDS (the tracer's own) run
                                    at least 10000 times, raw.tsv lines
                                    "ROW LABEL 1 NAME NS_PER_RUN"
  jget.py --bench-lines FILE...     bench_export / bench_chrome output as raw.tsv lines
  jget.py --mechs LIST.json         from `kxprof list --json`: the ioctl hooks' default
                                    mechanism for targeted and for host-wide captures,
                                    then every mechanism that works here, on one line
"""
import json
import re
import sys


def first_json(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    pass
    with open(path) as f:
        return json.load(f)


def fmt(v):
    if isinstance(v, float):
        return "%.6g" % v
    return str(v)


def bpftrace_hist(path):
    total = 0
    with open(path) as f:
        for line in f:
            if not line.startswith('{"type": "hist"'):
                continue
            for buckets in json.loads(line)["data"].values():
                total += sum(b["count"] for b in buckets)
    return total


def progstats(now, ids_path, label, row):
    """`bpftool prog show -j` snapshot: the tracer's programs (ids it holds)
    run at least 10000 times, as raw.tsv lines "ROW LABEL 1 NAME NS_PER_RUN"."""
    with open(ids_path) as f:
        ids = {int(x) for x in f.read().split()}
    with open(now) as f:
        progs = json.load(f)
    best = {}
    for p in progs:
        name = p.get("name", "")
        if p["id"] not in ids or p.get("run_cnt", 0) < 10000:
            continue
        if name not in best or p["run_cnt"] > best[name]["run_cnt"]:
            best[name] = p
    for name, p in sorted(best.items()):
        print("%s\t%s\t1\t%s\t%.1f" % (row, label, name, p["run_time_ns"] / p["run_cnt"]))


def bench_lines(paths):
    num = r"([0-9.]+)"
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                m = re.match(r"bench_export: (\d+) events in " + num + r" s: " + num +
                             r" M events/s; " + num + r" MiB out, " + num +
                             r" B/event; peak RSS " + num + r" MiB \(store\) -> " + num +
                             r" MiB, export \+" + num + r" MiB = " + num + "x", line)
                if m:
                    for i, k in enumerate(["events", "s", "mev_s", "out_mib", "out_b_ev",
                                           "rss_store_mib", "rss_mib", "rss_add_mib",
                                           "rss_x_out"]):
                        print("synth\txplane\t1\t%s\t%s" % (k, m.group(i + 1)))
                    continue
                m = re.match(r"chrome store: (\d+) events, " + num + r" MB", line)
                if m:
                    print("synth\tstore\t1\tevents\t%s" % m.group(1))
                    print("synth\tstore\t1\tmb\t%s" % m.group(2))
                    continue
                m = re.match(r"chrome (\S+)\s+(\d+) events in " + num + r" s \(" + num +
                             r" s CPU\): " + num + r" M events/s \(" + num +
                             r" M per CPU second\), " + num + r" bytes/event \(" + num +
                             r" MB\), peak RSS " + num + " MB", line)
                if m:
                    v = {".json": "chrome_json", ".json.gz": "chrome_gz",
                         ".json.gz/zlib": "chrome_gz_zlib"}.get(m.group(1), m.group(1))
                    for i, k in enumerate(["events", "s", "cpu_s", "mev_s", "mev_cpu_s",
                                           "out_b_ev", "out_mb", "rss_mb"]):
                        print("synth\t%s\t1\t%s\t%s" % (v, k, m.group(i + 2)))
                    continue
                m = re.match(r"chrome gzip bound \((\S+)\): " + num + r" MB of JSON, deflate level 1 " +
                             num + r" s CPU \(" + num + r" MB/s\), crc32 " + num +
                             r" s CPU; on (\d+) CPUs at most " + num + r" M events/s", line)
                if m:
                    v = "gzip_bound" if m.group(1) == "isa-l" else "gzip_bound_" + m.group(1)
                    for i, k in enumerate(["json_mb", "deflate_cpu_s", "deflate_mb_s", "crc_cpu_s",
                                           "ncpu", "mev_s"]):
                        print("synth\t%s\t1\t%s\t%s" % (v, k, m.group(i + 2)))
                    continue
                if line:
                    sys.stderr.write("bench: unparsed benchmark line: %s\n" % line)


def mechs(path):
    with open(path) as f:
        hooks = {h["family"]: h for h in json.load(f)["hooks"]}
    t = hooks.get("ioctl syscall hooks", {})
    h = hooks.get("ioctl syscall hooks, host-wide", {})
    # The note: "MECH: ok" or "MECH...: why" per mechanism, "; " between them.
    ok = [part.split(":")[0] for part in t.get("note", "").split("; ") if part.endswith(": ok")]
    print(t.get("mechanism", "-"), h.get("mechanism", "-"), " ".join(ok))


def main(argv):
    if len(argv) >= 3 and argv[1] == "--bpftrace-hist":
        print(bpftrace_hist(argv[2]))
    elif len(argv) == 6 and argv[1] == "--progstats":
        progstats(argv[2], argv[3], argv[4], argv[5])
    elif len(argv) == 3 and argv[1] == "--mechs":
        mechs(argv[2])
    elif len(argv) >= 2 and argv[1] == "--bench-lines":
        bench_lines(argv[2:])
    elif len(argv) == 3:
        try:
            d = first_json(argv[1])
            print(fmt(eval(argv[2], {}, {"d": d})))
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            sys.stderr.write("jget: %s: %s\n" % (argv[1], e))
            print("")
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
