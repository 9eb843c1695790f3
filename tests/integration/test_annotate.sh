#!/usr/bin/env bash
# Annotations, live: `kxprof record` attaches the probes of every copy of
# libkxprof_annotate.so the command maps (linked at start from another
# path, dlopen'ed later, stripped of its notes: reported) and nests the
# ranges with the ioctls the same threads issue on the stand-in accelerator
# (kvm: KVM_GET_API_VERSION; loop: BLKGETSIZE64 on a loop device this test
# attaches, and a BLKZEROOUT job inside the inner range). Checked exactly:
# range and mark counts per name, durations within the sleeps, the Ioctls
# each range holds and the device time of their jobs, unbalanced pops, too
# deep nests and ranges left open reported; Chrome slices with the ioctls
# nested under them, marks as instants, cross-thread ranges as async
# slices; XSpace ranges on the thread's line with its ioctls inside; the
# Python module; the NVTX injection, forwarding to a previous injection;
# the report of a capture without device jobs streamed, the same as read
# into memory; probes attached after the library's wait (held by a test-only
# delay) named with their process and window in record's and report's
# warnings. Exact counts pass short only where the report states that
# annotations may be missing (check_ann, lib.sh).
# kxtest: alone (a library copy waits 2 s for its probes: on a busy machine they attach later and its first annotations go untraced)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$BUILD_DIR/libkxprof_annotate.so
T=3 N=10 S=2000 X=4 U=2 D=40 O=2

LOOPDEV=
cleanup() {
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	rm -rf "$TMP"
}
at_exit cleanup

# The device the workload queries, and the options that trace it.
if [ "$ACCEL" = kvm ]; then
	DEV=/dev/kvm
	Z=()
else
	truncate -s 16M "$TMP/loop.img"
	# A free device can be taken by a concurrent user between find and attach: retry.
	for _ in 1 2 3 4 5; do
		LOOPDEV=$(losetup --find --show "$TMP/loop.img" 2>"$TMP/losetup.err") && break
		sleep 0.2
	done
	if [ -z "$LOOPDEV" ]; then
		fail loop_attach "losetup: $(cat "$TMP/losetup.err")"
		exit 0
	fi
	DEV=$LOOPDEV
	Z=(-z)
fi
ZN=${#Z[@]}

record() { # NAME OUT.kxp [record options] -- command...: the command's stdout in $TMP/NAME.out
	local name=$1 out=$2
	shift 2
	"$KXPROF" record "${ACCEL_DEV[@]}" -o "$out" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	local rc=$?
	[ $rc -eq 0 ] || { fail "$name" "record exit $rc: $(tail -3 "$TMP/$name.err")"; return 1; }
}

# ---- 1. threads, nesting, ioctls inside and outside ranges ----
if record main "$TMP/a.kxp" -- "$WL/annotate_workload" -t $T -n $N -s $S -x $X -u $U -D $D \
	-O $O -i "$DEV" "${Z[@]}"; then
	"$KXPROF" report --json "$TMP/a.kxp" >"$TMP/a.json" 2>"$TMP/report.err"
	check report_exit test $? -eq 0
	check_ann range_counts "$TMP/a.json" python3 - "$TMP/a.json" $T $N $X $ZN <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t, n, x, z = map(int, sys.argv[2:])
a = r["Time"]["annotation"]
ok = a["outer"]["Total Count"] == t * n and a["inner"]["Total Count"] == t * n
ok = ok and a["tick"]["Total Count"] == t * n and a["tick"]["Kind"] == "mark"
ok = ok and a["tick"]["Total Time"] == 0 and a["xrange"]["Total Count"] == x
# 40 nested "deep": the kernel tracks 32 levels, the rest are counted
ok = ok and a["deep"]["Total Count"] == 32 and "open" not in a
sys.exit(0 if ok else 1)
PY
	check range_durations python3 - "$TMP/a.json" $S <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s_ms = int(sys.argv[2]) / 1000
a = r["Time"]["annotation"]
ok = a["inner"]["Min Time"] >= s_ms and a["outer"]["Min Time"] >= a["inner"]["Min Time"]
ok = ok and a["outer"]["Total Time"] >= a["inner"]["Total Time"] and a["xrange"]["Min Time"] >= s_ms
# a 2 ms sleep on a loaded 2-CPU machine: far below a second
ok = ok and a["inner"]["Max Time"] < 1000
sys.exit(0 if ok else 1)
PY
	# Per iteration: 1 query outside, outer holds 3 (+ the job), inner 2 (+ the job).
	check_ann ioctl_attribution "$TMP/a.json" python3 - "$TMP/a.json" "$TMP/main.out" $T $N $ZN "$ACCEL" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2]))
t, n, z = map(int, sys.argv[3:6]); accel = sys.argv[6]
a = r["Time"]["annotation"]
issued = sum(w["ioctls"].values())
seen = sum(row["Total Count"] for cat, rows in r["Time"].items() if cat.startswith("ioctl/")
           for row in rows.values())
ok = seen == issued
ok = ok and a["outer"]["Ioctls"] == t * n * (3 + z) and a["inner"]["Ioctls"] == t * n * (2 + z)
ok = ok and a["xrange"]["Ioctls"] == 0 and a["deep"]["Ioctls"] == 0 and "Ioctls" not in a["tick"]
# outside every range: one query per iteration (and on kvm the main thread's device check)
ok = ok and issued - a["outer"]["Ioctls"] == t * n + (accel == "kvm")
sys.exit(0 if ok else 1)
PY
	if [ "$ACCEL" = loop ]; then
		check_ann device_time "$TMP/a.json" python3 - "$TMP/a.json" $T $N <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t, n = map(int, sys.argv[2:])
a = r["Time"]["annotation"]
ok = a["inner"]["Device Jobs"] == a["outer"]["Device Jobs"] == t * n
ok = ok and a["inner"]["Device Time"] > 0 and a["inner"]["Device Time"] == a["outer"]["Device Time"]
ok = ok and a["xrange"]["Device Jobs"] == 0 and "Device Time" not in a["tick"]
sys.exit(0 if ok else 1)
PY
	else
		skip device_time "KVM_GET_API_VERSION submits no job (the loop stand-in checks it)"
	fi
	check_ann anomalies_reported "$TMP/a.json" python3 - "$TMP/a.json" $U $D $O <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); u, d, o = map(int, sys.argv[2:])
an = r["Annotations"]["anomalies"]; w = "\n".join(r["Warnings"])
ok = an["pop_no_push"] == u and an["depth_overflow"] == d - 32 and an["open"] == o
ok = ok and an["lost_begin"] == 0 and an["shortened"] == 0
ok = ok and ("%d annotation pops without a push" % u) in w
ok = ok and ("%d annotation ranges nested deeper than 32" % (d - 32)) in w
ok = ok and ("%d annotation ranges still open at the end" % o) in w
ok = ok and r["Annotations"]["dropped"] == 0
ok = ok and r["Annotations"]["received"] == r["Annotations"]["emitted"] == r["Annotations"]["events"]
sys.exit(0 if ok else 1)
PY
	"$KXPROF" report "$TMP/a.kxp" >"$TMP/a.txt" 2>&1
	check_ann report_table "$TMP/a.json" python3 - "$TMP/a.txt" $T $N $ZN <<'PY'
import re, sys
text = open(sys.argv[1]).read(); t, n, z = map(int, sys.argv[2:])
lines = text.split("\n")
head = lines.index("annotation")
ok = lines[head + 1].split() == ["Name", "Count", "Total", "Avg", "p50", "p99", "Max", "Ioctls", "Device"]
outer = next(l.split() for l in lines[head:] if l.startswith("outer "))
ok = ok and outer[1] == str(t * n) and outer[7] == str(t * n * (3 + z))
end = lines.index("", head)
ok = ok and all(len(l) <= 120 for l in lines[head:end])
sys.exit(0 if ok else 1)
PY

	# ---- 1b. streamed: without device jobs, report pairs the ranges as
	# the file streams by (-v says so), with the in-memory report's rows,
	# counts and anomalies (percentiles within 1/256) ----
	if record stream "$TMP/s.kxp" --no-jobs -- "$WL/annotate_workload" -t $T -n 4 -s 500 \
		-x $X -u $U -D $D -O $O -i "$DEV"; then
		"$KXPROF" -v report --json --hist "$TMP/s.kxp" >"$TMP/s.json" 2>"$TMP/s.err"
		check stream_exit test $? -eq 0
		check stream_streamed grep -q "was streamed" "$TMP/s.err"
		"$KXPROF" report --in-memory --json --hist "$TMP/s.kxp" >"$TMP/s.m.json" 2>/dev/null
		check stream_same python3 "$(dirname "$0")/same_report.py" "$TMP/s.json" "$TMP/s.m.json"
		check_ann stream_ranges "$TMP/s.json" python3 - "$TMP/s.json" $T $O <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t, o = map(int, sys.argv[2:])
a = r["Time"]["annotation"]
ok = a["outer"]["Total Count"] == t * 4 and a["outer"]["Ioctls"] == t * 4 * 3
ok = ok and r["Annotations"]["anomalies"]["open"] == o and r["Annotations"]["ranges"] > t * 8
sys.exit(0 if ok else 1)
PY

		# ---- 1c. convert reads it one time window at a time (-v says so):
		# ranges across the cuts are drawn whole where they start, and
		# every part is the bytes of the part written from the whole
		# capture in memory (--in-memory) ----
		for m in w m; do
			opt=(-v convert)
			[ $m = m ] && opt=(convert --in-memory)
			mkdir -p "$TMP/win.$m"
			"$KXPROF" "${opt[@]}" "$TMP/s.kxp" --split-events 25 --xplane "$TMP/win.$m/x" \
				--chrome "$TMP/win.$m/p.json.gz" >"$TMP/win.$m.out" 2>"$TMP/win.$m.err"
			check "windowed_exit_$m" test $? -eq 0
		done
		check windowed_said grep -q "read one window at a time" "$TMP/win.w.err"
		check windowed_parts test "$(ls "$TMP/win.w"/p.*.json.gz | wc -l)" -ge 3
		check windowed_same_chrome sh -c "cd '$TMP/win.w' && for f in p.*.json.gz; do cmp -s \$f ../win.m/\$f || exit 1; done"
		check windowed_same_xspace bash -c "diff <(cd '$TMP/win.w/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2) <(cd '$TMP/win.m/x' && find . -name '*.pb' -exec md5sum {} + | sort -k2) >/dev/null"
		check_ann windowed_ranges "$TMP/s.json" python3 - "$TMP/win.w" $T <<'PY'
import glob, gzip, json, sys
t = int(sys.argv[2])
ev = [e for p in glob.glob(sys.argv[1] + "/p.*.json.gz")
      for e in json.load(gzip.open(p))["traceEvents"] if e.get("cat") == "annotation"]
outer = [e for e in ev if e["ph"] == "X" and e["name"] == "outer"]
ok = len(outer) == t * 4 and all(e["args"]["ioctls"] == 3 for e in outer)
sys.exit(0 if ok else "%d outer ranges: %s" % (len(outer), [e["args"] for e in outer][:3]))
PY
	fi

	# ---- 2. Chrome: slices on the threads, ioctls nested under them ----
	"$KXPROF" convert "$TMP/a.kxp" --chrome "$TMP/a.json.gz" >/dev/null 2>"$TMP/chrome.err"
	check chrome_exit test $? -eq 0
	check_ann chrome_nesting "$TMP/a.json" python3 - "$TMP/a.json.gz" "$TMP/main.out" $T $N $X $ZN <<'PY'
import gzip, json, sys
from collections import defaultdict
from decimal import Decimal
# Decimal: ts and dur are exact µs with ns digits; floats would blur equal ends.
d = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()), parse_float=Decimal)
w = json.load(open(sys.argv[2])); t, n, x, z = map(int, sys.argv[3:])
ev = d["traceEvents"]
ann = [e for e in ev if e.get("cat") == "annotation"]
sl = [e for e in ann if e["ph"] == "X"]
cnt = lambda name: sum(1 for e in sl if e["name"] == name)
why = []
def need(cond, msg):
    if not cond:
        why.append(msg)
need(cnt("outer") == cnt("inner") == t * n and cnt("deep") == 32 and cnt("open") == 2,
     "slice counts %s" % [cnt(k) for k in ("outer", "inner", "deep", "open")])
need(sum(1 for e in ann if e["ph"] == "i" and e["name"] == "tick" and e["s"] == "t") == t * n,
     "marks")
b = {e["id"]: e for e in ann if e["ph"] == "b"}; en = {e["id"]: e for e in ann if e["ph"] == "e"}
need(len(b) == len(en) == x and set(b) == set(en), "async pairs %d/%d" % (len(b), len(en)))
need(all(b[i]["tid"] != en[i]["tid"] and en[i]["ts"] > b[i]["ts"] for i in b), "async threads")
# every ioctl slice of a worker lies in exactly one outer or none; per thread no partial overlap
io = [e for e in ev if e["ph"] == "X" and str(e.get("cat", "")).startswith("ioctl/")]
inside = defaultdict(int)
by_tid = defaultdict(list)
for e in sl + io:
    by_tid[e["tid"]].append(e)
for tid, es in by_tid.items():
    es.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in es:
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        need(not stack or e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"],
             "partial overlap on %s: %s in %s" % (tid, e, stack[-1] if stack else None))
        if e in io:
            for s in stack:
                inside[s["name"]] += 1
        stack.append(e)
need(inside["outer"] == t * n * (3 + z) and inside["inner"] == t * n * (2 + z),
     "inside %s" % dict(inside))
need(all(e["args"]["ioctls"] == (3 + z if e["name"] == "outer" else 2 + z)
         for e in sl if e["name"] in ("outer", "inner")), "ioctls args")
need(d["otherData"]["annotation_events"] > 0, "otherData")
for w in why[:5]:
    print("# " + w)
sys.exit(0 if not why else 1)
PY

	# ---- 3. XSpace: ranges on the thread's /host:CPU line, ioctls inside ----
	"$KXPROF" convert "$TMP/a.kxp" --xplane "$TMP/logdir" >"$TMP/xconv.out" 2>"$TMP/xconv.err"
	check xspace_exit test $? -eq 0
	"$ROOT/scripts/xspace-dump.sh" "$(head -1 "$TMP/xconv.out")" >"$TMP/x.txt" 2>"$TMP/dump.err"
	check xspace_decodes test $? -eq 0
	check_ann xspace_nesting "$TMP/a.json" python3 - "$TMP/x.txt" "$TMP/main.out" $T $N $ZN <<'PY'
import json, re, sys
from collections import defaultdict
w = json.load(open(sys.argv[2])); t, n, z = map(int, sys.argv[3:])
# protoc's text form: the /host:CPU plane's lines, events and metadata names
planes, cur, stack = [], None, []
for raw in open(sys.argv[1]):
    s = raw.strip()
    if s.endswith("{"):
        stack.append(s[:-1].strip())
        if stack == ["planes"]:
            cur = {"lines": [], "meta": {}}; planes.append(cur)
        elif stack == ["planes", "lines"]:
            cur["lines"].append({"events": []})
        elif stack == ["planes", "lines", "events"]:
            cur["lines"][-1]["events"].append({"off": 0, "dur": 0})
        elif stack == ["planes", "event_metadata"]:
            cur["_key"] = None
        continue
    if s == "}":
        stack.pop(); continue
    m = re.match(r'(\w+): (.*)', s)
    if not m or not stack:
        continue
    k, v = m.groups()
    if stack == ["planes"] and k == "name":
        cur["name"] = json.loads(v)
    elif stack == ["planes", "lines"] and k == "id":
        cur["lines"][-1]["id"] = int(v)
    elif stack == ["planes", "lines"] and k == "timestamp_ns":
        cur["lines"][-1]["ts"] = int(v)
    elif stack == ["planes", "lines", "events"] and k in ("metadata_id", "offset_ps", "duration_ps"):
        cur["lines"][-1]["events"][-1][{"metadata_id": "mid", "offset_ps": "off", "duration_ps": "dur"}[k]] = int(v)
    elif stack == ["planes", "event_metadata"] and k == "key":
        cur["_key"] = int(v)
    elif stack == ["planes", "event_metadata", "value"] and k == "name":
        cur["meta"][cur["_key"]] = json.loads(v)
host = next(p for p in planes if p.get("name") == "/host:CPU")
ok = True
inside = defaultdict(int)
count = defaultdict(int)
for line in host["lines"]:
    es = [(e["off"], e["dur"], host["meta"][e["mid"]]) for e in line["events"]]
    if es != sorted(es, key=lambda e: (e[0], -e[1])) and line["id"] < 0x40000000:
        pass  # order within a line is not required; nesting is
    es.sort(key=lambda e: (e[0], -e[1]))
    st = []
    for off, dur, name in es:
        count[name] += 1
        while st and st[-1][0] + st[-1][1] <= off:
            st.pop()
        if st and off + dur > st[-1][0] + st[-1][1]:
            ok = False
        if name in w["ioctls"]:
            for s in st:
                inside[s[2]] += 1
        st.append((off, dur, name))
ok = ok and count["outer"] == count["inner"] == count["tick"] == t * n and count["deep"] == 32
ok = ok and inside["outer"] == t * n * (3 + z) and inside["inner"] == t * n * (2 + z)
ok = ok and sum(1 for l in host["lines"] if l["id"] in w["tids"]) == t
ok = ok and any(l["id"] >= 0x40000000 for l in host["lines"])  # cross-thread ranges
sys.exit(0 if ok else 1)
PY
fi

# ---- 3b. a process that exits with ranges open while the capture goes on
# (its parent sleeps 0.6 s): the ranges end where its thread did (its exit,
# else its last event), not at the end of the recording, in the report's
# warning, Chrome and XSpace. Within 0.1 s of its last other event: its exit
# comes a few ms later where the sanitizers check for leaks at exit ----
if record exited "$TMP/e.kxp" -- sh -c '"$1" -t 1 -n 2 -s 100 -x 0 -O 2 -i "$2"; sleep 0.6' _ \
	"$WL/annotate_workload" "$DEV"; then
	"$KXPROF" report --json "$TMP/e.kxp" >"$TMP/e.json" 2>/dev/null
	check exited_report_warning python3 - "$TMP/e.json" <<'PY'
import json, sys
w = "\n".join(json.load(open(sys.argv[1]))["Warnings"])
sys.exit(0 if "2 annotation ranges still open at the end of the capture (pushed, never popped): closed where their thread ended" in w else w)
PY
	"$KXPROF" convert "$TMP/e.kxp" --chrome "$TMP/e.trace.json" --xplane "$TMP/elog" \
		>"$TMP/econv.out" 2>"$TMP/econv.err"
	check exited_convert_exit test $? -eq 0
	check exited_chrome_open_end python3 - "$TMP/e.trace.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
op = [e for e in ev if e["name"] == "open"]
last = max(e["ts"] + e["dur"] for e in ev if e["name"] != "open")
ends = [e["ts"] + e["dur"] for e in op]
print("# open ranges end at %s µs, the process's last other event at %.3f" % (ends, last))
sys.exit(0 if len(op) == 2 and all(e["args"].get("open") for e in op)
         and max(ends) <= last + 100000 else 1)
PY
	"$ROOT/scripts/xspace-dump.sh" "$(head -1 "$TMP/econv.out")" >"$TMP/ex.txt" 2>/dev/null
	check exited_xspace_open_end python3 - "$TMP/ex.txt" <<'PY'
import re, sys
# protoc's text form: each event's metadata id, offset and duration; the
# line's timestamp; the names of the metadata.
meta, ends, stack, ts, ev, key = {}, [], [], 0, None, None
for raw in open(sys.argv[1]):
    s = raw.strip()
    if s.endswith("{"):
        stack.append(s[:-1].strip())
        if stack == ["planes", "lines", "events"]:
            ev = {"mid": 0, "off": 0, "dur": 0}; ends.append((ts, ev))
        continue
    if s == "}":
        stack.pop(); continue
    m = re.match(r'(\w+): (.*)', s)
    if not m:
        continue
    k, v = m.groups()
    if stack == ["planes", "lines"] and k == "timestamp_ns":
        ts = int(v)
    elif stack == ["planes", "lines", "events"] and k in ("metadata_id", "offset_ps", "duration_ps"):
        ev[{"metadata_id": "mid", "offset_ps": "off", "duration_ps": "dur"}[k]] = int(v)
    elif stack == ["planes", "event_metadata"] and k == "key":
        key = int(v)
    elif stack == ["planes", "event_metadata", "value"] and k == "name":
        meta[key] = v.strip('"')
end = lambda t, e: t * 1000 + e["off"] + e["dur"]
op = [end(t, e) for t, e in ends if meta.get(e["mid"]) == "open"]
other = max(end(t, e) for t, e in ends if meta.get(e["mid"]) != "open")
print("# open ranges end %s ps after the last other event" % [o - other for o in op])
sys.exit(0 if len(op) == 2 and max(op) <= other + 10**11 else 1)
PY
fi

# ---- 4. copies: another path (linked), dlopen'ed, stripped of its notes ----
mkdir -p "$TMP/vendor" "$TMP/dl"
cp "$LIB" "$TMP/vendor/libkxprof_annotate.so"
cp "$LIB" "$TMP/dl/libbundled_annotations.so"
objcopy --remove-section=.note.stapsdt "$LIB" "$TMP/libstripped.so"
if LD_LIBRARY_PATH=$TMP/vendor record copies "$TMP/c.kxp" -- "$WL/annotate_workload" -t 2 -n 5 \
	-s 1000 -x 0 -l "$TMP/dl/libbundled_annotations.so" -l "$TMP/libstripped.so"; then
	"$KXPROF" report --json "$TMP/c.kxp" >"$TMP/c.json" 2>/dev/null
	check_ann copies_counts "$TMP/c.json" python3 - "$TMP/c.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["Time"]["annotation"]
ok = a["outer"]["Total Count"] == 10 and a["dl1/outer"]["Total Count"] == 10
ok = ok and a["dl1/inner"]["Total Count"] == 10 and a["dl1/tick"]["Total Count"] == 10
ok = ok and not any(k.startswith("dl2/") for k in a)  # the stripped copy has no probes
sys.exit(0 if ok else 1)
PY
	check copies_reported python3 - "$TMP/c.json" "$TMP" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); tmp = sys.argv[2]
cp = {c["path"]: c for c in r["Annotations"]["copies"]}
ok = cp.get(tmp + "/vendor/libkxprof_annotate.so", {}).get("probes_attached") == 5
ok = ok and cp.get(tmp + "/dl/libbundled_annotations.so", {}).get("probes_attached") == 5
st = cp.get(tmp + "/libstripped.so", {})
ok = ok and st.get("probes_found") == 0 and "stripped" in st.get("why", "")
ok = ok and any("libstripped.so" in m and "no kxprof probes" in m for m in r["Warnings"])
sys.exit(0 if ok else 1)
PY
fi

# ---- 4b. two copies whose cross-thread range ids would collide ----
# Each copy numbers its ranges from 1: its ids are tagged with a key of its
# own, so that the ends (on another thread) find their own copy's starts.
# annotate_copies -X: c1/cross 0-200 ms, c2/cross 100-400 (overlapping),
# c1/nest 0-400, c2/nest 100-200 (nested): an end paired with the latest
# open start of its id, or the earliest, gets one of each pair wrong.
cp "$LIB" "$TMP/x1.so"
cp "$LIB" "$TMP/x2.so"
"$WL/annotate_copies" -n 0 -S -X -T 60 "$TMP/x1.so" "$TMP/x2.so" >"$TMP/x.wl" &
xpid=$!
for _ in $(seq 1 200); do
	[ "$(awk '{print $3}' "/proc/$xpid/stat" 2>/dev/null)" = T ] && break
	sleep 0.05
done
"$KXPROF" record --no-jobs -p "$xpid" -o "$TMP/x.kxp" 2>"$TMP/x.err" &
xrec=$!
wait_attached "$xrec"
kill -CONT "$xpid"
for _ in $(seq 1 200); do
	[ "$(awk '{print $3}' "/proc/$xpid/stat" 2>/dev/null)" = T ] && break
	sleep 0.05
done
kill -CONT "$xpid"
wait "$xrec"
check copies_cross_record [ $? -eq 0 ]
"$KXPROF" report --json "$TMP/x.kxp" >"$TMP/x.json" 2>/dev/null
check copies_cross_ids_apart python3 - "$TMP/x.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = {k: v for k, v in d["Time"].get("annotation", {}).items() if "/cross" in k or "/nest" in k}
want = {"c1/cross": 200, "c2/cross": 300, "c1/nest": 400, "c2/nest": 100}
got = {k: (v["Total Count"], round(v["Max Time"], 1)) for k, v in a.items()}
# The workload starts c2's ranges at 100 ms and ends them at 200 and 400 ms
# from its t0: a start that ran late shortens them, an end that ran late
# lengthens them. A wrong pairing is 100 ms or more off.
print("# ranges (count, ms): %s; want once each, ms %s (50 ms less to 150 more)" % (got, want))
sys.exit(not (set(got) == set(want) and all(
    got[k][0] == 1 and w - 50 <= got[k][1] < w + 150 for k, w in want.items())))
PY
check copies_cross_no_anomaly python3 - "$TMP/x.json" <<'PY'
import json, sys
w = [m for m in json.load(open(sys.argv[1]))["Warnings"] if "cross-thread" in m]
print("# warnings: %s" % w)
sys.exit(bool(w))
PY

# ---- 5. the Python module (system python3) ----
if record python "$TMP/p.kxp" -- "$BUILD_DIR/tests/test_annotate_py" --traced 25; then
	"$KXPROF" report --json "$TMP/p.kxp" >"$TMP/p.json" 2>/dev/null
	check_ann python_module "$TMP/p.json" python3 - "$TMP/p.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["Time"]
py, plain = t.get("annotation/py", {}), t.get("annotation", {})
ok = py.get("py/step", {}).get("Total Count") == 25
ok = ok and plain.get("py/work", {}).get("Total Count") == 25
ok = ok and plain.get("py/tick", {}).get("Kind") == "mark" and plain["py/tick"]["Total Count"] == 25
ok = ok and plain.get("py/x", {}).get("Total Count") == 1 and plain["py/x"]["Min Time"] >= 3
sys.exit(0 if ok else 1)
PY
fi

# ---- 6. NVTX injection, forwarding to a previous injection ----
if NVTX_INJECTION64_PATH=$BUILD_DIR/libkxprof_nvtx.so \
	KXPROF_NVTX_FORWARD=$BUILD_DIR/tests/libnvtx_recorder.so \
	record nvtx "$TMP/n.kxp" -- "$WL/nvtx_driver"; then
	"$KXPROF" report --json "$TMP/n.kxp" >"$TMP/n.json" 2>/dev/null
	check_ann nvtx_ranges "$TMP/n.json" python3 - "$TMP/n.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["Time"]
plain, dom = t.get("annotation", {}), t.get("annotation/dom1", {})
ok = all(plain.get(k, {}).get("Total Count") == 1 for k in ("a", "b", "c\u00e9", "c2", "x"))
ok = ok and plain.get("m1", {}).get("Kind") == "mark"
ok = ok and dom.get("d", {}).get("Total Count") == 1 and dom.get("y", {}).get("Total Count") == 1
ok = ok and dom.get("reg", {}).get("Kind") == "mark"
sys.exit(0 if ok else 1)
PY
	check nvtx_forwarded python3 - "$TMP/nvtx.out" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
# the previous tool saw every call, as if it were the injection itself
ok = w["recorder"].startswith("init:v3;init:v3;mark:m1;push:a;pushex:b;pop;pop;pop;domain:dom1;")
ok = ok and "start:x=500;dstart:dom1:y=501;end:500;dend:dom1:501;" in w["recorder"]
sys.exit(0 if ok else 1)
PY
fi

# ---- 7. --no-annotations: no probes, no wait ----
if record noann "$TMP/q.kxp" --no-annotations -- "$WL/annotate_workload" -t 1 -n 3 -s 100 -x 1; then
	"$KXPROF" report --json "$TMP/q.kxp" >"$TMP/q.json" 2>/dev/null
	check no_annotations python3 - "$TMP/q.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = not any(k.startswith("annotation") for k in r["Time"]) and not r["Annotations"]["enabled"]
sys.exit(0 if ok else 1)
PY
fi

# ---- 7b. probes attached after the library's wait: the recording says
# which process and from when to when its annotations may be missing. The
# test-only KXPROF_TEST_ANN_ATTACH_DELAY_MS (capture/annwait.h) holds the
# attach 3 s after the loader maps the copy; the copy waits 2 s, then goes
# on untraced while the workload's 300 iterations of 10 ms run (3 s: the
# attach comes at least 2 s before its end) ----
if KXPROF_TEST_ANN_ATTACH_DELAY_MS=3000 record late "$TMP/l.kxp" -- "$WL/annotate_workload" \
	-t 1 -n 300 -s 10000 -x 0; then
	LPID=$(jget "$TMP/late.out" 'd["pid"]')
	"$KXPROF" report --json "$TMP/l.kxp" >"$TMP/l.json" 2>/dev/null
	"$KXPROF" report "$TMP/l.kxp" >"$TMP/l.txt" 2>&1
	check late_library_said grep -q "did not attach this copy's probes within 2000 ms" "$TMP/late.err"
	check late_record_says grep -Eq "^kxprof record: warning: annotations of pid $LPID \(annotate_worklo\) may be missing from [0-9.]+ s to [0-9.]+ s into the capture" "$TMP/late.err"
	check late_report_says grep -Eq "annotations of pid $LPID \(annotate_worklo\) may be missing from [0-9.]+ s to [0-9.]+ s" "$TMP/l.txt"
	check late_json python3 - "$TMP/l.json" "$LPID" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); pid = int(sys.argv[2])
late = r["Annotations"]["late"]
l = late[0] if len(late) == 1 else {}
why = []
if l.get("pid") != pid or l.get("command") != "annotate_worklo" or l.get("hold_ms") != 2000:
    why.append("late %s" % late)
elif not l["path"].endswith("libkxprof_annotate.so"):
    why.append("path %s" % l["path"])
elif l["from_ns"] - l["map_ns"] != 2 * 10**9 or l["to_ns"] - l["map_ns"] < 3 * 10**9:
    why.append("window %s" % l)
n = r["Time"].get("annotation", {}).get("outer", {}).get("Total Count", 0)
if not 0 < n < 300:  # lost while untraced, traced again after the attach
    why.append("%d outer ranges" % n)
w = [m for m in r["Warnings"] if m.startswith("annotations of pid %d " % pid)]
if len(w) != 1 or "may be missing from" not in w[0]:
    why.append("warnings %s" % r["Warnings"])
for m in why:
    print("# " + m)
sys.exit(1 if why else 0)
PY
fi

# ---- 8. serve and top: per-range counts and histograms, live ----
# Processes serve did not launch: the library holds until attached when
# KXPROF_ANNOTATE_WAIT names the tracer (what record sets for its command).
"$KXPROF" serve "${ACCEL_DEV[@]}" --listen 127.0.0.1:0 -p $$ --rescan 0 2>"$TMP/serve.err" &
SERVE=$!
PORT=
for _ in $(seq 1 100); do
	PORT=$(sed -n 's|^kxprof serve: http://127\.0\.0\.1:\([0-9]*\)/metrics .*|\1|p' "$TMP/serve.err")
	[ -n "$PORT" ] && break
	sleep 0.1
done
if [ -z "$PORT" ]; then
	fail serve_start "$(cat "$TMP/serve.err")"
else
	KXPROF_ANNOTATE_WAIT=$SERVE:30000 "$WL/annotate_workload" -t 2 -n 7 -s 500 -x 3 >"$TMP/sw.json"
	# The consumer drains the ring every 100 ms: the last records may still be
	# on their way (a loaded machine: up to 10 s). The library waits up to 30 s
	# for serve's probes, and goes on at once when they are attached.
	# Every count the check wants, not just one: the cross-thread ranges'
	# ends can come in a later drain than the outer ranges.
	for _ in $(seq 1 100); do
		curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$TMP/m.txt"
		grep -q '^kxprof_annotation_duration_seconds_count{name="outer",category=""} 14$' \
			"$TMP/m.txt" &&
			grep -q '^kxprof_annotation_duration_seconds_count{name="inner",category=""} 14$' \
				"$TMP/m.txt" &&
			grep -q '^kxprof_annotation_duration_seconds_count{name="xrange",category=""} 3$' \
				"$TMP/m.txt" &&
			grep -q '^kxprof_annotation_marks_total{name="tick",category=""} 14$' "$TMP/m.txt" &&
			break
		sleep 0.1
	done
	check serve_metrics python3 - "$TMP/m.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def val(series):
    m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None
ok = val('kxprof_annotation_duration_seconds_count{name="outer",category=""}') == 14
ok = ok and val('kxprof_annotation_duration_seconds_count{name="inner",category=""}') == 14
ok = ok and val('kxprof_annotation_duration_seconds_count{name="xrange",category=""}') == 3
ok = ok and val('kxprof_annotation_marks_total{name="tick",category=""}') == 14
ok = ok and val('kxprof_annotation_duration_seconds_sum{name="inner",category=""}') >= 14 * 0.0005
ok = ok and val('kxprof_map_overflow_total{map="annotations"}') == 0
ok = ok and val('kxprof_annotation_lost_total') == 0
if not ok:
    print("\n".join("# " + l for l in text.split("\n") if "annotation" in l and "_bucket" not in l))
sys.exit(0 if ok else 1)
PY
	if command -v promtool >/dev/null; then
		check serve_promtool sh -c "promtool check metrics <'$TMP/m.txt' >'$TMP/promtool.out' 2>&1"
	else
		skip serve_promtool "promtool not installed (Debian package prometheus)"
	fi
	curl -sf --max-time 5 "http://127.0.0.1:$PORT/summary.json" >"$TMP/s.json"
	check serve_summary python3 - "$TMP/s.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["Time"]["annotation"]
ok = a["outer"]["Total Count"] == 14 and a["tick"]["Kind"] == "mark" and "Ioctls" not in a["outer"]
sys.exit(0 if ok else 1)
PY
fi
kill "$SERVE" 2>/dev/null
wait "$SERVE" 2>/dev/null

"$KXPROF" top "${ACCEL_DEV[@]}" --batch -c 4 -i 1 -p $$ >"$TMP/top.txt" 2>"$TMP/top.err" &
TOP=$!
# Traced from its first refresh on (the capture is open by then).
for _ in $(seq 1 100); do
	grep -q '^kxprof top ' "$TMP/top.txt" && break
	sleep 0.1
done
KXPROF_ANNOTATE_WAIT=$TOP:30000 "$WL/annotate_workload" -t 2 -n 20 -s 500 -x 0 >/dev/null
wait "$TOP"
check top_exit test $? -eq 0
check top_ranges python3 - "$TMP/top.txt" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
heads = [i for i, l in enumerate(lines) if l.split()[:2] == ["RANGE", "CATEGORY"]]
rows = [l.split() for i in heads for l in lines[i + 1:i + 5]]
ok = bool(heads) and any(r[:1] == ["outer"] for r in rows) and any(r[:2] == ["tick", "(mark)"] for r in rows)
if not ok:
    print("\n".join("# " + l for l in lines))
sys.exit(0 if ok else 1)
PY
