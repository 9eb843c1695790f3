#!/usr/bin/env bash
# XSpace export of a real capture of the stand-in accelerator (kvm, or the
# loop driver without /dev/kvm; lib.sh): `kxprof convert --xplane LOGDIR`
# writes the TensorBoard/XProf layout, the file decodes with protoc against
# proto/xplane.proto, and what it holds matches what the workload did: the
# job ioctl count, one line per thread (line id = tid), realtime timestamps,
# the driver's device plane. Also --gpu and --chrome in the same call, and
# usage errors.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DUMP="$ROOT/scripts/xspace-dump.sh"
# The plane of the device the jobs ran on, and its dev_t stat.
if [ "$ACCEL" = kvm ]; then PLANE="kvm /dev/kvm" DEVT=10:232; else PLANE="loop /dev/loop*" DEVT="7:*"; fi

accel_argv 2 100
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/k.kxp" -- "${ACCEL_ARGV[@]}" >"$TMP/k.wl" 2>"$TMP/rec.err" ||
	exit 0

# 1. layout: LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb + the marker
kx 0 convert "$TMP/k.kxp" --xplane "$TMP/logdir" >"$TMP/conv.out" 2>"$TMP/conv.err"
xp=$(head -1 "$TMP/conv.out")
check convert_prints_path test -s "$xp"
check logdir_layout python3 - "$TMP/logdir" "$xp" <<'PY'
import os, re, socket, sys, time
logdir, xp = sys.argv[1], sys.argv[2]
host = socket.gethostname().replace(":", "_")
rel = os.path.relpath(xp, logdir).split(os.sep)
ok = (len(rel) == 4 and rel[:2] == ["plugins", "profile"]
      and re.fullmatch(r"\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d", rel[2])
      and rel[3] == host + ".xplane.pb")
# the run is named after the capture start, local time
run = time.mktime(time.strptime(rel[2], "%Y_%m_%d_%H_%M_%S")) if ok else 0
ok = ok and abs(time.time() - run) < 600
marks = [f for f in os.listdir(logdir)
         if re.fullmatch(r"events\.out\.tfevents\.\d+\.%s\.profile-empty" % re.escape(host), f)]
sys.exit(0 if ok and len(marks) == 1 else 1)
PY

# 2. protoc decodes it against our schema
"$DUMP" "$xp" >"$TMP/x.txt" 2>"$TMP/dump.err"
check protoc_decodes test $? -eq 0
check protoc_host_plane grep -q '^  name: "/host:CPU"$' "$TMP/x.txt"
check protoc_event_total python3 - "$TMP/x.txt" "$TMP/k.wl" <<'PY'
import json, sys
text = open(sys.argv[1]).read().split("\n")
w = json.load(open(sys.argv[2]))
# events sit at depth 2 (planes > lines > events); ioctls are the host
# plane's (device planes hold the device timeline's jobs)
host = text.index('  name: "/host:CPU"')
end = next((i for i in range(host, len(text)) if text[i] == "planes {"), len(text))
n = sum(1 for l in text[host:end] if l == "    events {")
sys.exit(0 if n == sum(w["ioctls"].values()) else 1)
PY

# 3. content matches the workload
"$DUMP" --json "$xp" >"$TMP/x.json"
check summary_json test $? -eq 0
check job_ioctl_count python3 - "$TMP/x.json" "$TMP/k.wl" "$ACCEL_JOB" <<'PY'
import json, sys
x = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2])); job = sys.argv[3]
host = [p for p in x["planes"] if p["name"] == "/host:CPU"][0]
ok = host["events"].get(job) == w["ioctls"][job] == 200
ok = ok and all(host["events"].get(k) == v for k, v in w["ioctls"].items())
sys.exit(0 if ok else 1)
PY
check line_ids_are_tids python3 - "$TMP/x.json" "$TMP/k.wl" "$ACCEL_WL" <<'PY'
import json, sys
x = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2]))
host = [p for p in x["planes"] if p["name"] == "/host:CPU"][0]
lines = {l["id"]: l for l in host["lines"]}
want = {t["tid"]: sum(t["ioctls"].values()) for t in w["threads"]}
want[w["pid"]] = sum(w["main_thread"]["ioctls"].values())
ok = set(lines) == set(want) and set(w["tids"]) <= set(lines)
ok = ok and all(lines[t]["events"] == n for t, n in want.items())
ok = ok and all(l["name"] == sys.argv[3] for l in lines.values())
sys.exit(0 if ok else 1)
PY
check realtime_timestamps python3 - "$TMP/x.json" <<'PY'
import json, sys, time
x = json.load(open(sys.argv[1]))
host = [p for p in x["planes"] if p["name"] == "/host:CPU"][0]
sys.exit(0 if all(abs(l["timestamp_ns"] / 1e9 - time.time()) < 600 for l in host["lines"]) else 1)
PY
check device_plane python3 - "$TMP/x.json" "$PLANE" "$DEVT" "$ACCEL" <<'PY'
import json, re, sys
x = json.load(open(sys.argv[1]))
dev = [p for p in x["planes"] if re.fullmatch(r"/device:CUSTOM:\d+ \(%s\)" % re.escape(sys.argv[2]), p["name"])]
ok = len(dev) == 1 and dev[0]["stats"].get("dev_t") == sys.argv[3]
# every device plane is one of the traced driver's devices
ok = ok and all(p["name"].endswith(")") and " (%s " % sys.argv[4] in p["name"]
                for p in x["planes"] if p["name"].startswith("/device:"))
# nothing was lost or mangled (a hook skipped on this kernel may still be noted)
ok = ok and not any("dropped" in m or "overlap" in m for m in x["warnings"])
sys.exit(0 if ok and x["hostnames"] else 1)
PY

# 4. --gpu and --chrome in one call (a run folder of its own); a second run keeps one marker
kx 0 convert "$TMP/k.kxp" --gpu --xplane "$TMP/logdir" --chrome "$TMP/k.json" \
	>"$TMP/conv2.out" 2>"$TMP/conv2.err"
check convert_both_paths test "$(wc -l <"$TMP/conv2.out")" -eq 2
xp2=$(head -1 "$TMP/conv2.out")
check second_run_folder test "$(dirname "$xp2")" = "$(dirname "$xp")-2"
check gpu_plane_name sh -c "\"$DUMP\" --summary \"$xp2\" | grep -Fq '\"/device:GPU:0 ($PLANE)\"'"
check chrome_written python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/k.json"
check one_marker test "$(ls "$TMP/logdir" | grep -c 'profile-empty$')" -eq 1

# 5. usage errors
kx 2 convert "$TMP/k.kxp" >/dev/null 2>"$TMP/e1"
kx 1 convert "$TMP/nope.kxp" --xplane "$TMP/l2" >/dev/null 2>"$TMP/e2" &&
	check missing_file_named grep -q nope.kxp "$TMP/e2"
