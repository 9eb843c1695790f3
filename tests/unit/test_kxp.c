/*
 * Unit tests of the .kxp record file: full round trips (typical and extreme
 * field values), files cut at every length, flipped bytes (each chunk in
 * turn: only that chunk is lost), garbage, wrong
 * version, empty and missing files, additions a later writer may make, and
 * write errors.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "kxtest.h"
#include "kxp_gen.h"

static struct kx_capinfo ci_got, ci_want;

static int same_capinfo(const struct kx_capinfo *a, const struct kx_capinfo *b)
{
	if (strcmp(a->hostname, b->hostname) || strcmp(a->kernel, b->kernel) ||
	    strcmp(a->cmdline, b->cmdline) || a->ndevices != b->ndevices || a->nhooks != b->nhooks)
		return 0;
	if (memcmp(&a->clock_start, &b->clock_start, sizeof(a->clock_start)) ||
	    memcmp(&a->clock_stop, &b->clock_stop, sizeof(a->clock_stop)))
		return 0;
	if (a->start_mono_ns != b->start_mono_ns || a->stop_mono_ns != b->stop_mono_ns ||
	    a->emitted != b->emitted || a->received != b->received || a->dropped != b->dropped ||
	    a->not_stored != b->not_stored || a->inflight_full != b->inflight_full ||
	    a->pidset_full != b->pidset_full || a->arg_faults != b->arg_faults ||
	    a->bpf_missed != b->bpf_missed || a->ringbuf_bytes != b->ringbuf_bytes ||
	    a->all_pids != b->all_pids || a->job_emitted != b->job_emitted ||
	    a->job_received != b->job_received || a->job_dropped != b->job_dropped ||
	    a->job_done_lost != b->job_done_lost || a->ndrvcalls != b->ndrvcalls)
		return 0;
	for (uint32_t i = 0; i < a->ndrvcalls; i++) {
		const struct kx_drvcall_stat *x = &a->drvcalls[i], *y = &b->drvcalls[i];

		if (strcmp(x->fn, y->fn) || strcmp(x->mech, y->mech) || x->calls != y->calls ||
		    x->sum_ns != y->sum_ns || x->max_ns != y->max_ns ||
		    memcmp(x->slots, y->slots, sizeof(x->slots)))
			return 0;
	}
	for (uint32_t i = 0; i < a->ndevices; i++) {
		const struct kx_device *x = &a->devices[i], *y = &b->devices[i];

		if (x->dev != y->dev || x->fkind != y->fkind || x->drv != y->drv ||
		    x->any_minor != y->any_minor || strcmp(x->node, y->node) ||
		    strcmp(x->driver, y->driver))
			return 0;
	}
	for (uint32_t i = 0; i < a->nhooks; i++) {
		const struct kx_hook *x = &a->hooks[i], *y = &b->hooks[i];

		if (strcmp(x->name, y->name) || strcmp(x->mech, y->mech) || x->state != y->state ||
		    strcmp(x->why, y->why))
			return 0;
	}
	return 1;
}

static void test_roundtrip(void)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct gen g;
	char path[256], err[512];
	size_t len;
	uint8_t *buf;

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "rt");
	gen_events(&g, 30000, 7);
	CHECK(gen_write(path, &g, 0, 1) == 0);
	CHECK(kx_kxp_read(path, s, &ci_got, &res, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK_EQ_U(res.truncated, 0);
	CHECK_EQ_U(res.bad_tail_bytes, 0);
	CHECK(res.chunks >= 3); /* several event chunks and the trailer */
	CHECK_EQ_U(kx_store_ioctl_count(s), g.nioc);
	CHECK_EQ_U(kx_store_task_count(s), g.ntask);
	CHECK_EQ_U(kx_store_job_count(s), g.njob);
	CHECK(g.njob > 9000);
	CHECK(gen_is_prefix(&g, s));
	gen_capinfo(&ci_want, 1);
	CHECK(same_capinfo(&ci_got, &ci_want));
	CHECK_STR(kx_store_comm(s, g.task[g.ntask - 1].tid), g.task[g.ntask - 1].comm);

	/* Same bytes from memory give the same answer. */
	buf = gen_slurp(path, &len);
	CHECK(buf);
	kx_store_reset(s);
	CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(kx_store_ioctl_count(s), g.nioc);
	CHECK(same_capinfo(&ci_got, &ci_want));
	free(buf);
	unlink(path);
	gen_free(&g);
	kx_store_free(s);
}

/* bytes_written matches the file, flush makes events readable before close. */
static void test_flush_and_size(void)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct kx_kxp_writer *w;
	struct kx_ioctl e;
	char path[256], err[512];
	size_t len;
	uint8_t *buf;

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "flush");
	gen_capinfo(&ci_want, 0);
	w = kx_kxp_create(path, &ci_want, err, sizeof(err));
	CHECK(w);
	memset(&e, 0, sizeof(e));
	for (int i = 0; i < 10; i++) {
		e.ts = 100 + (uint64_t)i;
		CHECK(kx_kxp_add_ioctl(w, &e, NULL) == 0);
	}
	CHECK(kx_kxp_flush(w) == 0);
	CHECK(kx_kxp_flush(w) == 0); /* nothing pending: no empty chunk */
	buf = gen_slurp(kx_kxp_writing_path(w), &len);
	CHECK(buf);
	CHECK_EQ_U(len, kx_kxp_bytes_written(w));
	CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == 0);
	free(buf);
	CHECK_EQ_U(res.truncated, 1);
	CHECK_EQ_U(res.chunks, 1);
	CHECK_EQ_U(kx_store_ioctl_count(s), 10);
	CHECK(strstr(err, "no trailer") != NULL);
	CHECK(same_capinfo(&ci_got, &ci_want));
	CHECK(kx_kxp_close(w, &ci_want, err, sizeof(err)) == 0);
	unlink(path);
	kx_store_free(s);
}

/* Every cut length: rejected with a message, or a prefix marked truncated, never corrupt. */
static void cut_everywhere(const struct gen *g, const uint8_t *buf, size_t len, size_t step,
                           const char *name)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	size_t prev = 0;
	char err[512];

	CHECK(s);
	for (size_t cut = 0;; cut = cut + step < len ? cut + step : len) {
		size_t n;
		int rc;

		kx_store_reset(s);
		err[0] = 'x';
		rc = kx_kxp_read_mem(buf, cut, s, &ci_got, &res, err, sizeof(err));
		n = kx_store_ioctl_count(s) + kx_store_task_count(s) + kx_store_job_count(s);
		if (rc) {
			if (!err[0] || n || prev) {
				printf("# %s cut %zu: rc %d n %zu prev %zu err '%s'\n", name, cut,
				       rc, n, prev, err);
				CHECK(0);
			}
			continue;
		}
		/* Cut short is never called corrupt, and is worded as cut. */
		if (n < prev || !gen_is_prefix(g, s) || res.truncated != (cut < len) ||
		    res.bad_tail_bytes > cut || res.ncorrupt || strstr(err, "corrupt") ||
		    (res.bad_tail_bytes && !strstr(err, "cut short"))) {
			printf("# %s cut %zu: n %zu prev %zu truncated %d\n", name, cut, n, prev,
			       res.truncated);
			CHECK(0);
		}
		if (cut < len)
			CHECK(err[0]);
		prev = n;
		if (cut == len)
			break;
	}
	CHECK_EQ_U(prev, g->nioc + g->ntask + g->njob);
	kx_store_free(s);
}

static void test_cut_small(void)
{
	struct gen g;
	char path[256];
	uint8_t *buf;
	size_t len;

	gen_tmp_path(path, sizeof(path), "cut");
	gen_events(&g, 60, 3);
	/* Flush every 20 so there are several chunks to cut through. */
	CHECK(gen_write(path, &g, 20, 1) == 0);
	buf = gen_slurp(path, &len);
	unlink(path);
	CHECK(buf);
	cut_everywhere(&g, buf, len, 1, "small");
	free(buf);
	gen_free(&g);
}

static void test_cut_large(void)
{
	struct gen g;
	char path[256];
	uint8_t *buf;
	size_t len;

	gen_tmp_path(path, sizeof(path), "cutl");
	gen_events(&g, 40000, 5);
	CHECK(gen_write(path, &g, 0, 1) == 0);
	buf = gen_slurp(path, &len);
	unlink(path);
	CHECK(buf);
	/* An odd step lands at many offsets within headers and chunks. */
	cut_everywhere(&g, buf, len, len / 97 + 1, "large");
	free(buf);
	gen_free(&g);
}

#define MAX_CHUNKS 4096

/* The chunk holding byte pos, or nch when pos is in the file header. */
static size_t chunk_at(const struct gen_chunk *ch, size_t nch, size_t pos)
{
	for (size_t k = 0; k < nch; k++)
		if (pos >= ch[k].off && pos < ch[k].off + ch[k].len)
			return k;
	return nch;
}

/*
 * Reads buf, where only chunk k (or the file header, k == nch) was
 * damaged: the header is fatal; otherwise exactly chunk k is skipped and
 * reported by number, offset and size, and every other chunk and the
 * trailer are kept. Returns 1 when all of that holds.
 */
static int only_chunk_lost(const struct gen *g, const uint8_t *buf, size_t len,
                           const struct gen_chunk *ch, size_t nch, size_t k, struct kx_store *s)
{
	static uint8_t lost[MAX_CHUNKS];
	struct kx_kxp_read_result res;
	char err[512], want[128], want_end[128];
	int rc;

	kx_store_reset(s);
	err[0] = '\0';
	rc = kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err));
	if (k == nch)
		return rc == -1 && err[0];
	memset(lost, 0, nch);
	lost[k] = 1;
	snprintf(want, sizeof(want), "chunk %zu at offset %zu is corrupt (", k + 1, ch[k].off);
	/* The last chunk's header broken: the stretch runs to the end, its chunk count unknown. */
	snprintf(want_end, sizeof(want_end), "chunk %zu onward at offset %zu is corrupt (", k + 1,
	         ch[k].off);
	gen_capinfo(&ci_want, !ch[k].trailer);
	if (rc == 0 && gen_matches_except(g, s, ch, nch, lost) && res.ncorrupt == 1 &&
	    res.corrupt[0].chunk == k + 1 && res.corrupt[0].offset == ch[k].off &&
	    res.corrupt[0].bytes == ch[k].len && res.corrupt_bytes == ch[k].len &&
	    res.chunks == nch - 1 && res.truncated == ch[k].trailer && !res.bad_tail_bytes &&
	    (strstr(err, want)
	             ? res.corrupt[0].nchunks == 1
	             : k == nch - 1 && strstr(err, want_end) && !res.corrupt[0].nchunks) &&
	    strstr(err, "bytes lost") && !strstr(err, "cut short") &&
	    same_capinfo(&ci_got, &ci_want))
		return 1;
	printf("# chunk %zu of %zu: rc %d corrupt %llu truncated %d err '%s'\n", k + 1, nch, rc,
	       (unsigned long long)res.ncorrupt, res.truncated, err);
	return 0;
}

/* One flipped byte anywhere: a fatal header, or exactly its chunk lost. */
static void flip_many(const struct gen *g, const uint8_t *orig, size_t len, int iters,
                      uint64_t seed)
{
	static struct gen_chunk ch[MAX_CHUNKS];
	struct kx_store *s = kx_store_new(0);
	size_t nch = gen_chunks(orig, len, ch, MAX_CHUNKS);
	uint8_t *buf = malloc(len);
	uint64_t rng = seed;

	CHECK(s && buf && nch);
	for (int it = 0; it < iters; it++) {
		size_t pos = gen_rng(&rng) % len;
		uint8_t x = (uint8_t)(gen_rng(&rng) % 255 + 1);

		memcpy(buf, orig, len);
		buf[pos] ^= x;
		/* CRCs catch every single-byte change, so data is never wrong. */
		if (!only_chunk_lost(g, buf, len, ch, nch, chunk_at(ch, nch, pos), s)) {
			printf("# flip at %zu by %02x\n", pos, x);
			CHECK(0);
		}
	}
	free(buf);
	kx_store_free(s);
}

/*
 * A capture of many chunks, one bit flipped in each chunk in turn, once in
 * its header and once in its data (the trailer too): every other chunk's
 * events and the trailer are kept, and the message names the chunk.
 */
static void test_flip_each_chunk(void)
{
	static struct gen_chunk ch[MAX_CHUNKS];
	struct kx_store *s = kx_store_new(0);
	uint8_t *buf;
	size_t len, nch;
	struct gen g;

	CHECK(s);
	gen_events(&g, 6000, 17);
	buf = gen_file(&g, 400, "flipeach", &len, ch, MAX_CHUNKS, &nch);
	CHECK(buf && nch > 20 && ch[nch - 1].trailer);
	for (size_t k = 0; k < nch; k++) {
		size_t at[2] = {ch[k].off + (k * 7) % 32,
		                ch[k].off + 32 + (k * 7919) % (ch[k].len - 32)};

		for (int i = 0; i < 2; i++) {
			uint8_t bit = (uint8_t)(1u << ((k + (size_t)i) % 8));

			buf[at[i]] ^= bit;
			if (!only_chunk_lost(&g, buf, len, ch, nch, k, s)) {
				printf("# bit %02x at %zu (%s)\n", bit, at[i],
				       i ? "data" : "header");
				CHECK(0);
			}
			buf[at[i]] ^= bit;
		}
	}
	free(buf);
	gen_free(&g);
	kx_store_free(s);
}

static void test_flipped_bytes(void)
{
	struct gen g;
	char path[256];
	uint8_t *buf;
	size_t len;

	gen_tmp_path(path, sizeof(path), "flip");
	gen_events(&g, 200, 11);
	CHECK(gen_write(path, &g, 50, 1) == 0);
	buf = gen_slurp(path, &len);
	CHECK(buf);
	flip_many(&g, buf, len, 5000, 0x1234567);
	free(buf);
	gen_free(&g);

	gen_events(&g, 20000, 13);
	CHECK(gen_write(path, &g, 0, 1) == 0);
	buf = gen_slurp(path, &len);
	unlink(path);
	CHECK(buf);
	flip_many(&g, buf, len, 300, 0x7654321);
	free(buf);
	gen_free(&g);
}

/*
 * Version 3 numbers its chunks, so damage across several chunks is reported
 * with the exact chunks lost, and a chunk cut out cleanly is found missing.
 */
static void test_numbered_chunks(void)
{
	static struct gen_chunk ch[MAX_CHUNKS];
	static uint8_t lost[MAX_CHUNKS];
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	char err[512], want[512];
	uint8_t *buf, *cut;
	size_t len, nch, from, to;
	struct gen g;

	CHECK(s);
	gen_events(&g, 3000, 23);
	buf = gen_file(&g, 300, "num", &len, ch, MAX_CHUNKS, &nch);
	CHECK(buf && nch > 8 && (cut = malloc(len)));

	/* Zeros from the middle of chunk 3 to the middle of chunk 5. */
	memcpy(cut, buf, len);
	from = ch[2].off + ch[2].len / 2;
	to = ch[4].off + ch[4].len / 2;
	memset(cut + from, 0, to - from);
	CHECK(kx_kxp_read_mem(cut, len, s, &ci_got, &res, err, sizeof(err)) == 0);
	memset(lost, 0, nch);
	lost[2] = lost[3] = lost[4] = 1;
	CHECK(gen_matches_except(&g, s, ch, nch, lost));
	CHECK_EQ_U(res.ncorrupt, 2);
	CHECK_EQ_U(res.corrupt[0].chunk, 3);
	CHECK_EQ_U(res.corrupt[0].nchunks, 1);
	CHECK_EQ_U(res.corrupt[0].bytes, ch[2].len);
	CHECK_EQ_U(res.corrupt[1].chunk, 4);
	CHECK_EQ_U(res.corrupt[1].nchunks, 2);
	CHECK_EQ_U(res.corrupt[1].offset, ch[3].off);
	CHECK_EQ_U(res.corrupt[1].bytes, ch[5].off - ch[3].off);
	CHECK_EQ_U(res.truncated, 0);
	snprintf(want, sizeof(want),
	         "2 corrupt stretches skipped, %zu bytes lost: chunk 3 at offset %zu (data "
	         "checksum mismatch, %zu bytes), chunks 4 to 5 at offset %zu (bad chunk header, "
	         "%zu bytes)",
	         ch[5].off - ch[2].off, ch[2].off, ch[2].len, ch[3].off, ch[5].off - ch[3].off);
	CHECK_STR(err, want);

	/* Chunk 4 cut out whole: no damage to see, but its number is missing. */
	memcpy(cut, buf, ch[3].off);
	memcpy(cut + ch[3].off, buf + ch[4].off, len - ch[4].off);
	kx_store_reset(s);
	CHECK(kx_kxp_read_mem(cut, len - ch[3].len, s, &ci_got, &res, err, sizeof(err)) == 0);
	memset(lost, 0, nch);
	lost[3] = 1;
	CHECK(gen_matches_except(&g, s, ch, nch, lost));
	CHECK_EQ_U(res.ncorrupt, 1);
	CHECK_EQ_U(res.corrupt[0].chunk, 4);
	CHECK_EQ_U(res.corrupt[0].nchunks, 1);
	CHECK_EQ_U(res.corrupt[0].bytes, 0);
	snprintf(want, sizeof(want), "chunk 4 missing before offset %zu (the chunk numbers skip)",
	         ch[3].off);
	CHECK_STR(err, want);
	free(cut);
	free(buf);
	gen_free(&g);
	kx_store_free(s);
}

static void test_garbage(void)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	uint64_t rng = 99;
	uint8_t buf[4096];
	char err[512];

	CHECK(s);
	for (int it = 0; it < 2000; it++) {
		size_t len = gen_rng(&rng) % sizeof(buf) + 1;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)gen_rng(&rng);
		CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == -1);
		CHECK_STR(err, "not a kxprof record file");
		CHECK_EQ_U(kx_store_ioctl_count(s), 0);
	}
	/* Text that is not ours. */
	CHECK(kx_kxp_read_mem("hello world\n", 12, s, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK_STR(err, "not a kxprof record file");
	/* Our magic followed by garbage: rejected, never read as events. */
	for (int it = 0; it < 2000; it++) {
		size_t len = gen_rng(&rng) % sizeof(buf) + 1;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)gen_rng(&rng);
		memcpy(buf, "KXPROF\0\0\1\0\0\0", len < 12 ? len : 12);
		CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == -1);
		CHECK(err[0]);
	}
	kx_store_free(s);
}

static void test_wrong_version(void)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct gen g;
	char path[256], err[512], want[512];
	uint8_t *buf;
	size_t len;
	FILE *f;

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "ver");
	gen_events(&g, 10, 1);
	CHECK(gen_write(path, &g, 0, 1) == 0);
	gen_free(&g);
	buf = gen_slurp(path, &len);
	CHECK(buf && len > 16);
	buf[8] = 6;
	CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK_STR(err, "record format version 6 is newer than this kxprof reads (versions 1 to 5): "
	               "read it with the kxprof that wrote it, or a newer one");
	buf[8] = 0;
	CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK_STR(err, "unsupported record format version 0 (this kxprof reads versions 1 to 5)");
	buf[8] = 0x2a;
	buf[9] = 1;
	CHECK(kx_kxp_read_mem(buf, len, s, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK_STR(err, "record format version 298 is newer than this kxprof reads (versions 1 to "
	               "5): read it with the kxprof that wrote it, or a newer one");
	/* From a path the message names the file. */
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(buf, 1, len, f) == len);
	fclose(f);
	CHECK(kx_kxp_read(path, s, &ci_got, &res, err, sizeof(err)) == -1);
	snprintf(want, sizeof(want),
	         "%s: record format version 298 is newer than this kxprof reads (versions 1 to 5): "
	         "read it with the kxprof that wrote it, or a newer one",
	         path);
	CHECK_STR(err, want);
	free(buf);
	unlink(path);
	CHECK_EQ_U(kx_store_ioctl_count(s), 0);
	kx_store_free(s);
}

static void test_empty_and_missing(void)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	char path[256], err[512], want[512];
	FILE *f;

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "empty");
	f = fopen(path, "wb");
	CHECK(f);
	fclose(f);
	CHECK(kx_kxp_read(path, s, &ci_got, &res, err, sizeof(err)) == -1);
	snprintf(want, sizeof(want), "%s: empty file: not a kxprof record file", path);
	CHECK_STR(err, want);
	CHECK(kx_kxp_read_mem("", 0, s, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK_STR(err, "empty file: not a kxprof record file");
	CHECK(kx_kxp_read_mem(NULL, 0, s, &ci_got, &res, err, sizeof(err)) == -1);
	unlink(path);

	CHECK(kx_kxp_read(path, s, &ci_got, &res, err, sizeof(err)) == -1);
	snprintf(want, sizeof(want), "cannot open %s: %s", path, strerror(ENOENT));
	CHECK_STR(err, want);
	CHECK(kx_kxp_read("/", s, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK_STR(err, "/: not a regular file");
	kx_store_free(s);
}

/* A header cut short says so rather than "not a kxprof file". */
static void test_cut_header_message(void)
{
	struct kx_kxp_read_result res;
	struct gen g;
	char path[256], err[512];
	uint8_t *buf;
	size_t len;

	gen_tmp_path(path, sizeof(path), "hdr");
	gen_events(&g, 5, 1);
	CHECK(gen_write(path, &g, 0, 1) == 0);
	gen_free(&g);
	buf = gen_slurp(path, &len);
	unlink(path);
	CHECK(buf);
	CHECK(kx_kxp_read_mem(buf, 5, NULL, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK(strstr(err, "header is incomplete") != NULL);
	CHECK(kx_kxp_read_mem(buf, 40, NULL, &ci_got, &res, err, sizeof(err)) == -1);
	CHECK(strstr(err, "header is incomplete") != NULL);
	/* No store: the file is checked and its header read all the same. */
	CHECK(kx_kxp_read_mem(buf, len, NULL, &ci_got, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(res.truncated, 0);
	free(buf);
}

/* Extreme values and every field changing within a thread survive a round trip. */
static void test_field_extremes(void)
{
	static struct kx_ioctl ev[3000];
	static struct kx_task tk[4];
	static struct kx_job jb[3];
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct kx_kxp_writer *w;
	uint8_t arg[512];
	uint64_t rng = 5;
	char path[256], err[512];
	size_t n = sizeof(ev) / sizeof(ev[0]);

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "ext");
	gen_capinfo(&ci_want, 0);
	/* Long strings are cut to their field and still terminated. */
	memset(ci_want.cmdline, 'c', sizeof(ci_want.cmdline) - 1);
	memset(ci_want.devices[0].node, 'n', sizeof(ci_want.devices[0].node) - 1);
	ci_want.ndevices = KX_MAX_DEVICES;
	ci_want.nhooks = KX_MAX_HOOKS;
	w = kx_kxp_create(path, &ci_want, err, sizeof(err));
	CHECK(w);
	for (size_t i = 0; i < n; i++) {
		struct kx_ioctl *e = &ev[i];
		uint64_t r = gen_rng(&rng), r2 = gen_rng(&rng);

		if (i < 16) {
			/* Same thread, one field different each time. */
			*e = i ? ev[i - 1] : (struct kx_ioctl){.tid = 9, .pid = 9};
			switch (i % 8) {
			case 0:
				e->pid++;
				break;
			case 1:
				e->fd = -1 - (int32_t)i;
				break;
			case 2:
				e->cmd ^= 0x80000000u;
				break;
			case 3:
				e->xfer_cmd = (uint8_t)(0xff - i);
				break;
			case 4:
				e->cpu_hi = 0xff;
				e->cpu_lo = (uint8_t)i;
				break;
			case 5:
				e->ret = i & 1 ? INT32_MIN : INT32_MAX;
				e->offcpu_us = i & 1 ? UINT32_MAX : 1;
				break;
			case 6:
				e->fkind = 0xff;
				e->drv = (uint8_t)i;
				break;
			default:
				e->dev = UINT32_MAX;
				break;
			}
			e->ts = i & 1 ? UINT64_MAX - i : i; /* jumps both ways */
			e->dur = UINT64_MAX;
		} else {
			/* Random tids collide in the writer's thread slots. */
			e->tid = r % 5 ? (uint32_t)(r >> 32) % 300 : (uint32_t)(r >> 32);
			e->pid = (uint32_t)r2;
			e->ts = r2 >> 3;
			e->dur = r % 7 ? (r >> 20) % 100000 : 0;
			e->dev = (uint32_t)(r2 >> 40);
			e->fd = (int32_t)(r % 9) - 4;
			e->cmd = r % 3 ? 0xc0106440u : (uint32_t)r2;
			e->ret = r % 4 ? 0 : -(int64_t)(r % 200);
			e->cpu_lo = (uint8_t)(r >> 16) % 4;
			e->fkind = (uint8_t)(r >> 8) % 7;
			e->drv = 1;
			if (r % 6 == 0) {
				e->arg_in_len = (uint8_t)(r >> 24);
				e->arg_out_len = (uint8_t)(r >> 32);
			}
		}
		gen_arg(arg, (size_t)e->arg_in_len + e->arg_out_len, i);
		CHECK(kx_kxp_add_ioctl(w, e, arg) == 0);
		if (i % 700 == 0)
			CHECK(kx_kxp_flush(w) == 0);
	}
	tk[0] = (struct kx_task){.ts = 0,
	                         .pid = UINT32_MAX,
	                         .tid = UINT32_MAX,
	                         .ppid = UINT32_MAX,
	                         .what = UINT32_MAX,
	                         .comm = "fifteen-chars-x",
	                         .tp = UINT64_MAX};
	/* The command line at its limit; tk[1] has none (written as before),
	 * nor a thread pointer. */
	memset(tk[0].cmd, 'c', sizeof(tk[0].cmd) - 1);
	tk[1] = (struct kx_task){.ts = UINT64_MAX, .what = 1};
	for (size_t i = 0; i < 2; i++)
		CHECK(kx_kxp_add_task(w, &tk[i]) == 0);
	/* Every job field at its extremes, the ring at its 15-character limit. */
	jb[0] = (struct kx_job){.ts = UINT64_MAX,
	                        .ctx = UINT64_MAX,
	                        .seqno = UINT64_MAX,
	                        .aux = UINT64_MAX,
	                        .aux2 = UINT64_MAX,
	                        .dev = UINT32_MAX,
	                        .pid = UINT32_MAX,
	                        .tid = UINT32_MAX,
	                        .src = UINT16_MAX,
	                        .phase = UINT8_MAX,
	                        .flags = UINT8_MAX,
	                        .ring = "fifteen-chars-r"};
	jb[1] = (struct kx_job){.ts = 0, .src = KX_JOB_SRC_BLOCK, .phase = KX_JOB_DONE};
	jb[2] = (struct kx_job){.ts = 7,
	                        .src = KX_JOB_SRC_GPU_SCHED,
	                        .phase = KX_JOB_QUEUE,
	                        .ctx = 1,
	                        .seqno = 2,
	                        .ring = "gfx_0.0.0"};
	for (size_t i = 0; i < 3; i++)
		CHECK(kx_kxp_add_job(w, &jb[i]) == 0);
	CHECK(kx_kxp_close(w, &ci_want, err, sizeof(err)) == 0);

	CHECK(kx_kxp_read(path, s, &ci_got, &res, err, sizeof(err)) == 0);
	unlink(path);
	CHECK_EQ_U(res.truncated, 0);
	CHECK_EQ_U(kx_store_ioctl_count(s), n);
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		size_t alen = (size_t)ev[i].arg_in_len + ev[i].arg_out_len;

		if (!gen_same_ioctl(e, &ev[i])) {
			printf("# ioctl %zu differs\n", i);
			CHECK(0);
		}
		gen_arg(arg, alen, i);
		CHECK(alen ? memcmp(kx_store_arg(s, e), arg, alen) == 0 : !kx_store_arg(s, e));
	}
	CHECK_EQ_U(kx_store_task_count(s), 2);
	CHECK(memcmp(kx_store_task(s, 0), &tk[0], sizeof(tk[0])) == 0);
	CHECK(memcmp(kx_store_task(s, 1), &tk[1], sizeof(tk[1])) == 0);
	CHECK_EQ_U(kx_store_job_count(s), 3);
	for (size_t i = 0; i < 3; i++)
		CHECK(gen_same_job(kx_store_job(s, i), &jb[i]));
	ci_want.cmdline[sizeof(ci_want.cmdline) - 1] = '\0';
	CHECK(same_capinfo(&ci_got, &ci_want));
	kx_store_free(s);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Writes a chunk header as the given version has it (3: 32 bytes with the
 * chunk number num; 1 and 2: 28 bytes) for clen compressed bytes already
 * after it. Returns the chunk's length.
 */
static size_t chunk_header(uint8_t *out, int version, uint32_t type, size_t len, size_t clen,
                           uint32_t nrec, uint32_t num)
{
	size_t hl = version >= 3 ? 32 : 28;

	memcpy(out, "KXCK", 4);
	set_le32(out + 4, type);
	set_le32(out + 8, (uint32_t)len);
	set_le32(out + 12, (uint32_t)clen);
	set_le32(out + 16, nrec);
	set_le32(out + 20, (uint32_t)crc32(0, out + hl, (uInt)clen));
	if (version >= 3)
		set_le32(out + 24, num);
	set_le32(out + hl - 4, (uint32_t)crc32(0, out, (uInt)(hl - 4)));
	return hl + clen;
}

/* Writes a chunk of raw bytes at out as the given version has it: zstd, or zlib (1). */
static size_t make_chunk(uint8_t *out, int version, uint32_t type, const uint8_t *raw, size_t len,
                         uint32_t nrec, uint32_t num)
{
	size_t hl = version >= 3 ? 32 : 28, clen;

	if (version >= 2) {
		clen = ZSTD_compress(out + hl, ZSTD_compressBound(len), raw, len, 1);
		if (ZSTD_isError(clen))
			abort();
	} else {
		uLongf zlen = compressBound(len);

		if (compress2(out + hl, &zlen, raw, len, 1) != Z_OK)
			abort();
		clen = zlen;
	}
	return chunk_header(out, version, type, len, clen, nrec, num);
}

/*
 * What a later writer may add without a new version is skipped: an unknown
 * header field, an unknown chunk type, an unknown record type, and bytes
 * appended to a known record.
 */
static void test_forward_compat(void)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct gen g;
	char path[256], err[512];
	uint8_t *in, *out, *raw, *p;
	size_t len, o = 0, hlen, c1, c1len, tr, rlen;

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "fwd");
	gen_events(&g, 100, 21);
	CHECK(gen_write(path, &g, 0, 1) == 0);
	in = gen_slurp(path, &len);
	unlink(path);
	CHECK(in);
	out = malloc(len + 4096);
	raw = malloc(1 << 20);
	CHECK(out && raw);

	/* Header with an extra TLV (tag 999) before its CRC. */
	hlen = le32(in + 12);
	memcpy(out, in, hlen - 4);
	o = hlen - 4;
	memcpy(out + o,
	       "\xe7\x03\x03\x00\x00\x00"
	       "abc",
	       9);
	o += 9;
	set_le32(out + 12, (uint32_t)(o + 4));
	set_le32(out + o, (uint32_t)crc32(0, out, (uInt)o));
	o += 4;

	/* The one events chunk, with a record of type 200 first and 2 bytes
	 * appended to the first known record. */
	c1 = hlen;
	c1len = 32 + le32(in + c1 + 12);
	rlen = ZSTD_decompress(raw + 6, (1 << 20) - 6, in + c1 + 32, le32(in + c1 + 12));
	CHECK(!ZSTD_isError(rlen));
	memcpy(raw, "\xc8\x04\x01\x02\x03\x04", 6);
	p = raw + 6;
	CHECK(p[1] < 126); /* one-byte length: room to grow it in place */
	memmove(p + 2 + p[1] + 2, p + 2 + p[1], rlen - 2 - p[1]);
	memset(p + 2 + p[1], 0xee, 2);
	p[1] += 2;
	o += make_chunk(out + o, 3, 1, raw, rlen + 8, le32(in + c1 + 16) + 1, 1);

	/* An unknown chunk type before the trailer, then the trailer. */
	o += make_chunk(out + o, 3, 77, (const uint8_t *)"later", 5, 0, 2);
	tr = c1 + c1len;
	memcpy(out + o, in + tr, len - tr);
	chunk_header(out + o, 3, 2, le32(in + tr + 8), le32(in + tr + 12), 0, 3);
	o += len - tr;

	CHECK(kx_kxp_read_mem(out, o, s, &ci_got, &res, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK_EQ_U(res.truncated, 0);
	CHECK_EQ_U(res.chunks, 3);
	CHECK_EQ_U(kx_store_ioctl_count(s), g.nioc);
	CHECK_EQ_U(kx_store_task_count(s), g.ntask);
	CHECK_EQ_U(kx_store_job_count(s), g.njob);
	CHECK(gen_is_prefix(&g, s));
	gen_capinfo(&ci_want, 1);
	CHECK(same_capinfo(&ci_got, &ci_want));
	free(in);
	free(out);
	free(raw);
	gen_free(&g);
	kx_store_free(s);
}

/*
 * Files of versions 1 (zlib chunks), 2 (zstd chunks, no chunk numbers) and
 * 3 (no sample records) still read: a file written now, rewritten chunk by chunk as the old
 * writer had it and its header's version set (header CRC fixed), gives the
 * same store and capture info; and a corrupt chunk there costs that chunk
 * alone too.
 */
static void reads_old_version(int version)
{
	static struct gen_chunk ch[64];
	static uint8_t lost[64];
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct gen g;
	char err[512];
	uint8_t *in, *out, *raw;
	size_t len, hlen, off, o, nch, k = 0;

	CHECK(s);
	gen_events(&g, 3000, 5);
	in = gen_file(&g, 500, "old", &len, ch, 64, &nch);
	CHECK(in && nch > 3);
	out = malloc(2 * len + 65536);
	raw = malloc(64 << 20);
	CHECK(out && raw);
	hlen = le32(in + 12);
	memcpy(out, in, hlen);
	set_le32(out + 8, (uint32_t)version);
	set_le32(out + hlen - 4, (uint32_t)crc32(0, out, (uInt)(hlen - 4)));
	o = hlen;
	for (off = hlen; off + 32 <= len; off += 32 + le32(in + off + 12)) {
		size_t n = ZSTD_decompress(raw, 64 << 20, in + off + 32, le32(in + off + 12));

		CHECK(!ZSTD_isError(n) && n == le32(in + off + 8));
		ch[k++].off = o; /* where the chunk is now */
		o += make_chunk(out + o, version, le32(in + off + 4), raw, n, le32(in + off + 16),
		                version >= 3 ? (uint32_t)k : 0);
	}
	CHECK_EQ_U(off, len);
	CHECK(kx_kxp_read_mem(out, o, s, &ci_got, &res, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK_EQ_U(res.truncated, 0);
	CHECK_EQ_U(kx_store_ioctl_count(s), g.nioc);
	CHECK_EQ_U(kx_store_task_count(s), g.ntask);
	CHECK_EQ_U(kx_store_job_count(s), g.njob);
	CHECK(gen_is_prefix(&g, s));
	gen_capinfo(&ci_want, 1);
	CHECK(same_capinfo(&ci_got, &ci_want));
	/* The second chunk's magic broken: that chunk alone is lost. */
	out[ch[1].off] ^= 1;
	kx_store_reset(s);
	CHECK(kx_kxp_read_mem(out, o, s, &ci_got, &res, err, sizeof(err)) == 0);
	memset(lost, 0, sizeof(lost));
	lost[1] = 1;
	CHECK(gen_matches_except(&g, s, ch, nch, lost));
	CHECK_EQ_U(res.ncorrupt, 1);
	CHECK_EQ_U(res.corrupt[0].chunk, 2);
	CHECK_EQ_U(res.corrupt[0].offset, ch[1].off);
	CHECK_EQ_U(res.corrupt[0].bytes, ch[2].off - ch[1].off);
	CHECK_EQ_U(res.truncated, 0);
	CHECK(same_capinfo(&ci_got, &ci_want));
	free(in);
	free(out);
	free(raw);
	gen_free(&g);
	kx_store_free(s);
}

static void test_reads_version1(void)
{
	reads_old_version(1);
}

static void test_reads_version2(void)
{
	reads_old_version(2);
}

static void test_reads_version3(void)
{
	reads_old_version(3);
}

static void test_write_errors(void)
{
	struct kx_kxp_writer *w;
	char err[512], want[512];

	gen_capinfo(&ci_want, 0);
	w = kx_kxp_create("/nonexistent-dir/x.kxp", &ci_want, err, sizeof(err));
	CHECK(!w);
	snprintf(want, sizeof(want), "cannot create /nonexistent-dir/x.kxp: %s", strerror(ENOENT));
	CHECK_STR(err, want);
	if (access("/dev/full", F_OK) != 0)
		SKIP("no /dev/full");
	/* Not a regular file: refused before anything is written. */
	w = kx_kxp_create("/dev/full", &ci_want, err, sizeof(err));
	CHECK(!w);
	CHECK_STR(err,
	          "/dev/full is a device, not a regular file: give the path of a file to write");
}

int main(void)
{
	RUN(test_roundtrip);
	RUN(test_flush_and_size);
	RUN(test_field_extremes);
	RUN(test_forward_compat);
	RUN(test_reads_version1);
	RUN(test_reads_version2);
	RUN(test_reads_version3);
	RUN(test_cut_small);
	RUN(test_cut_large);
	RUN(test_flipped_bytes);
	RUN(test_flip_each_chunk);
	RUN(test_numbered_chunks);
	RUN(test_garbage);
	RUN(test_wrong_version);
	RUN(test_empty_and_missing);
	RUN(test_cut_header_message);
	RUN(test_write_errors);
	KXT_EXIT();
}
