/*
 * Live job aggregates (user/live/jobagg.h): online pairing of BLOCK and
 * fence-keyed phases into queue and exec histograms by the offline rules
 * (one fence seen by two sources is one job, a DONE without a start is a
 * job), KVM jobs from their exit and KVM_RUN records, in-flight and busy
 * time, the pending-table bound (oldest evicted, counted), the series bound,
 * reset, and the Prometheus families they fill. tests/unit/test_jobs_live.c
 * compares them with the offline analysis on the fixtures.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/jobagg.h"
#include "kxtest.h"
#include "export/prometheus.h"
#include "registry/drivers.h"
#include "util/hist.h"

#define T0    10000000000ull
#define US(x) (T0 + (uint64_t)(x)*1000)

static struct kx_job mk(uint16_t src, uint8_t phase, uint64_t ts, uint32_t dev, uint64_t ctx,
                        uint64_t seqno, const char *ring)
{
	struct kx_job j;

	memset(&j, 0, sizeof(j));
	j.src = src;
	j.phase = phase;
	j.ts = ts;
	j.dev = dev;
	j.ctx = ctx;
	j.seqno = seqno;
	if (ring)
		memcpy(j.ring, ring, strnlen(ring, sizeof(j.ring)));
	return j;
}

static void add(struct kx_jobagg *a, uint16_t src, uint8_t phase, uint64_t ts, uint32_t dev,
                uint64_t ctx, uint64_t seqno, const char *ring)
{
	struct kx_job j = mk(src, phase, ts, dev, ctx, seqno, ring);

	kx_jobagg_add(a, &j);
}

static uint64_t total(const uint64_t *slots)
{
	uint64_t n = 0;

	for (int i = 0; i < KX_HIST_SLOTS; i++)
		n += slots[i];
	return n;
}

static const struct kx_jobagg_series *find(const struct kx_jobagg_snapshot *s, const char *dev,
                                           const char *ring)
{
	for (size_t i = 0; i < s->nseries; i++)
		if (!strcmp(s->series[i].device, dev) && !strcmp(s->series[i].ring, ring))
			return &s->series[i];
	return NULL;
}

#define LOOP0 (7u << 20 | 0)

static void test_block_pairing(void)
{
	struct kx_jobagg *a = kx_jobagg_new(0, 0);
	struct kx_jobagg_snapshot s;
	const struct kx_jobagg_series *se;

	CHECK(a);
	/* sector 8: queued at 0, issued at 3 µs, done at 10 µs: queue 3 µs, exec 7 µs */
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_QUEUE, US(0), LOOP0, 0, 8, "loop0");
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(3), LOOP0, 0, 8, "loop0");
	/* sector 16: direct issue (no QUEUE) at 5 µs, done at 6 µs (IRQ: pid 0) */
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(5), LOOP0, 0, 16, "loop0");
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(6), LOOP0, 0, 16, "loop0");
	/* same sector on another disk: a different job */
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(7), LOOP0 + 1, 0, 8, "loop1");
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(10), LOOP0, 0, 8, "loop0");
	/* DONE without a start: a job (as offline), with no exec time */
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(11), LOOP0, 0, 999, "loop0");
	/* a KVM exit waits for its KVM_RUN record: no job yet */
	add(a, KX_JOB_SRC_KVM, KX_JOB_RUN, US(1), 0, 42, 0, "vcpu 42");
	add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(2), 0, 42, 0, "vcpu 42");
	CHECK(kx_jobagg_snapshot(a, &s, US(20), 0) == 0);
	CHECK_EQ_U(s.nseries, 2);
	se = find(&s, "loop0", "loop0");
	CHECK(se);
	CHECK_EQ_U(total(se->exec_slots), 2);
	CHECK_EQ_U(se->exec_sum_ns, 7000 + 1000);
	/* the direct issue waited 0 in no queue (as offline) */
	CHECK_EQ_U(total(se->queue_slots), 2);
	CHECK_EQ_U(se->queue_sum_ns, 3000);
	/* 3000 ns is in [2048, 4096): slot 11; 7000 in slot 12, 1000 in slot 9 */
	CHECK_EQ_U(se->queue_slots[11], 1);
	CHECK_EQ_U(se->queue_slots[kx_hist_slot(0)], 1);
	CHECK_EQ_U(se->exec_slots[12], 1);
	CHECK_EQ_U(se->exec_slots[9], 1);
	se = find(&s, "loop1", "loop1");
	CHECK(se);
	CHECK_EQ_U(total(se->exec_slots), 0);
	CHECK_EQ_U(s.ndevs, 2);
	CHECK_STR(s.devs[0].device, "loop0");
	CHECK_EQ_U(s.devs[0].inflight, 0);
	CHECK_EQ_U(s.devs[0].jobs, 3);
	CHECK_EQ_U(s.devs[0].completed, 3);
	CHECK_EQ_U(s.devs[0].busy_ns, 7000); /* running: [3, 10] and [5, 6] µs */
	CHECK_STR(s.devs[1].device, "loop1");
	CHECK_EQ_U(s.devs[1].inflight, 1);
	CHECK_EQ_U(s.devs[1].busy_ns, 13000); /* still busy since 7 µs, now 20 µs */
	CHECK_EQ_U(s.pending, 1);
	CHECK_EQ_U(s.overflow, 0);
	kx_jobagg_snapshot_free(&s);

	/* reset: histograms and busy time start over, pending jobs stay */
	CHECK(kx_jobagg_snapshot(a, &s, US(20), 1) == 0);
	kx_jobagg_snapshot_free(&s);
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(25), LOOP0 + 1, 0, 8, "loop1");
	CHECK(kx_jobagg_snapshot(a, &s, US(30), 0) == 0);
	se = find(&s, "loop0", "loop0");
	CHECK(se && total(se->exec_slots) == 0 && se->exec_sum_ns == 0);
	se = find(&s, "loop1", "loop1");
	CHECK(se && total(se->exec_slots) == 1);
	CHECK_EQ_U(se->exec_sum_ns, 18000);
	CHECK_EQ_U(s.devs[1].busy_ns, 5000);
	CHECK_EQ_U(s.devs[1].inflight, 0);
	kx_jobagg_snapshot_free(&s);
	kx_jobagg_free(a);
}

static void test_fence_pairing(void)
{
	struct kx_jobagg *a = kx_jobagg_new(0, 0);
	struct kx_jobagg_snapshot s;
	const struct kx_jobagg_series *se;

	CHECK(a);
	/* gpu_scheduler: queue 0, run 10, done 110 µs on gfx; ctx/seqno keyed */
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_QUEUE, US(0), 0, 5, 1, "gfx_0.0.0");
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_QUEUE, US(1), 0, 5, 2, "gfx_0.0.0");
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_DEP, US(2), 0, 5, 2, "gfx_0.0.0");
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_RUN, US(10), 0, 5, 1, "gfx_0.0.0");
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_RUN, US(12), 0, 5, 1,
	    "gfx_0.0.0"); /* dup: first kept */
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_DONE, US(110), 0, 5, 1, "gfx_0.0.0");
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_RUN, US(110), 0, 5, 2, "gfx_0.0.0");
	add(a, KX_JOB_SRC_GPU_SCHED, KX_JOB_DONE, US(130), 0, 5, 2, "gfx_0.0.0");
	/* dma_fence: emit -> signaled, no RUN: exec from QUEUE, no queue sample */
	add(a, KX_JOB_SRC_DMA_FENCE, KX_JOB_QUEUE, US(0), 0, 6, 1, NULL);
	add(a, KX_JOB_SRC_DMA_FENCE, KX_JOB_DONE, US(50), 0, 6, 1, NULL);
	/* the fence of gpu_scheduler's job 1 seen by dma_fence too: the same job */
	add(a, KX_JOB_SRC_DMA_FENCE, KX_JOB_QUEUE, US(1), 0, 5, 1, NULL);
	add(a, KX_JOB_SRC_DMA_FENCE, KX_JOB_DONE, US(111), 0, 5, 1, NULL);
	CHECK(kx_jobagg_snapshot(a, &s, US(200), 0) == 0);
	se = find(&s, "gpu_scheduler", "gfx_0.0.0");
	CHECK(se);
	CHECK_EQ_U(total(se->queue_slots), 2);
	CHECK_EQ_U(se->queue_sum_ns, 10000 + 109000);
	CHECK_EQ_U(total(se->exec_slots), 2);
	CHECK_EQ_U(se->exec_sum_ns, 100000 + 20000);
	se = find(&s, "dma_fence", "default");
	CHECK(se);
	CHECK_EQ_U(total(se->queue_slots), 0);
	CHECK_EQ_U(total(se->exec_slots), 1);
	CHECK_EQ_U(se->exec_sum_ns, 50000);
	CHECK_EQ_U(s.ndevs, 2);
	CHECK_EQ_U(s.devs[0].jobs, 2);
	CHECK_EQ_U(s.devs[1].jobs, 1);
	/* busy: [10, 110] and [110, 130]; the fence with no RUN [0, 50] */
	CHECK_EQ_U(s.devs[0].busy_ns, 120000);
	CHECK_EQ_U(s.devs[1].busy_ns, 50000);
	CHECK_EQ_U(s.pending, 0);
	kx_jobagg_snapshot_free(&s);
	kx_jobagg_free(a);
}

static void run_rec(struct kx_jobagg *a, uint32_t tid, uint64_t ts, uint64_t end)
{
	struct kx_ioctl io;

	memset(&io, 0, sizeof(io));
	io.drv = KX_DRV_KVM;
	io.cmd = KX_KVM_RUN_CMD;
	io.pid = io.tid = tid;
	io.ts = ts;
	io.dur = end - ts;
	kx_jobagg_ioctl(a, &io);
}

/* KVM: a job is one KVM_RUN, from the call's enter to the exit inside it;
 * the exit comes first (the call's record is made at its return). */
static void test_kvm_jobs(void)
{
	struct kx_jobagg *a = kx_jobagg_new(0, 0);
	struct kx_jobagg_snapshot s;
	const struct kx_jobagg_series *se;

	CHECK(a);
	/* vCPU 42: KVM_RUN [10, 30] µs, an I/O exit (RUN) at 15, its exit at 29 */
	add(a, KX_JOB_SRC_KVM, KX_JOB_RUN, US(15), 0, 42, 0, NULL);
	add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(29), 0, 42, 0, NULL);
	CHECK(kx_jobagg_snapshot(a, &s, US(29), 0) == 0);
	CHECK_EQ_U(s.nseries, 0); /* waiting for its call's record */
	kx_jobagg_snapshot_free(&s);
	run_rec(a, 42, US(10), US(30));
	/* vCPU 43: an exit outside any KVM_RUN at 40, then a run [50, 60] with
	 * two exits (the second a duplicate) */
	add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(40), 0, 43, 0, NULL);
	add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(55), 0, 43, 0, NULL);
	add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(58), 0, 43, 0, NULL);
	run_rec(a, 43, US(50), US(60));
	/* vCPU 44: an exit whose call's record never comes (ring full): at the end */
	add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(70), 0, 44, 0, NULL);
	kx_jobagg_flush(a);
	CHECK(kx_jobagg_snapshot(a, &s, US(100), 0) == 0);
	se = find(&s, "kvm", "vcpu");
	CHECK(se);
	/* exec: 19 µs and 5 µs; no queue; the jobs without a start have none */
	CHECK_EQ_U(total(se->exec_slots), 2);
	CHECK_EQ_U(se->exec_sum_ns, 19000 + 5000);
	CHECK_EQ_U(total(se->queue_slots), 0);
	CHECK_EQ_U(s.ndevs, 1);
	CHECK_EQ_U(s.devs[0].jobs, 4);
	CHECK_EQ_U(s.devs[0].completed, 4);
	CHECK_EQ_U(s.devs[0].busy_ns, 19000 + 5000);
	CHECK_EQ_U(s.devs[0].inflight, 0);
	CHECK_EQ_U(s.overflow, 0);
	kx_jobagg_snapshot_free(&s);
	/* KX_JOBAGG_MAX_EXITS exits wait at most: the oldest becomes a job
	 * without a start (no loss) */
	for (uint32_t t = 0; t <= KX_JOBAGG_MAX_EXITS; t++)
		add(a, KX_JOB_SRC_KVM, KX_JOB_DONE, US(200 + t), 0, 1000 + t, 0, NULL);
	CHECK(kx_jobagg_snapshot(a, &s, US(2000), 0) == 0);
	CHECK_EQ_U(s.devs[0].jobs, 4 + 1);
	CHECK_EQ_U(s.overflow, 0);
	kx_jobagg_snapshot_free(&s);
	kx_jobagg_free(a);
}

static void test_bounds(void)
{
	struct kx_jobagg *a = kx_jobagg_new(16, 2);
	struct kx_jobagg_snapshot s;
	const struct kx_jobagg_series *se;

	CHECK(a);
	/* 20 starts in a table of 16: the 4 oldest are evicted and counted */
	for (int i = 0; i < 20; i++)
		add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(i), LOOP0, 0, (uint64_t)i * 8, "loop0");
	for (int i = 0; i < 20; i++)
		add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(100 + i), LOOP0, 0, (uint64_t)i * 8,
		    "loop0");
	/* a third (device, ring) past the series limit of 2 */
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(200), LOOP0 + 1, 0, 0, "loop1");
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(200), LOOP0 + 2, 0, 0, "loop2");
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(201), LOOP0 + 2, 0, 0, "loop2");
	CHECK(kx_jobagg_snapshot(a, &s, US(300), 0) == 0);
	se = find(&s, "loop0", "loop0");
	CHECK(se);
	/* the DONEs of the 4 lost: jobs without a start, kept only where no open
	 * job makes room for them */
	CHECK_EQ_U(total(se->exec_slots), 16);
	CHECK_EQ_U(s.devs[0].jobs, 20 + 4);
	/* loop2's RUN and DONE past the limit */
	CHECK_EQ_U(s.overflow, 4 + 2);
	CHECK_EQ_U(s.nseries, 2);
	CHECK_EQ_U(s.pending, 1);
	CHECK_EQ_U(s.devs[0].inflight, 0);
	kx_jobagg_snapshot_free(&s);

	/* many keys through a small table: chains stay consistent */
	for (int r = 0; r < 1000; r++) {
		add(a, KX_JOB_SRC_BLOCK, KX_JOB_QUEUE, US(1000 + r), LOOP0, 0, (uint64_t)r,
		    "loop0");
		add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(1000 + r), LOOP0, 0, (uint64_t)r, "loop0");
		if (r >= 10)
			add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(1001 + r), LOOP0, 0,
			    (uint64_t)r - 10, "loop0");
	}
	CHECK(kx_jobagg_snapshot(a, &s, US(3000), 0) == 0);
	se = find(&s, "loop0", "loop0");
	CHECK_EQ_U(total(se->exec_slots), 16 + 990);
	/* direct issues count a 0 queue delay */
	CHECK_EQ_U(total(se->queue_slots), 20 + 1000);
	/* finished jobs give up their entries without loss; loop1's open job,
	 * the oldest entry, is lost to the churn: 990..999 are open */
	CHECK_EQ_U(s.pending, 10);
	CHECK_EQ_U(s.overflow, 6 + 1);
	kx_jobagg_snapshot_free(&s);
	kx_jobagg_free(a);
}

static void test_prometheus_families(void)
{
	struct kx_jobagg *a = kx_jobagg_new(0, 0);
	struct kx_agg_snapshot snap;
	struct kx_jobagg_snapshot js;
	struct kx_prom_info info = {"0.1", "6.18.0-test", "tp_btf", 1, NULL, NULL};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(a);
	memset(&snap, 0, sizeof(snap));
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_RUN, US(0), LOOP0, 0, 8, "loop0");
	add(a, KX_JOB_SRC_BLOCK, KX_JOB_DONE, US(3), LOOP0, 0, 8, "loop0");
	CHECK(kx_jobagg_snapshot(a, &js, US(10), 0) == 0);
	info.jobs = &js;
	f = open_memstream(&buf, &len);
	CHECK(f);
	CHECK(kx_prom_write(f, &snap, &info) == 0);
	fclose(f);
	CHECK(strstr(buf, "kxprof_job_exec_seconds_bucket{device=\"loop0\",ring=\"loop0\",le=\"0."
	                  "000002048\"} 0\n"));
	CHECK(strstr(buf, "kxprof_job_exec_seconds_bucket{device=\"loop0\",ring=\"loop0\",le=\"0."
	                  "000004096\"} 1\n"));
	CHECK(strstr(
	        buf,
	        "kxprof_job_exec_seconds_bucket{device=\"loop0\",ring=\"loop0\",le=\"+Inf\"} 1\n"));
	CHECK(strstr(buf,
	             "kxprof_job_exec_seconds_sum{device=\"loop0\",ring=\"loop0\"} 0.000003\n"));
	CHECK(strstr(buf, "kxprof_job_exec_seconds_count{device=\"loop0\",ring=\"loop0\"} 1\n"));
	CHECK(strstr(buf, "kxprof_job_queue_seconds_count{device=\"loop0\",ring=\"loop0\"} 1\n"));
	CHECK(strstr(buf, "kxprof_job_inflight{device=\"loop0\"} 0\n"));
	CHECK(strstr(buf, "kxprof_job_busy_seconds_total{device=\"loop0\"} 0.000003\n"));
	CHECK(strstr(buf, "kxprof_map_overflow_total{map=\"jobs\"} 0\n"));
	free(buf);
	kx_jobagg_snapshot_free(&js);
	kx_jobagg_free(a);
}

int main(void)
{
	RUN(test_block_pairing);
	RUN(test_fence_pairing);
	RUN(test_kvm_jobs);
	RUN(test_bounds);
	RUN(test_prometheus_families);
	KXT_EXIT();
}
