#!/usr/bin/env bash
# XSpace export of a real KVM capture: `kxprof convert --xplane LOGDIR`
# writes the TensorBoard/XProf layout, the file decodes with protoc against
# proto/xplane.proto, and what it holds matches what the workload did:
# KVM_RUN count, one line per thread (line id = tid), realtime timestamps,
# the /dev/kvm device plane. Also --gpu and --chrome in the same call, and
# usage errors.
. "$(dirname "$0")/lib.sh"
need_kvm xspace || exit 0
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DUMP="$ROOT/scripts/xspace-dump.sh"

"$KXPROF" record -o "$TMP/k.kxp" -- "$WL/kvm_workload" -t 2 -j 100 >"$TMP/k.wl" 2>"$TMP/rec.err"
rc=$?
if [ $rc -ne 0 ]; then
	fail record "exit $rc: $(cat "$TMP/rec.err")"
	exit 0
fi

# 1. layout: LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb + the marker
"$KXPROF" convert "$TMP/k.kxp" --xplane "$TMP/logdir" >"$TMP/conv.out" 2>"$TMP/conv.err"
check convert_exit test $? -eq 0
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
check kvm_run_count python3 - "$TMP/x.json" "$TMP/k.wl" <<'PY'
import json, sys
x = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2]))
host = [p for p in x["planes"] if p["name"] == "/host:CPU"][0]
ok = host["events"].get("KVM_RUN") == w["ioctls"]["KVM_RUN"] == 200
ok = ok and all(host["events"].get(k) == v for k, v in w["ioctls"].items())
sys.exit(0 if ok else 1)
PY
check line_ids_are_tids python3 - "$TMP/x.json" "$TMP/k.wl" <<'PY'
import json, sys
x = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2]))
host = [p for p in x["planes"] if p["name"] == "/host:CPU"][0]
lines = {l["id"]: l for l in host["lines"]}
want = {t["tid"]: sum(t["ioctls"].values()) for t in w["threads"]}
want[w["pid"]] = sum(w["main_thread"]["ioctls"].values())
ok = set(lines) == set(want) and set(w["tids"]) <= set(lines)
ok = ok and all(lines[t]["events"] == n for t, n in want.items())
ok = ok and all(l["name"] == "kvm_workload" for l in lines.values())
sys.exit(0 if ok else 1)
PY
check realtime_timestamps python3 - "$TMP/x.json" <<'PY'
import json, sys, time
x = json.load(open(sys.argv[1]))
host = [p for p in x["planes"] if p["name"] == "/host:CPU"][0]
sys.exit(0 if all(abs(l["timestamp_ns"] / 1e9 - time.time()) < 600 for l in host["lines"]) else 1)
PY
check device_plane python3 - "$TMP/x.json" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
kvm = [p for p in x["planes"] if p["name"] == "/device:CUSTOM:0 (kvm /dev/kvm)"]
ok = len(kvm) == 1 and kvm[0]["stats"].get("dev_t") == "10:232"
ok = ok and sum(p["name"].startswith("/device:") for p in x["planes"]) == 1
# nothing was lost or mangled (a hook skipped on this kernel may still be noted)
ok = ok and not any("dropped" in m or "overlap" in m for m in x["warnings"])
sys.exit(0 if ok and x["hostnames"] else 1)
PY

# 4. --gpu and --chrome in one call; a second run keeps one marker
"$KXPROF" convert "$TMP/k.kxp" --gpu --xplane "$TMP/logdir" --chrome "$TMP/k.json" \
	>"$TMP/conv2.out" 2>"$TMP/conv2.err"
check convert_both_exit test $? -eq 0
check convert_both_paths test "$(wc -l <"$TMP/conv2.out")" -eq 2
xp2=$(head -1 "$TMP/conv2.out")
check gpu_plane_name sh -c "\"$DUMP\" --summary \"$xp2\" | grep -q '^plane 0 \"/device:GPU:0 (kvm /dev/kvm)\"'"
check chrome_written python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/k.json"
check one_marker test "$(ls "$TMP/logdir" | grep -c 'profile-empty$')" -eq 1

# 5. usage errors
"$KXPROF" convert "$TMP/k.kxp" >/dev/null 2>"$TMP/e1"
check no_output_is_usage_error test $? -eq 2
"$KXPROF" convert "$TMP/nope.kxp" --xplane "$TMP/l2" >/dev/null 2>"$TMP/e2"
rc=$?
check missing_file_fails sh -c "[ $rc -eq 1 ] && grep -q nope.kxp '$TMP/e2'"
