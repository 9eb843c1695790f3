/*
 * Counters inside driver calls, without the kernel: a record's readings
 * scaled for multiplexing (and "not counted" kept apart), the list parsed
 * with its usage errors, counter records through the record file, joined
 * to their ioctls by thread and enter time into per-ioctl totals and means
 * (a record whose ioctl is missing counted, not joined), and each call's
 * values as fields for the exporters.
 */
#include <unistd.h>

#include "analysis/ctrstats.h"
#include "capture/counters.h"
#include "io/kxp.h"
#include "kxtest.h"
#include "model/perfdata.h"
#include "registry/drivers.h"

static void test_scaling(void)
{
	struct kx_counter_rec r = {.ts = 5, .pid = 1, .tid = 2, .n = 3};
	struct kx_ctr_ev e;

	r.v[0] = (struct kx_ctr_value){.count = 100, .enabled = 1000, .running = 1000};
	r.v[1] = (struct kx_ctr_value){.count = 100, .enabled = 1000, .running = 250};
	r.v[2] = (struct kx_ctr_value){.count = 0, .enabled = 1000, .running = 0};
	kx_ctr_ev_from_rec(&r, &e);
	CHECK_EQ_U(e.n, 3);
	CHECK_EQ_U(e.v[0], 100);
	CHECK_EQ_U(e.v[1], 400); /* ran a quarter of the time */
	CHECK_EQ_U(e.multiplexed, 2);
	CHECK_EQ_U(e.not_counted, 4);
	/* A slot counted at sched_switch has no times: its count as it is. */
	r.n = 1;
	r.v[0] = (struct kx_ctr_value){.count = 3};
	kx_ctr_ev_from_rec(&r, &e);
	CHECK_EQ_U(e.v[0], 3);
	CHECK_EQ_U(e.not_counted, 0);
	/* More than the record holds: clamped. */
	r.n = 99;
	kx_ctr_ev_from_rec(&r, &e);
	CHECK_EQ_U(e.n, KX_MAX_COUNTERS);
}

static void test_parse(void)
{
	struct kx_counter_list l;
	char err[300];

	CHECK(kx_counters_parse("cycles,cs,faults", &l, err, sizeof(err)) == 0);
	CHECK_EQ_U(l.n, 3);
	CHECK_STR(l.c[1]->name, "context-switches");
	CHECK_STR(l.c[2]->name, "page-faults");
	CHECK(kx_counters_parse("cpu-migrations", &l, err, sizeof(err)) == 0);
	CHECK(l.c[0]->at_switch);
	CHECK(kx_counters_parse("cycles,bogus", &l, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown counter 'bogus' (known: cycles,") != NULL);
	CHECK(kx_counters_parse("cycles,,cs", &l, err, sizeof(err)) == -1);
	CHECK(kx_counters_parse("cs,context-switches", &l, err, sizeof(err)) == -1);
	CHECK(strstr(err, "twice") != NULL);
	CHECK(kx_counters_parse("cycles,instructions,cs,faults,branches", &l, err, sizeof(err)) ==
	      -1);
	CHECK(strstr(err, "at most 4") != NULL);
}

static struct kx_ioctl call(uint32_t tid, uint64_t ts, uint32_t cmd)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.dur = 1000;
	e.pid = 10;
	e.tid = tid;
	e.cmd = cmd;
	e.drv = KX_DRV_LOOP;
	e.fkind = KX_FK_BLK;
	e.dev = KX_MKDEV(7, 0);
	return e;
}

static struct kx_ctr_ev ctr(uint32_t tid, uint64_t ts, uint64_t a, uint64_t b)
{
	struct kx_ctr_ev c;

	memset(&c, 0, sizeof(c));
	c.ts = ts;
	c.pid = 10;
	c.tid = tid;
	c.n = 2;
	c.v[0] = a;
	c.v[1] = b;
	return c;
}

/* Two BLKZEROOUT and one BLKFLSBUF measured, one record without its ioctl. */
static void test_join_through_file(void)
{
	static struct kx_capinfo ci, got;
	struct kx_store *st = kx_store_new(0);
	char path[] = "/tmp/kxprof-test-ctr-XXXXXX", err[512];
	struct kx_kxp_writer *w;
	struct kx_ctrstats *cs;
	struct kx_field f[4];
	struct kx_ioctl e;
	struct kx_ctr_ev c;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && st);
	close(fd);
	snprintf(ci.hostname, sizeof(ci.hostname), "box");
	snprintf(ci.counters.names, sizeof(ci.counters.names), "context-switches,page-faults");
	ci.counters.stats[KX_CTR_EMITTED] = ci.counters.stats[KX_CTR_RECEIVED] = 4;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e = call(1, 1000, 0x127f); /* BLKZEROOUT */
	c = ctr(1, 1000, 1, 0);
	CHECK(kx_kxp_add_ctr(w, &c) == 0 && kx_kxp_add_ioctl(w, &e, NULL) == 0);
	e = call(1, 5000, 0x127f);
	c = ctr(1, 5000, 2, 4);
	CHECK(kx_kxp_add_ctr(w, &c) == 0 && kx_kxp_add_ioctl(w, &e, NULL) == 0);
	e = call(2, 5000, 0x1261); /* BLKFLSBUF, another thread at the same time */
	c = ctr(2, 5000, 0, 7);
	c.not_counted = 1;
	CHECK(kx_kxp_add_ctr(w, &c) == 0 && kx_kxp_add_ioctl(w, &e, NULL) == 0);
	c = ctr(3, 9000, 5, 5); /* its ioctl was lost */
	CHECK(kx_kxp_add_ctr(w, &c) == 0);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(kx_kxp_read(path, st, &got, NULL, err, sizeof(err)) == 0);
	unlink(path);
	CHECK_STR(got.counters.names, "context-switches,page-faults");
	CHECK_EQ_U(kx_samples_nctr(kx_store_samples(st)), 4);
	cs = kx_ctrstats_build(st, &got, err, sizeof(err));
	CHECK(cs);
	CHECK_EQ_U(cs->n, 2);
	CHECK_STR(cs->names[0], "context-switches");
	CHECK_EQ_U(cs->unmatched, 1);
	CHECK_EQ_U(cs->nrows, 2);
	CHECK_STR(cs->rows[0].cat, "ioctl/loop");
	CHECK_STR(cs->rows[0].name, "BLKZEROOUT"); /* the most calls first */
	CHECK_EQ_U(cs->rows[0].calls, 2);
	CHECK_EQ_U(cs->rows[0].total[0], 3);
	CHECK_EQ_U(cs->rows[0].total[1], 4);
	CHECK_STR(cs->rows[1].name, "BLKFLSBUF");
	CHECK_EQ_U(cs->rows[1].counted[0], 0); /* not counted: no value, not a zero */
	CHECK_EQ_U(cs->rows[1].total[1], 7);
	e = call(1, 5000, 0x127f);
	CHECK_EQ_U(kx_ctrstats_fields(cs, &e, f, 4), 2);
	CHECK_STR(f[1].name, "page-faults");
	CHECK_EQ_U(f[1].u, 4);
	e = call(2, 5000, 0x1261);
	CHECK_EQ_U(kx_ctrstats_fields(cs, &e, f, 4), 1);
	e = call(9, 1, 0x127f);
	CHECK_EQ_U(kx_ctrstats_fields(cs, &e, f, 4), 0);
	CHECK_EQ_U(kx_ctrstats_fields(NULL, &e, f, 4), 0);
	kx_ctrstats_free(cs);
	/* Without counter names the capture has no counters. */
	got.counters.names[0] = 0;
	CHECK(kx_ctrstats_build(st, &got, err, sizeof(err)) == NULL);
	CHECK_STR(err, "");
	kx_store_free(st);
}

/* Two calls of different drivers whose driver and command a weak key would
 * mix into one value (drv ^ cmd equal) keep rows of their own. */
static void test_rows_by_call(void)
{
	static struct kx_capinfo ci;
	struct kx_store *st = kx_store_new(0);
	struct kx_ctrstats *cs;
	struct kx_ioctl e;
	struct kx_ctr_ev c;
	char err[256];

	CHECK(st);
	if (!st)
		return;
	snprintf(ci.counters.names, sizeof(ci.counters.names), "context-switches");
	e = call(1, 1000, 0x127f);
	c = ctr(1, 1000, 1, 0);
	CHECK(kx_store_add_ctr(st, &c) == 0 && kx_store_add_ioctl(st, &e, NULL) == 0);
	e = call(2, 1000, 0x127f ^ (KX_DRV_LOOP ^ KX_DRV_BLOCK));
	e.drv = KX_DRV_BLOCK;
	c = ctr(2, 1000, 2, 0);
	CHECK(kx_store_add_ctr(st, &c) == 0 && kx_store_add_ioctl(st, &e, NULL) == 0);
	cs = kx_ctrstats_build(st, &ci, err, sizeof(err));
	CHECK(cs);
	if (cs) {
		CHECK_EQ_U(cs->nrows, 2);
		CHECK(cs->nrows == 2 && strcmp(cs->rows[0].cat, cs->rows[1].cat));
		CHECK(cs->nrows == 2 && cs->rows[0].calls == 1 && cs->rows[1].calls == 1);
	}
	kx_ctrstats_free(cs);
	kx_store_free(st);
}

int main(void)
{
	RUN(test_scaling);
	RUN(test_parse);
	RUN(test_join_through_file);
	RUN(test_rows_by_call);
	KXT_EXIT();
}
