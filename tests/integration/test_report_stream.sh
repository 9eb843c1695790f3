#!/usr/bin/env bash
# report streams a record file (memory grows with the rows, not the
# events): on live captures of the stand-in accelerator (kvm where /dev/kvm
# exists, else loop; see lib.sh) its JSON equals the in-memory report's
# (report --in-memory) except p50/p90/p99, which lie within 1/256 of the
# exact values; the table has the same lines; captures with device
# timelines stream too, with the same jobs, devices and links; a KVM
# capture of many jobs has its device timelines made as the records pass
# (no job record kept: -v says so), the in-memory report's figures, and so
# does a loop driver capture of many block requests; a cut file gives the
# same warning and unknown figures both ways.
. "$(dirname "$0")/lib.sh"
COUNTS="python3 $(dirname "$0")/counts.py"

# same_json NAME STREAMED.json EXACT.json
same_json() {
	check "$1" python3 "$(dirname "$0")/same_report.py" "$2" "$3"
}

# same_table NAME STREAMED.txt EXACT.txt: the same lines but for a row's
# percentile cells (the cells under a p50, p90, p99... heading); every other
# cell, and every line that is not a row under a heading, is the same.
same_table() {
	check "$1" python3 - "$2" "$3" <<'PY'
import re, sys
s, m = (open(p).read().splitlines() for p in sys.argv[1:3])
if len(s) != len(m):
    print("%d lines != %d" % (len(s), len(m))); sys.exit(1)
head, diffs = None, 0
def cells(line):
    t = line.split()
    # Only the first column (the name) may hold spaces.
    extra = len(t) - len(head)
    return [" ".join(t[:extra + 1])] + t[extra + 1:] if extra >= 0 else None
for a, b in zip(s, m):
    if "p50" in a.split() and a == b:
        head = a.split()
        continue
    if a == b:
        continue
    ca, cb = (cells(a), cells(b)) if head else (None, None)
    bad = ca is None or cb is None or len(ca) != len(cb) or any(
        x != y and not re.fullmatch(r"p\d+", h) for h, x, y in zip(head, ca, cb))
    if bad:
        print("%r != %r" % (a, b)); sys.exit(1)
    diffs += 1
print("# %d lines, %d differ in percentile cells only" % (len(s), diffs))
PY
}

# both NAME FILE: streamed and in-memory reports of FILE, JSON and table.
both() {
	local n=$1 f=$2
	kx 0 report --json --hist "$f" >"$TMP/$n.s.json" 2>"$TMP/$n.s.err" &&
		kx 0 report --in-memory --json --hist "$f" >"$TMP/$n.m.json" 2>"$TMP/$n.m.err" &&
		same_json "json_${n}" "$TMP/$n.s.json" "$TMP/$n.m.json" &&
		check "stderr_${n}" cmp -s "$TMP/$n.s.err" "$TMP/$n.m.err"
	kx 0 report --wide --hist "$f" >"$TMP/$n.s.txt" 2>/dev/null &&
		kx 0 report --in-memory --wide --hist "$f" >"$TMP/$n.m.txt" 2>/dev/null &&
		same_table "table_${n}" "$TMP/$n.s.txt" "$TMP/$n.m.txt"
}

# 1. the accelerator's calls without device timelines, with CPU samples and
# off-CPU stacks: streamed (loop: the job ioctl, the cheap one).
accel_argv 3 20 "" -g 3000
if kx 0 record "${ACCEL_DEV[@]}" --no-jobs -F 499 --off-cpu -o "$TMP/calls.kxp" \
	-- "${ACCEL_ARGV[@]}" >"$TMP/calls.wl" 2>"$TMP/calls.rec"; then
	both calls "$TMP/calls.kxp"
	# kvm's memory slot ioctls (the memory rows) are kept: streamed all the same.
	check calls_streamed bash -c '"$1" -v report "$2" 2>&1 >/dev/null | grep -q "was streamed"' \
		_ "$KXPROF" "$TMP/calls.kxp"
	check calls_count $COUNTS "$TMP/calls.wl" "$TMP/calls.s.json" "ioctl/$ACCEL"
	check profile_present test "$(jget "$TMP/calls.s.json" '"Profile" in d or "OffCpuProfile" in d')" = True
fi

# 2. a flood of the cheap call (many events, few rows).
if kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/flood.kxp" -- "${ACCEL_FLOOD[@]}" -n 50000 -t 2 \
	>"$TMP/flood.wl" 2>"$TMP/flood.rec"; then
	both flood "$TMP/flood.kxp"
	check flood_count $COUNTS "$TMP/flood.wl" "$TMP/flood.s.json" "ioctl/$ACCEL"
fi

# 3. with device timelines: streamed too (the job records and the ioctls the
# timelines look at are kept), the in-memory report's jobs, devices and links.
accel_argv 2 20
if kx 0 record "${ACCEL_DEV[@]}" -o "$TMP/jobs.kxp" -- "${ACCEL_ARGV[@]}" \
	>/dev/null 2>"$TMP/jobs.rec"; then
	both jobs "$TMP/jobs.kxp"
	check jobs_streamed bash -c '"$1" -v report "$2" 2>&1 >/dev/null | grep -q "was streamed"' \
		_ "$KXPROF" "$TMP/jobs.kxp"
	check jobs_linked test "$(jget "$TMP/jobs.s.json" 'sum(v["linked"] for v in d["Jobs"]["devices"].values())')" -gt 0
fi

# 4. cut short (no trailer): the same warning and unknown figures.
if [ -s "$TMP/flood.kxp" ]; then
	head -c $(($(stat -c %s "$TMP/flood.kxp") * 2 / 3)) "$TMP/flood.kxp" >"$TMP/cut.kxp"
	both cut "$TMP/cut.kxp"
	check cut_unknown test "$(jget "$TMP/cut.s.json" 'd["Capture"]["emitted"]')" = None
fi

# 5. many KVM jobs (two vCPUs, 20,000 KVM_RUNs each, more than a ring keeps
# for exact percentiles): paired as the records pass, none kept.
if need_kvm kvm_many && kx 0 record -o "$TMP/many.kxp" -- "$WL/kvm_workload" -t 2 -j 20000 -l 0 \
	>/dev/null 2>"$TMP/many.rec"; then
	both many "$TMP/many.kxp"
	check many_paired bash -c '"$1" -v report "$2" 2>&1 >/dev/null | grep -q "device jobs were paired as they came"' \
		_ "$KXPROF" "$TMP/many.kxp"
	check many_jobs test "$(jget "$TMP/many.s.json" 'd["Jobs"]["devices"]["kvm"]["jobs"]')" -ge 40000
fi

# 5b. annotated xe jobs, every 11th never done (kxp_gen annjobs: 4 threads):
# jobs never done hold more than 32,768 later ones back and are counted as
# never done then; streamed, the in-memory report, and -v counts them.
if "$WL/kxp_gen" annjobs "$TMP/open.kxp" 30000 >/dev/null 2>"$TMP/open.gen"; then
	both open "$TMP/open.kxp"
	kx 0 -v report "$TMP/open.kxp" >/dev/null 2>"$TMP/open.v"
	check open_streamed grep -q "was streamed" "$TMP/open.v"
	check open_counted_early grep -q "[1-9][0-9]* device jobs counted early (each held back more than 32768 later ones)" "$TMP/open.v"
else
	fail open_gen "kxp_gen annjobs: $(head -c 300 "$TMP/open.gen")"
fi

# 6. many block requests of the loop driver (two threads, 20,000 BLKZEROOUTs
# each, whether or not kvm is the accelerator): paired as the records pass,
# none kept, the in-memory report's figures.
if kx 0 record --device loop -o "$TMP/blk.kxp" -- "$WL/loop_workload" -s 16 -p "$TMP" -t 2 \
	-j 20000 -k zero >/dev/null 2>"$TMP/blk.rec"; then
	both blk "$TMP/blk.kxp"
	check blk_paired bash -c '"$1" -v report "$2" 2>&1 >/dev/null | grep -q "device jobs were paired as they came"' \
		_ "$KXPROF" "$TMP/blk.kxp"
	# A phase the kernel skipped (bpf_missed) or the ring dropped
	# (job_dropped) costs at most one job (a lost DONE joins the sector's
	# next request to its job), a lost ioctl record (dropped) at most one
	# link: short by at most what was counted, no more. A DONE lost
	# before the program counts anything (rarely, a completion in softirq
	# at an interrupt's exit: the tracepoint fired, our program recorded
	# nothing and counted no skip) is counted by the program when the
	# sector's next request comes (job_done_lost); the pairing shows that
	# request's QUEUE and RUN as duplicates. Duplicates have other causes
	# too (a capture with 6 counted losses had 76, every job there), so
	# they bound nothing: the jobs and links are checked against the loss.
	lost=$(jget "$TMP/blk.s.json" '(d["Capture"]["bpf_missed"] + d["Capture"]["job_dropped"] +
		d["Capture"]["job_done_lost"])')
	dups=$(jget "$TMP/blk.s.json" 'd["Jobs"]["anomalies"]["duplicate"]')
	unlinked=$(jget "$TMP/blk.s.json" 'd["Capture"]["dropped"]')
	[ "$lost$dups$unlinked" = 000 ] ||
		echo "# blk: counted lost: $lost job events (bpf_missed + job_dropped + job_done_lost), $dups duplicates, $unlinked ioctl records"
	check blk_jobs test "$(jget "$TMP/blk.s.json" 'd["Jobs"]["devices"]["loop"]["jobs"]')" -ge $((40000 - lost))
	check blk_linked test "$(jget "$TMP/blk.s.json" 'd["Jobs"]["devices"]["loop"]["linked"]')" \
		-ge $((40000 - lost - unlinked))
fi
