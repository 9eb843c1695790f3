#!/usr/bin/env bash
# The GPU check, run from an unpacked bundle (make bundle) as root:
#   kxprof/scripts/gpu-check.sh OUTDIR [--workload auto|torch|kvm|loop] [--seconds N]
# Says whether BPF works here (and stops, with the reason, where it does not),
# then records a short job (auto: PyTorch on CUDA where a python3 with torch
# sees a GPU, else the KVM workload, else the loop one) with
# `record -F 99 --off-cpu`, and writes into OUTDIR (8 files at most):
#   facts.txt        the machine: kernel, glibc, driver, GPUs, device nodes,
#                    BTF, tracefs, kxprof list (table and JSON), each step's outcome
#   log.txt          every step's command, standard error and exit status
#   capture.kxp      the record file
#   report.txt       kxprof report --wide --hist
#   report.json      kxprof report --json
#   trace.xplane.pb  XSpace (TensorBoard/XProf), device planes as /device:GPU:N
#   trace.json.gz    Chrome trace (Perfetto)
#   cpu.pb.gz        the CPU profile (pprof)
# then prints the report. Every step has a time limit and a failed step does
# not stop the next ones; the whole run stays under 5 minutes. Needs nothing
# from the network or a package manager.
set -u
START=$SECONDS
FAILS=0
BUDGET=270 # seconds for everything (the promise is 5 minutes)

usage() {
	echo "usage: $0 OUTDIR [--workload auto|torch|kvm|loop] [--seconds N]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
OUT=$1
shift
WORKLOAD=auto
WSECS=8
while [ $# -gt 0 ]; do
	case $1 in
	--workload) WORKLOAD=${2:-}; shift 2 || usage ;;
	--seconds) WSECS=${2:-}; shift 2 || usage ;;
	*) usage ;;
	esac
done
case $WORKLOAD in auto | torch | kvm | loop) ;; *) usage ;; esac

BUNDLE=$(cd "$(dirname "$0")/.." && pwd -P)
KX=$BUNDLE/bin/kxprof
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd -P)
FACTS=$OUT/facts.txt
LOG=$OUT/log.txt
TMPD=$(mktemp -d /tmp/kxprof-gpu-check.XXXXXX) || exit 1
trap 'rm -rf "$TMPD"' EXIT
: >"$FACTS"
: >"$LOG"

say() { echo "gpu-check: $*" | tee -a "$FACTS" >&2; }
# cap SECS: SECS, or what is left of the budget when that is less.
cap() {
	local left=$((BUDGET - (SECONDS - START)))
	[ "$1" -lt "$left" ] && left=$1
	echo "$left"
}
# fact TITLE SECS CMD...: CMD's output (and errors) into facts.txt, time-limited.
fact() {
	local title=$1 lim
	lim=$(cap "$2")
	shift 2
	{
		echo "### $title"
		echo "\$ $*"
		if [ "$lim" -gt 0 ]; then
			timeout -k 2 "$lim" "$@" 2>&1
			echo "(exit $?)"
		else
			echo "(skipped: out of time)"
		fi
		echo
	} >>"$FACTS"
}
# step NAME SECS CMD...: CMD time-limited (SIGINT first: record stops cleanly),
# its standard error into log.txt; returns its status and notes it in facts.txt.
step() {
	local name=$1 lim rc t0=$SECONDS
	lim=$(cap "$2")
	shift 2
	echo "=== $name: $*" >>"$LOG"
	if [ "$lim" -le 0 ]; then
		say "$name: skipped (out of time)"
		return 124
	fi
	timeout -s INT -k 10 "$lim" "$@" 2>>"$LOG"
	rc=$?
	echo "=== $name: exit $rc after $((SECONDS - t0)) s" >>"$LOG"
	[ $rc -eq 0 ] || FAILS=$((FAILS + 1))
	if [ $rc -eq 0 ]; then
		say "$name: ok ($((SECONDS - t0)) s)"
	else
		say "$name: FAILED (exit $rc$([ $rc -eq 124 ] && echo ', timed out'), $((SECONDS - t0)) s): $(tail -n 3 "$LOG" | grep -v '^===' | tr '\n' ' ')"
	fi
	return $rc
}

# devnum NODE: MAJOR:MINOR of a device node, in decimal.
devnum() {
	printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")"
}

# ---- the machine ----
say "bundle $BUNDLE, output $OUT, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
fact "uname -a" 5 uname -a
fact "os-release" 5 cat /etc/os-release
fact "user, cores, memory" 5 sh -c 'id; nproc; grep -E "MemTotal|MemAvailable" /proc/meminfo'
fact "host glibc" 5 sh -c 'getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -n 1'
fact "NVIDIA driver (/proc/driver/nvidia/version)" 5 cat /proc/driver/nvidia/version
fact "nvidia-smi" 20 nvidia-smi
fact "nvidia-smi -q (first 80 lines)" 20 sh -c 'nvidia-smi -q | head -n 80'
fact "device nodes /dev/nvidia* (major, minor)" 5 sh -c 'ls -l /dev/nvidia* /dev/nvidia-caps/* 2>&1; echo; stat -c "%n %t:%T (hex) %F" /dev/nvidia* 2>&1'
fact "char majors (/proc/devices)" 5 sh -c 'grep -iE "nvidia|kvm|misc|drm|accel" /proc/devices'
fact "DRM / accel nodes" 5 sh -c 'ls -l /dev/dri /dev/accel 2>&1'
fact "loaded modules (nvidia, kvm)" 5 sh -c 'grep -E "^(nvidia|kvm)" /proc/modules'
fact "kernel BTF (vmlinux, modules)" 5 sh -c 'ls -l /sys/kernel/btf/vmlinux; ls /sys/kernel/btf | grep -iE "nvidia|kvm|drm"'
fact "BPF sysctls" 5 sh -c 'for f in /proc/sys/kernel/unprivileged_bpf_disabled /proc/sys/kernel/perf_event_paranoid /proc/sys/kernel/kptr_restrict /proc/sys/net/core/bpf_jit_enable /sys/kernel/security/lockdown; do printf "%s: " $f; cat $f 2>&1; done'
fact "kernel config (BPF, BTF, tracing)" 5 sh -c 'f=/proc/config.gz; [ -r $f ] && zcat $f | grep -E "^CONFIG_(BPF|DEBUG_INFO_BTF|KPROBE|UPROBE|FTRACE|FUNCTION_TRACER|DYNAMIC_FTRACE|BPF_EVENTS|TRACEPOINTS|PERF_EVENTS)" || echo "no /proc/config.gz; /boot/config-$(uname -r): $(ls /boot/config-$(uname -r) 2>&1)"'

# Tracefs: the tracepoints kxprof attaches are found there.
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ]; then
	if mount -t tracefs nodev /sys/kernel/tracing 2>>"$LOG"; then
		say "tracefs was not mounted: mounted it on /sys/kernel/tracing"
	else
		say "tracefs is not mounted and mounting it failed (see log.txt): tracepoints may be missing"
	fi
fi
fact "tracefs, debugfs, bpffs mounts" 5 sh -c 'grep -E "tracefs|debugfs|bpf" /proc/mounts; ls /sys/kernel/tracing/events 2>&1 | grep -E "^(nvidia|drm|dma_fence|gpu_scheduler|kvm|block)" '

BTF=yes
if [ ! -r /sys/kernel/btf/vmlinux ]; then
	BTF=no
	say "NO KERNEL BTF: /sys/kernel/btf/vmlinux is missing; kxprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y"
fi

fact "kxprof list" 60 "$KX" list
fact "kxprof list --json" 60 "$KX" list --json
# Which NVIDIA nodes kxprof's default device set covers; the others are
# named to record (--device).
EXTRA_DEV=()
if ls /dev/nvidia* >/dev/null 2>&1; then
	"$KX" list >"$TMPD/list.txt" 2>&1
	for n in /dev/nvidia*; do
		[ -c "$n" ] || continue
		if grep -q "^ *$n " "$TMPD/list.txt"; then
			say "device $n ($(devnum "$n")): traced by default"
		else
			say "device $n ($(devnum "$n")): NOT in kxprof's default device set (named with --device)"
			EXTRA_DEV+=(--device "$n")
		fi
	done
fi

# find_torch: PY, the first python3 whose torch sees a CUDA device; versions into facts.txt.
PY=
find_torch() {
	local p
	for p in ${PYTHON:-} python3 /opt/torch/.venv/bin/python3; do
		p=$(command -v "$p" 2>/dev/null) || continue
		echo "### torch in $p" >>"$FACTS"
		if timeout -k 2 "$(cap 90)" "$p" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "devices", torch.cuda.device_count()); sys.exit(0 if torch.cuda.is_available() else 3)' >>"$FACTS" 2>&1; then
			PY=$p
			echo >>"$FACTS"
			return 0
		fi
		echo "(no usable torch with CUDA there)" >>"$FACTS"
		echo >>"$FACTS"
	done
	return 1
}

# ---- does BPF work here? ----
if [ "$BTF" = no ]; then
	say "BPF: cannot work here (no kernel BTF); nothing recorded. facts.txt and log.txt say what this machine has."
	find_torch
	exit 1
fi
# /dev/null named: the probe does not depend on which devices are here.
if ! step "BPF probe (record -- true)" 60 "$KX" record --device /dev/null -o "$TMPD/probe.kxp" -- "$(command -v true)"; then
	say "BPF DOES NOT WORK HERE: kxprof could not record (the error is above and in log.txt); nothing more to do."
	find_torch
	exit 1
fi
say "BPF works here: kxprof loaded and attached its programs"

# ---- the workload ----
if [ "$WORKLOAD" = auto ] || [ "$WORKLOAD" = torch ]; then
	if find_torch; then
		WORKLOAD=torch
	elif [ "$WORKLOAD" = torch ]; then
		say "no python3 with torch and a CUDA device here (PYTHON=path picks one)"
		exit 1
	elif [ -c /dev/kvm ]; then
		say "no python3 with torch and CUDA: recording the KVM workload instead"
		WORKLOAD=kvm
	else
		say "no python3 with torch and CUDA, no /dev/kvm: recording the loop workload instead"
		WORKLOAD=loop
	fi
fi

REC=(record -F 99 --off-cpu -o "$OUT/capture.kxp" -d $((WSECS + 60)) "${EXTRA_DEV[@]}")
case $WORKLOAD in
torch)
	export NVTX_INJECTION64_PATH=$BUNDLE/lib/libkxprof_nvtx.so
	say "workload: $PY scripts/gpu_workload.py $WSECS (NVTX_INJECTION64_PATH=$NVTX_INJECTION64_PATH)"
	step "record (PyTorch CUDA)" $((WSECS + 90)) "$KX" "${REC[@]}" -- "$PY" "$BUNDLE/scripts/gpu_workload.py" "$WSECS"
	;;
kvm)
	step "record (KVM workload)" 60 "$KX" "${REC[@]}" -- "$BUNDLE/libexec/kvm_workload" -t 2 -j 200 -l 2000
	;;
loop)
	step "record (loop workload)" 60 "$KX" "${REC[@]}" --device loop -- "$BUNDLE/libexec/loop_workload" -s 64 -t 2 -j 200 -k zero
	;;
esac
if [ -f "$OUT/capture.kxp" ]; then
	say "capture.kxp: $(wc -c <"$OUT/capture.kxp") bytes"
else
	say "no capture.kxp was written"
fi

# ---- report and conversions ----
step "report" 60 "$KX" report --wide --hist "$OUT/capture.kxp" >"$OUT/report.txt"
step "report --json" 60 "$KX" report --json "$OUT/capture.kxp" >"$OUT/report.json"
if step "convert" 90 "$KX" convert "$OUT/capture.kxp" --split-events 0 --gpu \
	--xplane "$TMPD/xplane" --chrome "$OUT/trace.json.gz" --pprof "$OUT/cpu.pb.gz" >>"$LOG"; then
	xp=$(find "$TMPD/xplane" -name '*.xplane.pb' | head -n 1)
	[ -n "$xp" ] && mv "$xp" "$OUT/trace.xplane.pb"
fi
say "done in $((SECONDS - START)) s, $FAILS failed steps"
fact "the output folder (files over 16 MiB may not come back)" 5 ls -l "$OUT"
echo
cat "$OUT/report.txt"
[ "$FAILS" -eq 0 ]
