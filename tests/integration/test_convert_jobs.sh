#!/usr/bin/env bash
# convert --split-events of captures with device jobs reads them one window
# at a time (-v says so), and each part, Chrome file and XSpace run, is byte
# for byte the one --in-memory writes: a recorded KVM capture (two vCPUs,
# 20,000 KVM_RUNs each, over about nine windows, handed over as the file is
# read, not all at its end), a loop driver capture of block
# requests, a generated capture of 40,000 GPU jobs of the shared fence
# source dma_fence (submitted by amdgpu and i915 calls, waited for by
# others), and the job fixtures (amdgpu, i915, msm, xe, kvm, loop, through
# kxprof replay, which writes every call before the job records: a small
# fixture's calls are all still with the device timelines when its records
# come). Captures with annotation ranges around calls that submit jobs too
# (each range's device time and jobs drawn): generated (xe jobs, KVM exits)
# and a recorded one (annotate_workload's ranges around BLKZEROOUTs on a
# loop device).
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOOPDEV=
cleanup() {
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	rm -rf "$TMP"
}
at_exit cleanup

# same_runs A B: the XSpace runs of logdirs A and B, in part order, the same
# bytes (as many, at least one).
same_runs() {
	local a b
	mapfile -t a < <(find "$1" -name '*.xplane.pb' | sort)
	mapfile -t b < <(find "$2" -name '*.xplane.pb' | sort)
	[ "${#a[@]}" -ge 1 ] && [ "${#a[@]}" -eq "${#b[@]}" ] || return 1
	for i in "${!a[@]}"; do
		cmp -s "${a[$i]}" "${b[$i]}" || return 1
	done
}

# same_parts NAME FILE N: split into parts of at most N events both ways;
# read in windows (said), every part the same bytes.
same_parts() {
	local name=$1 file=$2 n=$3 d="$TMP/$1"
	mkdir -p "$d/w" "$d/m"
	kx 0 convert -v "$file" --split-events "$n" --chrome "$d/w/p.json" --xplane "$d/w/x" \
		>/dev/null 2>"$d/w.err"
	kx 0 convert --in-memory "$file" --split-events "$n" --chrome "$d/m/p.json" \
		--xplane "$d/m/x" >/dev/null 2>"$d/m.err"
	check "${name}_windows" grep -q "read one window at a time" "$d/w.err"
	check "${name}_parts" test "$(ls "$d/w"/p.*.json 2>/dev/null | wc -l)" -ge 2
	check "${name}_same_chrome" sh -c "cd '$d/w' && for f in p.*.json; do cmp -s \$f ../m/\$f || exit 1; done"
	# Runs are named after the conversion's time: compared in part order.
	check "${name}_same_xspace" same_runs "$d/w/x" "$d/m/x"
	check "${name}_same_warnings" cmp -s <(grep -v "read one window" "$d/w.err") "$d/m.err"
}

if need_kvm kvm_jobs && kx 0 record -o "$TMP/kvm.kxp" -- "$WL/kvm_workload" -t 2 -j 20000 -l 0 \
	>/dev/null 2>"$TMP/kvm.rec"; then
	same_parts kvm "$TMP/kvm.kxp" 10000
	# More jobs than the device timelines hold (16384): windows are handed
	# over while the file is read, not all at its end.
	check kvm_windows_handed_over python3 - "$TMP/kvm/w.err" <<'PY'
import re, sys
m = re.search(r"(\d+) windows \(\d+ slices\), at most (\d+) open", open(sys.argv[1]).read())
sys.exit(0 if m and int(m.group(2)) < int(m.group(1)) else 1)
PY
fi

if kx 0 record --device loop -o "$TMP/blk.kxp" -- "$WL/loop_workload" -s 16 -p "$TMP" -t 2 \
	-j 2000 -k zero >/dev/null 2>"$TMP/blk.rec"; then
	same_parts blk "$TMP/blk.kxp" 2000
else
	fail loop_record "$(tail -3 "$TMP/blk.rec")"
fi

if "$WL/kxp_gen" fence-dma_fence "$TMP/fence.kxp" 30000 >/dev/null 2>"$TMP/fence.err"; then
	same_parts fence "$TMP/fence.kxp" 20000
else
	fail fence_gen "$(cat "$TMP/fence.err")"
fi

for f in amdgpu_new i915 kvm loop msm xe; do
	if kx 0 replay "$ROOT/tests/fixtures/$f.jsonl" -o "$TMP/$f.kxp" >/dev/null 2>"$TMP/$f.rep"; then
		same_parts "fixture_$f" "$TMP/$f.kxp" 3
	else
		fail "replay_$f" "$(cat "$TMP/$f.rep")"
	fi
done

# ranges_jobs NAME: the windowed parts of NAME draw ranges with device jobs.
ranges_jobs() {
	check "${1}_ranges_device" sh -c "cat '$TMP/$1/w'/p.*.json | grep -q '\"device_jobs\":'"
}

for k in annjobs annjobs-kvm; do
	if "$WL/kxp_gen" "$k" "$TMP/$k.kxp" 1000 >/dev/null 2>"$TMP/$k.err"; then
		same_parts "$k" "$TMP/$k.kxp" 3000
		ranges_jobs "$k"
	else
		fail "${k}_gen" "$(cat "$TMP/$k.err")"
	fi
done

truncate -s 16M "$TMP/loop.img"
# A free device can be taken by a concurrent user between find and attach: retry.
for _ in 1 2 3 4 5; do
	LOOPDEV=$(losetup --find --show "$TMP/loop.img" 2>"$TMP/losetup.err") && break
	sleep 0.2
done
if [ -z "$LOOPDEV" ]; then
	fail annjobs_loop_attach "losetup: $(cat "$TMP/losetup.err")"
elif kx 0 record --device loop -o "$TMP/annblk.kxp" -- "$WL/annotate_workload" -t 3 -n 300 \
	-s 100 -i "$LOOPDEV" -z >/dev/null 2>"$TMP/annblk.rec"; then
	same_parts annblk "$TMP/annblk.kxp" 2000
	ranges_jobs annblk
else
	fail annjobs_loop_record "$(tail -3 "$TMP/annblk.rec")"
fi
