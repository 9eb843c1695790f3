#!/usr/bin/env bash
# `kxprof convert` of a capture over the trace consumers' limit
# (--split-events N, default 1,000,000 trace events per output): a
# synthesised capture (a replay fixture of 6001 events: KVM_RUN calls longer
# than their spacing, so they span the cuts, and one job each) is split by
# time into several XSpace runs and Chrome files. Each part opens in the real
# consumers (protoc --decode against proto/xplane.proto, python's gzip and
# json), every event of the unsplit output is in exactly one part, each
# part's events start inside its window, a capture under the limit gives
# byte for byte the output it gives unsplit, and bad values are refused
# with exit 2; a capture whose reason to read it whole comes past a window's
# records is read once, and so is one whose plan (-v) counts a bucket again. A capture without jobs is read one time window at a time
# (with annotations: test_annotate.sh; with counters: test_counters.sh): its
# parts are the bytes --in-memory gives, also when a chunk is corrupt (a
# Chrome file alone, written from slices of its window: the same lines).
# Needs no BPF: it runs the
# same with and without /dev/kvm.
# kxtest: check (no root, no BPF)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DUMP="$ROOT/scripts/xspace-dump.sh"
OFFSET=1699999990000000000 # the fixture's realtime offset (ns)

python3 - "$OFFSET" >"$TMP/split.jsonl" <<'PY'
import json, sys
off, n, T0 = int(sys.argv[1]), 3000, 10_000_000_000
def w(d): print(json.dumps(d, separators=(",", ":")))
w({"type": "capture", "host": "splitbox", "kernel": "6.18.0", "cmdline": "synthetic",
   "start_ns": T0, "stop_ns": T0 + (n + 10) * 1_000_000, "realtime_offset_ns": off,
   "emitted": n + 1, "received": n + 1, "job_emitted": n, "job_received": n})
w({"type": "device", "node": "/dev/kvm", "driver": "kvm", "kind": "chr", "dev": "10:232"})
w({"type": "device", "node": "anon_inode:kvm-vcpu", "driver": "kvm", "kind": "kvm-vcpu", "dev": "0:0"})
w({"type": "task", "ts": T0, "pid": 7001, "tid": 7001, "what": "exec", "comm": "split_wl"})
for t in (7002, 7003):
    w({"type": "task", "ts": T0 + 1000, "pid": 7001, "tid": t, "what": "fork", "comm": "vcpu%d" % (t - 7002)})
w({"type": "ioctl", "ts": T0 + 100000, "dur": 200000, "pid": 7001, "tid": 7001, "driver": "kvm",
   "kind": "chr", "dev": "10:232", "fd": 3, "cmd": "KVM_CREATE_VM", "ret": 4, "cpu": 0})
for i in range(n):
    tid, ts = 7002 + i % 2, T0 + 1_000_000 + i * 1_000_000
    w({"type": "ioctl", "ts": ts, "dur": 1_500_000 if i % 2 else 700_000, "pid": 7001, "tid": tid,
       "driver": "kvm", "kind": "kvm-vcpu", "dev": "0:0", "fd": 5, "cmd": "KVM_RUN", "cpu": i % 2})
    w({"type": "job", "ts": ts + 300_000, "src": "kvm", "phase": "done", "ctx": tid, "aux": 2,
       "pid": 7001, "tid": tid, "ring": "vcpu %d" % tid})
PY
kx 0 replay "$TMP/split.jsonl" -o "$TMP/c.kxp" >/dev/null 2>"$TMP/replay.err" || {
	fail replay "$(cat "$TMP/replay.err")"
	exit 0
}

# The whole capture in one output (--split-events 0), the reference.
kx 0 convert "$TMP/c.kxp" --split-events 0 --xplane "$TMP/whole" --chrome "$TMP/whole.json.gz" \
	>"$TMP/whole.out" 2>"$TMP/whole.err"
check unsplit_no_message test ! -s "$TMP/whole.err"
WHOLE_XP=$(head -1 "$TMP/whole.out")

# Under the limit (the default, and a limit equal to the event count): the same bytes.
for lim in default 6001; do
	opt=(--split-events "$lim")
	[ "$lim" = default ] && opt=()
	kx 0 convert "$TMP/c.kxp" "${opt[@]}" --xplane "$TMP/u$lim" --chrome "$TMP/u$lim.json.gz" \
		>"$TMP/u$lim.out" 2>"$TMP/u$lim.err"
	check "under_limit_${lim}_one_run" test "$(find "$TMP/u$lim" -name '*.xplane.pb' | wc -l)" -eq 1
	check "under_limit_${lim}_xspace_bytes" cmp -s "$(head -1 "$TMP/u$lim.out")" "$WHOLE_XP"
	check "under_limit_${lim}_chrome_bytes" cmp -s "$TMP/u$lim.json.gz" "$TMP/whole.json.gz"
	check "under_limit_${lim}_no_message" test ! -s "$TMP/u$lim.err"
done

# Over the limit: parts.
kx 0 convert "$TMP/c.kxp" --split-events 1000 --xplane "$TMP/split" --chrome "$TMP/part.json.gz" \
	>"$TMP/split.out" 2>"$TMP/split.err"
find "$TMP/split" -name '*.xplane.pb' | sort >"$TMP/runs"
ls "$TMP"/part.*.json.gz 2>/dev/null | sort >"$TMP/chromes"
NPARTS=$(wc -l <"$TMP/runs")
check split_several_parts test "$NPARTS" -gt 1
check split_as_many_chrome_files test "$(wc -l <"$TMP/chromes")" -eq "$NPARTS"
check split_message_says_parts grep -q "6001 events are more than 1000 per trace.*writing $NPARTS parts split by time" "$TMP/split.err"
check split_message_says_cut_rule grep -q "in the part where it starts" "$TMP/split.err"
check split_paths_printed test "$(wc -l <"$TMP/split.out")" -eq $((2 * NPARTS))
check split_chrome_names python3 - "$TMP/chromes" <<'PY'
import re, sys
names = [l.strip() for l in open(sys.argv[1])]
sys.exit(0 if all(re.search(r"/part\.%04d\.json\.gz$" % (i + 1), n) for i, n in enumerate(names)) else 1)
PY
check split_run_names python3 - "$TMP/runs" <<'PY'
import re, sys
runs = [l.strip().split("/")[-2] for l in open(sys.argv[1])]
pat = r"\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d_part%04d_-?\d+\.\d{3}s--?\d+\.\d{3}s"
sys.exit(0 if all(re.fullmatch(pat % (i + 1), r) for i, r in enumerate(runs)) else 1)
PY
check split_one_marker test "$(find "$TMP/split" -maxdepth 1 -name '*.profile-empty' | wc -l)" -eq 1
check split_no_temp sh -c "! find '$TMP' -name '*.tmp' | grep -q ."

# Every XSpace part decodes with protoc against our schema.
ok=1
i=0
while read -r xp; do
	i=$((i + 1))
	"$DUMP" "$xp" >"$TMP/part$i.txt" 2>"$TMP/part$i.dump.err" || ok=0
done <"$TMP/runs"
"$DUMP" "$WHOLE_XP" >"$TMP/whole.txt" 2>/dev/null || ok=0
check split_xspace_protoc_decodes test "$ok" -eq 1

# Events: each of the unsplit output's in exactly one part, inside its window
# (the windows from each Chrome part's otherData.part; part k of both outputs
# is the same window).
check split_events_once_in_window python3 - "$TMP" "$NPARTS" "$OFFSET" <<'PY'
import gzip, json, re, sys
tmp, nparts, off = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def chrome(path):
    d = json.load(gzip.open(path))
    base = d["baseTimeNanoseconds"]
    ev = sorted((e["name"], e["pid"], e["tid"], base + round(e["ts"] * 1000) - off)
                for e in d["traceEvents"] if e["ph"] == "X")
    return d, ev

def xspace(path):
    # protoc's text form: events sit under a line (timestamp_ns) with their offset_ps
    out, plane, ts, cur = [], None, 0, None
    for l in open(path):
        s = l.strip()
        if l.startswith("  name: "):
            plane = s
        m = re.fullmatch(r"timestamp_ns: (\d+)", s)
        if m and l.startswith("    timestamp_ns"):
            ts = int(m.group(1))
        if l == "    events {\n":
            cur = [plane, ts - off, 0]
            out.append(cur)
        m = re.fullmatch(r"offset_ps: (\d+)", s)
        if m and l.startswith("      offset_ps") and cur is not None:
            cur[2] = int(m.group(1))
    return sorted((p, t + o // 1000) for p, t, o in out)

_, whole_c = chrome(tmp + "/whole.json.gz")
whole_x = xspace(tmp + "/whole.txt")
parts_c, parts_x = [], []
for k in range(1, nparts + 1):
    d, ev = chrome("%s/part.%04d.json.gz" % (tmp, k))
    p = d["otherData"]["part"]
    lo, hi = p["from_mono_ns"], p["to_mono_ns"]
    inwin = lambda t: t >= lo and (hi is None or t < hi)
    xev = xspace("%s/part%d.txt" % (tmp, k))
    if p["index"] != k or p["count"] != nparts or not ev or not xev:
        sys.exit("part %d: header %s" % (k, p))
    if not all(inwin(e[3]) for e in ev) or not all(inwin(t) for _, t in xev):
        sys.exit("part %d: an event outside [%s, %s)" % (k, lo, hi))
    # the window's count: ioctls + jobs, as in both outputs
    if len(ev) != p["events"] or len(xev) != p["events"]:
        sys.exit("part %d: %d chrome, %d xspace events, window says %d" % (k, len(ev), len(xev), p["events"]))
    if p["events"] > 1000:
        sys.exit("part %d: %d events over the limit" % (k, p["events"]))
    parts_c += ev
    parts_x += xev
ok = sorted(parts_c) == whole_c and sorted(parts_x) == whole_x and len(whole_c) == 6001
sys.exit(0 if ok else "parts hold %d/%d events, whole %d/%d" % (len(parts_c), len(parts_x), len(whole_c), len(whole_x)))
PY

# Each XSpace part says which part it is.
check split_xspace_part_warning grep -q "part 1 of $NPARTS of a capture split by time" "$TMP/part1.txt"

# A split trace cannot go to standard output: refused, nothing written.
kx 2 convert "$TMP/c.kxp" --split-events 1000 --chrome - >"$TMP/stdout.json" 2>"$TMP/stdout.err"
check split_stdout_refused_says grep -q "give --chrome a file name" "$TMP/stdout.err"
check split_stdout_nothing_written test ! -s "$TMP/stdout.json"

# A part's Chrome name that cannot be written (a directory): refused (exit 2)
# before any part is written.
mkdir -p "$TMP/refuse.0002.json"
kx 2 convert "$TMP/c.kxp" --split-events 1000 --xplane "$TMP/refuse" --chrome "$TMP/refuse.json" \
	>/dev/null 2>"$TMP/refuse.err"
check split_part_refused_says grep -q "refuse.0002.json" "$TMP/refuse.err"
check split_part_refused_nothing_written sh -c "! ls '$TMP'/refuse.0001.json >/dev/null 2>&1 &&
	! find '$TMP/refuse' -name '*.xplane.pb' 2>/dev/null | grep -q ."

# ---- Read one window at a time: a capture without jobs, whose threads'
# calls do not overlap (analysis/wread.h) ----
# Four threads of calls back to back, one call in 40 long (120 ms: its record
# comes after many that started later), records in the order the calls
# returned, as a recorder writes them. The parts are the bytes of the parts
# written from the whole capture in memory (--in-memory); a corrupt chunk is
# skipped the same way by both, with the same warning.
python3 - "$OFFSET" >"$TMP/flat.jsonl" <<'PY'
import json, sys
off, n, T0 = int(sys.argv[1]), 8000, 10_000_000_000
def w(d): print(json.dumps(d, separators=(",", ":")))
calls, clock = [], [T0 + 5000 * t for t in range(4)]
for i in range(n):
    t = (i * 7) % 4
    ts = clock[t] + 20_000 + (i * 37) % 50_000
    dur = 120_000_000 if i % 40 == 13 else 30_000 + (i * 13) % 400_000
    clock[t] = ts + dur
    calls.append((ts + dur, ts, dur, 8100 + t, i))
w({"type": "capture", "host": "flatbox", "kernel": "6.18.0", "cmdline": "synthetic",
   "start_ns": T0, "stop_ns": max(clock) + 1, "realtime_offset_ns": off,
   "emitted": n, "received": n})
w({"type": "device", "node": "/dev/kvm", "driver": "kvm", "kind": "chr", "dev": "10:232"})
for t in range(4):
    w({"type": "task", "ts": T0, "pid": 8100, "tid": 8100 + t, "what": "exec" if t == 0 else "fork",
       "comm": "flat%d" % t})
for end, ts, dur, tid, i in sorted(calls):
    w({"type": "ioctl", "ts": ts, "dur": dur, "pid": 8100, "tid": tid, "driver": "kvm", "kind": "chr",
       "dev": "10:232", "fd": 3, "cmd": "KVM_CHECK_EXTENSION" if i % 3 else "KVM_GET_API_VERSION",
       "ret": -22 if i % 50 == 0 else 0, "cpu": i % 2})
PY
kx 0 replay "$TMP/flat.jsonl" -o "$TMP/flat.kxp" >/dev/null 2>"$TMP/replay.err" || {
	fail replay_flat "$(cat "$TMP/replay.err")"
	exit 0
}
# same_parts NAME FILE: windowed and in-memory conversions of FILE, part for part.
same_parts() {
	local name=$1 f=$2 m
	rm -rf "$TMP/$name.w" "$TMP/$name.m"
	mkdir -p "$TMP/$name.w" "$TMP/$name.m"
	for m in w m; do
		opt=()
		[ $m = m ] && opt=(--in-memory)
		kx 0 convert "$f" "${opt[@]}" --split-events 1500 --xplane "$TMP/$name.$m/x" \
			--chrome "$TMP/$name.$m/p.json.gz" >"$TMP/$name.$m.out" 2>"$TMP/$name.$m.err"
	done
	check "${name}_parts" test "$(ls "$TMP/$name.w"/p.*.json.gz | wc -l)" -ge 5
	check "${name}_same_messages" cmp -s "$TMP/$name.w.err" "$TMP/$name.m.err"
	check "${name}_same_chrome" sh -c "cd '$TMP/$name.w' && for f in p.*.json.gz; do cmp -s \$f ../$name.m/\$f || exit 1; done"
	check "${name}_same_xspace" bash -c "cd '$TMP' && diff <(cd $name.w/x && find . -name '*.pb' -exec md5sum {} + | sort -k2) <(cd $name.m/x && find . -name '*.pb' -exec md5sum {} + | sort -k2) >/dev/null"
	check "${name}_same_runs" test "$(find "$TMP/$name.w/x" -name '*.pb' | wc -l)" -eq "$(ls "$TMP/$name.w"/p.*.json.gz | wc -l)"
}
same_parts windowed "$TMP/flat.kxp"
# A Chrome file alone is written from slices of its window, a quarter of it
# each: the parts hold the lines --in-memory writes (events, metadata and
# otherData), each slice's events together, so not always in the same order.
rm -rf "$TMP/sl.w" "$TMP/sl.m"
mkdir -p "$TMP/sl.w" "$TMP/sl.m"
kx 0 convert -v "$TMP/flat.kxp" --split-events 1500 --chrome "$TMP/sl.w/p.json.gz" \
	>"$TMP/sl.w.out" 2>"$TMP/sl.w.err"
kx 0 convert "$TMP/flat.kxp" --in-memory --split-events 1500 --chrome "$TMP/sl.m/p.json.gz" \
	>"$TMP/sl.m.out" 2>"$TMP/sl.m.err"
check sliced_verbose grep -q "read one window at a time: [0-9]* windows ([0-9]* slices), at most [0-9]* open at once, [1-9][0-9]* calls kept apart (their records came over 50 ms late), each window complete [0-9]*\.[0-9]* ms after its end" "$TMP/sl.w.err"
check sliced_quarters python3 - "$TMP/sl.w.err" <<'PY'
import re, sys
m = re.search(r"([0-9]+) windows \(([0-9]+) slices\)", open(sys.argv[1]).read())
sys.exit(0 if m and int(m.group(2)) >= 4 * int(m.group(1)) - 1 else 1)
PY
check sliced_same_paths cmp -s <(sed "s#/sl.w/#/#" "$TMP/sl.w.out") <(sed "s#/sl.m/#/#" "$TMP/sl.m.out")
check sliced_same_lines python3 - "$TMP/sl.w" "$TMP/sl.m" <<'PY'
import glob, gzip, os, sys
w = sorted(glob.glob(sys.argv[1] + "/p.*.json.gz"))
if len(w) < 5:
    sys.exit(1)
for p in w:
    a = gzip.open(p).read().decode().split("\n")
    b = gzip.open(os.path.join(sys.argv[2], os.path.basename(p))).read().decode().split("\n")
    norm = lambda ls: sorted(l[:-1] if l.endswith(",") else l for l in ls)
    if norm(a) != norm(b):
        print("differs:", p)
        sys.exit(1)
PY
# ...and each thread's calls are in the order they started.
check sliced_thread_order python3 - "$TMP/sl.w" <<'PY'
import glob, gzip, json, sys
n = 0
for p in glob.glob(sys.argv[1] + "/p.*.json.gz"):
    last = {}
    for e in json.load(gzip.open(p))["traceEvents"]:
        if e.get("ph") != "X" or not str(e.get("cat", "")).startswith("ioctl"):
            continue
        k = (e["pid"], e["tid"])
        if e["ts"] < last.get(k, -1):
            print("out of order:", p, k, e["ts"])
            sys.exit(1)
        last[k] = e["ts"]
        n += 1
sys.exit(0 if n == 8000 else "%d calls" % n)
PY
# A full disk while a part is written from its slices: exit 1 naming that
# part's file and the cause, the parts before it stay, nothing of it is left.
SMALL=$TMP/small
mkdir -p "$SMALL"
if mount -t tmpfs -o size=400k kxprof-split "$SMALL" 2>"$TMP/mount.err"; then
	kx 1 convert "$TMP/flat.kxp" --split-events 1500 --chrome "$SMALL/p.json" \
		>"$TMP/full.out" 2>"$TMP/full.err"
	check sliced_enospc_says grep -q "p\.0002\.json.*No space left" "$TMP/full.err"
	check sliced_enospc_parts_stay grep -q "parts 1 to 1 of 6 were written and stay" "$TMP/full.err"
	check sliced_enospc_first_whole cmp -s "$SMALL/p.0001.json" <(gzip -dc "$TMP/sl.w/p.0001.json.gz")
	check sliced_enospc_nothing_else test "$(ls -A "$SMALL")" = p.0001.json
	umount "$SMALL"
else
	skip sliced_enospc "cannot mount a tmpfs: $(head -c 200 "$TMP/mount.err")"
fi
# Signals at random points of a sliced conversion, once its first part is
# written: killed, it leaves no temporary file, and every part file there is
# complete (committed parts stay; the one being written is not left half).
SIGD=$TMP/sig
mkdir -p "$SIGD"
start=$(date +%s%N)
kx 0 convert "$TMP/flat.kxp" --split-events 1500 --chrome "$SIGD/p.json.gz" >/dev/null 2>&1
took_us=$((($(date +%s%N) - start) / 1000))
sig_bad=0 sig_killed=0
for i in $(seq 1 8); do
	sig=$(echo INT TERM HUP QUIT | cut -d' ' -f$((i % 4 + 1)))
	rm -f "$SIGD"/p.*.json.gz
	delay=$(python3 -c "import random; print('%.6f' % (random.random() * $took_us / 4e6))")
	"$KXPROF" convert "$TMP/flat.kxp" --split-events 1500 --chrome "$SIGD/p.json.gz" >/dev/null 2>&1 &
	c=$!
	for _ in $(seq 1 2000); do
		[ -e "$SIGD/p.0001.json.gz" ] && break
		sleep 0.001
	done
	sleep "$delay"
	kill -"$sig" $c 2>/dev/null
	wait $c 2>/dev/null
	rc=$?
	[ "$rc" -eq $((128 + $(kill -l "$sig"))) ] && sig_killed=$((sig_killed + 1))
	if [ "$(find "$SIGD" -name '*.tmp' | wc -l)" -ne 0 ] || ! python3 - "$SIGD" <<'PY'; then
import glob, gzip, json, sys
for p in glob.glob(sys.argv[1] + "/p.*.json.gz"):
    json.load(gzip.open(p))
PY
		fail "sliced_signal_$i" "SIG$sig after ${delay}s (rc $rc): a temporary file or a broken part left"
		sig_bad=$((sig_bad + 1))
	fi
done
echo "sliced conversion: ${took_us} us; $sig_killed of 8 killed"
check sliced_signals_leave_nothing test $sig_bad -eq 0
check sliced_signals_some_killed test $sig_killed -ge 1
# -v says which way: the capture with jobs (replay writes every call, then
# every job record: a KVM exit after its thread's later calls, which the
# device timelines read as a stream cannot place) is read whole, saying why.
kx 0 convert -v "$TMP/c.kxp" --split-events 1000 --chrome "$TMP/vj.json" >/dev/null 2>"$TMP/vj.err"
check jobs_reason_verbose grep -q "is read into memory whole: a KVM exit came after" "$TMP/vj.err"
kx 0 convert -v "$TMP/flat.kxp" --chrome "$TMP/v1.json" >/dev/null 2>"$TMP/v1.err"
check one_trace_verbose grep -q "is read into memory whole: its 8000 trace events fit one trace" "$TMP/v1.err"
# 600 KVM memory slot calls: each is a call and a memory event (but the 3
# that delete a slot never set), so 1197 trace events make two traces of
# 1000 while the 600 records fit one window: the first read keeps the file,
# and it is read whole, once.
python3 - "$OFFSET" >"$TMP/mem.jsonl" <<'PY'
import json, sys
T0 = 10_000_000_000
def w(d): print(json.dumps(d, separators=(",", ":")))
w({"type": "capture", "host": "membox", "kernel": "6.18.0", "cmdline": "synthetic",
   "start_ns": T0, "stop_ns": T0 + 600 * 10_000 + 1, "realtime_offset_ns": int(sys.argv[1]),
   "emitted": 600, "received": 600})
w({"type": "device", "node": "/dev/kvm", "driver": "kvm", "kind": "chr", "dev": "10:232"})
w({"type": "task", "ts": T0, "pid": 8200, "tid": 8200, "what": "exec", "comm": "vmm"})
for i in range(600):
    w({"type": "ioctl", "ts": T0 + i * 10_000, "dur": 2_000, "pid": 8200, "tid": 8200,
       "driver": "kvm", "kind": "chr", "dev": "10:232", "fd": 4,
       "cmd": "KVM_SET_USER_MEMORY_REGION", "ret": 0,
       "in": "u32:%d u32:0 u64:0 u64:%d u64:0" % (i % 8, (i % 3) * 65536)})
PY
if kx 0 replay "$TMP/mem.jsonl" -o "$TMP/mem.kxp" >/dev/null 2>"$TMP/replay.err"; then
	for m in w m; do
		opt=(-v convert)
		[ $m = m ] && opt=(convert --in-memory)
		mkdir -p "$TMP/mem.$m"
		kx 0 "${opt[@]}" "$TMP/mem.kxp" --split-events 1000 --chrome "$TMP/mem.$m/p.json" \
			>/dev/null 2>"$TMP/mem.$m.err"
	done
	check records_fit_verbose grep -q "is read into memory whole: its 1197 trace events make 2 traces, but its records fit one window (--split-events 1000)" "$TMP/mem.w.err"
	check records_fit_same_parts sh -c "test \$(ls '$TMP/mem.w'/p.*.json | wc -l) -eq 2 && cd '$TMP/mem.w' && for f in p.*.json; do cmp -s \$f ../mem.m/\$f || exit 1; done"
	# The same calls 10 ns apart and one 10 s later: the plan -v prints
	# counts the crowded bucket again, finer, from the stored file, which is
	# not read again.
	python3 - "$TMP/mem.jsonl" >"$TMP/crowd.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
T0 = lines[0]["start_ns"]
calls = [d for d in lines if d["type"] == "ioctl"]
for k, d in enumerate(calls):
    d["ts"], d["dur"] = T0 + k * 10, 2
last = dict(calls[-1], ts=T0 + 10_000_000_000)
lines[0]["stop_ns"], lines[0]["emitted"], lines[0]["received"] = T0 + 10_000_000_001, 601, 601
for d in lines + [last]:
    print(json.dumps(d, separators=(",", ":")))
PY
	kx 0 replay "$TMP/crowd.jsonl" -o "$TMP/crowd.kxp" >/dev/null 2>"$TMP/replay.err"
	mkdir -p "$TMP/crowd.w" "$TMP/crowd.m"
	env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=openat -o "$TMP/open.crowd" "$KXPROF" -v convert \
		"$TMP/crowd.kxp" --split-events 1000 --chrome "$TMP/crowd.w/p.json" >/dev/null \
		2>"$TMP/crowd.w.err"
	check crowded_runs test $? -eq 0
	kx 0 convert --in-memory "$TMP/crowd.kxp" --split-events 1000 \
		--chrome "$TMP/crowd.m/p.json" >/dev/null 2>"$TMP/crowd.m.err"
	check crowded_verbose grep -q "trace events make 2 traces, but its records fit one window" \
		"$TMP/crowd.w.err"
	check crowded_read_once test "$(grep -c 'crowd.kxp"' "$TMP/open.crowd")" -eq 1
	check crowded_same_parts sh -c "test \$(ls '$TMP/crowd.w'/p.*.json | wc -l) -eq 2 && cd '$TMP/crowd.w' && for f in p.*.json; do cmp -s \$f ../crowd.m/\$f || exit 1; done"
else
	fail replay_mem "$(cat "$TMP/replay.err")"
fi
rm -f "$TMP"/v*.json
check windowed_every_event python3 - "$TMP/windowed.w" <<'PY'
import glob, gzip, json, sys
n = sum(sum(e["ph"] == "X" for e in json.load(gzip.open(p))["traceEvents"])
        for p in glob.glob(sys.argv[1] + "/p.*.json.gz"))
sys.exit(0 if n == 8000 else "%d events in the parts" % n)
PY
# A bit flipped in the middle chunk: the same chunk skipped, the same warning.
python3 - "$TMP/flat.kxp" "$TMP/flatbad.kxp" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off, chunks = struct.unpack_from("<I", b, 12)[0], []
while off + 32 <= len(b):
    chunks.append(off)
    off += 32 + struct.unpack_from("<I", b, off + 12)[0]
b[chunks[len(chunks) // 2] + 40] ^= 0x10
open(sys.argv[2], "wb").write(b)
PY
same_parts damaged "$TMP/flatbad.kxp"
check damaged_warns grep -q "corrupt" "$TMP/damaged.w.err"
# A capture that fits one trace is read once (the first read keeps it),
# damage and all: the output and the warning of reading it whole. Opens
# counted under strace (LeakSanitizer cannot run under ptrace: off there).
check fits_one_once_runs env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -qq -e trace=openat -o "$TMP/open.once" "$KXPROF" convert "$TMP/flatbad.kxp" \
	--chrome "$TMP/one.once.json" >/dev/null 2>"$TMP/one.once.err"
kx 0 convert "$TMP/flatbad.kxp" --in-memory --chrome "$TMP/one.whole.json" >/dev/null \
	2>"$TMP/one.whole.err"
check fits_one_read_once test "$(grep -c 'flatbad.kxp"' "$TMP/open.once")" -eq 1
check fits_one_same_chrome cmp -s "$TMP/one.once.json" "$TMP/one.whole.json"
check fits_one_same_warning cmp -s "$TMP/one.once.err" "$TMP/one.whole.err"
check fits_one_warns grep -q "corrupt" "$TMP/one.once.err"

# A reason to read whole found at the end of the file, past a window's
# records (3000 calls, then a KVM exit of the first: --split-events 1000):
# the first read keeps its store (less than a window's memory) and hands it over, so the
# file is read once, and the parts are those --in-memory writes.
python3 - "$OFFSET" >"$TMP/late.jsonl" <<'PY'
import json, sys
T0, n = 10_000_000_000, 3000
def w(d): print(json.dumps(d, separators=(",", ":")))
w({"type": "capture", "host": "latebox", "kernel": "6.18.0", "cmdline": "synthetic",
   "start_ns": T0, "stop_ns": T0 + (n + 10) * 100_000, "realtime_offset_ns": int(sys.argv[1]),
   "emitted": n, "received": n, "job_emitted": 11, "job_received": 11})
w({"type": "device", "node": "anon_inode:kvm-vcpu", "driver": "kvm", "kind": "kvm-vcpu", "dev": "0:0"})
w({"type": "task", "ts": T0, "pid": 8300, "tid": 8300, "what": "exec", "comm": "latejob"})
for i in range(n):
    ts = T0 + 100_000 + i * 100_000
    w({"type": "ioctl", "ts": ts, "dur": 20_000, "pid": 8300, "tid": 8300, "driver": "kvm",
       "kind": "kvm-vcpu", "dev": "0:0", "fd": 5, "cmd": "KVM_RUN", "cpu": 0})
    if i >= n - 10:
        w({"type": "job", "ts": ts + 5_000, "src": "kvm", "phase": "done", "ctx": 8300,
           "aux": 2, "pid": 8300, "tid": 8300, "ring": "vcpu 0"})
# An exit of the first KVM_RUN whose record comes after its thread's last
# calls: the device timelines read as a stream cannot place it (a reason).
w({"type": "job", "ts": T0 + 105_000, "src": "kvm", "phase": "done", "ctx": 8300,
   "aux": 2, "pid": 8300, "tid": 8300, "ring": "vcpu 0"})
PY
if kx 0 replay "$TMP/late.jsonl" -o "$TMP/late.kxp" >/dev/null 2>"$TMP/replay.err"; then
	mkdir -p "$TMP/late.w" "$TMP/late.m"
	env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=openat -o "$TMP/open.late" "$KXPROF" convert -v "$TMP/late.kxp" \
		--split-events 1000 --chrome "$TMP/late.w/p.json" >/dev/null 2>"$TMP/late.w.err"
	check late_reason_runs test $? -eq 0
	kx 0 convert --in-memory "$TMP/late.kxp" --split-events 1000 --chrome "$TMP/late.m/p.json" \
		>/dev/null 2>"$TMP/late.m.err"
	check late_reason_verbose grep -q "is read into memory whole: a KVM exit came after" "$TMP/late.w.err"
	check late_reason_read_once test "$(grep -c 'late.kxp"' "$TMP/open.late")" -eq 1
	check late_reason_not_again sh -c "! grep -q 'read a second time' '$TMP/late.w.err'"
	check late_reason_same_parts sh -c "test \$(ls '$TMP/late.w'/p.*.json | wc -l) -ge 3 && cd '$TMP/late.w' && for f in p.*.json; do cmp -s \$f ../late.m/\$f || exit 1; done"
else
	fail replay_late "$(cat "$TMP/replay.err")"
fi

# Bad values: usage errors, before the file is read.
for bad in -1 abc "" 1.5 10x 2000000000000; do
	kx 2 convert "$TMP/c.kxp" --split-events "$bad" --chrome "$TMP/bad.json" >/dev/null \
		2>"$TMP/bad.err"
	check "split_events_refused_${bad:-empty}" grep -q -- "--split-events" "$TMP/bad.err"
done
check split_events_bad_nothing_written test ! -e "$TMP/bad.json"
