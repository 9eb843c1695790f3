#!/usr/bin/env bash
# Device timelines, live and replayed: every fixture goes through report,
# replay -> .kxp -> report (same JSON) and convert; then real captures:
# block I/O on a loop device (and O_DIRECT reads of /dev/vda when it can be
# read) counted against the workload's own I/O counters; the stand-in
# accelerator's jobs (lib.sh: KVM_RUN, or BLKZEROOUT on loop) linked to the
# ioctls that submitted them, with flows in XSpace and Chrome; and off-CPU
# time: a sleeping call (KVM_RUN halting on a timer; a BLKZEROOUT waiting for
# the loop worker) is blocked for nearly all of it, a busy one (KVM_RUN
# spinning in the guest; BLKGETSIZE64) for nearly none.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DUMP="$ROOT/scripts/xspace-dump.sh"
quiet() { "$@" >/dev/null 2>&1; }

# 0. replay: fixtures load wherever record files do, and survive a .kxp round trip
#    (the same report, streamed from the .kxp: percentiles within 1/256)
for f in "$ROOT"/tests/fixtures/*.jsonl; do
	n=$(basename "$f" .jsonl)
	kx 0 report --json "$f" >"$TMP/$n.a.json" 2>"$TMP/$n.err"
	check "replay_report_$n" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' \
		"$TMP/$n.a.json"
	kx 0 replay "$f" -o "$TMP/$n.kxp" >/dev/null 2>>"$TMP/$n.err" &&
		kx 0 report --json "$TMP/$n.kxp" >"$TMP/$n.b.json" 2>>"$TMP/$n.err"
	# The .kxp streams (rows' percentiles within 1/256), the fixture is read whole.
	check "replay_kxp_same_report_$n" python3 "$ROOT/tests/integration/same_report.py" \
		"$TMP/$n.b.json" "$TMP/$n.a.json"
	kx 0 convert "$f" --xplane "$TMP/$n.logdir" --chrome "$TMP/$n.trace.json" \
		>"$TMP/$n.conv" 2>>"$TMP/$n.err"
	check "replay_xspace_$n" quiet "$DUMP" --summary "$(head -1 "$TMP/$n.conv")"
	check "replay_chrome_$n" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' \
		"$TMP/$n.trace.json"
done
# the anomalies of a fixture reach the report, exactly
check replay_anomalies test "$(jget "$TMP/amdgpu_new.a.json" 'd["Jobs"]["anomalies"]')" = \
	"{'incomplete': 1, 'no_queue': 2, 'duplicate': 1, 'out_of_order': 1, 'unlinked': 0, 'runs_without_exit': 0, 'unknown': 0}"
check replay_no_nvidia_jobs test "$(jget "$TMP/nvidia.a.json" '(d["Jobs"]["devices"], d["Memory"])')" = "({}, {})"
# loop.jsonl is a live recording: its ioctls are exactly what the workload
# said it issued (its JSON is in the fixture's header), and every BLKZEROOUT
# that worked has its job linked to it, with no anomaly.
sed -n 's/^# workload: //p' "$ROOT/tests/fixtures/loop.jsonl" >"$TMP/loop_live.wl"
check replay_live_loop_counts python3 "$(dirname "$0")/counts.py" "$TMP/loop_live.wl" \
	"$TMP/loop.a.json" ioctl/loop
check replay_live_loop_jobs python3 - "$TMP/loop_live.wl" "$TMP/loop.a.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
def zero_ok(w):
    return (w["ioctls"].get("BLKZEROOUT", 0) - sum(w["errors"].get("BLKZEROOUT", {}).values())
            + sum(zero_ok(c) for c in w["children"]))
dev = r["Jobs"]["devices"]["loop"]
print("BLKZEROOUT that worked", zero_ok(w), "jobs", dev["jobs"], "linked", dev["linked"])
sys.exit(0 if dev["jobs"] == dev["linked"] == zero_ok(w) > 0
         and sum(r["Jobs"]["anomalies"].values()) == 0 else 1)
PY

# Job slices of a Chrome trace as "name submitter_pid bytes queue_delay_ok" lines.
job_slices() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e["pid"] >= 1000000000:
        a = e["args"]
        ok = e["dur"] >= 0 and a.get("queue_delay_us", 0) >= 0
        print(e["name"].replace(" ", "_"), a.get("submitter_pid", 0), a.get("bytes", 0), int(ok))
PY
}

# 1. block I/O on a loop device: 64 writes then 64 reads of 4 KiB, O_DIRECT
if [ -e /dev/loop-control ]; then
	if kx 0 record --device loop -o "$TMP/loop.kxp" -- "$WL/loop_workload" -d -b 64 -p "$TMP" \
		>"$TMP/loop.wl" 2>"$TMP/loop.err" &&
		kx 0 report --json "$TMP/loop.kxp" >"$TMP/loop.json" &&
		kx 0 convert "$TMP/loop.kxp" --chrome "$TMP/loop.trace.json" \
			--xplane "$TMP/loop.logdir" >"$TMP/loop.conv"; then
		pid=$(jget "$TMP/loop.wl" 'd["pid"]')
		dev=$(basename "$(jget "$TMP/loop.wl" 'd["loop_dev"]')")
		job_slices "$TMP/loop.trace.json" >"$TMP/loop.slices"
		check loop_writes_exact test "$(grep -c "^block_write $pid 4096 " "$TMP/loop.slices")" -eq \
			"$(jget "$TMP/loop.wl" 'd["io"]["writes"]')"
		check loop_reads_exact test "$(grep -c "^block_read $pid 4096 " "$TMP/loop.slices")" -eq \
			"$(jget "$TMP/loop.wl" 'd["io"]["reads"]')"
		check loop_phases_ordered test "$(grep -c ' 0$' "$TMP/loop.slices")" -eq 0
		# No anomaly, unless a job event was counted lost: a lost DONE
		# (job_done_lost, see test_report_stream.sh) shows the sector's
		# next request's phases as duplicates. Then they are only said.
		anom=$(jget "$TMP/loop.json" \
			'd["Jobs"]["anomalies"]["incomplete"] + d["Jobs"]["anomalies"]["out_of_order"] + d["Jobs"]["anomalies"]["duplicate"]')
		lost=$(jget "$TMP/loop.json" \
			'd["Capture"]["bpf_missed"] + d["Capture"]["job_dropped"] + (d["Capture"]["job_done_lost"] or 0)')
		[ "$lost" -eq 0 ] || echo "# loop: $anom anomalies with $lost job events counted lost"
		check loop_no_anomalies test "$anom" -eq 0 -o "$lost" -gt 0
		check loop_jobs_category test "$(jget "$TMP/loop.json" \
			'd["Time"]["jobs/loop"]["'"$dev"' exec"]["Total Count"] >= 128')" = True
		check loop_no_job_loss test "$(jget "$TMP/loop.json" \
			'd["Capture"]["job_received"] + d["Capture"]["job_dropped"] == d["Capture"]["job_emitted"] and d["Capture"]["job_dropped"] == 0')" = True
		check loop_chrome_track python3 - "$TMP/loop.trace.json" "$dev" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = any(e.get("ph") == "M" and e["name"] == "thread_name" and e["pid"] >= 1000000000
         and e["args"]["name"] == sys.argv[2] for e in d["traceEvents"])
sys.exit(0 if ok else 1)
PY
		"$DUMP" --json "$(head -1 "$TMP/loop.conv")" >"$TMP/loop.x.json"
		check loop_device_plane python3 - "$TMP/loop.x.json" "$dev" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
lines = [l for p in x["planes"] if p["name"].startswith("/device:")
         for l in p["lines"] if l["name"] == sys.argv[2]]
sys.exit(0 if lines and lines[0]["events"] >= 128 else 1)
PY
	fi
else
	skip loop_jobs "no /dev/loop-control"
fi

# 2. O_DIRECT reads of the virtio disk, when this machine lets us read it
stat_sum() { awk '{print $1 + $5 + $12 + $15}' "/sys/block/$1/stat"; }
if [ -b /dev/vda ] && dd if=/dev/vda of=/dev/null bs=4k count=1 iflag=direct 2>/dev/null; then
	before=$(stat_sum vda)
	kx 0 record --device /dev/vda -o "$TMP/vda.kxp" -- \
		dd if=/dev/vda of=/dev/null bs=4k count=256 iflag=direct >/dev/null 2>"$TMP/vda.err"
	after=$(stat_sum vda)
	kx 0 report --json "$TMP/vda.kxp" >"$TMP/vda.json"
	kx 0 convert "$TMP/vda.kxp" --chrome "$TMP/vda.trace.json" >/dev/null
	job_slices "$TMP/vda.trace.json" >"$TMP/vda.slices"
	# dd's reads: the most frequent submitter of 4 KiB reads
	dd_reads=$(grep '^block_read [1-9][0-9]* 4096 ' "$TMP/vda.slices" | awk '{print $2}' |
		sort | uniq -c | sort -rn | awk 'NR == 1 {print $1}')
	check vda_dd_reads_exact test "${dd_reads:-0}" -eq 256
	check vda_within_disk_stats test "$(wc -l <"$TMP/vda.slices")" -le $((after - before))
	check vda_phases_ordered test "$(grep -c ' 0$' "$TMP/vda.slices")" -eq 0
else
	skip vda_jobs "/dev/vda missing or not readable here (O_DIRECT dd failed)"
fi

# 3. The stand-in accelerator: a job per job ioctl, linked to it, with a
# flow in XSpace and Chrome
if [ "$ACCEL" = kvm ]; then PLANE="kvm /dev/kvm"; else PLANE="loop /dev/loop*"; fi
accel_argv 2 50
# (no annotations: the capture is also written as a fixture below, and the
# replay format has none)
if kx 0 record "${ACCEL_DEV[@]}" --no-annotations -o "$TMP/acc.kxp" -- "${ACCEL_ARGV[@]}" \
	>"$TMP/acc.wl" 2>"$TMP/acc.err" &&
	kx 0 report --json "$TMP/acc.kxp" >"$TMP/acc.json" &&
	kx 0 convert "$TMP/acc.kxp" --chrome "$TMP/acc.trace.json" --xplane "$TMP/acc.logdir" \
		>"$TMP/acc.conv"; then
	runs=$(jget "$TMP/acc.wl" 'd["ioctls"]["'$ACCEL_JOB'"]')
	# kvm: a job per KVM_RUN, nothing else. loop: the device's jobs include the
	# I/O other tasks do on it (udev probing the newly attached device): jobs
	# are kept per device, not per process; every BLKZEROOUT has its job linked.
	if [ "$ACCEL" = kvm ]; then LINKED='(d["jobs"], d["linked"]) == ('$runs', '$runs')'; else
		LINKED='d["jobs"] >= d["linked"] == '$runs; fi
	check accel_jobs_linked test "$(jget "$TMP/acc.json" \
		'(lambda d: '"$LINKED"')(d["Jobs"]["devices"]["'$ACCEL'"])')" = True
	# kvm: no anomaly at all. loop: other tasks' loop devices are traced too and
	# their requests may straddle the capture's edges; the workload's ring has
	# every job completed and linked (checked with the rings below).
	if [ "$ACCEL" = kvm ]; then
		check accel_no_anomalies test "$(jget "$TMP/acc.json" 'sum(d["Jobs"]["anomalies"].values())')" -eq 0
	fi
	# a ring per vCPU thread under kvm; the workload's loop device's ring under loop
	check accel_rings python3 - "$TMP/acc.json" "$TMP/acc.wl" "$ACCEL" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))["Jobs"]["devices"][sys.argv[3]]["rings"]
w = json.load(open(sys.argv[2]))
if sys.argv[3] == "kvm":
    want = ["vcpu %d" % t for t in w["tids"]]
    print("rings", sorted(r), "want", sorted(want))
    sys.exit(0 if sorted(r) == sorted(want) else 1)
# loop: every loop device is traced, so other tasks' loop devices may show
# rings too; the workload's device has one, holding every linked job.
ring = r.get(os.path.basename(w["loop_dev"]), {})
print("rings", sorted(r), "workload's", os.path.basename(w["loop_dev"]), ring)
n = w["ioctls"]["BLKZEROOUT"]
# every BLKZEROOUT linked to its job; every job of the ring completed (other
# tasks' I/O on the new device, udev's probing, adds unlinked jobs)
sys.exit(0 if ring.get("linked") == n and ring.get("completed") == ring.get("jobs", -1) >= n else 1)
PY
	check accel_chrome_flows python3 - "$TMP/acc.trace.json" "$runs" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
s = {e["id"] for e in ev if e.get("ph") == "s"}
f = {e["id"] for e in ev if e.get("ph") == "f" and e.get("bp") == "e"}
sys.exit(0 if s == f and len(f) == int(sys.argv[2]) else 1)
PY
	# The capture as a fixture (tests/tools/kxp_fixture): it replays into the
	# same report, Chrome trace and XSpace, byte for byte.
	if "$WL/kxp_fixture" "$TMP/acc.kxp" >"$TMP/acc.jsonl" 2>"$TMP/fixture.err" &&
		kx 0 report --json "$TMP/acc.jsonl" >"$TMP/acc.f.json" &&
		kx 0 convert "$TMP/acc.jsonl" --chrome "$TMP/acc.f.trace.json" --xplane "$TMP/acc.f.logdir" \
			>"$TMP/acc.f.conv"; then
		# A fixture is replayed into memory: the record file's report read the same way.
		kx 0 report --in-memory --json "$TMP/acc.kxp" >"$TMP/acc.m.json"
		check fixture_same_report cmp -s "$TMP/acc.m.json" "$TMP/acc.f.json"
		check fixture_same_chrome cmp -s "$TMP/acc.trace.json" "$TMP/acc.f.trace.json"
		check fixture_same_xspace cmp -s "$(head -1 "$TMP/acc.conv")" "$(head -1 "$TMP/acc.f.conv")"
	else
		fail fixture_written "kxp_fixture: $(cat "$TMP/fixture.err")"
	fi
	"$DUMP" "$(head -1 "$TMP/acc.conv")" >"$TMP/acc.x.txt"
	check accel_xspace_flows python3 - "$TMP/acc.x.txt" "$runs" "$PLANE" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# flow stats: direction in the low 2 bits, id above
planes = text.split("\nplanes {")
def flows(chunk):
    ids = {m.group(1) for m in re.finditer(r'\n      id: (\d+)\n      name: "flow"\n', chunk)}
    out = []
    for m in re.finditer(r"metadata_id: (\d+)\n        uint64_value: (\d+)", chunk):
        if m.group(1) in ids:
            out.append(int(m.group(2)))
    return out
host = [p for p in planes if 'name: "/host:CPU"' in p][0]
dev = [p for p in planes if re.search(r'name: "/device:CUSTOM:\d+ \(%s\)"' % re.escape(sys.argv[3]), p)][0]
o = sorted(v >> 2 for v in flows(host) if v & 3 == 2)
i = sorted(v >> 2 for v in flows(dev) if v & 3 == 1)
sys.exit(0 if o == i and len(o) == int(sys.argv[2]) else 1)
PY
fi

# 4. off-CPU time: a sleeping call is blocked for nearly all of it, a busy one
# for nearly none. kvm: KVM_RUN halting on a 3 ms timer (blocked for at least
# 70% of those 60 ms), then spinning 3000 guest loops. loop: a BLKZEROOUT
# waits for the loop worker to run its requests, so its blocked time covers
# the device's execution of them (the block tracepoints' exec time: an
# independent measurement); its on-CPU share varies with the page cache work
# around the wait, so it is not held to "mostly blocked". BLKGETSIZE64 calls
# in the same run stay on the CPU.
if [ "$ACCEL" = kvm ]; then
	kx 0 record -o "$TMP/sleep.kxp" -- "$WL/kvm_workload" -t 1 -j 20 -s -u 3000 -l 0 \
		>"$TMP/sleep.wl" 2>/dev/null
	kx 0 report --json "$TMP/sleep.kxp" >"$TMP/sleep.json"
	kx 0 record -o "$TMP/busy.kxp" -- "$WL/kvm_workload" -t 1 -j 20 -l 3000 \
		>"$TMP/busy.wl" 2>/dev/null
	kx 0 report --json "$TMP/busy.kxp" >"$TMP/busy.json"
	BUSY=KVM_RUN
	SLEEP_CHECK='(lambda r: r["Blocked Time"] >= 0.6 * r["Total Time"] and r["Blocked Time"] >= 0.7 * 20 * 3.0)(d["Time"]["ioctl/kvm"]["KVM_RUN"])'
else
	kx 0 record --device loop -o "$TMP/sleep.kxp" -- "$WL/loop_workload" -s 16 -p "$TMP" -t 1 \
		-j 20 -k zero -g 20000 >"$TMP/sleep.wl" 2>/dev/null
	kx 0 report --json "$TMP/sleep.kxp" >"$TMP/sleep.json"
	cp "$TMP/sleep.json" "$TMP/busy.json"
	BUSY=BLKGETSIZE64
	SLEEP_CHECK='(lambda r, x: r["Blocked Time"] >= 0.9 * x > 0)(d["Time"]["ioctl/loop"]["BLKZEROOUT"], sum(v["Total Time"] for k, v in d["Time"]["jobs/loop"].items() if k.endswith(" exec")))'
fi
if [ "$(jget "$TMP/sleep.json" 'd["Capture"]["offcpu_measured"]')" = True ]; then
	check offcpu_sleep_close_to_duration test "$(jget "$TMP/sleep.json" "$SLEEP_CHECK")" = True
	check offcpu_busy_close_to_zero test "$(jget "$TMP/busy.json" \
		'(lambda r: r["Blocked Time"] <= 0.1 * r["Total Time"])(d["Time"]["ioctl/'$ACCEL'"]["'$BUSY'"])')" = True
	check offcpu_sums test "$(jget "$TMP/sleep.json" \
		'(lambda r: abs(r["Blocked Time"] + r["On-CPU Time"] - r["Total Time"]) < 1e-3)(d["Time"]["ioctl/'$ACCEL'"]["'$ACCEL_JOB'"])')" = True
else
	skip offcpu "sched_switch not attached: off-CPU time not measured"
fi

# 5. Without job records (record --no-jobs), convert reads a capture of the
# stand-in one time window at a time (-v says so). Under kvm its device
# memory (the VM's memory slots: a series that adds up over the whole
# capture) is the whole capture's in every part: every part is the bytes of
# the part written from the whole capture in memory (--in-memory).
accel_argv 2 150
if kx 0 record "${ACCEL_DEV[@]}" --no-jobs --no-annotations -o "$TMP/nj.kxp" -- \
	"${ACCEL_ARGV[@]}" >/dev/null 2>"$TMP/nj.err"; then
	for m in w m; do
		opt=(-v convert)
		[ $m = m ] && opt=(convert --in-memory)
		mkdir -p "$TMP/nj.$m"
		kx 0 "${opt[@]}" "$TMP/nj.kxp" --split-events 60 --xplane "$TMP/nj.$m/x" \
			--chrome "$TMP/nj.$m/p.json" >/dev/null 2>"$TMP/nj.$m.err"
	done
	check nojobs_windowed grep -q "read one window at a time" "$TMP/nj.w.err"
	check nojobs_parts test "$(ls "$TMP/nj.w"/p.*.json | wc -l)" -ge 3
	check nojobs_same_chrome sh -c "cd '$TMP/nj.w' && for f in p.*.json; do cmp -s \$f ../nj.m/\$f || exit 1; done"
	check nojobs_same_xspace bash -c "diff <(cd '$TMP/nj.w/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2) <(cd '$TMP/nj.m/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2) >/dev/null"
	if [ "$ACCEL" = kvm ]; then
		check nojobs_memory python3 -c '
import glob, json, sys
n = sum(1 for p in glob.glob(sys.argv[1] + "/p.*.json") for e in json.load(open(p))["traceEvents"]
        if e.get("ph") == "C" and e.get("name") == "memory")
sys.exit(0 if n > 0 else "no memory counter in the parts")' "$TMP/nj.w"
	fi
else
	fail nojobs_record "$(tail -3 "$TMP/nj.err")"
fi
