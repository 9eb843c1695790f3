"""Of a go tool pprof -raw listing, the samples with a user frame in a module
matching MODULE_REGEX, and how many of those unwound to the interpreter's main
(the outermost frame _start) or to the root of a thread (clone3, start_thread).
Prints one markdown row: | LABEL | samples | in the module | to main | to a
thread's root |; with --min-root PCT, exits 1 unless that share of the
module's samples reached main or a thread's root.
Usage: fw_share.py RAW MODULE_REGEX LABEL [--min-root PCT]"""
import re, sys
raw, modre, label = open(sys.argv[1]).read(), re.compile(sys.argv[2]), sys.argv[3]
min_root = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--min-root" else None
samples_txt, rest = raw.split("\nLocations\n", 1)
locs_txt, maps_txt = rest.split("\nMappings\n", 1)
maps = {m.group(1): m.group(2) for m in re.finditer(r"(?m)^\s*(\d+): \S+ (\S+)", maps_txt)}
locs = {m.group(1): (maps.get(m.group(2), ""), m.group(3))
        for m in re.finditer(r"(?m)^\s*(\d+): 0x[0-9a-f]+ M=(\d+) (\S+)", locs_txt)}
tot = lib = main = thread = 0
for m in re.finditer(r"(?m)^\s*(\d+)\s+\d+: ([\d ]+)$", samples_txt):
    n = int(m.group(1))
    user = [locs.get(i, ("", "")) for i in m.group(2).split()]
    user = [f for f in user if f[0] != "[kernel.kallsyms]"]
    tot += n
    if not any(modre.search(f[0]) for f in user):
        continue
    lib += n
    root = user[-1][1] if user else ""
    main += n * (root == "_start")
    thread += n * (root in ("clone3", "__clone3", "clone", "start_thread"))
pct = lambda x: 100.0 * x / lib if lib else 0.0
print("| %s | %d | %d | %d (%.0f%%) | %d (%.0f%%) |" % (label, tot, lib, main, pct(main), thread, pct(thread)))
if min_root is not None:
    sys.exit(0 if lib > 0 and pct(main + thread) >= min_root else 1)
