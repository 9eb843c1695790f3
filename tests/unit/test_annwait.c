/*
 * Late annotation probes (capture/annwait.h): the hold read from a
 * process's environment, the late rule, the capture info's round trip
 * through the record format, and the warning every output shows.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kxtest.h"
#include "analysis/warnings.h"
#include "capture/annwait.h"
#include "io/tlv.h"

#define MS 1000000ull

/* A directory standing in for /proc/PID with env as its environ file
 * (NUL-separated, len bytes). Its fd, or -1. */
static int fake_proc(char *dir, const char *env, size_t len)
{
	char path[300];
	FILE *f;

	strcpy(dir, "/tmp/kxtest-annwait.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/environ", dir);
	f = fopen(path, "w");
	if (!f || fwrite(env, 1, len, f) != len || fclose(f))
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY);
}

static uint32_t hold_of(const char *env, size_t len)
{
	char dir[64], path[300];
	int fd = fake_proc(dir, env, len);
	uint32_t hold = fd < 0 ? 999999 : kx_annwait_hold_ms(fd);

	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/environ", dir);
	unlink(path);
	rmdir(dir);
	return hold;
}

static void test_hold(void)
{
	static const char held[] = "A=1\0KXPROF_ANNOTATE_WAIT=123:2000\0B=2";
	static const char capped[] = "KXPROF_ANNOTATE_WAIT=123:99999";
	static const char bad[] = "KXPROF_ANNOTATE_WAIT=123";
	static const char other[] = "XKXPROF_ANNOTATE_WAIT=1:5\0PATH=/bin";

	CHECK_EQ_U(hold_of(held, sizeof(held)), 2000);
	CHECK_EQ_U(hold_of(capped, sizeof(capped)), KX_ANN_WAIT_MAX_MS);
	CHECK_EQ_U(hold_of(bad, sizeof(bad)), 0);
	CHECK_EQ_U(hold_of(other, sizeof(other)), 0);
	CHECK_EQ_U(kx_annwait_hold_ms(-1), 0);
}

static void test_late_rule(void)
{
	struct kx_ann_late l;

	memset(&l, 0, sizeof(l));
	/* held 2000 ms: attached within it is in time, past it is late */
	CHECK(!kx_annwait_late(1000 * MS, 2999 * MS, 2000, &l));
	CHECK(!kx_annwait_late(1000 * MS, 3000 * MS, 2000, &l));
	CHECK(kx_annwait_late(1000 * MS, 3500 * MS, 2000, &l));
	CHECK_EQ_U(l.map_ns, 1000 * MS);
	CHECK_EQ_U(l.from_ns, 3000 * MS);
	CHECK_EQ_U(l.to_ns, 3500 * MS);
	CHECK_EQ_U(l.hold_ms, 2000);
	/* not held: missing from the map on, past the scan's few ms */
	CHECK(!kx_annwait_late(1000 * MS, 1000 * MS + KX_ANN_UNHELD_LATE_MS * MS, 0, &l));
	CHECK(kx_annwait_late(1000 * MS, 1200 * MS, 0, &l));
	CHECK_EQ_U(l.from_ns, 1000 * MS);
	CHECK_EQ_U(l.to_ns, 1200 * MS);
	/* a clock that went back is never late */
	CHECK(!kx_annwait_late(5000 * MS, 1000 * MS, 0, &l));
}

static struct kx_capinfo ci, got;

static void late_capinfo(void)
{
	memset(&ci, 0, sizeof(ci));
	ci.start_mono_ns = 10000 * MS;
	ci.ann.enabled = 1;
	ci.ann.nlate = 2;
	ci.ann.more_late = 3;
	ci.ann.late[0] = (struct kx_ann_late){.pid = 4242,
	                                      .hold_ms = 2000,
	                                      .comm = "trainer",
	                                      .path = "/opt/lib/libkxprof_annotate.so",
	                                      .map_ns = 10500 * MS,
	                                      .from_ns = 12500 * MS,
	                                      .to_ns = 13250 * MS};
	ci.ann.late[1] = (struct kx_ann_late){.pid = 7,
	                                      .comm = "py",
	                                      .path = "/x.so",
	                                      .map_ns = 11000 * MS,
	                                      .from_ns = 11000 * MS,
	                                      .to_ns = 11300 * MS};
}

static void test_roundtrip(void)
{
	struct kx_bytes b = {0};

	late_capinfo();
	kx_tlv_capinfo_encode(&b, &ci);
	CHECK(!b.oom);
	CHECK(kx_tlv_capinfo_decode(b.p, b.len, &got) == 0);
	free(b.p);
	CHECK_EQ_U(got.ann.nlate, 2);
	CHECK_EQ_U(got.ann.more_late, 3);
	CHECK(memcmp(&got.ann.late[0], &ci.ann.late[0], sizeof(ci.ann.late[0])) == 0);
	CHECK(memcmp(&got.ann.late[1], &ci.ann.late[1], sizeof(ci.ann.late[1])) == 0);
}

static char said[4][1024];
static int nsaid;

static void keep(void *ctx, const char *msg)
{
	(void)ctx;
	if (nsaid < 4)
		snprintf(said[nsaid], sizeof(said[0]), "%s", msg);
	nsaid++;
}

static void test_warning(void)
{
	late_capinfo();
	nsaid = 0;
	kx_capture_warnings(&ci, 0, keep, NULL);
	CHECK_EQ_U(nsaid, 3);
	CHECK_STR(said[0],
	          "annotations of pid 4242 (trainer) may be missing from 2.500 s to 3.250 s into "
	          "the capture: its copy of the annotation library /opt/lib/libkxprof_annotate.so "
	          "was attached late (it waited 2000 ms for its probes and went on untraced; they "
	          "attached 2750 ms after it was mapped; the machine was busy or the capture slow "
	          "to attach); counts of its ranges and marks may be short");
	CHECK(strstr(said[1], "annotations of pid 7 (py) may be missing from 1.000 s to 1.300 s"));
	CHECK(strstr(said[1], "not asked to wait for its probes, which attached 300 ms after"));
	CHECK_STR(said[2],
	          "3 more copies of the annotation library were attached late than listed: "
	          "their processes' annotations may be missing for a while");
}

int main(void)
{
	RUN(test_hold);
	RUN(test_late_rule);
	RUN(test_roundtrip);
	RUN(test_warning);
	KXT_EXIT();
}
