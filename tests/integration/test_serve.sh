#!/usr/bin/env bash
# kxprof serve against the stand-in accelerator's driver (kvm, or loop without
# /dev/kvm; lib.sh): Prometheus histogram counts equal
# the workload's own counts, buckets are cumulative and +Inf == _count,
# promtool accepts the text, a real Prometheus server scrapes it and answers
# a query, malformed/oversized/stalled requests do not hurt the server or
# other clients, trickling clients are cut at the request deadline, port 0
# prints the bound port, bad query parameters get 400, SIGHUP keeps it serving, /summary.json?reset=1 resets,
# block requests and KVM_RUNs are paired into job histograms,
# SIGTERM exits 0 with nothing left attached. (The soak: test_serve_soak.sh.)
. "$(dirname "$0")/lib.sh"
COUNTS="python3 $(dirname "$0")/counts.py"
# Whatever happens, no server, Prometheus or loop device outlives the test.
at_exit 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"'

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# fetch URL [curl args...]: body on stdout, exit status of curl
fetch() { curl -sf --max-time 5 "$@"; }
wait_http() { # url: up to 10 s
	for _ in $(seq 1 100); do
		fetch -o /dev/null "$1" && return 0
		sleep 0.1
	done
	return 1
}
# BPF program ids a process holds (its fds' fdinfo), and how many of them still exist.
prog_ids() { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u; }
progs_alive() { local n=0; for id in $1; do bpftool prog show id "$id" >/dev/null 2>&1 && n=$((n + 1)); done; echo $n; }

PORT=$(free_port)
URL=http://127.0.0.1:$PORT
# Trace this shell and its descendants only: other processes on the machine
# may use the driver too, and the counts must be exact.
"$KXPROF" serve "${ACCEL_DEV[@]}" --listen "127.0.0.1:$PORT" -p $$ --http-timeout 2 --rescan 0 --allow-reset \
	2>"$TMP/serve.err" &
SPID=$!
if ! wait_http "$URL/"; then
	fail serve_starts "no answer on $URL: $(cat "$TMP/serve.err")"
	kill $SPID 2>/dev/null
	exit 0
fi
pass serve_starts
check serve_loopback_only test "$(ss -ltnH "sport = :$PORT" | awk '{print $4}')" = "127.0.0.1:$PORT"
IDS=$(prog_ids $SPID)
check programs_attached test "$(progs_alive "$IDS")" -gt 0

# 1. counts: the histograms equal what the workload issued
accel_workload 2 50 >"$TMP/wl.json"
fetch "$URL/metrics" >"$TMP/m1.txt"
# One version: what --version prints is what kxprof_build_info says.
check build_info_version grep -q "^kxprof_build_info{version=\"$("$KXPROF" --version | sed 's/^kxprof //')\"," "$TMP/m1.txt"
check metrics_content_type sh -c "curl -sI --max-time 5 '$URL/metrics' | grep -qi '^content-type: text/plain; version=0.0.4'"
check prom_counts_equal_workload python3 - "$TMP/wl.json" "$TMP/m1.txt" "$ACCEL" <<'PY'
import json, re, sys
want = json.load(open(sys.argv[1]))["ioctls"]
got = {}
for line in open(sys.argv[2]):
    m = re.match(r'kxprof_ioctl_duration_seconds_count\{(.*)\} (\d+)$', line)
    if m and 'driver="%s"' % sys.argv[3] in m.group(1):
        name = re.search(r'ioctl="([^"]*)"', m.group(1)).group(1)
        got[name] = got.get(name, 0) + int(m.group(2))
bad = {k: (v, got.get(k)) for k, v in want.items() if got.get(k) != v}
extra = set(got) - set(want)
if bad or extra:
    print("mismatch", bad, extra)
sys.exit(1 if bad or extra else 0)
PY
check prom_buckets_cumulative_inf_eq_count python3 - "$TMP/m1.txt" <<'PY'
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r'(kxprof_\w+)_(bucket|count|sum)\{(.*?)(?:,le="([^"]*)")?\} (\S+)$', line)
    if not m or not m.group(1).endswith("_seconds"):
        continue
    key = (m.group(1), m.group(3))
    s = series.setdefault(key, {"b": []})
    if m.group(2) == "bucket":
        le = float("inf") if m.group(4) == "+Inf" else float(m.group(4))
        s["b"].append((le, int(m.group(5))))
    else:
        s[m.group(2)] = float(m.group(5))
ok = len(series) > 0
for key, s in series.items():
    b = s["b"]
    les = [x[0] for x in b]
    counts = [x[1] for x in b]
    if les != sorted(les) or les[-1] != float("inf") or counts != sorted(counts) \
            or counts[-1] != s.get("count") or s.get("sum", -1) < 0:
        print("bad series", key, s)
        ok = False
sys.exit(0 if ok else 1)
PY
if command -v promtool >/dev/null; then
	check promtool_check_metrics sh -c "promtool check metrics <'$TMP/m1.txt' >'$TMP/promtool.out' 2>&1"
else
	skip promtool_check_metrics "promtool not installed (Debian package prometheus)"
fi
fetch "$URL/summary.json" >"$TMP/s1.json"
check summary_json_counts_equal_workload $COUNTS "$TMP/wl.json" "$TMP/s1.json" "ioctl/$ACCEL"

# 2. a real Prometheus server scrapes it; query the series over its HTTP API
if command -v prometheus >/dev/null; then
	PPORT=$(free_port)
	cat >"$TMP/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: kxprof
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
	prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" >"$TMP/prom.log" 2>&1 &
	PROM=$!
	want=$(jget "$TMP/wl.json" 'd["ioctls"]["'$ACCEL_JOB'"]')
	got=
	for _ in $(seq 1 60); do
		got=$(curl -sf --max-time 2 "http://127.0.0.1:$PPORT/api/v1/query" \
			--data-urlencode "query=sum(kxprof_ioctl_duration_seconds_count{ioctl=\"$ACCEL_JOB\"})" |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null)
		[ -n "$got" ] && break
		sleep 0.5
	done
	check prometheus_scrapes_and_queries test "$got" = "$want"
	health=$(curl -sf --max-time 2 "http://127.0.0.1:$PPORT/api/v1/targets" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["activeTargets"][0]["health"])' 2>/dev/null)
	check prometheus_target_up test "$health" = up
	kill $PROM
	wait $PROM 2>/dev/null
else
	skip prometheus_scrapes_and_queries "prometheus not installed"
fi

# 3. bad requests get errors, the server survives, other clients are served
check http_404 test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/nope")" = 404
check http_405 test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST -d x=1 "$URL/metrics")" = 405
check http_head test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -I "$URL/metrics")" = 200
check http_malformed python3 - "$PORT" <<'PY'
import socket, sys, threading, time, urllib.request
port = int(sys.argv[1])
url = f"http://127.0.0.1:{port}/metrics"

def raw(data, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may close before reading everything
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            out += b
        return out
    finally:
        s.close()

ok = True
r = raw(b"\x00\x01\x02garbage\xff\r\n\r\n")
if not (r == b"" or r.startswith(b"HTTP/1.1 4")):
    print("garbage:", r[:80]); ok = False
r = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
if not (r == b"" or r.split(b" ")[1][:1] == b"4"):
    print("big header:", r[:80]); ok = False
r = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n")
if not (r == b"" or r.split(b" ")[1][:1] == b"4"):
    print("bad content-length:", r[:80]); ok = False
r = raw(b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
if not (r == b"" or r.split(b" ")[1][:1] == b"4"):
    print("long uri:", r[:80]); ok = False

# A slow client sends half a request and stalls; others are still served.
slow = socket.create_connection(("127.0.0.1", port), timeout=10)
slow.sendall(b"GET /metr")
t0 = time.monotonic()
body = urllib.request.urlopen(url, timeout=3).read()
if b"kxprof_build_info" not in body or time.monotonic() - t0 > 2:
    print("normal scrape while a client stalls failed"); ok = False
# ... and the stalled one is dropped after the idle timeout (2 s here).
try:
    closed = slow.recv(100) == b""
except OSError:
    closed = True
if not closed or time.monotonic() - t0 > 8:
    print("stalled client not dropped"); ok = False
slow.close()

# Clients that disconnect mid-response.
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    s.recv(10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()
body = urllib.request.urlopen(url, timeout=3).read()
if b"kxprof_build_info" not in body:
    ok = False
sys.exit(0 if ok else 1)
PY
check http_alive_after_abuse kill -0 $SPID

# 4. SIGHUP rescans devices and keeps serving
kill -HUP $SPID
for _ in $(seq 1 100); do grep -q SIGHUP "$TMP/serve.err" && break; sleep 0.05; done
check sighup_keeps_serving fetch -o /dev/null "$URL/metrics"
check sighup_logged grep -q SIGHUP "$TMP/serve.err"

# 5. reset: the summary is returned once, then the aggregates start over
# (kxprof report --from URL --reset is GET /summary.json?reset=1)
accel_workload 1 7 >"$TMP/wl2.json"
kx 0 report --from "$URL" --sort-by count >"$TMP/table.txt" 2>&1
check report_from_table grep -Eq "^$ACCEL_JOB +107 " "$TMP/table.txt"
kx 0 report --from "$URL" --json --reset >"$TMP/s2.json"
check reset_returns_totals test "$(jget "$TMP/s2.json" 'd["Time"]["ioctl/'$ACCEL'"]["'$ACCEL_JOB'"]["Total Count"]')" = 107
fetch "$URL/summary.json" >"$TMP/s3.json"
check reset_clears test "$(jget "$TMP/s3.json" 'len(d["Time"])')" = 0
fetch "$URL/metrics" >"$TMP/m3.txt"
check reset_clears_metrics sh -c "! grep -q 'ioctl=\"$ACCEL_JOB\"' '$TMP/m3.txt'"
kx 2 report --reset "$TMP/none.kxp" >/dev/null 2>"$TMP/r.err"
kx 1 report --from "http://127.0.0.1:$(free_port)" >/dev/null 2>"$TMP/r.err" &&
	check report_from_refused grep -q 'cannot connect' "$TMP/r.err"

# 5b. precision: the live percentiles of calls recorded at the same time are
# within 1/16 of the record's exact ones (plus 2% and 2 us: each tracer's
# programs run inside the calls the other one times; log2 slots were up to
# a factor 2 off)
accel_argv 1 600 100
kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/prec.kxp" -- "${ACCEL_ARGV[@]}" >/dev/null 2>"$TMP/prec.err"
kx 0 report --json --in-memory "$TMP/prec.kxp" >"$TMP/prec_exact.json"
fetch "$URL/summary.json?reset=1" >"$TMP/prec_live.json"
check live_percentiles_within_bound python3 - "$TMP/prec_exact.json" "$TMP/prec_live.json" "ioctl/$ACCEL" <<'PY'
import json, sys
exact = json.load(open(sys.argv[1]))["Time"][sys.argv[3]]
live = json.load(open(sys.argv[2]))["Time"][sys.argv[3]]
bad, compared = [], 0
for name, e in exact.items():
    if e["Total Count"] < 100:
        continue
    l = live.get(name)
    if not l or l["Total Count"] != e["Total Count"]:
        bad.append((name, "count", e["Total Count"], l and l["Total Count"]))
        continue
    for q in ("p50", "p90", "p99"):
        x, y = e[q] * 1e6, l[q] * 1e6  # ns
        compared += 1
        if abs(y - x) > x / 16 + x / 50 + 2000:
            bad.append((name, q, x, y))
print("compared", compared, "bad", bad, file=sys.stderr)
sys.exit(1 if bad or not compared else 0)
PY

# 6. SIGTERM: exit 0, nothing left attached
kill -TERM $SPID
wait_rc sigterm_exit_0 $SPID 0 && pass sigterm_exit_0
# The kernel frees programs asynchronously once the last reference is gone.
for _ in $(seq 1 50); do [ "$(progs_alive "$IDS")" -eq 0 ] && break; sleep 0.1; done
check sigterm_detaches test "$(progs_alive "$IDS")" -eq 0

# 6b. hot-plug: a device appearing in the device registry (a fake tree under
# KXPROF_SYSROOT holding the real node of the stand-in driver: /dev/kvm
# 10:232, or /dev/loop-control 10:237 with --device loop) is picked up by
# SIGHUP, and the driver is still counted exactly across the rescan.
R=$TMP/root
mkdir -p "$R/proc" "$R/dev/dri" "$R/sys/dev/char/226:128/device" "$R/sys/bus/pci/drivers/amdgpu"
printf 'Character devices:\n 10 misc\n226 drm\n\nBlock devices:\n  7 loop\n' >"$R/proc/devices"
ln -s ../../../bus/pci/drivers/amdgpu "$R/sys/dev/char/226:128/device/driver"
if [ "$ACCEL" = kvm ]; then NODE=(kvm c 10 232); else NODE=(loop-control c 10 237); fi
if mknod "$R/dev/${NODE[0]}" "${NODE[@]:1}" 2>/dev/null; then
	PORT=$(free_port)
	URL=http://127.0.0.1:$PORT
	KXPROF_SYSROOT=$R "$KXPROF" serve "${ACCEL_DEV[@]}" --listen "127.0.0.1:$PORT" -p $$ --rescan 0 2>"$TMP/hp.err" &
	SPID=$!
	wait_http "$URL/"
	# the device count serve started with
	n=$(sed -n 's|^kxprof serve: http.*, \([0-9]*\) devices,.*|\1|p' "$TMP/hp.err")
	accel_workload 1 5 >"$TMP/h1.json"
	mknod "$R/dev/dri/renderD128" c 226 128
	kill -HUP $SPID
	for _ in $(seq 1 30); do grep -q 'devices: ' "$TMP/hp.err" && break; sleep 0.1; done
	check hotplug_rescan_adds grep -q "devices: $((n + 1)) (were $n)" "$TMP/hp.err"
	accel_workload 1 6 >"$TMP/h2.json"
	fetch "$URL/metrics" >"$TMP/hp.txt"
	check hotplug_counts_kept test "$(awk '/_count\{.*ioctl="'$ACCEL_JOB'"/ {s+=$NF} END {print s}' "$TMP/hp.txt")" = 11
	rm -f "$R/dev/dri/renderD128"
	kill -HUP $SPID
	for _ in $(seq 1 30); do grep -q "devices: $n (were $((n + 1)))" "$TMP/hp.err" && break; sleep 0.1; done
	check hotplug_rescan_removes grep -q "devices: $n (were $((n + 1)))" "$TMP/hp.err"
	kill -TERM $SPID
	wait_rc hotplug_serve_exit $SPID 0
else
	skip hotplug_rescan_adds "mknod not permitted"
fi

# 6c. --listen 127.0.0.1:0 prints the port it bound and serves there; bad query
# parameters get 400 with the reason; clients that trickle a byte a second
# into every slot (--max-clients 2) are cut at --http-deadline, and a
# scraper arriving meanwhile does not wait: the oldest trickler makes room.
"$KXPROF" serve "${ACCEL_DEV[@]}" --listen 127.0.0.1:0 -p $$ --rescan 0 --max-clients 2 \
	--max-per-client 2 --http-timeout 10 --http-deadline 3 2>"$TMP/p0.err" &
SPID=$!
PORT0=
for _ in $(seq 1 100); do
	PORT0=$(sed -n 's|^kxprof serve: http://127\.0\.0\.1:\([0-9]*\)/metrics .*|\1|p' "$TMP/p0.err")
	[ -n "$PORT0" ] && break
	sleep 0.1
done
if [ -n "$PORT0" ] && [ "$PORT0" != 0 ] && fetch -o /dev/null "http://127.0.0.1:$PORT0/metrics"; then
	pass listen_port0_prints_bound_port
else
	fail listen_port0_prints_bound_port "port '${PORT0}': $(head -c 300 "$TMP/p0.err")"
fi
# query CODE PATTERN PATH: the status and the reason in the body
query() {
	local code
	code=$(curl -s --max-time 5 -o "$TMP/q.body" -w '%{http_code}' "http://127.0.0.1:$PORT0$3")
	if [ "$code" = "$1" ] && grep -q -- "$2" "$TMP/q.body"; then pass "query_$4"; else
		fail "query_$4" "$3: $code $(head -c 200 "$TMP/q.body")"
	fi
}
query 400 "reset='abc'" '/summary.json?reset=abc' bad_flag
query 400 "unknown parameter 'frob'" '/summary.json?frob=1' unknown_param
query 400 "unknown parameter 'x'" '/metrics?x=1' metrics_takes_none
query 400 "sort='median'" '/summary?sort=median' bad_sort
query 200 '"Time"' '/summary.json?reset=no&hist=1&sort=max&ascending=true' good_params
check trickle_cut_scraper_served python3 - "$PORT0" <<'PY'
import select, socket, subprocess, sys, time
port = int(sys.argv[1])
req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
# Accepted apart, so that the older one is surely slow[0]: two connections
# made together may be accepted by the server's two threads in either order.
slow = [socket.create_connection(("127.0.0.1", port), timeout=1)]
time.sleep(0.3)
slow.append(socket.create_connection(("127.0.0.1", port), timeout=1))
time.sleep(0.05)
t0 = time.time()
# A scraper arrives while both slots trickle: it is answered at once, the
# oldest trickler closed for it; the other one is cut at the deadline (3 s).
scraper = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                            "--max-time", "9", f"http://127.0.0.1:{port}/metrics"],
                           stdout=subprocess.PIPE)
cut = [None, None]
sent = 0
while not all(c is not None for c in cut) and time.time() - t0 < 12:
    for j, s in enumerate(slow):
        if cut[j] is None and select.select([s], [], [], 0)[0]:
            try:
                closed = s.recv(100) == b""
            except OSError:
                closed = True
            if closed:
                cut[j] = time.time() - t0
    if time.time() - t0 >= sent:  # a byte a second
        for j, s in enumerate(slow):
            if cut[j] is None:
                try:
                    s.send(req[sent:sent + 1])
                except OSError:
                    cut[j] = time.time() - t0
        sent += 1
    time.sleep(0.05)
code, took = scraper.communicate()[0].decode().split()
print(f"cut after {cut} s; scraper {code} in {took} s")
sys.exit(0 if code == "200" and float(took) < 2 and cut[0] is not None and cut[0] < 1.5
         and cut[1] is not None and 2.5 <= cut[1] <= 7 else 1)
PY
check deadline_cut_logged grep -q 'past the request deadline (3 s)' "$TMP/p0.err"
kill -TERM $SPID
wait_rc port0_sigterm_exit_0 $SPID 0

# 7. key limit: overflow is counted, never silent (aggregated + overflow == issued);
# under loop each workload also issues its error cases, for more than 16 keys
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
"$KXPROF" serve "${ACCEL_DEV[@]}" --listen "127.0.0.1:$PORT" -p $$ --by-pid --max-keys 16 --rescan 0 2>"$TMP/ovf.err" &
SPID=$!
if [ "$ACCEL" = kvm ]; then MORE=(); else MORE=(-e 1); fi
if wait_http "$URL/"; then
	accel_workload 1 20 "" "${MORE[@]}" >"$TMP/o1.json"
	accel_workload 1 20 "" "${MORE[@]}" >"$TMP/o2.json"
	fetch "$URL/metrics" >"$TMP/ovf.txt"
	check overflow_counted python3 - "$TMP/o1.json" "$TMP/o2.json" "$TMP/ovf.txt" <<'PY'
import json, re, sys
issued = sum(sum(json.load(open(f))["ioctls"].values()) for f in sys.argv[1:3])
text = open(sys.argv[3]).read()
counted = sum(int(v) for v in re.findall(r'^kxprof_ioctl_duration_seconds_count\{.*\} (\d+)$', text, re.M))
ovf = int(re.search(r'^kxprof_map_overflow_total\{map="ioctl"\} (\d+)$', text, re.M).group(1))
keys = int(re.search(r'^kxprof_aggregation_keys\{map="ioctl"\} (\d+)$', text, re.M).group(1))
print(f"issued {issued} counted {counted} overflow {ovf} keys {keys}")
sys.exit(0 if ovf > 0 and keys == 16 and counted + ovf == issued else 1)
PY
else
	fail overflow_counted "serve did not start: $(cat "$TMP/ovf.err")"
fi
kill -TERM $SPID
wait_rc overflow_serve_exit $SPID 0

# 7b. job histograms: block requests of a loop device are paired online;
# every O_DIRECT write and read is one completed request
if [ -e /dev/loop-control ]; then
	PORT=$(free_port)
	URL=http://127.0.0.1:$PORT
	"$KXPROF" serve --listen "127.0.0.1:$PORT" --device loop --rescan 0 2>"$TMP/jobs.err" &
	SPID=$!
	if wait_http "$URL/"; then
		"$WL/loop_workload" -d -b 64 -s 4 -p "$TMP" >"$TMP/lw.json"
		sleep 0.3 # the consumer drains job records every ~100 ms
		fetch "$URL/metrics" >"$TMP/jobs.txt"
		check job_exec_counts_equal_workload python3 - "$TMP/lw.json" "$TMP/jobs.txt" <<'PY'
import json, os, re, sys
w = json.load(open(sys.argv[1]))
dev = os.path.basename(w["loop_dev"])
want = w["io"]["writes"] + w["io"]["reads"]
got = sum(int(v) for d, v in re.findall(r'^kxprof_job_exec_seconds_count\{device="([^"]*)",ring="[^"]*"\} (\d+)$',
                                         open(sys.argv[2]).read(), re.M) if d == dev)
print(f"{dev}: {got} completed requests, workload issued {want}")
sys.exit(0 if got == want == 128 else 1)
PY
		check job_buckets_cumulative_inf_eq_count python3 - "$TMP/jobs.txt" <<'PY'
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r'(kxprof_job_\w+_seconds)_(bucket|count|sum)\{(.*?)(?:,le="([^"]*)")?\} (\S+)$', line)
    if not m:
        continue
    s = series.setdefault((m.group(1), m.group(3)), {"b": []})
    if m.group(2) == "bucket":
        s["b"].append((float("inf") if m.group(4) == "+Inf" else float(m.group(4)), int(m.group(5))))
    else:
        s[m.group(2)] = float(m.group(5))
ok = any(k[0] == "kxprof_job_exec_seconds" for k in series)
for key, s in series.items():
    les, counts = [x[0] for x in s["b"]], [x[1] for x in s["b"]]
    if les != sorted(les) or les[-1] != float("inf") or counts != sorted(counts) \
            or counts[-1] != s.get("count") or s.get("sum", -1) < 0:
        print("bad series", key, s)
        ok = False
sys.exit(0 if ok else 1)
PY
		check job_overflow_exported grep -q '^kxprof_map_overflow_total{map="jobs"} 0$' "$TMP/jobs.txt"
		if command -v promtool >/dev/null; then
			check job_promtool_check_metrics sh -c "promtool check metrics <'$TMP/jobs.txt' >'$TMP/promtool2.out' 2>&1"
		else
			skip job_promtool_check_metrics "promtool not installed (Debian package prometheus)"
		fi
	else
		fail job_exec_counts_equal_workload "serve did not start: $(cat "$TMP/jobs.err")"
	fi
	kill -TERM $SPID
	wait_rc jobs_serve_exit $SPID 0
else
	skip job_exec_counts_equal_workload "no /dev/loop-control"
fi

# 7c. KVM jobs: each KVM_RUN is one job, paired online as offline (its
# exit inside the call, the call's enter as its start)
if [ "$ACCEL" = kvm ]; then
	PORT=$(free_port)
	URL=http://127.0.0.1:$PORT
	"$KXPROF" serve --listen "127.0.0.1:$PORT" -p $$ --rescan 0 2>"$TMP/kvmjobs.err" &
	SPID=$!
	if wait_http "$URL/"; then
		accel_workload 2 100 >"$TMP/kw.json"
		sleep 0.3 # the consumer drains records every ~100 ms
		fetch "$URL/metrics" >"$TMP/kvmjobs.txt"
		check kvm_job_exec_counts_equal_runs python3 - "$TMP/kw.json" "$TMP/kvmjobs.txt" <<'PY'
import json, re, sys
want = json.load(open(sys.argv[1]))["ioctls"]["KVM_RUN"]
text = open(sys.argv[2]).read()
got = sum(int(v) for v in re.findall(r'^kxprof_job_exec_seconds_count\{device="kvm",ring="vcpu"\} (\d+)$', text, re.M))
busy = re.findall(r'^kxprof_job_busy_seconds_total\{device="kvm"\} (\S+)$', text, re.M)
print(f"kvm: {got} jobs, busy {busy}, workload ran {want} KVM_RUNs")
sys.exit(0 if got == want == 200 and busy and float(busy[0]) > 0 else 1)
PY
		check kvm_job_overflow_none grep -q '^kxprof_map_overflow_total{map="jobs"} 0$' "$TMP/kvmjobs.txt"
		# the busy time live may have cut (at most 64 intervals kept apart)
		check kvm_busy_cut_metric grep -Eq '^kxprof_job_busy_cut_seconds_total\{device="kvm"\} [0-9.]+$' "$TMP/kvmjobs.txt"
		fetch "$URL/summary.json" >"$TMP/kvmjobs.json"
		check kvm_summary_live_jobs python3 - "$TMP/kvmjobs.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["Live jobs"]["devices"]["kvm"]
print("kvm live jobs:", d)
sys.exit(0 if d["busy_ms"] > 0 and d["busy_exact"] == (d["busy_cut_ms"] == 0) else 1)
PY
	else
		fail kvm_job_exec_counts_equal_runs "serve did not start: $(cat "$TMP/kvmjobs.err")"
	fi
	kill -TERM $SPID
	wait_rc kvmjobs_serve_exit $SPID 0
else
	skip kvm_job_exec_counts_equal_runs "no /dev/kvm"
fi

