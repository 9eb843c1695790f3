/*
 * The streamed report (analysis/sreport.h) against the in-memory one: the
 * same summary JSON, except p50/p90/p99 which must lie within 1/256 of the
 * exact values, for every replay fixture written as a record file (whole,
 * and with only its tasks and ioctls), for generated captures with many
 * rows, errors and a damaged chunk, and the cases that must be read into
 * memory instead (jobs, annotations, overlapping calls of a thread).
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/sreport.h"
#include "export/summary.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "kxp_gen.h"
#include "kxtest.h"
#include "model/store.h"

static char tmpdir[64];

/* The summary JSON of an analysis (ioctl rows st, or from the store when NULL). */
static char *summary_json(struct kx_analysis *an, struct kx_stats *st)
{
	struct kx_summary *sum = st ? kx_summary_build_stats(an, st) : kx_summary_build(an);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!sum)
		return NULL;
	f = open_memstream(&buf, &len);
	if (f) {
		kx_summary_print_json(sum, f, 1);
		fclose(f);
	}
	kx_summary_free(sum);
	return buf;
}

static struct kx_read_loss loss_of(const struct kx_kxp_read_result *res)
{
	struct kx_read_loss l = {0};

	l.no_trailer = res->truncated;
	l.corrupt_chunks = res->ncorrupt;
	l.corrupt_bytes = res->corrupt_bytes;
	l.first_corrupt = res->ncorrupt ? res->corrupt[0].chunk : 0;
	if (res->truncated)
		l.cut_bytes = res->bad_tail_bytes;
	return l;
}

/* The in-memory report of path as JSON (NULL on failure). */
static char *json_in_memory(const char *path)
{
	struct kx_store *s = kx_store_new((size_t)1 << 30);
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res;
	struct kx_analysis *an = NULL;
	char err[512], *out = NULL;

	if (s && !kx_kxp_read(path, s, &ci, &res, err, sizeof(err)))
		an = kx_analysis_build(s, &ci, err, sizeof(err));
	if (an) {
		an->loss = loss_of(&res);
		out = summary_json(an, NULL);
	}
	kx_analysis_free(an);
	kx_store_free(s);
	return out;
}

/* The streamed report of path as JSON; *why: the in-memory reason (then NULL). */
static char *json_streamed(const char *path, const char **why)
{
	static struct kx_sreport sr;
	struct kx_analysis *an = NULL;
	char err[512], *out = NULL;

	*why = "read failed";
	if (kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err))) {
		kx_sreport_free(&sr);
		return NULL;
	}
	*why = sr.in_memory;
	if (!sr.in_memory)
		an = kx_analysis_build(sr.side, &sr.ci, err, sizeof(err));
	if (an) {
		an->loss = loss_of(&sr.res);
		out = summary_json(an, &sr.st);
	}
	kx_analysis_free(an);
	kx_sreport_free(&sr);
	return out;
}

/* A percentile value at p (after `"pNN": `), or NULL. */
static int at_percentile(const char *start, const char *p)
{
	return p - start >= 7 && p[-1] == ' ' && p[-2] == ':' && p[-3] == '"' && p[-6] == 'p' &&
	       p[-7] == '"' &&
	       (!strncmp(p - 5, "50", 2) || !strncmp(p - 5, "90", 2) || !strncmp(p - 5, "99", 2));
}

/* Equal JSON but for percentiles within 1/256 (+ 1 ns of rounding). 1 when so. */
static int json_match(const char *a, const char *b, char *why, size_t len)
{
	const char *a0 = a, *b0 = b;

	while (*a || *b) {
		const char *na, *nb;
		double x, y;

		if (*a == *b) {
			a++, b++;
			continue;
		}
		/* Back to the start of the differing number. */
		while (a > a0 && (isdigit((unsigned char)a[-1]) || a[-1] == '.'))
			a--, b--;
		if (!at_percentile(a0, a) || !at_percentile(b0, b)) {
			snprintf(why, len, "differs at: %.80s | %.80s", a, b);
			return 0;
		}
		x = strtod(a, (char **)&na); /* streamed */
		y = strtod(b, (char **)&nb); /* exact */
		if ((x > y ? x - y : y - x) > y / 256 + 1.5e-6) {
			snprintf(why, len, "percentile %.6f not within 1/256 of %.6f", x, y);
			return 0;
		}
		a = na, b = nb;
	}
	return 1;
}

/* Compares both reports of path; *why gets the streamed one's in-memory reason. */
static int compare(const char *path, const char **why, char *msg, size_t len)
{
	char *m = json_in_memory(path), *s = json_streamed(path, why);
	int ok = 0;

	if (!m)
		snprintf(msg, len, "%s: in-memory report failed", path);
	else if (*why)
		ok = 1; /* cmd_report reads it into memory: the same report */
	else if (!s)
		snprintf(msg, len, "%s: streamed report failed", path);
	else
		ok = json_match(s, m, msg, len);
	free(m);
	free(s);
	return ok;
}

/* Writes s as a record file (tasks, ioctls, then jobs unless ioctls_only). */
static int write_kxp(const char *path, const struct kx_store *s, const struct kx_capinfo *ci,
                     int ioctls_only)
{
	char err[256];
	struct kx_kxp_writer *w = kx_kxp_create(path, ci, err, sizeof(err));
	int rc = 0;

	if (!w)
		return -1;
	for (size_t i = 0; i < kx_store_task_count(s); i++)
		rc |= kx_kxp_add_task(w, kx_store_task(s, i));
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		rc |= kx_kxp_add_ioctl(w, e, kx_store_arg(s, e));
	}
	for (size_t i = 0; !ioctls_only && i < kx_store_job_count(s); i++)
		rc |= kx_kxp_add_job(w, kx_store_job(s, i));
	if (rc) {
		kx_kxp_discard(w);
		return -1;
	}
	return kx_kxp_close(w, ci, err, sizeof(err));
}

/* Every fixture, whole and as its tasks and ioctls only. */
static void fixtures(void)
{
	const char *dir = getenv("KX_FIXTURES");
	struct dirent *d;
	int nfix = 0, nstreamed = 0;
	DIR *dp;

	dir = dir && *dir ? dir : "tests/fixtures";
	dp = opendir(dir);
	CHECK(dp);
	while ((d = readdir(dp))) {
		struct kx_store *s;
		static struct kx_capinfo ci;
		char path[512], kxp[128], err[512], msg[512];
		const char *why;

		if (!kx_replay_is_fixture(d->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		s = kx_store_new(0);
		CHECK(s && kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
		nfix++;
		for (int only = 0; only < 2; only++) {
			snprintf(kxp, sizeof(kxp), "%s/f%d.kxp", tmpdir, only);
			if (write_kxp(kxp, s, &ci, only)) {
				kx_store_free(s);
				CHECK(!"writing the fixture as a record file");
			}
			if (!compare(kxp, &why, msg, sizeof(msg))) {
				printf("FAIL fixtures: %s (%s)\n", d->d_name, msg);
				kxt_cur_failed = 1;
			}
			/* With jobs: read into memory. Tasks and ioctls only: streamed
			 * unless memory accounting or overlapping calls need the store. */
			if (!only && kx_store_job_count(s) && !why) {
				printf("FAIL fixtures: %s: jobs streamed\n", d->d_name);
				kxt_cur_failed = 1;
			}
			if (only && why && !strstr(why, "memory") && !strstr(why, "overlap")) {
				printf("FAIL fixtures: %s: not streamed: %s\n", d->d_name, why);
				kxt_cur_failed = 1;
			}
			nstreamed += !why;
			fprintf(stderr, "%s%s: %s\n", d->d_name, only ? " (ioctls)" : "",
			        why ? why : "streamed");
		}
		kx_store_free(s);
	}
	closedir(dp);
	CHECK(nfix >= 8);
	/* Most fixtures stream once their jobs are left out. */
	CHECK(nstreamed >= nfix / 2);
}

/* Generated: threads calling one after another (never overlapping), many
 * rows and errnos, durations over six decades. */
static int write_generated(const char *path, size_t n, uint64_t seed, uint32_t tid_mod)
{
	static struct kx_capinfo ci;
	struct kx_kxp_writer *w;
	uint64_t now[64] = {0};
	char err[256];
	int rc = 0;

	ci.start_mono_ns = 1000;
	ci.stop_mono_ns = 1000 + n * 100000;
	ci.emitted = ci.received = n;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct kx_ioctl e = {0};
		uint64_t r = gen_rng(&seed);
		uint32_t t = (uint32_t)(r % tid_mod);

		e.tid = 100 + t;
		e.pid = 100;
		e.drv = (uint8_t)(1 + r % 3);
		e.cmd = 0x4000u | (uint32_t)(r >> 8 & 31);
		e.dur = 1 + ((r >> 20 & 0x3ff) << (r >> 30 & 15));
		e.ts = 1000 + now[t % 64];
		now[t % 64] += e.dur + (r >> 40 & 1023);
		e.ret = (r >> 50 & 7) == 0 ? -(int64_t)(1 + (r >> 53 & 63)) : 0;
		e.offcpu_us = (uint32_t)((r >> 56 & 3) ? 0 : e.dur / 2000);
		e.arg_off = KX_NO_ARG;
		rc |= kx_kxp_add_ioctl(w, &e, NULL);
	}
	if (rc) {
		kx_kxp_discard(w);
		return -1;
	}
	return kx_kxp_close(w, &ci, err, sizeof(err));
}

static void generated(void)
{
	char path[128], msg[512];
	const char *why;

	snprintf(path, sizeof(path), "%s/gen.kxp", tmpdir);
	CHECK(write_generated(path, 300000, 7, 64) == 0);
	if (!compare(path, &why, msg, sizeof(msg)))
		printf("FAIL generated: %s\n", msg);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
}

/* A damaged chunk in the middle: both skip it, with the same warning. */
static void damaged(void)
{
	char path[128], msg[512];
	const char *why;
	FILE *f;
	long size;

	snprintf(path, sizeof(path), "%s/dmg.kxp", tmpdir);
	CHECK(write_generated(path, 300000, 11, 16) == 0);
	f = fopen(path, "r+b");
	CHECK(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size / 2, SEEK_SET);
	for (int i = 0; i < 64; i++)
		fputc(0x5a, f);
	fclose(f);
	if (!compare(path, &why, msg, sizeof(msg)))
		printf("FAIL damaged: %s\n", msg);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
	/* Cut short: no trailer, the same unknown figures. */
	CHECK(truncate(path, size * 3 / 4) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
}

/* Overlapping calls of one thread and annotations go to the in-memory path. */
static void in_memory_reasons(void)
{
	static struct kx_capinfo ci;
	struct kx_ioctl e = {.pid = 5, .tid = 5, .drv = 1, .cmd = 0x4001, .arg_off = KX_NO_ARG};
	struct kx_ann a = {.tid = 5, .pid = 5, .ts = 50, .begin = 50, .what = KX_ANN_MARK};
	char path[128], err[256], msg[512];
	struct kx_kxp_writer *w;
	const char *why;

	snprintf(path, sizeof(path), "%s/ov.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 100, e.dur = 50;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 120, e.dur = 100; /* starts inside the first */
	kx_kxp_add_ioctl(w, &e, NULL);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why && strstr(why, "overlap"));

	snprintf(path, sizeof(path), "%s/ann.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 100, e.dur = 50;
	kx_kxp_add_ioctl(w, &e, NULL);
	kx_kxp_add_ann(w, &a, "step", "");
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why && strstr(why, "annotation"));
}

/* The first reason to read into memory ends the streamed read early. */
static void stops_early(void)
{
	static struct kx_capinfo ci;
	static struct kx_sreport sr;
	struct kx_kxp_read_result full;
	struct kx_ann a = {.tid = 5, .pid = 5, .ts = 50, .begin = 50, .what = KX_ANN_MARK};
	struct kx_store *s = kx_store_new((size_t)1 << 30);
	char path[128], err[512];
	struct kx_kxp_writer *w;
	int rc;

	CHECK(s);
	snprintf(path, sizeof(path), "%s/early.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	kx_kxp_add_ann(w, &a, "first", "");
	for (uint64_t i = 0; i < 400000; i++) {
		struct kx_ioctl e = {
		        .pid = 5, .tid = 5, .drv = 1, .cmd = 0x4001, .arg_off = KX_NO_ARG};

		e.ts = 100 + i * 1000 + (i * 7919 % 13);
		e.dur = 100 + i % 700;
		kx_kxp_add_ioctl(w, &e, NULL);
	}
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	rc = kx_kxp_read(path, s, &ci, &full, err, sizeof(err));
	kx_store_free(s);
	CHECK(rc == 0 && full.chunks > 8);
	CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
	rc = sr.in_memory && strstr(sr.in_memory, "annotation") && sr.res.chunks < full.chunks;
	if (!rc)
		printf("FAIL stops_early: %llu of %llu chunks read\n",
		       (unsigned long long)sr.res.chunks, (unsigned long long)full.chunks);
	kx_sreport_free(&sr);
	CHECK(rc);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kxt_sreport.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(fixtures);
	RUN(generated);
	RUN(damaged);
	RUN(in_memory_reasons);
	RUN(stops_early);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	KXT_EXIT();
}
