#!/usr/bin/env bash
# Chrome trace JSON from a real KVM capture (kxprof convert --chrome): the
# file parses (plain and gzip, same content), one X slice per ioctl the
# workload issued, on its real pid/tids, with thread names, a device
# pseudo-process, nested slices and wall-clock timestamps; write errors
# name the path and leave no partial file.
. "$(dirname "$0")/lib.sh"
need_kvm chrome || exit 0

"$KXPROF" record -o "$TMP/c.kxp" -- "$WL/kvm_workload" -t 2 -j 100 >"$TMP/c.wl" 2>"$TMP/c.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail record "exit $rc: $(cat "$TMP/c.err")"
	exit 0
fi
before=$(date +%s)

"$KXPROF" convert "$TMP/c.kxp" --chrome "$TMP/c.json.gz" >"$TMP/conv.out" 2>"$TMP/conv.err"
check convert_gz test $? -eq 0 -a -s "$TMP/c.json.gz"
"$KXPROF" convert "$TMP/c.kxp" --chrome "$TMP/c.json" >/dev/null 2>>"$TMP/conv.err"
check convert_json test $? -eq 0 -a -s "$TMP/c.json"
[ -s "$TMP/conv.err" ] && cat "$TMP/conv.err"

# One check per line of output: "name ok" or "name why".
python3 - "$TMP/c.wl" "$TMP/c.json.gz" "$TMP/c.json" "$before" >"$TMP/checks" 2>&1 <<'PY'
import gzip, json, sys
from decimal import Decimal

wl = json.load(open(sys.argv[1]))
raw = gzip.open(sys.argv[2]).read()
d = json.loads(raw.decode("utf-8"), parse_float=Decimal)
plain = open(sys.argv[3], "rb").read()
now = int(sys.argv[4])


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
want = wl["ioctls"]["KVM_RUN"]
res("kvm_run_count", counts.get("KVM_RUN") == want, "%r != %r" % (counts.get("KVM_RUN"), want))
res("all_counts", counts == wl["ioctls"], "%r != %r" % (counts, wl["ioctls"]))
res("category", all(e["cat"] == "ioctl/kvm" for e in xs))

pid, tids = wl["pid"], set(wl["tids"])
run_tids = {e["tid"] for e in xs if e["name"] == "KVM_RUN"}
res("kvm_run_tids", run_tids == tids, "%r != %r" % (sorted(run_tids), sorted(tids)))
res("pid", {e["pid"] for e in xs} == {pid}, repr({e["pid"] for e in xs}))
res("all_tids", {e["tid"] for e in xs} == tids | {pid})

tnames = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
pnames = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
res("thread_names", all(tnames.get(t) for t in tids | {pid}), repr(tnames))
res("process_name", bool(pnames.get(pid)), repr(pnames))
devs = [n for p, n in pnames.items() if p >= 1000000000]
res("device_process", any(n.startswith("kvm ") for n in devs), repr(devs))

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
# KVM_RUN durations: the kernel-side time sits inside the workload's own timing
runs = [e["dur"] for e in xs if e["name"] == "KVM_RUN"]
mean_us = float(sum(runs)) / len(runs) if runs else 0
wl_us = wl["kvm_run_ns"]["mean"] / 1e3
res("kvm_run_durations", 0.5 * wl_us <= mean_us <= wl_us * 1.05 + 10, "%.1f vs %.1f" % (mean_us, wl_us))
res("args", all("device" in e["args"] and e["args"]["cmd"].startswith("0x") for e in xs))
inst = [e["args"]["message"] for e in ev if e.get("ph") == "i"]
res("warnings", inst == d["otherData"]["warnings"], repr(inst))
PY
pyrc=$?
while read -r name verdict why; do
	if [ "$verdict" = ok ]; then pass "chrome_$name"; else fail "chrome_$name" "$why"; fi
done <"$TMP/checks"
check chrome_checker_ran test $pyrc -eq 0

# Write errors: the path is named, nothing partial is left behind.
"$KXPROF" convert "$TMP/c.kxp" --chrome /nonexistent-dir/t.json >/dev/null 2>"$TMP/e1"
rc=$?
check cannot_create_fails test $rc -ne 0
check cannot_create_names_path grep -q /nonexistent-dir/t.json "$TMP/e1"
if [ -c /dev/full ]; then
	ln -s /dev/full "$TMP/full.json.gz"
	"$KXPROF" convert "$TMP/c.kxp" --chrome "$TMP/full.json.gz" >/dev/null 2>"$TMP/e2"
	rc=$?
	check enospc_fails test $rc -ne 0
	check enospc_message grep -q "full.json.gz.*No space left" "$TMP/e2"
fi
# A file cut short by the size limit is removed (EFBIG, like a full disk).
(
	trap '' XFSZ
	ulimit -f 8
	"$KXPROF" convert "$TMP/c.kxp" --chrome "$TMP/small.json" >/dev/null 2>"$TMP/e3"
)
rc=$?
check size_limit_fails test $rc -ne 0
check size_limit_no_partial test ! -e "$TMP/small.json"
