#!/usr/bin/env bash
# The ioctl hooks' attach mechanisms on the stand-in accelerator: each one
# forced with --attach records the workload's exact job count, measures
# blocked time where the jobs sleep, and every output names it (record's
# last line, report table and JSON, Chrome otherData, the XSpace host
# plane); the defaults per mode are what kxprof list says; fentry runs where
# the kernel allows it (else --attach fentry fails with the kernel's reason,
# and a default capture falls back without a warning); serve --no-offcpu
# leaves context switches unhooked and says so, while serve's live summary
# has the blocked time.
. "$(dirname "$0")/lib.sh"
at_exit 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TMP"'

JOBS=40
# A workload whose jobs sleep in the driver (blocked time must show).
if [ "$ACCEL" = kvm ]; then
	SLEEPY=("$WL/kvm_workload" -t 2 -j $((JOBS / 2)) -s -u 200)
else
	accel_argv 2 $((JOBS / 2))
	SLEEPY=("${ACCEL_ARGV[@]}")
fi

"$KXPROF" list --json >"$TMP/list.json" || { fail list_json "kxprof list --json failed"; exit 0; }
TARGETED=$(jget "$TMP/list.json" '[h["mechanism"] for h in d["hooks"] if h["family"]=="ioctl syscall hooks"][0]')
HOSTWIDE=$(jget "$TMP/list.json" '[h["mechanism"] for h in d["hooks"] if h["family"]=="ioctl syscall hooks, host-wide"][0]')
NOTE=$(jget "$TMP/list.json" '[h["note"] for h in d["hooks"] if h["family"]=="ioctl syscall hooks"][0]')
FENTRY_OK=0
case "; $NOTE;" in *"; fentry: ok;"*) FENTRY_OK=1 ;; esac
check list_names_every_mechanism sh -c "echo '$NOTE' | grep -q 'fentry' && echo '$NOTE' |
	grep -q 'tp_btf' && echo '$NOTE' | grep -q 'raw_tp' && echo '$NOTE' | grep -Eq '(^|; )tp'"
if [ "$FENTRY_OK" = 1 ]; then
	check list_defaults_fentry test "$TARGETED/$HOSTWIDE" = fentry/fentry
else
	# Without fentry: the raw tracepoints for a targeted capture, the classic
	# ones (when tracefs works) for host-wide modes.
	check list_default_targeted test "$TARGETED" = tp_btf
	case "; $NOTE;" in
	*"; tp: ok;"*) check list_default_host_wide test "$HOSTWIDE" = tp ;;
	*) check list_default_host_wide test "$HOSTWIDE" = tp_btf ;;
	esac
fi

# record MECH: the workload's jobs exactly, the mechanism named everywhere.
jobs_seen() { # report.json -> ACCEL_JOB count
	jget "$1" "d['Time'].get('ioctl/$ACCEL', {}).get('$ACCEL_JOB', {}).get('Total Count', 0)"
}
one_mech() { # MECH (empty: the default) EXPECTED_MECH
	local m=$1 want=$2 tag=${1:-default} opt=()
	[ -n "$m" ] && opt=(--attach "$m")
	if ! "$KXPROF" record "${ACCEL_DEV[@]}" "${opt[@]}" -o "$TMP/$tag.kxp" -- "${SLEEPY[@]}" \
		>"$TMP/$tag.wl" 2>"$TMP/$tag.err"; then
		fail "record_$tag" "exit $?: $(tail -2 "$TMP/$tag.err")"
		return
	fi
	check "record_${tag}_says_mechanism" grep -q "ioctl hooks: $want\$" "$TMP/$tag.err"
	if ! "$KXPROF" report "$TMP/$tag.kxp" --json >"$TMP/$tag.json"; then
		fail "report_$tag" "report --json failed"
		return
	fi
	check "record_${tag}_exact_jobs" test "$(jobs_seen "$TMP/$tag.json")" = "$JOBS"
	check "report_${tag}_json_mechanism" test "$(jget "$TMP/$tag.json" 'd["Capture"]["ioctl_hooks"]')" = "$want"
	check "report_${tag}_blocked_time" test "$(jget "$TMP/$tag.json" \
		"d['Time']['ioctl/$ACCEL']['$ACCEL_JOB'].get('Blocked Time', 0) > 0")" = True
	check "report_${tag}_table_mechanism" sh -c "'$KXPROF' report '$TMP/$tag.kxp' | head -1 |
		grep -q '; ioctl hooks: $want\$'"
	# A mechanism refused on the way to this one is no warning.
	check "report_${tag}_no_hook_warning" test "$(jget "$TMP/$tag.json" \
		'len([w for w in d["Warnings"] if "hook ioctl" in w])')" = 0
}
for m in tp_btf raw_tp tp; do
	one_mech "$m" "$m"
done
one_mech "" "$TARGETED"
if [ "$FENTRY_OK" = 1 ]; then
	one_mech fentry "fentry on __x64_sys_ioctl"
else
	skip record_fentry "fentry is not allowed here ($(echo "$NOTE" | sed 's/;.*//'))"
	"$KXPROF" record "${ACCEL_DEV[@]}" --attach fentry -o "$TMP/f.kxp" -- true 2>"$TMP/f.err"
	rc=$?
	check attach_fentry_refused_exit_1 test "$rc" = 1
	check attach_fentry_refused_reason grep -q '^kxprof record: --attach fentry: fentry' "$TMP/f.err"
	check attach_fentry_refused_no_file test ! -e "$TMP/f.kxp"
fi

# record -a takes the host-wide default.
if "$KXPROF" record -a "${ACCEL_DEV[@]}" -o "$TMP/all.kxp" -- true 2>"$TMP/all.err"; then
	check record_all_host_wide_default grep -q "ioctl hooks: $HOSTWIDE" "$TMP/all.err"
else
	fail record_all "exit $?: $(tail -1 "$TMP/all.err")"
fi

# The mechanism in the exports.
if "$KXPROF" convert "$TMP/tp.kxp" --chrome "$TMP/tp.json.gz" --xplane "$TMP/xp" >/dev/null 2>"$TMP/conv.err"; then
	check chrome_names_mechanism test "$(python3 -c 'import gzip,json,sys; print(json.load(gzip.open(sys.argv[1]))["otherData"]["ioctl_hooks"])' "$TMP/tp.json.gz")" = tp
	XP=$(find "$TMP/xp" -name '*.xplane.pb' | head -1)
	check xspace_names_mechanism sh -c "protoc --decode_raw <'$XP' | grep -q '\"ioctl_hooks\"' &&
		protoc --decode_raw <'$XP' | grep -q '\"tp\"'"
else
	fail convert "$(tail -1 "$TMP/conv.err")"
fi

# serve: the host-wide default, and --no-offcpu.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
serve_summary() { # OPTION... : /summary.json of a serve traced over the sleepy workload
	local port url i
	port=$(free_port)
	url=http://127.0.0.1:$port
	"$KXPROF" serve --listen "127.0.0.1:$port" -p $$ "${ACCEL_DEV[@]}" --rescan 0 "$@" \
		2>"$TMP/serve.err" &
	local sp=$!
	for i in $(seq 100); do
		curl -sf --max-time 2 -o /dev/null "$url/" && break
		sleep 0.1
	done
	"${SLEEPY[@]}" >/dev/null
	curl -sf --max-time 5 "$url/summary.json" >"$TMP/summary.json"
	curl -sf --max-time 5 "$url/metrics" >"$TMP/metrics.txt"
	kill -TERM $sp
	wait $sp
}
serve_summary
check serve_host_wide_default grep -q "(.*$HOSTWIDE" "$TMP/serve.err"
check serve_offcpu_measured test "$(jget "$TMP/summary.json" 'd["Capture"]["offcpu_measured"]')" = True
check serve_blocked_time test "$(jget "$TMP/summary.json" \
	"d['Time']['ioctl/$ACCEL']['$ACCEL_JOB'].get('Blocked Time', 0) > 0")" = True
serve_summary --no-offcpu
check serve_no_offcpu_exit_0 test $? = 0
check serve_no_offcpu_not_measured test "$(jget "$TMP/summary.json" 'd["Capture"]["offcpu_measured"]')" = False
check serve_no_offcpu_warning test "$(jget "$TMP/summary.json" \
	'len([w for w in d["Warnings"] if "sched_switch" in w and "--no-offcpu" in w])')" = 1
check serve_no_offcpu_metric_empty sh -c "! grep -q '^kxprof_ioctl_offcpu_seconds_total{' '$TMP/metrics.txt'"
check serve_no_offcpu_counts test "$(jget "$TMP/summary.json" \
	"d['Time']['ioctl/$ACCEL']['$ACCEL_JOB']['Total Count']")" = "$JOBS"
