/*
 * The parallel gzip writer (util/pgz) with each engine (ISA-L, zlib): the
 * output is one gzip member that zlib inflates back to the exact input
 * (empty, tiny, compressible and incompressible input over many blocks,
 * blocks shorter than the history window), its bytes do not depend on the
 * thread count, and a write error comes back with its errno.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "kxtest.h"
#include "util/pgz.h"
#include "util/workq.h"

static const enum kx_pgz_engine engines[] = {KX_PGZ_ISAL, KX_PGZ_ZLIB};

/* n bytes: JSON-like text (compressible) or, with noise, random bytes. */
static uint8_t *make_input(size_t n, int noise)
{
	uint8_t *p = malloc(n ? n : 1);
	uint32_t r = 2463534242u;
	size_t i = 0;

	while (p && i < n) {
		r ^= r << 13, r ^= r >> 17, r ^= r << 5;
		if (noise) {
			p[i++] = (uint8_t)r;
			continue;
		}
		char line[96];
		int k = snprintf(line, sizeof(line),
		                 "{\"name\":\"KVM_RUN\",\"ph\":\"X\",\"ts\":%u.%03u,\"dur\":%u},\n",
		                 r % 100000, r % 1000, r % 5000);

		for (int j = 0; j < k && i < n; j++)
			p[i++] = (uint8_t)line[j];
	}
	return p;
}

/* Writes in into a temporary file with the engine, cut in blocks of the given
 * sizes (cycled); the file's bytes in *out. 0, or -1. */
static int pgz_file(enum kx_pgz_engine e, const uint8_t *in, size_t n, const size_t *cuts,
                    int ncuts, uint8_t **out, size_t *outn)
{
	char path[] = "/tmp/kxtest-pgz.XXXXXX", msg[128];
	int fd = mkstemp(path), err = 0, rc;
	struct kx_pgz *z;
	size_t off = 0, k = 0;
	FILE *f;

	if (fd < 0)
		return -1;
	unlink(path);
	z = kx_pgz_new_engine(fd, 1, e);
	if (!z) {
		close(fd);
		return -1;
	}
	while (off < n) {
		size_t len = cuts[k++ % (size_t)ncuts];
		char *b = kx_pgz_next(z);

		if (len > n - off)
			len = n - off;
		if (len > KX_PGZ_BLOCK)
			len = KX_PGZ_BLOCK;
		memcpy(b, in + off, len);
		off += len;
		kx_pgz_put(z, len, off == n);
	}
	rc = kx_pgz_finish(z, &err, msg, sizeof(msg));
	kx_pgz_free(z);
	*outn = (size_t)lseek(fd, 0, SEEK_END);
	*out = malloc(*outn ? *outn : 1);
	f = fdopen(fd, "rb");
	if (rc || !*out || !f || fseek(f, 0, SEEK_SET) || fread(*out, 1, *outn, f) != *outn)
		rc = -1;
	if (f)
		fclose(f);
	else
		close(fd);
	return rc;
}

/* 1 when buf is one gzip member inflating to exactly want. */
static int inflates_to(const uint8_t *buf, size_t n, const uint8_t *want, size_t wn)
{
	uint8_t *got = malloc(wn + 1);
	z_stream s = {0};
	int ok;

	if (!got || inflateInit2(&s, 31) != Z_OK) {
		free(got);
		return 0;
	}
	s.next_in = (Bytef *)buf;
	s.avail_in = (uInt)n;
	s.next_out = got;
	s.avail_out = (uInt)wn + 1;
	ok = inflate(&s, Z_FINISH) == Z_STREAM_END && s.avail_in == 0 && s.total_out == wn &&
	     !memcmp(got, want, wn);
	inflateEnd(&s);
	free(got);
	return ok;
}

static void round_trip(size_t n, int noise, const size_t *cuts, int ncuts)
{
	uint8_t *in = make_input(n, noise);

	CHECK(in);
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		uint8_t *out = NULL;
		size_t on = 0;
		int ok = pgz_file(engines[i], in, n, cuts, ncuts, &out, &on) == 0 &&
		         inflates_to(out, on, in, n);

		if (!ok)
			printf("INFO %s: %s, %zu bytes\n", kxt_cur, kx_pgz_engine_name(engines[i]),
			       n);
		free(out);
		if (!ok) {
			free(in);
			CHECK(ok);
		}
	}
	free(in);
}

static void empty_and_tiny(void)
{
	static const size_t one[] = {KX_PGZ_BLOCK};

	round_trip(0, 0, one, 1);
	round_trip(1, 0, one, 1);
	round_trip(100, 1, one, 1);
}

static void many_blocks(void)
{
	static const size_t full[] = {KX_PGZ_BLOCK};

	round_trip((size_t)5 * KX_PGZ_BLOCK + 12345, 0, full, 1);
	round_trip((size_t)3 * KX_PGZ_BLOCK + 7, 1, full, 1); /* incompressible */
}

/* Blocks shorter than the 32 KiB history: the history spans several of them. */
static void short_blocks(void)
{
	static const size_t cuts[] = {1, 5000, 40000, 7, 32768, 1 << 20, 100};

	round_trip((size_t)2 * KX_PGZ_BLOCK, 0, cuts, 7);
	round_trip(300000, 1, cuts, 7);
}

static void thread_count_independent(void)
{
	static const size_t full[] = {KX_PGZ_BLOCK, 4096};
	size_t n = (size_t)6 * KX_PGZ_BLOCK;
	uint8_t *in = make_input(n, 0);

	CHECK(in);
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		uint8_t *a = NULL, *b = NULL;
		size_t an = 0, bn = 0;
		int ok;

		kx_workq_set_threads(1);
		ok = pgz_file(engines[i], in, n, full, 2, &a, &an) == 0;
		kx_workq_set_threads(3);
		ok = ok && pgz_file(engines[i], in, n, full, 2, &b, &bn) == 0;
		kx_workq_set_threads(0);
		ok = ok && an == bn && !memcmp(a, b, an) && inflates_to(a, an, in, n);
		free(a);
		free(b);
		if (!ok) {
			free(in);
			CHECK(ok);
		}
	}
	free(in);
}

static void write_error_kept(void)
{
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		int p[2], err = 0;
		char msg[128];
		struct kx_pgz *z;
		char *b;

		CHECK(pipe(p) == 0);
		close(p[0]); /* writes fail with EPIPE (SIGPIPE ignored below) */
		z = kx_pgz_new_engine(p[1], 1, engines[i]);
		CHECK(z);
		b = kx_pgz_next(z);
		memset(b, 'a', 1000);
		kx_pgz_put(z, 1000, 1);
		CHECK(kx_pgz_finish(z, &err, msg, sizeof(msg)) == -1);
		CHECK_EQ_U(err, EPIPE);
		kx_pgz_free(z);
		close(p[1]);
	}
}

static void engine_from_env(void)
{
	setenv("KXPROF_GZIP", "zlib", 1);
	CHECK(kx_pgz_engine_env() == KX_PGZ_ZLIB);
	unsetenv("KXPROF_GZIP");
	CHECK(kx_pgz_engine_env() == KX_PGZ_ISAL);
	CHECK_STR(kx_pgz_engine_name(KX_PGZ_ISAL), "isa-l");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(empty_and_tiny);
	RUN(many_blocks);
	RUN(short_blocks);
	RUN(thread_count_independent);
	RUN(write_error_kept);
	RUN(engine_from_env);
	KXT_EXIT();
}
