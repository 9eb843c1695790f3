#!/usr/bin/env python3
"""The markdown section of tests/bench/sampling.sh from its raw measurements.

Usage: sampling_report.py RAW ROUNDS SPIN FLUSH LONG WORKLOAD KXPROF
RAW holds lines "variant round metric value". Prints medians with min-max,
the cost against untraced runs of the same invocation, and the ratio to
perf record at the same frequency.
"""
import statistics
import sys
from collections import defaultdict


def load(path):
    v = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 4 or parts[3] in ("", "None"):
            continue
        v[parts[0]][parts[2]].append(float(parts[3]))
    return v


def med(xs):
    return statistics.median(xs) if xs else None


def span(xs, fmt):
    if not xs:
        return "—"
    return "%s (%s–%s)" % (fmt % med(xs), fmt % min(xs), fmt % max(xs))


def pct(x):
    return "—" if x is None else "%.1f%%" % (100 * x)


def main():
    raw, rounds, spin, flush, long_s, wl, kx = sys.argv[1:8]
    v = load(raw)
    base = v.get("untraced", {})
    b_spin, b_flush = med(base.get("spin", [])), med(base.get("flush", []))
    names = {
        "untraced": "untraced",
        "kxprof-99": "**kxprof record -F 99** (samples + driver-call frames + ioctl trace)",
        "perf-99": "perf record -e cpu-clock -F 99 -g",
        "kxprof-999": "**kxprof record -F 999**",
        "perf-999": "perf record -e cpu-clock -F 999 -g",
    }
    print("## 7. CPU sampling: kxprof record -F against perf record -F -g\n")
    print("Workload `%s -s %s -D /dev/loopN -f %s`: %s s of user-space spinning, then %s s of "
          "BLKFLSBUF kept busy in the kernel; work done per second, medians of %s alternating "
          "rounds (min–max). *Cost* is the work lost against the untraced runs of this "
          "invocation; *tracer CPU* is the tracer's own CPU time over the whole run, start-up "
          "(loading its programs) included: the whole command's user+system time less the "
          "workload's own. kxprof runs with `--no-jobs` (the ioctl trace that gives the "
          "driver-call frames stays on)."
          % (wl, spin, flush, spin, flush, rounds))
    print()
    print("| variant | spin units/s | cost | BLKFLSBUF/s | cost | tracer CPU, s | samples |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    cost = {}
    for key in ("untraced", "kxprof-99", "perf-99", "kxprof-999", "perf-999"):
        m = v.get(key)
        if not m:
            continue
        s, f = med(m["spin"]), med(m["flush"])
        cs = None if key == "untraced" or not b_spin else 1 - s / b_spin
        cf = None if key == "untraced" or not b_flush else 1 - f / b_flush
        cost[key] = (cs, cf)
        tracer = [a - w for a, w in zip(m["all_cpu"], m["wl_cpu"])]
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            names[key], span(m["spin"], "%.0f"), pct(cs), span(m["flush"], "%.1f"), pct(cf),
            "—" if key == "untraced" else span(tracer, "%.2f"),
            "—" if key == "untraced" else "%.0f" % med(m["samples"])))
    print()
    for hz in ("99", "999"):
        k, p = cost.get("kxprof-" + hz), cost.get("perf-" + hz)
        if not k or not p or k[0] is None or p[0] is None:
            continue
        print("- %s Hz: spin cost %s for kxprof, %s for perf; flush cost %s and %s. Target "
              "(no more than perf at the same frequency): %s." % (
                  hz, pct(k[0]), pct(p[0]), pct(k[1]), pct(p[1]),
                  "met" if k[0] <= p[0] + 0.005 and k[1] <= p[1] + 0.005 else "not met"))
    print()
    print("### Captures of %s s: size and symbolisation\n" % long_s)
    print("`%s record -F HZ --no-jobs --device loop -- %s -s %d -D /dev/loopN -f %d`, then `convert "
          "--pprof --folded`. Symbolisation is the time the recorder spent reading the "
          "processes' maps and ELF symbols and resolving every distinct address, during and "
          "at the end of the capture." % (kx, wl, int(long_s) // 2, int(long_s) // 2))
    print()
    print("| Hz | samples | record file | bytes/sample | symbolisation | pprof.gz | folded "
          "(lines) | convert, s (peak RSS) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for hz in ("99", "999"):
        m = v.get("long-" + hz)
        if not m:
            continue
        g = {k: m[k][0] for k in m}
        print("| %s | %.0f | %.1f KiB | %.1f | %.1f ms | %.1f KiB | %.1f KiB (%.0f) | %.2f (%.1f MiB) |" % (
            hz, g["samples"], g["kxp_bytes"] / 1024, g["kxp_bytes"] / max(g["samples"], 1),
            g["sym_ms"], g["pprof_bytes"] / 1024, g["folded_bytes"] / 1024, g["folded_lines"],
            g["convert_s"], g["convert_rss_kib"] / 1024))


if __name__ == "__main__":
    main()
