#!/usr/bin/env bash
# NVIDIA device memory from the RM allocation ioctls, replayed from
# tests/fixtures/nvidia_mem.jsonl (built from NVIDIA's published structures;
# its header gives the expected figures): per process and region
# (vidmem/sysmem) allocated, freed, live at end and peak in the report
# (text and JSON), as Chrome counter events on the process's track, and as
# stats of the NVIDIA device plane in the XSpace. Also a real H100 capture
# (tests/fixtures/h100_pytorch.kxp, recorded before the allocation
# parameters were copied): it still reads, reports the same RM and UVM
# calls, and shows no NVIDIA memory (it holds no sizes); and a real H200
# capture (tests/fixtures/h200_pytorch.kxp) that holds them.
# kxtest: check (no root, no BPF)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FX=$ROOT/tests/fixtures

# 1. report: text table and JSON
kx 0 report "$FX/nvidia_mem.jsonl" >"$TMP/r.txt" 2>"$TMP/r.err"
check text_table python3 - "$TMP/r.txt" <<'PY'
import sys
t = open(sys.argv[1]).read().split("\n")
i = t.index("NVIDIA memory (bytes)")
rows = [l.split() for l in t[i + 2:i + 6]]
want = [["9100", "vidmem", "2", "1", "23068672", "2097152", "20971520", "23068672"],
        ["9100", "sysmem", "2", "0", "69632", "0", "69632", "69632"],
        ["9200", "vidmem", "1", "1", "16777216", "16777216", "0", "16777216"],
        ["9200", "sysmem", "1", "1", "2097152", "2097152", "0", "2097152"]]
sys.exit(0 if rows == want and t[i + 6] == "" else 1)
PY
kx 0 report --json "$FX/nvidia_mem.jsonl" >"$TMP/r.json" 2>"$TMP/rj.err"
check json_nvidia_memory python3 - "$TMP/r.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["NVIDIA Memory"]
def r(a, f, al, fr, live, peak):
    return {"Allocations": a, "Frees": f, "Allocated": al, "Freed": fr, "Live": live, "Peak": peak}
want = {"9100": {"vidmem": r(2, 1, 23068672, 2097152, 20971520, 23068672),
                 "sysmem": r(2, 0, 69632, 0, 69632, 69632)},
        "9200": {"vidmem": r(1, 1, 16777216, 16777216, 0, 16777216),
                 "sysmem": r(1, 1, 2097152, 2097152, 0, 2097152)}}
sys.exit(0 if m == want else 1)
PY

# 2. Chrome: the usage after each event, per process and region
kx 0 convert "$FX/nvidia_mem.jsonl" --chrome "$TMP/t.json" >/dev/null 2>"$TMP/c.err"
check chrome_counters python3 - "$TMP/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
got = {}
for e in ev:
    if e.get("ph") == "C" and e["name"].startswith("nvidia "):
        got.setdefault((e["pid"], e["name"]), []).append(e["args"]["bytes"])
want = {(9100, "nvidia vidmem"): [2097152, 23068672, 20971520],
        (9100, "nvidia sysmem"): [65536, 69632],
        (9200, "nvidia vidmem"): [16777216, 0],
        (9200, "nvidia sysmem"): [2097152, 0]}
sys.exit(0 if got == want else 1)
PY

# 3. XSpace: stats of the NVIDIA device plane
kx 0 convert "$FX/nvidia_mem.jsonl" --xplane "$TMP/logdir" >"$TMP/x.out" 2>"$TMP/x.err"
"$ROOT/scripts/xspace-dump.sh" --json "$(head -1 "$TMP/x.out")" >"$TMP/x.json" 2>"$TMP/xd.err"
check xspace_stats python3 - "$TMP/x.json" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
st = {}
for p in x["planes"]:
    for k, v in p.get("stats", {}).items():
        if k.startswith("pid "):
            st[k] = int(v)
want = {"pid 9100 vidmem allocated": 23068672, "pid 9100 vidmem freed": 2097152,
        "pid 9100 vidmem live": 20971520, "pid 9100 vidmem peak": 23068672,
        "pid 9100 sysmem allocated": 69632, "pid 9100 sysmem freed": 0,
        "pid 9100 sysmem live": 69632, "pid 9100 sysmem peak": 69632,
        "pid 9200 vidmem allocated": 16777216, "pid 9200 vidmem freed": 16777216,
        "pid 9200 vidmem live": 0, "pid 9200 vidmem peak": 16777216,
        "pid 9200 sysmem allocated": 2097152, "pid 9200 sysmem freed": 2097152,
        "pid 9200 sysmem live": 0, "pid 9200 sysmem peak": 2097152}
sys.exit(0 if st == want else 1)
PY

# 4. the real H100 capture: the same calls, no sizes so no NVIDIA memory
kx 0 report --json "$FX/h100_pytorch.kxp" >"$TMP/h.json" 2>"$TMP/h.err"
check h100_calls python3 - "$TMP/h.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
nv = j["Time"]["ioctl/nvidia"]; uvm = j["Time"]["ioctl/nvidia-uvm"]
c = lambda t, n: t[n]["Total Count"]
ok = (c(nv, "NV_ESC_RM_ALLOC") == 134 and c(nv, "NV_ESC_RM_FREE") == 3 and
      c(nv, "NV_ESC_RM_ALLOC_MEMORY") == 5 and c(nv, "NV_ESC_RM_CONTROL") == 230 and
      c(uvm, "UVM_REGISTER_GPU") == 1 and c(uvm, "UVM_MAP_EXTERNAL_ALLOCATION") == 38 and
      c(uvm, "UVM_REGISTER_CHANNEL") == 20 and j["NVIDIA Memory"] == {})
sys.exit(0 if ok else 1)
PY

# 5. the real H100 capture in Chrome: no job ran on any of its 9 traced devices,
# so the trace names only the python process (no empty device tracks)
kx 0 convert "$FX/h100_pytorch.kxp" --chrome "$TMP/h.trace.json" >/dev/null 2>"$TMP/hc.err"
check h100_chrome_no_empty_device_tracks python3 - "$TMP/h.trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"]
sys.exit(0 if names == ["python3"] else "process names: %s" % names)
PY

# 6. a real H200 capture (tests/fixtures/h200_pytorch.kxp: scripts/gpu-check.sh,
# tests/gpu/RESULTS.md) with the allocation parameters: the NVIDIA memory of
# the PyTorch process per region, each live figure its allocated less its
# freed; the generic Memory table names its two devices by their nodes
kx 0 report "$FX/h200_pytorch.kxp" >"$TMP/g.txt" 2>"$TMP/g.err"
check h200_text_table python3 - "$TMP/g.txt" <<'PY'
import sys
t = open(sys.argv[1]).read().split("\n")
i = t.index("NVIDIA memory (bytes)")
rows = [l.split() for l in t[i + 2:i + 4]]
want = [["616", "vidmem", "27", "1", "1260388352", "434110464", "826277888", "826277888"],
        ["616", "sysmem", "31", "0", "83881984", "0", "83881984", "83881984"]]
ok = rows == want and all(int(r[4]) - int(r[5]) == int(r[6]) for r in rows)
m = t.index("Memory (bytes)")
names = sorted(l.split("  ")[0] for l in t[m + 2:m + 4])
sys.exit(0 if ok and names == ["memory/nvidia (nvidia0)", "memory/nvidia (nvidiactl)"]
         else "rows %s, names %s" % (rows, names))
PY
kx 0 convert "$FX/h200_pytorch.kxp" --chrome "$TMP/g.trace.json" >/dev/null 2>"$TMP/gc.err"
check h200_chrome_counters_end_live python3 - "$TMP/g.trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
last = {}
for e in sorted((e for e in ev if e.get("ph") == "C" and e["name"].startswith("nvidia ")),
                key=lambda e: e["ts"]):
    last[e["name"]] = e["args"]["bytes"]
sys.exit(0 if last == {"nvidia vidmem": 826277888, "nvidia sysmem": 83881984} else str(last))
PY
kx 0 convert "$FX/h200_pytorch.kxp" --xplane "$TMP/glogdir" >"$TMP/gx.out" 2>"$TMP/gx.err"
"$ROOT/scripts/xspace-dump.sh" --json "$(head -1 "$TMP/gx.out")" >"$TMP/gx.json" 2>"$TMP/gxd.err"
check h200_xspace_stats_once python3 - "$TMP/gx.json" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
held = [p["name"] for p in x["planes"] if "pid 616 vidmem live" in p.get("stats", {})]
live = [int(p["stats"]["pid 616 vidmem live"]) for p in x["planes"]
        if "pid 616 vidmem live" in p.get("stats", {})]
sys.exit(0 if len(held) == 1 and "nvidia" in held[0] and live == [826277888]
         else "planes holding the stats: %s" % held)
PY
