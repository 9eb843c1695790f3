#!/usr/bin/env bash
# make demo: record a built-in workload on a real driver and print the report.
# With /dev/kvm, the kvm driver stands in for an accelerator (KVM_RUN is a
# submit-and-wait ioctl); without it (a machine with no virtualization), the
# loop block driver does (BLKZEROOUT queues block requests and waits for them).
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
if [ "$(id -u)" -ne 0 ]; then
	echo "kxprof demo: loading BPF programs needs root (or CAP_BPF+CAP_PERFMON): run 'sudo make demo'" >&2
	exit 1
fi
out=$B/demo.kxp
if [ -c /dev/kvm ]; then
	echo "\$ kxprof record -o $out -- kvm_workload -t 2 -j 200 -l 2000"
	"$B/kxprof" record -o "$out" -- "$B/tests/kvm_workload" -t 2 -j 200 -l 2000 >/dev/null
elif [ -c /dev/loop-control ]; then
	echo "(no /dev/kvm here: the loop block driver stands in for the accelerator)"
	echo "\$ kxprof record --device loop -o $out -- loop_workload -s 64 -t 2 -j 200 -k zero"
	"$B/kxprof" record --device loop -o "$out" -- "$B/tests/loop_workload" -s 64 -t 2 -j 200 \
		-k zero >/dev/null
else
	echo "kxprof demo: neither /dev/kvm nor /dev/loop-control is here: the demo drives the kvm" \
		"driver (modprobe kvm_intel or kvm_amd) or the loop driver (modprobe loop)" >&2
	exit 1
fi
echo
echo "\$ kxprof report $out"
"$B/kxprof" report "$out"
