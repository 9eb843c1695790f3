#!/usr/bin/env bash
# kxprof serve soaked (the stand-in accelerator's driver, lib.sh): processes
# starting and exiting while it is scraped, per-process keys, some scrapes
# given up mid-response; memory stays flat (normal build: ASan's quarantine
# keeps freed memory), keys stay bounded, no map overflows, SIGTERM exits 0.
# kxtest: both (RSS is checked in the normal build, leaks in the sanitizer one)
. "$(dirname "$0")/lib.sh"
SOAKDEV=
# Whatever happens, no server, load loop or loop device outlives the test.
at_exit 'kill $(jobs -p) 2>/dev/null; wait; [ -n "$SOAKDEV" ] && losetup -d "$SOAKDEV"; rm -rf "$TMP"'
# Soak length: shorter for sanitizer builds (slower, and RSS is not checked there).
if nm -D "$KXPROF" 2>/dev/null | grep -q __asan_init; then SOAK_SECS=${SOAK_SECS:-15}; fi
SOAK_SECS=${SOAK_SECS:-40}

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
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# The soak: processes starting and exiting, scrapes, per-process keys (under
# loop, the processes share one loop device attached here: -D)
if [ "$ACCEL" = kvm ]; then
	SOAKWL=("$WL/kvm_workload" -t 1 -j 3 -l 10)
else
	truncate -s 16M "$TMP/soak.img"
	SOAKDEV=$(losetup -f --show "$TMP/soak.img") || fail soak_loop_device "losetup failed"
	SOAKWL=("$WL/loop_workload" -D "$SOAKDEV" -t 1 -j 3)
fi
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
"$KXPROF" serve "${ACCEL_DEV[@]}" --listen "127.0.0.1:$PORT" --by-pid --rescan 5 2>"$TMP/soak.err" &
SPID=$!
wait_http "$URL/" || fail soak_start "$(cat "$TMP/soak.err")"
end=$((SECONDS + SOAK_SECS))
warm=$((SECONDS + SOAK_SECS / 3))
rss0=
nproc=0
# ~20 short-lived processes a second, ~11 keys each: pruned every 2 s.
(while [ $SECONDS -lt $end ]; do "${SOAKWL[@]}" >/dev/null 2>&1; sleep 0.02; done) &
LOOP=$!
while [ $SECONDS -lt $end ]; do
	fetch -o /dev/null "$URL/metrics"
	fetch -o /dev/null "$URL/summary.json"
	curl -s --max-time 0.01 -o /dev/null "$URL/metrics" # gives up mid-response
	[ -z "$rss0" ] && [ $SECONDS -ge $warm ] && rss0=$(rss_kb $SPID)
	nproc=$((nproc + 1))
	sleep 0.2
done
wait $LOOP
rss1=$(rss_kb $SPID)
fetch "$URL/metrics" >"$TMP/soak.txt"
keys=$(awk '/^kxprof_aggregation_keys\{/ {print $2}' "$TMP/soak.txt")
overflow=$(awk '/^kxprof_map_overflow_total\{/ {s += $2} END {print s}' "$TMP/soak.txt")
echo "soak: ${SOAK_SECS}s, $nproc scrape rounds, rss ${rss0} kB -> ${rss1} kB, keys at end ${keys}, overflow ${overflow}"
if [ -n "${SAN_PASS:-}" ] || nm -D "$KXPROF" 2>/dev/null | grep -q __asan_init; then
	# ASan keeps freed memory in quarantine (up to 256 MiB): RSS says nothing there.
	skip soak_rss_flat "sanitizer build (quarantine)"
else
	check soak_rss_flat test $((rss1 - rss0)) -lt 2048
fi
check soak_keys_bounded test "${keys:-99999}" -lt 2000
check soak_no_overflow test "${overflow:-1}" -eq 0
kill -TERM $SPID
wait_rc soak_sigterm_exit_0 $SPID 0 && pass soak_sigterm_exit_0
