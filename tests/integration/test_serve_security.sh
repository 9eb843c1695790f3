#!/usr/bin/env bash
# What an ordinary local user can do to kxprof serve --listen (the clients
# run as nobody): /debug/pprof/profile is 404 unless --pprof, and with it the
# kernel frames carry stand-in addresses, never a kernel-half one (unless
# --pprof-kernel-addresses); /summary.json?reset=1 is 403 unless
# --allow-reset and the series stay; --call-graph dwarf (or a request's
# call_graph=dwarf) unwinds a workload without frame pointers; one client address takes one profile
# slot at most; and with 40 or 160 connections trickling a byte a second and
# coming back at once when closed (more than --max-clients 32), every
# Prometheus scrape is answered within its default 10 s timeout.
. "$(dirname "$0")/lib.sh"
at_exit 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"'

if [ "$(id -u)" -ne 0 ]; then
	skip serve_security "needs root (serve loads BPF; the clients run as nobody)"
	exit 0
fi
if ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	skip serve_security "setpriv cannot run a command as nobody here"
	exit 0
fi
chmod 755 "$TMP"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# Another ordinary user (the scraper: Prometheus runs as a user of its own).
OTHER=(setpriv --reuid=65533 --regid=65533 --clear-groups)
# The attacker's python must be one nobody may run (not a per-user shim).
SLOW=(/usr/bin/python3 "$(cd "$(dirname "$0")" && pwd)/slowloris.py")

# serve_up NAME ARGS...: starts serve (traced: this shell's descendants) on a
# free port; sets SPID and URL. 1 when it did not start.
serve_up() {
	local name=$1 port
	shift
	"$KXPROF" serve "${ACCEL_DEV[@]}" --listen 127.0.0.1:0 -p $$ --rescan 0 "$@" \
		2>"$TMP/$name.err" &
	SPID=$!
	port=
	for _ in $(seq 1 150); do
		port=$(sed -n 's|^kxprof serve: http://127\.0\.0\.1:\([0-9]*\)/metrics .*|\1|p' "$TMP/$name.err" 2>/dev/null)
		[ -n "$port" ] && break
		kill -0 $SPID 2>/dev/null || break
		sleep 0.1
	done
	URL=http://127.0.0.1:$port
	if [ -z "$port" ]; then
		fail "${name}_starts" "$(head -c 400 "$TMP/$name.err")"
		return 1
	fi
}
serve_down() { # NAME
	kill -TERM $SPID
	wait_rc "${1}_exit_0" $SPID 0
}
# as_nobody_get PATH OUT: GET as nobody; prints the HTTP status, body in OUT.
as_nobody_get() {
	"${NOBODY[@]}" curl -s --max-time 20 -w '%{http_code}' "$URL$1" >"$2.raw"
	local code
	code=$(tail -c 3 "$2.raw")
	head -c -3 "$2.raw" >"$2"
	echo "$code"
}

# 1. /debug/pprof/profile is off by default: 404 saying how to turn it on.
if serve_up plain; then
	code=$(as_nobody_get "/debug/pprof/profile?seconds=1" "$TMP/p0")
	check pprof_off_by_default test "$code" = 404
	check pprof_off_says_option grep -q -- "--pprof" "$TMP/p0"
	check pprof_off_one_line test "$(wc -l <"$TMP/p0")" -eq 1

	# 3. reset=1 without --allow-reset: 403, and the series stay.
	accel_workload 1 5 >/dev/null
	code=$(as_nobody_get "/summary.json?reset=1" "$TMP/r0")
	check reset_refused_403 test "$code" = 403
	check reset_refused_says_option grep -q -- "--allow-reset" "$TMP/r0"
	as_nobody_get /metrics "$TMP/m0" >/dev/null
	check reset_refused_series_stay grep -q "ioctl=\"$ACCEL_JOB\"" "$TMP/m0"
	code=$(as_nobody_get "/summary.json?reset=0" "$TMP/r1")
	check reset_0_still_reads test "$code" = 200
	kx 1 report --from "$URL" --reset >/dev/null 2>"$TMP/rr.err"
	check report_reset_refused_says grep -q -- "--allow-reset" "$TMP/rr.err"
	serve_down plain
fi

# 3b. with --allow-reset, reset works.
if serve_up reset --allow-reset; then
	accel_workload 1 5 >/dev/null
	code=$(as_nobody_get "/summary.json?reset=1" "$TMP/r2")
	check reset_allowed_200 test "$code" = 200
	as_nobody_get /metrics "$TMP/m2" >/dev/null
	check reset_allowed_clears sh -c "! grep -q 'ioctl=\"$ACCEL_JOB\"' '$TMP/m2'"
	serve_down reset
fi

# pprof_addrs FILE: the locations of a gzipped pprof as "ADDRESS FUNCTION" lines.
pprof_addrs() {
	python3 - "$1" <<'PY'
import gzip, sys

def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, typ = key >> 3, key & 7
        if typ == 0:
            v, i = varint(b, i)
        elif typ == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif typ == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif typ == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % typ)
        yield num, v

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i

prof = gzip.decompress(open(sys.argv[1], "rb").read())
strings, funcs, locs = [], {}, []
for num, v in fields(prof):
    if num == 6:
        strings.append(v.decode("utf-8", "replace"))
    elif num == 5:  # Function: id 1, name 2
        f = dict(fields(v))
        funcs[f.get(1, 0)] = f.get(2, 0)
    elif num == 4:  # Location: address 3, line 4 (function_id 1)
        loc = dict((n, x) for n, x in fields(v) if n != 4)
        fid = [dict(fields(x)).get(1, 0) for n, x in fields(v) if n == 4]
        locs.append((loc.get(3, 0), fid[0] if fid else 0))
for addr, fid in locs:
    print("%#018x %s" % (addr, strings[funcs.get(fid, 0)] if fid in funcs else "?"))
PY
}
# pprof_case NAME WANT_REAL SERVE-ARGS...: a 3 s profile (as nobody) of the
# stand-in accelerator's workload; kernel frames must be stand-ins (WANT_REAL
# 0) or real kernel addresses (1), named either way.
pprof_case() {
	local name=$1 real=$2 code
	shift 2
	serve_up "$name" "$@" || return
	accel_argv 2 1500 2000
	"${ACCEL_ARGV[@]}" >/dev/null &
	local wl=$!
	code=$(as_nobody_get "/debug/pprof/profile?seconds=3" "$TMP/$name.pb.gz")
	wait $wl
	check "${name}_200" test "$code" = 200
	pprof_addrs "$TMP/$name.pb.gz" >"$TMP/$name.locs" 2>"$TMP/$name.dec.err"
	check "${name}_decoded" test -s "$TMP/$name.locs"
	check "${name}_kernel_frames" python3 - "$TMP/$name.locs" "$real" <<'PY'
import sys
real = sys.argv[2] == "1"
locs = [l.split(" ", 1) for l in open(sys.argv[1]).read().splitlines()]
kernel_half = [(a, f) for a, f in locs if int(a, 16) >= 0xffff800000000000]
stand_ins = [(a, f) for a, f in locs if 0xfffe000000000000 <= int(a, 16) < 0xffff000000000000]
named = [f for _, f in (kernel_half if real else stand_ins) if f not in ("?", "[unknown]")]
print(f"{len(locs)} locations: {len(kernel_half)} kernel-half, {len(stand_ins)} stand-ins, "
      f"{len(named)} kernel frames named, e.g. {named[:3]}")
if real:
    sys.exit(0 if kernel_half and named and not stand_ins else 1)
sys.exit(0 if not kernel_half and stand_ins and named else 1)
PY
	serve_down "$name"
}

# 2. with --pprof: 200, kernel frames named under stand-ins; with
# --pprof-kernel-addresses too: the real addresses.
pprof_case pprof_masked 0 --pprof
pprof_case pprof_real 1 --pprof --pprof-kernel-addresses
"$KXPROF" serve --pprof-kernel-addresses --listen 127.0.0.1:0 2>"$TMP/ka.err"
check pprof_kaddr_needs_pprof test $? -eq 2
check pprof_kaddr_needs_pprof_says grep -q -- "needs --pprof" "$TMP/ka.err"

# 3. --call-graph dwarf: the profile of the workload built without frame
# pointers (build/tests/dwarf_workload) unwinds kxdw_inner's samples to main
# through its callers (go tool pprof -traces); a request's call_graph=fp
# overrides it and loses them, call_graph=auto unwinds them; a bad call_graph gets 400; --call-graph
# without --pprof is refused.
# go_pprof FILE.pb.gz OUT: go tool pprof -traces, offline, caches in $TMP.
go_pprof() {
	mkdir -p "$TMP/home"
	HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS= GOTOOLCHAIN=local \
		go tool pprof -traces "$1" >"$2" 2>&1
}
TRACES=$(cd "$(dirname "$0")" && pwd)/pprof_traces.py
CHAIN=(kxdw_inner kxdw_middle kxdw_outer kxdw_run main)
if ! command -v go >/dev/null; then
	fail pprof_dwarf_tool "go is missing (Debian golang-go; scripts/install-deps.sh installs it)"
elif serve_up pdwarf --pprof --call-graph dwarf; then
	"$WL/dwarf_workload" 9 >/dev/null &
	wl=$!
	code=$(as_nobody_get "/debug/pprof/profile?seconds=2" "$TMP/pdw.pb.gz")
	check pprof_dwarf_200 test "$code" = 200
	code=$(as_nobody_get "/debug/pprof/profile?seconds=2&call_graph=fp" "$TMP/pfp.pb.gz")
	check pprof_dwarf_query_fp_200 test "$code" = 200
	code=$(as_nobody_get "/debug/pprof/profile?seconds=2&call_graph=auto" "$TMP/pauto.pb.gz")
	check pprof_query_auto_200 test "$code" = 200
	code=$(as_nobody_get "/debug/pprof/profile?seconds=1&call_graph=lbr" "$TMP/pbad")
	check pprof_call_graph_bad_400 test "$code" = 400
	check pprof_call_graph_bad_says grep -q "not fp, dwarf" "$TMP/pbad"
	kill $wl 2>/dev/null
	wait $wl 2>/dev/null
	go_pprof "$TMP/pdw.pb.gz" "$TMP/pdw.traces"
	check pprof_dwarf_unwinds python3 "$TRACES" "$TMP/pdw.traces" unwind "${CHAIN[@]}"
	go_pprof "$TMP/pauto.pb.gz" "$TMP/pauto.traces"
	check pprof_query_auto_unwinds python3 "$TRACES" "$TMP/pauto.traces" unwind "${CHAIN[@]}"
	go_pprof "$TMP/pfp.pb.gz" "$TMP/pfp.traces"
	check pprof_query_fp_has_leaf grep -q "kxdw_inner" "$TMP/pfp.traces"
	check pprof_query_fp_loses_callers bash -c '! python3 "$@"' _ "$TRACES" "$TMP/pfp.traces" \
		unwind "${CHAIN[@]}"
	serve_down pdwarf
fi
"$KXPROF" serve --call-graph dwarf --listen 127.0.0.1:0 2>"$TMP/cg.err"
check call_graph_needs_pprof test $? -eq 2
check call_graph_needs_pprof_says grep -q -- "needs --pprof" "$TMP/cg.err"

# 4. one profile per client (a local user): nobody's second one gets 429
# saying why, even from another loopback address, while another user's is
# served.
if serve_up slots --pprof; then
	# The first profile runs once serve holds more perf events (its sampling).
	perf_fds() { ls -l "/proc/$SPID/fd" 2>/dev/null | grep -c perf_event; }
	pf0=$(perf_fds)
	"${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$URL/debug/pprof/profile?seconds=4" >"$TMP/s1" &
	c1=$!
	for _ in $(seq 1 200); do [ "$(perf_fds)" -gt "$pf0" ] && break; sleep 0.05; done
	code=$(as_nobody_get "/debug/pprof/profile?seconds=1" "$TMP/s2")
	check profile_per_client_429 test "$code" = 429
	check profile_per_client_says grep -q "for local uid 65534 is being taken already" "$TMP/s2"
	code=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 20 --interface 127.0.0.2 \
		"$URL/debug/pprof/profile?seconds=1")
	check profile_per_client_any_loopback_429 test "$code" = 429
	code=$("${OTHER[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 20 \
		"$URL/debug/pprof/profile?seconds=1")
	check profile_other_user_served test "$code" = 200
	wait $c1
	check profile_first_served test "$(cat "$TMP/s1")" = 200
	serve_down slots
fi

# 5. slowloris: CONNS connections trickling (as nobody, coming back at once
# when closed) while a scraper (another user, curl --max-time 12) scrapes
# /metrics once a second: every scrape answered within 10 s. Prints the
# worst.
slowloris_case() {
	local conns=$1
	serve_up "slow$conns" || return
	"${NOBODY[@]}" "${SLOW[@]}" "${URL##*:}" "$conns" 10 >"$TMP/slow$conns.out" 2>&1 &
	local atk=$!
	sleep 2 # the attack holds every slot by now
	check "slowloris_${conns}_scrapes_within_10s" python3 - "$URL/metrics" "${OTHER[@]}" <<'PY'
import subprocess, sys, time
url, nobody = sys.argv[1], sys.argv[2:]
end = time.monotonic() + 6
worst, codes = 0.0, []
while time.monotonic() < end or not codes:
    t0 = time.monotonic()
    r = subprocess.run(nobody + ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                 "--max-time", "12", url], capture_output=True, text=True)
    took = time.monotonic() - t0
    worst = max(worst, took)
    codes.append(r.stdout)
    time.sleep(max(0.0, 1.0 - took))
print(f"{len(codes)} scrapes under attack, worst {worst:.3f} s, codes {sorted(set(codes))}")
sys.exit(0 if worst < 10 and set(codes) == {"200"} else 1)
PY
	wait $atk
	cat "$TMP/slow$conns.out"
	check "slowloris_${conns}_attack_ran" grep -q "opened [0-9]" "$TMP/slow$conns.out"
	check "slowloris_${conns}_server_alive" kill -0 $SPID
	check "slowloris_${conns}_logged" grep -q "closed .* connection" "$TMP/slow$conns.err"
	serve_down "slow$conns"
}
slowloris_case 40
slowloris_case 160
