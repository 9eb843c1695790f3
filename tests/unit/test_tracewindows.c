/*
 * Unit tests of a conversion's trace outputs (user/export/traceparts.c,
 * tracewindows.c): a generated capture (annotation ranges, counter records,
 * memory accounting) read in windows and written a window at a time gives
 * the parts, XSpace runs and Chrome files, that the capture read whole
 * gives, byte for byte, each path said once committed and the split said
 * first; a Chrome file alone written a slice at a time holds each part's
 * lines; a part whose name cannot be written is refused before any part is
 * written; a part that fails once others are written says which stay, and
 * the parts after it are not written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/capread.h"
#include "analysis/warnings.h"
#include "export/traceparts.h"
#include "export/tracewindows.h"
#include "kxp_gen_wread.h"
#include "kxtest.h"

#define BUDGET  ((size_t)1 << 30)
#define CALLS   6000
#define SPLIT   1500 /* events a part: about five parts */
#define MAXSAID 64

static char dir[64];

/* What a writer said and wrote, in turn. */
struct heard {
	char said[MAXSAID][1024];
	char wrote[MAXSAID][PATH_MAX];
	size_t nsaid, nwrote;
	const char *block; /* made a folder once two paths are written (a part that fails) */
};

static void on_say(void *ctx, const char *msg)
{
	struct heard *h = ctx;

	if (h->nsaid < MAXSAID)
		snprintf(h->said[h->nsaid++], sizeof(h->said[0]), "%s", msg);
}

static void on_wrote(void *ctx, const char *path, int trace_on_stdout)
{
	struct heard *h = ctx;

	CHECK_EQ_U(trace_on_stdout, 0);
	if (h->nwrote < MAXSAID)
		snprintf(h->wrote[h->nwrote++], sizeof(h->wrote[0]), "%s", path);
	if (h->block && h->nwrote == 4)
		CHECK(mkdir(h->block, 0700) == 0);
}

static struct kx_traceparts parts(struct heard *h, const char *logdir, const char *chrome,
                                  const char *input)
{
	static const struct kx_xspace_opts xo;

	return (struct kx_traceparts){.xo = &xo,
	                              .logdir = logdir,
	                              .chrome = chrome,
	                              .split = SPLIT,
	                              .input = input,
	                              .say = on_say,
	                              .wrote = on_wrote,
	                              .ctx = h};
}

/* The bytes of the file at path and a 0 after them (NULL: unreadable). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long n;

	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (b = malloc((size_t)n + 1)) && fread(b, 1, (size_t)n, f) == (size_t)n) {
		b[n] = 0;
		*len = (size_t)n;
	} else {
		free(b);
		b = NULL;
	}
	if (f)
		fclose(f);
	return b;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of b (changed in place), sorted; their count in *n. */
static char **sorted_lines(char *b, size_t *n)
{
	char **l = NULL, **nl;
	size_t m = 0;

	for (char *s = strtok(b, "\n"); s; s = strtok(NULL, "\n")) {
		nl = realloc(l, (m + 1) * sizeof(*l));
		if (!nl)
			break;
		l = nl;
		l[m++] = s;
	}
	if (l)
		qsort(l, m, sizeof(*l), line_cmp);
	*n = m;
	return l;
}

/* 1 when the files at a and b are the same bytes (lines: the same lines in
 * any order). */
static int same_files(const char *a, const char *b, int lines)
{
	size_t la = 0, lb = 0, na = 0, nb = 0;
	char *x = slurp(a, &la), *y = slurp(b, &lb), **xl = NULL, **yl = NULL;
	int same = x && y && la == lb;

	if (same && !lines) {
		same = !memcmp(x, y, la);
	} else if (same) {
		xl = sorted_lines(x, &na);
		yl = sorted_lines(y, &nb);
		same = na == nb;
		for (size_t i = 0; same && i < na; i++)
			same = !strcmp(xl[i], yl[i]);
	}
	free(xl);
	free(yl);
	free(x);
	free(y);
	return same;
}

/* The capture at path read whole and written through t: 0, 1 or 2. */
static int write_whole(const struct kx_traceparts *t, const char *path)
{
	struct kx_kxp_read_result res;
	struct kx_capinfo ci;
	struct kx_analysis *an = NULL;
	char err[512], damage[512];
	struct kx_store *s =
	        kx_capread_whole(path, BUDGET, &ci, &res, damage, sizeof(damage), err, sizeof(err));
	int rc = -1;

	if (s)
		an = kx_analysis_build(s, &ci, err, sizeof(err));
	if (an) {
		kx_read_loss_of(&res, &an->loss);
		rc = kx_traceparts_write(t, an);
	}
	kx_analysis_free(an);
	kx_store_free(s);
	return rc;
}

/* The capture at path read in windows of SPLIT events (slices of slice)
 * and written through t: 0, 1 or 2 (-1: not read in windows). */
static int write_windowed(const struct kx_traceparts *t, const char *path, size_t slice)
{
	static struct kx_capread r;
	struct kx_capread_opts o = {
	        .window = SPLIT, .slice = slice, .budget = BUDGET, .keep = KX_WREAD_KEEP_RECORDS};
	char err[512];
	int rc = -1;

	if (kx_capread_open(&r, path, &o, err, sizeof(err))) {
		printf("# %s\n", err);
		return -1;
	}
	if (!r.store && r.w.plan.n > 1)
		rc = kx_tracewindows_write(t, &r.w);
	kx_capread_free(&r);
	return rc;
}

static void capture(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s.kxp", dir, name);
	CHECK(write_capture_as(path, CALLS, 0, 0, 0, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY) == 0);
}

/* Each path, then the run folders the logdir holds, removed. */
static void clean(const struct heard *h, const char *logdir)
{
	char cmd[256];

	for (size_t i = 0; i < h->nwrote; i++)
		unlink(h->wrote[i]);
	if (logdir) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", logdir);
		CHECK(system(cmd) == 0);
	}
}

/* XSpace and Chrome: read in windows, the parts read whole gives, byte for byte. */
static void test_windows_as_whole(void)
{
	static struct heard hw, hm;
	char path[96], lw[96], lm[96], cw[96], cm[96];
	struct kx_traceparts tw, tm;
	size_t n;

	capture(path, sizeof(path), "cap");
	snprintf(lw, sizeof(lw), "%s/lw", dir);
	snprintf(lm, sizeof(lm), "%s/lm", dir);
	snprintf(cw, sizeof(cw), "%s/w.json", dir);
	snprintf(cm, sizeof(cm), "%s/m.json", dir);
	CHECK(mkdir(lw, 0700) == 0 && mkdir(lm, 0700) == 0);
	tw = parts(&hw, lw, cw, path);
	tm = parts(&hm, lm, cm, path);
	CHECK_EQ_U(write_windowed(&tw, path, SPLIT), 0);
	CHECK_EQ_U(write_whole(&tm, path), 0);
	n = hm.nwrote / 2;
	printf("# %zu parts\n", n);
	CHECK(n >= 3);
	CHECK_EQ_U(hw.nwrote, hm.nwrote);
	CHECK_EQ_U(hw.nsaid, 1);
	CHECK_EQ_U(hm.nsaid, 1);
	CHECK_STR(hw.said[0], hm.said[0]);
	CHECK(strstr(hw.said[0], "events are more than 1500 per trace") != NULL);
	for (size_t i = 0; i < hw.nwrote && i < hm.nwrote; i++) {
		CHECK(same_files(hw.wrote[i], hm.wrote[i], 0));
		CHECK(strstr(hw.wrote[i], i % 2 ? ".json" : ".xplane.pb") != NULL);
	}
	CHECK(strstr(hw.wrote[1], "/w.0001.json") != NULL);
	clean(&hw, lw);
	clean(&hm, lm);
	unlink(path);
}

/* A Chrome file alone, written a slice at a time: each part holds the
 * lines the part read whole holds. */
static void test_slices_as_whole(void)
{
	static struct heard hw, hm;
	char path[96], cw[96], cm[96];
	struct kx_traceparts tw, tm;

	capture(path, sizeof(path), "sliced");
	snprintf(cw, sizeof(cw), "%s/sw.json", dir);
	snprintf(cm, sizeof(cm), "%s/sm.json", dir);
	tw = parts(&hw, NULL, cw, path);
	tm = parts(&hm, NULL, cm, path);
	CHECK_EQ_U(write_windowed(&tw, path, SPLIT / 4), 0);
	CHECK_EQ_U(write_whole(&tm, path), 0);
	CHECK(hm.nwrote >= 3);
	CHECK_EQ_U(hw.nwrote, hm.nwrote);
	for (size_t i = 0; i < hw.nwrote && i < hm.nwrote; i++)
		CHECK(same_files(hw.wrote[i], hm.wrote[i], 1));
	clean(&hw, NULL);
	clean(&hm, NULL);
	unlink(path);
}

/* A part's Chrome file that cannot be written (a folder): refused before
 * any part is written. */
static void test_refused(void)
{
	static struct heard h;
	char path[96], c[96], bad[96];
	struct kx_traceparts t;

	capture(path, sizeof(path), "refused");
	snprintf(c, sizeof(c), "%s/r.json", dir);
	snprintf(bad, sizeof(bad), "%s/r.0002.json", dir);
	CHECK(mkdir(bad, 0700) == 0);
	t = parts(&h, NULL, c, path);
	CHECK_EQ_U(write_windowed(&t, path, SPLIT), 2);
	CHECK_EQ_U(h.nwrote, 0);
	CHECK_EQ_U(h.nsaid, 1);
	CHECK(strstr(h.said[0], "r.0002.json") != NULL);
	snprintf(c, sizeof(c), "%s/r.0001.json", dir);
	CHECK(access(c, F_OK) != 0);
	rmdir(bad);
	unlink(path);
}

/* Part 3 fails once parts 1 and 2 are written: they stay, said; the
 * parts after it are not written. */
static void test_failed_part(void)
{
	static struct heard h;
	char path[96], l[96], c[96], bad[96], after[96];
	struct kx_traceparts t;

	capture(path, sizeof(path), "failed");
	snprintf(l, sizeof(l), "%s/lf", dir);
	snprintf(c, sizeof(c), "%s/f.json", dir);
	snprintf(bad, sizeof(bad), "%s/f.0003.json", dir);
	snprintf(after, sizeof(after), "%s/f.0004.json", dir);
	CHECK(mkdir(l, 0700) == 0);
	h.block = bad;
	t = parts(&h, l, c, path);
	CHECK_EQ_U(write_windowed(&t, path, SPLIT), 1);
	CHECK_EQ_U(h.nwrote, 4);
	CHECK_EQ_U(h.nsaid, 3);
	CHECK(strstr(h.said[1], "f.0003.json") != NULL);
	CHECK(strstr(h.said[2], "parts 1 to 2 of ") != NULL &&
	      strstr(h.said[2], "were written and stay; part 3 and later were not") != NULL);
	CHECK(access(after, F_OK) != 0);
	rmdir(bad);
	clean(&h, l);
	unlink(path);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kx-tracewin.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_windows_as_whole);
	RUN(test_slices_as_whole);
	RUN(test_refused);
	RUN(test_failed_part);
	rmdir(dir);
	KXT_EXIT();
}
