#!/usr/bin/env bash
# make demo: record the built-in KVM workload (the kvm driver stands in for an
# accelerator: KVM_RUN is a submit-and-wait ioctl) and print the report.
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
if [ "$(id -u)" -ne 0 ]; then
	echo "kxprof demo: loading BPF programs needs root (or CAP_BPF+CAP_PERFMON): run 'sudo make demo'" >&2
	exit 1
fi
if [ ! -c /dev/kvm ]; then
	echo "kxprof demo: /dev/kvm is missing: the demo drives the kvm driver (modprobe kvm_intel or kvm_amd)" >&2
	exit 1
fi
out=$B/demo.kxp
echo "\$ kxprof record -o $out -- kvm_workload -t 2 -j 200 -l 2000"
"$B/kxprof" record -o "$out" -- "$B/tests/kvm_workload" -t 2 -j 200 -l 2000 >/dev/null
echo
echo "\$ kxprof report $out"
"$B/kxprof" report "$out"
