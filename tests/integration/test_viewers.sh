#!/usr/bin/env bash
# The outputs in the viewers they are for: a capture recorded with -F and
# --off-cpu (profile_workload on a loop device: spins, then BLKFLSBUF and a
# sleeping BLKZEROOUT) converted with --chrome and --speedscope.
#   - The --speedscope file validates against speedscope's JSON schema
#     (tests/fixtures/speedscope, python3-jsonschema); its evented profiles
#     nest; per thread, its CPU samples are the report's, each weighted by
#     the sampling period, with the driver-call frame in the stacks, and its
#     off-CPU weights add up to the report's off-CPU time.
#   - speedscope 1.25 (npm, into build/npm) in Debian's Chromium, driven by
#     playwright-core (speedscope_view.mjs): the Chrome trace shows the
#     ioctl slices of the workload's thread and the device lanes, not only
#     CPU samples; the speedscope file shows the thread's evented, CPU and
#     off-CPU profiles; no page error in either. Screenshots stay in
#     build/test-logs/viewers-<build>/.
# Chromium that cannot start here is a FAIL that says why.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NPM=$ROOT/build/npm
SHOTS=$ROOT/build/test-logs/viewers-$(basename "$BUILD_DIR")
SCHEMA=$ROOT/tests/fixtures/speedscope/file-format-schema.json
VIEW=$(dirname "$0")/speedscope_view.mjs

if [ "$(id -u)" -ne 0 ]; then
	skip viewers "needs root (loads BPF, opens perf events)"
	exit 0
fi
ok=1
for t in /usr/bin/chromium:chromium /usr/bin/node:nodejs /usr/bin/npm:npm; do
	[ -x "${t%%:*}" ] || { fail viewer_tools "${t%%:*} is missing (Debian ${t##*:}; scripts/install-deps.sh installs it)"; ok=0; }
done
# The schema validator: Debian's python3-jsonschema (the system python3's),
# or one the python3 on PATH has.
PYJS=
for py in python3 /usr/bin/python3; do
	"$py" -c 'import jsonschema' 2>/dev/null && { PYJS=$py; break; }
done
[ -n "$PYJS" ] ||
	{ fail viewer_tools "python3 jsonschema is missing (Debian python3-jsonschema; scripts/install-deps.sh installs it)"; ok=0; }
[ $ok -eq 1 ] || exit 0
# speedscope and playwright-core from npm, once, into the build tree.
if [ ! -f "$NPM/node_modules/speedscope/dist/release/index.html" ] ||
	[ ! -f "$NPM/node_modules/playwright-core/package.json" ]; then
	mkdir -p "$NPM"
	if ! timeout 300 npm install --prefix "$NPM" --no-audit --no-fund --no-save \
		speedscope@1.25.0 playwright-core@1.65.1 >"$TMP/npm.log" 2>&1; then
		fail viewer_npm "npm install speedscope playwright-core failed: $(tail -3 "$TMP/npm.log")"
		exit 0
	fi
fi
rm -rf "$SHOTS"
mkdir -p "$SHOTS"

truncate -s 64M "$TMP/back.img"
LOOP=$(losetup -f --show "$TMP/back.img") || { fail loop_setup "losetup failed"; exit 0; }
at_exit 'losetup -d "$LOOP" 2>/dev/null; rm -rf "$TMP"'

kx 0 record -F 999 --off-cpu --device loop -o "$TMP/v.kxp" -- \
	"$WL/profile_workload" -s 0.3 -D "$LOOP" -f 0.3 -z 0.2 >"$TMP/wl.json" 2>"$TMP/rec.err" ||
	exit 0
kx 0 report --json "$TMP/v.kxp" >"$TMP/r.json" 2>/dev/null || exit 0
kx 0 convert "$TMP/v.kxp" --chrome "$TMP/v.trace.json" --speedscope "$TMP/v.speedscope.json" \
	>"$TMP/conv.out" 2>"$TMP/conv.err"
check convert_paths grep -qx "$TMP/v.speedscope.json" "$TMP/conv.out"

# ---- the speedscope file, read as speedscope's schema and model say ----
check speedscope_schema "$PYJS" - "$SCHEMA" "$TMP/v.speedscope.json" <<'PY'
import json, sys, jsonschema
schema, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(d), key=str)
for e in errors[:3]:
    print("# %s at %s" % (e.message, list(e.absolute_path)))
sys.exit(bool(errors) or d.get("$schema") != "https://www.speedscope.app/file-format-schema.json")
PY
check speedscope_profiles python3 - "$TMP/v.speedscope.json" "$TMP/r.json" "$TMP/wl.json" <<'PY'
import json, sys
d, r, w = (json.load(open(p)) for p in sys.argv[1:4])
frames = [f["name"] for f in d["shared"]["frames"]]
me = "(pid %d, tid %d): " % (w["pid"], w["tid"])
# (samples of the child record launched, before its exec, are named "kxprof")
mine = {p["name"].split(me, 1)[1]: p for p in d["profiles"]
        if me in p["name"] and not p["name"].startswith("kxprof ")}
why = []
def need(cond, msg):
    if not cond:
        why.append(msg)
need(sorted(mine) == ["CPU samples", "ioctls, annotation ranges, off-CPU", "off-CPU"],
     "the workload thread's profiles: %s" % sorted(mine))
# Evented: open and close events in time order, properly nested.
for p in d["profiles"]:
    if p["type"] != "evented":
        continue
    st, last = [], p["startValue"]
    for e in p["events"]:
        need(e["at"] >= last, "%s: event at %s before %s" % (p["name"], e["at"], last))
        last = e["at"]
        if e["type"] == "O":
            st.append(e["frame"])
        else:
            need(st and st[-1] == e["frame"], "%s: close of %s not the top" % (p["name"], e["frame"]))
            st and st.pop()
    need(not st and last <= p["endValue"], "%s: left open or past its end" % p["name"])
ev = mine.get("ioctls, annotation ranges, off-CPU", {"events": []})
names = {frames[e["frame"]] for e in ev["events"]}
need({"[loop] BLKFLSBUF", "[loop] BLKZEROOUT", "off-CPU"} <= names, "evented frames %s" % names)
# CPU samples: the report's count, each weighted by the period.
period = round(1e9 / r["Profile"]["Hz"])
cpu = [p for p in d["profiles"] if p["name"].endswith(": CPU samples")]
n = sum(len(p["samples"]) for p in cpu)
need(n == r["Profile"]["Samples"], "%d CPU samples, the report has %d" % (n, r["Profile"]["Samples"]))
need(all(p["unit"] == "nanoseconds" and set(p["weights"]) == {period} for p in cpu), "CPU weights")
call = [s for s in mine.get("CPU samples", {"samples": []})["samples"]
        if "[loop] BLKFLSBUF" in [frames[i] for i in s]]
need(call and all(frames[s[0]] != "[loop] BLKFLSBUF" and s.index(frames.index("[loop] BLKFLSBUF")) < len(s) - 1
                  for s in call), "the driver-call frame inside the CPU stacks")
off = [p for p in d["profiles"] if p["name"].endswith(": off-CPU") and p["type"] == "sampled"]
tot = sum(sum(p["weights"]) for p in off)
need(tot == r["OffCpuProfile"]["Total"], "off-CPU %d ns, the report %d" % (tot, r["OffCpuProfile"]["Total"]))
print("# %d frames, %d profiles; %d CPU samples x %d ns; off-CPU %.1f ms" %
      (len(frames), len(d["profiles"]), n, period, tot / 1e6))
for m in why[:5]:
    print("# " + m)
sys.exit(bool(why))
PY

# ---- in speedscope, in Chromium ----
view() { # LABEL FILE: speedscope's view of FILE into $TMP/LABEL.view.json
	timeout 120 node "$VIEW" "$NPM" "$2" "$SHOTS" "$1" >"$TMP/$1.view.json" 2>"$TMP/$1.view.err"
	local rc=$?
	[ $rc -eq 0 ] && return 0
	fail "viewer_$1" "speedscope in Chromium did not show $2 (exit $rc): $(tail -c 600 "$TMP/$1.view.err") $(tail -c 400 "$TMP/$1.view.json")"
	return 1
}
if view chrome "$TMP/v.trace.json"; then
	check viewer_chrome python3 - "$TMP/chrome.view.json" "$TMP/wl.json" <<'PY'
import json, re, sys
v, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
titles = [p["title"] for p in v["profiles"]]
mine = [p for p in v["profiles"] if "(tid %d)" % w["tid"] in p["title"]]
lanes = [p for p in v["profiles"] if "(pid %d)" % w["pid"] not in p["title"] and "\tblock " in p["table"]]
# An ioctl slice is a row named after the call, its args after it.
slices = mine and re.search(r"^\tBLKFLSBUF \{", mine[0]["table"], re.M)
print("# %d profiles: %s; page errors: %s" % (len(titles), titles[:4], v["errors"][:3]))
sys.exit(not (mine and slices and lanes and not v["errors"]))
PY
fi
if view speedscope "$TMP/v.speedscope.json"; then
	check viewer_speedscope python3 - "$TMP/speedscope.view.json" "$TMP/wl.json" <<'PY'
import json, sys
v, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
me = "(pid %d, tid %d): " % (w["pid"], w["tid"])
mine = {p["title"].split(me, 1)[1]: p["table"] for p in v["profiles"]
        if me in p["title"] and not p["title"].startswith("kxprof ")}
want = {"ioctls, annotation ranges, off-CPU": "\t[loop] BLKFLSBUF", "CPU samples": "\tkxw_heavy",
        "off-CPU": "\t__schedule"}
got = {k: want[k] in mine.get(k, "") for k in want}
print("# %s; page errors: %s" % (got, v["errors"][:3]))
for k in (k for k in want if not got[k]):  # what the table showed instead
    rows = mine.get(k, "").split("Symbol Name\n", 1)[-1].split("\n")
    print("# %s: %s" % (k, [r.strip() for r in rows if r.startswith("\t") and "%" not in r][:6]))
sys.exit(not (all(got.values()) and not v["errors"]))
PY
fi
check viewer_screenshots test "$(ls "$SHOTS"/*.png 2>/dev/null | wc -l)" -ge 6
