/*
 * Unit tests of the split plan of a conversion (user/export/splitplan.c):
 * each part's Chrome file name (NAME.0002.json.gz for NAME.json.gz, .json,
 * .gz or no suffix; wider numbers past 9999 parts), its run suffix and note
 * in seconds from the capture start, its window; a name too long, a part
 * named as the input and a split trace on standard output refused with a
 * message; the whole capture as one output.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/splitplan.h"
#include "kxtest.h"

#define S 1000000000ull

static struct kx_window win[3] = {
        {0, 11 * S, 10 * S + 5, 10 * S + 900, 40, 0},
        {11 * S, 12 * S, 11 * S, 11 * S + 999, 50, 1},
        {12 * S, 0, 12 * S + 1, 13 * S + S / 2, 10, 2},
};
static struct kx_windows plan = {win, 3, 100, 1, win, 3};
static struct kx_capinfo ci = {.start_mono_ns = 10 * S};

/* Part k's Chrome file name for chrome, as a plan of n windows names it. */
static const char *name_of(const char *chrome, size_t k, size_t n)
{
	static struct kx_split_part pt;
	static char err[512];
	struct kx_windows wn = plan;
	struct kx_window *many = calloc(n, sizeof(*many));
	struct kx_xspace_opts xo = {0};
	int rc;

	wn.w = many;
	wn.n = n;
	rc = kx_split_part_of(&ci, &wn, k, &xo, chrome, NULL, &pt, err, sizeof(err));
	free(many);
	return rc ? err : pt.chrome;
}

static void part_names(void)
{
	CHECK_STR(name_of("t.json.gz", 1, 3), "t.0002.json.gz");
	CHECK_STR(name_of("t.json", 0, 3), "t.0001.json");
	CHECK_STR(name_of("dir/t.gz", 2, 3), "dir/t.0003.gz");
	CHECK_STR(name_of("trace", 0, 3), "trace.0001");
	CHECK_STR(name_of("t.json", 41, 12345), "t.00042.json");
}

static void part_window_and_note(void)
{
	struct kx_xspace_opts xo = {.device_planes_as_gpu = 1};
	struct kx_split_part pt;
	char err[512];

	CHECK(!kx_split_part_of(&ci, &plan, 1, &xo, NULL, NULL, &pt, err, sizeof(err)));
	CHECK(pt.is_part && !pt.chrome);
	CHECK_STR(pt.suffix, "_part0002_1.000s-2.000s");
	CHECK(pt.xo.device_planes_as_gpu && pt.xo.note == pt.note);
	CHECK_EQ_U(pt.xo.from_mono_ns, 11 * S);
	CHECK_EQ_U(pt.xo.to_mono_ns, 12 * S);
	CHECK(!strncmp(pt.note,
	               "part 2 of 3 of a capture split by time (--split-events): the 50 events",
	               70));
	CHECK_EQ_U(pt.cp.index, 2);
	CHECK_EQ_U(pt.cp.count, 3);
	CHECK_EQ_U(pt.cp.events, 50);
	/* The first and last parts span from their first event and to their last. */
	CHECK(!kx_split_part_of(&ci, &plan, 0, &xo, NULL, NULL, &pt, err, sizeof(err)));
	CHECK_STR(pt.suffix, "_part0001_0.000s-1.000s");
	CHECK(!kx_split_part_of(&ci, &plan, 2, &xo, NULL, NULL, &pt, err, sizeof(err)));
	CHECK_STR(pt.suffix, "_part0003_2.000s-3.500s");
}

static void refused(void)
{
	char dir[] = "/tmp/kxt_splitplan_XXXXXX", in[64], out[64], longp[PATH_MAX + 16];
	struct kx_xspace_opts xo = {0};
	struct kx_split_part pt;
	char err[512];
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(in, sizeof(in), "%s/c.0002.json", dir);
	snprintf(out, sizeof(out), "%s/c.json", dir);
	f = fopen(in, "w");
	CHECK(f);
	fclose(f);
	/* Part 2 would overwrite the input: refused before any part is written. */
	CHECK(kx_split_check(&ci, &plan, &xo, out, 30, in, err, sizeof(err)) == -1);
	CHECK(strstr(err, in) != NULL);
	CHECK(!kx_split_check(&ci, &plan, &xo, out, 30, "other.kxp", err, sizeof(err)));
	CHECK(kx_split_check(&ci, &plan, &xo, "-", 30, in, err, sizeof(err)) == -1);
	CHECK_STR(err, "100 events need 3 traces of at most 30 (--split-events): give --chrome a "
	               "file name for the parts, or --split-events 0 for one trace on standard "
	               "output");
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	CHECK(kx_split_part_of(&ci, &plan, 0, &xo, longp, NULL, &pt, err, sizeof(err)) == -1);
	CHECK(!strncmp(err, "output path too long: aaa", 25));
	unlink(in);
	rmdir(dir);
}

static void whole(void)
{
	struct kx_xspace_opts xo = {.from_mono_ns = 7};
	struct kx_split_part pt;

	memset(&pt, 0xff, sizeof(pt));
	kx_split_whole(&pt, &xo, "all.json");
	CHECK(!pt.is_part && !pt.suffix[0]);
	CHECK_STR(pt.chrome, "all.json");
	CHECK_EQ_U(pt.xo.from_mono_ns, 7);
}

int main(void)
{
	RUN(part_names);
	RUN(part_window_and_note);
	RUN(refused);
	RUN(whole);
	KXT_EXIT();
}
