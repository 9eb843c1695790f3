/*
 * The work queue's promise (user/util/workq.h): what the record reader, the
 * XSpace writer and the gzip writer produce does not depend on the thread
 * count. A generated capture (ioctls with and without arguments, tasks,
 * jobs, many chunks) is read, exported as XSpace and as Chrome .json.gz
 * with 1 thread (inline) and with several, and the stores and the output
 * bytes are compared; the .json.gz must inflate (one gzip member) to the
 * plain .json. Also a chunk corrupted mid-file: both read the same
 * prefix and say the same thing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "export/chrome.h"
#include "io/kxp.h"
#include "kxp_gen.h"
#include "kxtest.h"
#include "kxtest_analysis.h"
#include "model/store.h"
#include "util/workq.h"
#include "export/xspace.h"

#define NIOC 200000

static int same_store(const struct kx_store *a, const struct kx_store *b)
{
	if (kx_store_ioctl_count(a) != kx_store_ioctl_count(b) ||
	    kx_store_task_count(a) != kx_store_task_count(b) ||
	    kx_store_job_count(a) != kx_store_job_count(b) ||
	    kx_store_not_stored(a) != kx_store_not_stored(b))
		return 0;
	for (size_t i = 0; i < kx_store_ioctl_count(a); i++) {
		const struct kx_ioctl *x = kx_store_ioctl(a, i), *y = kx_store_ioctl(b, i);
		const uint8_t *ax = kx_store_arg(a, x), *ay = kx_store_arg(b, y);
		size_t n = (size_t)x->arg_in_len + x->arg_out_len;

		if (!gen_same_ioctl(x, y) || x->arg_in_len != y->arg_in_len ||
		    x->arg_out_len != y->arg_out_len || !ax != !ay || (ax && memcmp(ax, ay, n)))
			return 0;
	}
	for (size_t i = 0; i < kx_store_task_count(a); i++)
		if (memcmp(kx_store_task(a, i), kx_store_task(b, i), sizeof(struct kx_task)))
			return 0;
	for (size_t i = 0; i < kx_store_job_count(a); i++)
		if (!gen_same_job(kx_store_job(a, i), kx_store_job(b, i)))
			return 0;
	return 1;
}

/* Reads path with the given thread count; result and message in res/err. */
static struct kx_store *load(const char *path, int threads, struct kx_capinfo *ci,
                             struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct kx_store *s = kx_store_new((size_t)1 << 30);

	kx_workq_set_threads(threads);
	if (s && kx_kxp_read(path, s, ci, res, err, errlen)) {
		kx_store_free(s);
		s = NULL;
	}
	kx_workq_set_threads(0);
	return s;
}

static uint8_t *slurp_gz(const char *path, size_t *len)
{
	gzFile f = gzopen(path, "rb");
	size_t cap = 1 << 20, n = 0;
	uint8_t *p = malloc(cap);
	int k;

	if (!f || !p) {
		free(p);
		if (f)
			gzclose(f);
		return NULL;
	}
	while ((k = gzread(f, p + n, (unsigned int)(cap - n))) > 0) {
		n += (size_t)k;
		if (n == cap) {
			uint8_t *q = realloc(p, cap * 2);

			if (!q)
				break;
			p = q;
			cap *= 2;
		}
	}
	gzclose(f);
	*len = n;
	return p;
}

/* Exactly one gzip member: inflate stops at its end with nothing after it. */
static int one_member(const uint8_t *p, size_t n)
{
	static uint8_t out[1 << 16];
	z_stream z;
	int zr;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + 15) != Z_OK)
		return 0;
	z.next_in = (Bytef *)p;
	z.avail_in = (uInt)n;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zr = inflate(&z, Z_NO_FLUSH);
	} while (zr == Z_OK);
	inflateEnd(&z);
	if (zr != Z_STREAM_END || z.avail_in)
		printf("# inflate: %d, %u of %zu bytes left\n", zr, z.avail_in, n);
	return zr == Z_STREAM_END && z.avail_in == 0;
}

static struct gen g;
static char kxp_path[256];

static void test_read(void)
{
	struct kx_kxp_read_result r1, r3;
	struct kx_capinfo c1, c3;
	struct kx_store *s1, *s3;
	char e1[512], e3[512];

	s1 = load(kxp_path, 1, &c1, &r1, e1, sizeof(e1));
	s3 = load(kxp_path, 3, &c3, &r3, e3, sizeof(e3));
	CHECK(s1 && s3);
	CHECK(r1.chunks > 8);
	CHECK_EQ_U(kx_store_ioctl_count(s1), g.nioc);
	CHECK(gen_is_prefix(&g, s1));
	CHECK(same_store(s1, s3));
	CHECK_EQ_U(r1.chunks, r3.chunks);
	CHECK_STR(e1, e3);
	kx_store_free(s1);
	kx_store_free(s3);
}

/* A chunk in the middle fails its CRC: it alone is skipped, the same store, the same message. */
static void test_read_corrupt(void)
{
	struct kx_kxp_read_result r1, r3;
	struct kx_capinfo c1, c3;
	struct kx_store *s1, *s3;
	char path[256], e1[512], e3[512];
	size_t len, off, k = 0;
	uint8_t *buf = gen_slurp(kxp_path, &len);
	FILE *f;

	CHECK(buf);
	/* the sixth chunk: skip the header, then chunks by their lengths */
	off = buf[12] | buf[13] << 8 | buf[14] << 16 | (size_t)buf[15] << 24;
	while (k++ < 5)
		off += 32 + (buf[off + 12] | buf[off + 13] << 8 | buf[off + 14] << 16 |
		             (size_t)buf[off + 15] << 24);
	CHECK(off + 40 < len);
	buf[off + 32 + 10] ^= 0x55;
	gen_tmp_path(path, sizeof(path), "par-bad");
	f = fopen(path, "wb");
	CHECK(f && fwrite(buf, 1, len, f) == len);
	fclose(f);
	free(buf);
	s1 = load(path, 1, &c1, &r1, e1, sizeof(e1));
	s3 = load(path, 3, &c3, &r3, e3, sizeof(e3));
	CHECK(s1 && s3);
	CHECK_EQ_U(r1.ncorrupt, 1);
	CHECK_EQ_U(r1.corrupt[0].chunk, 6);
	CHECK_EQ_U(r1.truncated, 0);
	CHECK(strstr(e1, "data checksum mismatch") != NULL);
	CHECK(same_store(s1, s3));
	CHECK_EQ_U(r1.chunks, r3.chunks);
	CHECK_EQ_U(r1.bad_tail_bytes, r3.bad_tail_bytes);
	CHECK_STR(e1, e3);
	unlink(path);
	kx_store_free(s1);
	kx_store_free(s3);
}

static void test_xspace_same(void)
{
	struct kx_kxp_read_result r;
	struct kx_capinfo ci;
	struct kx_store *s;
	uint8_t *b1, *b3;
	size_t n1, n3;
	char err[512];

	s = load(kxp_path, 1, &ci, &r, err, sizeof(err));
	CHECK(s);
	kx_workq_set_threads(1);
	CHECK(!kxt_xspace_serialize(s, &ci, NULL, &b1, &n1, err, sizeof(err)));
	kx_workq_set_threads(3);
	CHECK(!kxt_xspace_serialize(s, &ci, NULL, &b3, &n3, err, sizeof(err)));
	kx_workq_set_threads(0);
	CHECK(n1 > (size_t)NIOC * 20);
	CHECK_EQ_U(n1, n3);
	CHECK(!memcmp(b1, b3, n1));
	free(b1);
	free(b3);
	kx_store_free(s);
}

static void test_chrome_gz_same(void)
{
	struct kx_kxp_read_result r;
	struct kx_capinfo ci;
	struct kx_store *s;
	char p1[300], p3[300], pj[300], err[512];
	uint8_t *g1, *g3, *j, *z;
	size_t n1, n3, nj, nz;

	s = load(kxp_path, 1, &ci, &r, err, sizeof(err));
	CHECK(s);
	/* gen_tmp_path ends in .kxp: these must end as the format says */
	snprintf(p1, sizeof(p1), "%s.1.json.gz", kxp_path);
	snprintf(p3, sizeof(p3), "%s.3.json.gz", kxp_path);
	snprintf(pj, sizeof(pj), "%s.json", kxp_path);
	kx_workq_set_threads(1);
	CHECK(!kxt_chrome_write(s, &ci, p1, err, sizeof(err)));
	CHECK(!kxt_chrome_write(s, &ci, pj, err, sizeof(err)));
	kx_workq_set_threads(3);
	CHECK(!kxt_chrome_write(s, &ci, p3, err, sizeof(err)));
	kx_workq_set_threads(0);
	g1 = gen_slurp(p1, &n1);
	g3 = gen_slurp(p3, &n3);
	j = gen_slurp(pj, &nj);
	z = slurp_gz(p3, &nz);
	CHECK(g1 && g3 && j && z);
	CHECK(nj > (size_t)3 << 20); /* several gzip blocks */
	CHECK_EQ_U(n1, n3);
	CHECK(!memcmp(g1, g3, n1));
	CHECK(one_member(g3, n3));
	CHECK_EQ_U(nz, nj);
	CHECK(!memcmp(z, j, nj));
	free(g1);
	free(g3);
	free(j);
	free(z);
	unlink(p1);
	unlink(p3);
	unlink(pj);
	kx_store_free(s);
}

int main(void)
{
	gen_tmp_path(kxp_path, sizeof(kxp_path), "par.kxp");
	gen_events(&g, NIOC, 11);
	if (gen_write(kxp_path, &g, 0, 1)) {
		printf("FAIL setup: cannot write %s\n", kxp_path);
		return 1;
	}
	RUN(test_read);
	RUN(test_read_corrupt);
	RUN(test_xspace_same);
	RUN(test_chrome_gz_same);
	unlink(kxp_path);
	gen_free(&g);
	KXT_EXIT();
}
