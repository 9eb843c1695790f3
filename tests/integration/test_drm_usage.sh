#!/usr/bin/env bash
# DRM usage statistics (record --drm-usage): this machine has no DRM
# device, so the sampler reads a fixture /proc (KXPROF_PROC_ROOT, for tests
# only) built from tests/fixtures/fdinfo/: an amdgpu client whose gfx busy
# time grows by half the wall time (50% busy), shared with a second
# process (fd passing: counted once, under the lowest pid), an accel (ivpu)
# client with memory only, and a process with a pipe only (never read).
# Checked: record's accounting (fdinfo reads only for DRM fds), report's
# table and JSON, Chrome counter events, the XSpace "DRM usage" line; the
# option's off switch and default; live in the real /proc, that a traced
# command without a DRM fd causes no fdinfo read; top's rows and serve's
# series (promtool, --max-keys) for traced processes (-p) that stand for the
# fixture ones.
. "$(dirname "$0")/lib.sh"
exec 3>&1

if [ "$(id -u)" -ne 0 ]; then
	skip drm_usage "needs root (loads BPF)"
	exit 0
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FX=$ROOT/tests/fixtures/fdinfo
DUMP="$ROOT/scripts/xspace-dump.sh"
R=$TMP/proc

# fake PID COMM FD TARGET [FIXTURE]
fake() {
	mkdir -p "$R/$1/fd" "$R/$1/fdinfo"
	echo "$2" >"$R/$1/comm"
	ln -s "$4" "$R/$1/fd/$3"
	if [ -n "${5:-}" ]; then cp "$FX/$5.fdinfo" "$R/$1/fdinfo/$3"; else echo "pos: 0" >"$R/$1/fdinfo/$3"; fi
}
fake 100 game 5 /dev/dri/renderD128 amdgpu
fake 101 compositor 9 /dev/dri/renderD128 amdgpu
fake 102 shell 1 "pipe:[1234]"
fake 104 npu 3 /dev/accel/accel0 ivpu
# gfx: +50 ms of busy time every 100 ms, the file replaced whole each time.
(
	# busy half the wall time, however often this loop gets to run
	t0=$(date +%s%N)
	while :; do
		ns=$((2000000000 + ($(date +%s%N) - t0) / 2))
		for p in 100 101; do
			sed "s/^drm-engine-gfx:.*/drm-engine-gfx:\t$ns ns/" "$FX/amdgpu.fdinfo" >"$R/$p/fdinfo/.t"
			mv "$R/$p/fdinfo/.t" "$R/$p/fdinfo/5"
		done
		sleep 0.1
	done
) &
BUMP=$!
at_exit 'kill $BUMP 2>/dev/null; wait $BUMP 2>/dev/null; rm -rf "$TMP"'

KXPROF_PROC_ROOT=$R kx 0 record -a -d 3 --no-jobs --no-annotations --device /dev/null \
	--drm-usage=0.2 -o "$TMP/d.kxp" 2>"$TMP/rec.err"
check record_exit test $? -eq 0
cat "$TMP/rec.err" | sed 's/^/# /'
# Every pass reads the three DRM fds (100, 101, 104) and nothing else.
check record_reads_drm_fds_only python3 - "$TMP/rec.err" <<'PY'
import re, sys
m = re.search(r"DRM usage: (\d+) passes every 0.2 s, (\d+) processes walked, (\d+) fdinfo reads, (\d+) records", open(sys.argv[1]).read())
p, procs, reads, recs = map(int, m.groups()) if m else (0, 0, 0, 0)
sys.exit(not (p >= 5 and procs == 4 * p and reads == 3 * p and recs > 0))
PY
kx 0 report "$TMP/d.kxp" --json >"$TMP/r.json"
check report_json python3 - "$TMP/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["DrmUsage"]
eng = {(e["Pid"], e["Engine"]): e for e in d["Engines"]}
mem = {(m["Pid"], m["Region"]): m for m in d["Memory"]}
gfx = eng.get((100, "gfx"))
print("# gfx:", gfx)
ok = gfx and gfx["Comm"] == "game" and gfx["Driver"] == "amdgpu" and gfx["Basis"] == "ns"
ok = ok and 25 <= gfx["BusyPct"] <= 75 and gfx["PeakPct"] >= gfx["BusyPct"]
ok = ok and not any(p == 101 for p, _ in eng) and not any(p == 102 for p, _ in mem)
npu = mem.get((104, "memory"))
ok = ok and npu and npu["Driver"] == "intel_vpu" and npu["resident"] == 8 << 20
ok = ok and mem[(100, "vram")]["total"] == 13256 * 1024 and d["Passes"] >= 5
sys.exit(not ok)
PY
kx 0 report "$TMP/d.kxp" >"$TMP/r.txt"
check report_table grep -q "^DRM usage per process (fdinfo every 0.2 s" "$TMP/r.txt"
check report_table_row grep -Eq "^100 +game +amdgpu +gfx +[0-9]" "$TMP/r.txt"
check report_table_width awk '/^DRM usage per/ { on = 1 } on && length($0) > 120 { bad = 1 } END { exit bad }' "$TMP/r.txt"
# The streamed report and the in-memory one agree.
kx 0 report "$TMP/d.kxp" --json --in-memory >"$TMP/m.json"
check report_in_memory_same python3 -c '
import json, sys
a, b = (json.load(open(f))["DrmUsage"] for f in sys.argv[1:])
sys.exit(a != b)' "$TMP/r.json" "$TMP/m.json"

kx 0 convert "$TMP/d.kxp" --chrome "$TMP/d.json" --xplane "$TMP/lg" >/dev/null
check convert_exit test $? -eq 0
check chrome_counters python3 - "$TMP/d.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "C"]
busy = [e for e in ev if e["name"] == "DRM busy % amdgpu gfx"]
mem = [e for e in ev if e["name"] == "DRM memory intel_vpu memory"]
print("# %d busy and %d memory counter events" % (len(busy), len(mem)))
ok = len(busy) >= 4 and all(e["pid"] == 100 for e in busy)
ok = ok and max(e["args"]["busy"] for e in busy) > 20 and mem and mem[0]["args"]["resident"] == 8 << 20
sys.exit(not ok)
PY
"$DUMP" --json "$(find "$TMP/lg" -name '*.xplane.pb')" >"$TMP/x.json"
check xspace_drm_line python3 - "$TMP/x.json" <<'PY'
import json, sys
planes = {p["name"]: p for p in json.load(open(sys.argv[1]))["planes"]}
amd = [p for n, p in planes.items() if n.endswith("(amdgpu DRM usage)")]
vpu = [p for n, p in planes.items() if n.endswith("(intel_vpu DRM usage)")]
line = [l for l in amd[0]["lines"] if l["name"] == "DRM usage"] if amd else []
sys.exit(not (line and line[0]["events"] >= 4 and vpu))
PY

# Off: no records, no section.
KXPROF_PROC_ROOT=$R kx 0 record -a -d 0.5 --no-jobs --no-annotations --device /dev/null \
	--no-drm-usage -o "$TMP/n.kxp" 2>"$TMP/n.err"
check no_drm_usage_record test "$(grep -c "DRM usage" "$TMP/n.err")" -eq 0
kx 0 report "$TMP/n.kxp" --json >"$TMP/n.json"
check no_drm_usage_report python3 -c '
import json, sys; sys.exit("DrmUsage" in json.load(open(sys.argv[1])))' "$TMP/n.json"
# Default: sampled only when a DRM or accel device is traced (none here).
KXPROF_PROC_ROOT=$R kx 0 record -a -d 0.5 --no-jobs --no-annotations --device /dev/null \
	-o "$TMP/o.kxp" 2>"$TMP/o.err"
check default_off_without_drm_device test "$(grep -c "DRM usage" "$TMP/o.err")" -eq 0
kx 2 record --drm-usage=0 -- true 2>"$TMP/bad.err"
check bad_interval_refused grep -q "drm-usage: '0' is not a number" "$TMP/bad.err"

# Live, the real /proc: the traced command holds no DRM fd, so no fdinfo is read.
kx 0 record --no-jobs --no-annotations --device /dev/null --drm-usage=0.1 \
	-o "$TMP/l.kxp" -- sleep 1 2>"$TMP/l.err"
check live_no_drm_fd_no_read python3 - "$TMP/l.err" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"DRM usage: (\d+) passes every 0.1 s, (\d+) processes walked, (\d+) fdinfo reads, (\d+) records", t)
print("# " + (m.group(0) if m else t))
sys.exit(not (m and int(m.group(1)) >= 5 and int(m.group(2)) >= 5 and m.group(3) == "0" and m.group(4) == "0"))
PY

# top and serve with -p: real processes (sleeps) stand for the fixture ones,
# their pids naming links to them in a second fixture root, so only those
# processes are traced (the sampler walks the session's pid set).
R2=$TMP/proc2
mkdir -p "$R2"
SLEEPS=()
# stand PID-IN-R: a sleep whose pid names a link to $R/PID-IN-R; prints its pid.
stand() {
	sleep 120 &
	SLEEPS+=($!)
	ln -s "$R/$1" "$R2/$!"
}
stand 100; P_GAME=${SLEEPS[-1]}
stand 101
stand 104; P_NPU=${SLEEPS[-1]}
at_exit 'kill $BUMP ${SLEEPS[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"'
P_LIST=$(IFS=,; echo "${SLEEPS[*]}")
P_FIRST=$(printf '%s\n' "${SLEEPS[@]:0:2}" | sort -n | head -1)

# top: per process and engine busy % and resident memory.
KXPROF_PROC_ROOT=$R2 kx 0 top -b -c 3 -i 0.4 --device /dev/null --drm-usage -p "$P_LIST" \
	>"$TMP/top.txt" 2>"$TMP/top.err"
check top_exit test $? -eq 0
check top_drm_rows python3 - "$TMP/top.txt" "$P_FIRST" "$P_NPU" <<'PY'
import re, sys
blocks = open(sys.argv[1]).read().split("DRM usage (fdinfo) of the last interval")[1:]
last = blocks[-1] if blocks else ""
gfx = re.search(r"^%s +game +amdgpu +gfx +([0-9.]+) +14\.9M$" % sys.argv[2], last, re.M)
npu = re.search(r"^%s +npu +intel_vpu +- +- +8\.0M$" % sys.argv[3], last, re.M)
print("# gfx busy %s%%" % (gfx.group(1) if gfx else "?"))
sys.exit(not (len(blocks) == 3 and gfx and 10 <= float(gfx.group(1)) <= 90 and npu
              and len(re.findall(r" gfx ", last)) == 1))
PY

# bound_url ERRFILE: the http://ADDR:PORT serve printed (port 0 asked), waiting up to 30 s.
bound_url() {
	for _ in $(seq 1 300); do
		u=$(grep -o 'http://127.0.0.1:[0-9]*' "$1" 2>/dev/null | head -1)
		[ -n "$u" ] && { echo "$u"; return 0; }
		sleep 0.1
	done
	return 1
}

# serve: busy seconds counters, capacity and memory gauges; promtool accepts them.
KXPROF_PROC_ROOT=$R2 "$KXPROF" serve --listen 127.0.0.1:0 --by-pid --device /dev/null \
	-p "$P_LIST" --drm-usage=0.2 --rescan 0 2>"$TMP/serve.err" &
SPID=$!
URL=$(bound_url "$TMP/serve.err")
for _ in $(seq 1 100); do
	grep -q "^kxprof_drm_passes_total [3-9]" "$TMP/m.txt" 2>/dev/null && break
	curl -sf --max-time 5 "$URL/metrics" >"$TMP/m.txt"
	sleep 0.1
done
sleep 0.5
curl -sf --max-time 5 "$URL/metrics" >"$TMP/m2.txt"
kill $SPID
wait_rc serve_exit $SPID 0
check serve_drm_metrics python3 - "$TMP/m.txt" "$TMP/m2.txt" "$P_FIRST" "$P_NPU" <<'PY'
import re, sys
def val(text, name, labels):
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None
a, b = (open(f).read() for f in sys.argv[1:3])
lab = 'pid="%s",comm="game",driver="amdgpu",pdev="0000:03:00.0",client="52",engine="gfx"' % sys.argv[3]
x, y = val(a, "kxprof_drm_engine_busy_seconds_total", lab), val(b, "kxprof_drm_engine_busy_seconds_total", lab)
print("# gfx busy seconds %s then %s" % (x, y))
if x is None or y is None:
    print("# " + "\n# ".join(l for l in b.splitlines() if "gfx" in l or "passes" in l))
ok = x is not None and y is not None and y > x >= 2.0
ok = ok and val(b, "kxprof_drm_engine_capacity", lab) == 1
ok = ok and val(b, "kxprof_drm_memory_bytes", 'pid="%s",comm="npu",driver="intel_vpu",pdev="0000:00:0b.0",client="11",region="memory",kind="resident"' % sys.argv[4]) == 8 << 20
ok = ok and len(re.findall(r'engine="gfx"\} ', b)) == 2 and "kxprof_drm_series_dropped 0" in b
sys.exit(not ok)
PY
if command -v promtool >/dev/null; then
	check serve_drm_promtool sh -c "promtool check metrics <'$TMP/m2.txt' >'$TMP/promtool.out' 2>&1"
else
	skip serve_drm_promtool "promtool not installed (Debian package prometheus)"
fi
# A key limit of 16 leaves the rest out, counted: 20 more i915 clients (4
# engines, 2 regions each) make 83 engine series and 44 region rows.
for i in $(seq 1 20); do
	fake $((200 + i)) "gl$i" 4 /dev/dri/renderD129 i915
	sed -i "s/^drm-client-id:.*/drm-client-id:\t$((1000 + i))/" "$R/$((200 + i))/fdinfo/4"
	stand $((200 + i))
done
P_LIST=$(IFS=,; echo "${SLEEPS[*]}")
KXPROF_PROC_ROOT=$R2 "$KXPROF" serve --listen 127.0.0.1:0 --device /dev/null --max-keys 16 \
	-p "$P_LIST" --drm-usage=0.2 --rescan 0 2>"$TMP/serve2.err" &
SPID=$!
URL=$(bound_url "$TMP/serve2.err")
for _ in $(seq 1 100); do
	grep -q "^kxprof_drm_passes_total [2-9]" "$TMP/k.txt" 2>/dev/null && break
	curl -sf --max-time 5 "$URL/metrics" >"$TMP/k.txt"
	sleep 0.1
done
kill $SPID
wait_rc serve_keys_exit $SPID 0
check serve_drm_max_keys python3 - "$TMP/k.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = len(re.findall(r"^kxprof_drm_engine_busy_seconds_total\{", t, re.M))
d = re.search(r"^kxprof_drm_series_dropped (\d+)$", t, re.M)
print("# %d busy series, %s dropped" % (n, d.group(1) if d else "?"))
sys.exit(not (n == 16 and d and int(d.group(1)) == (83 - 16) + (44 - 16)
              and not re.search(r'^kxprof_drm_\w+\{pid=', t, re.M)))
PY
