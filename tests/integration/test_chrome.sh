#!/usr/bin/env bash
# Chrome trace JSON from a real capture of the stand-in accelerator (kvm, or
# the loop driver without /dev/kvm; lib.sh) by kxprof convert --chrome: the
# file parses (plain and gzip, same content), one X slice per ioctl the
# workload issued, on its real pid/tids, with thread names, a device
# pseudo-process, nested slices and wall-clock timestamps; write errors
# name the path and leave no partial file.
. "$(dirname "$0")/lib.sh"

accel_argv 2 100
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/c.kxp" -- "${ACCEL_ARGV[@]}" >"$TMP/c.wl" 2>"$TMP/c.err" ||
	exit 0
before=$(date +%s)

kx 0 convert "$TMP/c.kxp" --chrome "$TMP/c.json.gz" >"$TMP/conv.out" 2>"$TMP/conv.err"
check convert_gz test -s "$TMP/c.json.gz"
kx 0 convert "$TMP/c.kxp" --chrome "$TMP/c.json" >/dev/null 2>>"$TMP/conv.err"
check convert_json test -s "$TMP/c.json"
[ -s "$TMP/conv.err" ] && cat "$TMP/conv.err"

# One check per line of output: "name ok" or "name why".
python3 - "$TMP/c.wl" "$TMP/c.json.gz" "$TMP/c.json" "$before" "$ACCEL" "$ACCEL_JOB" >"$TMP/checks" 2>&1 <<'PY'
import gzip, json, sys
from decimal import Decimal

wl = json.load(open(sys.argv[1]))
raw = gzip.open(sys.argv[2]).read()
d = json.loads(raw.decode("utf-8"), parse_float=Decimal)
plain = open(sys.argv[3], "rb").read()
now = int(sys.argv[4])
drv, job = sys.argv[5], sys.argv[6]


def res(name, ok, why=""):
    print(name, "ok" if ok else "bad " + why)


ev = d["traceEvents"]
# ioctl slices; the device timeline's job slices live on device pseudo-processes
xs = [e for e in ev if e.get("ph") == "X" and e["pid"] < 1000000000]
meta = [e for e in ev if e.get("ph") == "M"]
res("parses", isinstance(ev, list) and d.get("displayTimeUnit") == "ms")
res("gzip_same_as_plain", raw == plain)

counts = {}
for e in xs:
    counts[e["name"]] = counts.get(e["name"], 0) + 1
want = wl["ioctls"][job]
res("job_ioctl_count", counts.get(job) == want, "%r != %r" % (counts.get(job), want))
res("all_counts", counts == wl["ioctls"], "%r != %r" % (counts, wl["ioctls"]))
res("category", all(e["cat"] == "ioctl/" + drv for e in xs))

pid, tids = wl["pid"], set(wl["tids"])
run_tids = {e["tid"] for e in xs if e["name"] == job}
res("job_ioctl_tids", run_tids == tids, "%r != %r" % (sorted(run_tids), sorted(tids)))
res("pid", {e["pid"] for e in xs} == {pid}, repr({e["pid"] for e in xs}))
res("all_tids", {e["tid"] for e in xs} == tids | {pid})

tnames = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
pnames = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
res("thread_names", all(tnames.get(t) for t in tids | {pid}), repr(tnames))
res("process_name", bool(pnames.get(pid)), repr(pnames))
devs = [n for p, n in pnames.items() if p >= 1000000000]
res("device_process", any(n.startswith(drv + " ") for n in devs), repr(devs))

# wall clock: the first event happened during the recording just before
base = d["baseTimeNanoseconds"]
res("base_time", base % 1000 == 0 and now - 120 < base / 1e9 <= now + 1, "%r vs %r" % (base, now))
# nesting per thread
bad = 0
per = {}
for e in xs:
    per.setdefault(e["tid"], []).append((e["ts"], e["dur"]))
for sl in per.values():
    sl.sort()
    bad += sum(1 for a, b in zip(sl, sl[1:]) if a[0] + a[1] > b[0])
res("slices_nest", bad == 0, "%d overlaps" % bad)
# job durations: the kernel-side time sits inside the workload's own timing
runs = [e["dur"] for e in xs if e["name"] == job]
mean_us = float(sum(runs)) / len(runs) if runs else 0
wl_us = wl["job_ns"]["mean"] / 1e3
res("job_ioctl_durations", 0.5 * wl_us <= mean_us <= wl_us * 1.05 + 10, "%.1f vs %.1f" % (mean_us, wl_us))
res("args", all("device" in e["args"] and e["args"]["cmd"].startswith("0x") for e in xs))
inst = [e["args"]["message"] for e in ev if e.get("ph") == "i"]
res("warnings", inst == d["otherData"]["warnings"], repr(inst))
PY
pyrc=$?
while read -r name verdict why; do
	if [ "$verdict" = ok ]; then pass "chrome_$name"; else fail "chrome_$name" "$why"; fi
done <"$TMP/checks"
check chrome_checker_ran test $pyrc -eq 0

# Write errors: the path is named, nothing partial is left behind (a full
# disk is test_outputs.sh's). A device, /dev/full through a link too, is
# refused before writing (exit 2).
kx 1 convert "$TMP/c.kxp" --chrome /nonexistent-dir/t.json >/dev/null 2>"$TMP/e1"
check cannot_create_names_path grep -q /nonexistent-dir/t.json "$TMP/e1"
ln -s /dev/full "$TMP/full.json.gz"
kx 2 convert "$TMP/c.kxp" --chrome "$TMP/full.json.gz" >/dev/null 2>"$TMP/e2"
check device_refused_says grep -q "full.json.gz is a device" "$TMP/e2"
# A file cut short by the size limit is removed (EFBIG, like a full disk).
(
	trap '' XFSZ
	ulimit -f 8
	kx 1 convert "$TMP/c.kxp" --chrome "$TMP/small.json" >/dev/null 2>"$TMP/e3"
)
check size_limit_says grep -q "small.json.*too large" "$TMP/e3"
check size_limit_no_partial sh -c "! ls '$TMP' | grep -q '^small.json'"
