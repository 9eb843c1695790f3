/*
 * Seeded mutation fuzzing of the .kxp reader: byte-level damage (bit flips,
 * insertions, deletions, truncation) and format-aware damage that gets past
 * the checksums (chunk length fields, duplicated/dropped/swapped chunks,
 * records and header fields changed with their CRCs fixed up). Passes when
 * nothing crashes and every result is either an error with a message or a
 * consistent store; and, for damage that keeps offsets, when no chunk whose
 * bytes were untouched is lost. KXP_FUZZ_SEED and KXP_FUZZ_ITERS override the defaults
 * for longer runs.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "kxtest.h"
#include "kxp_gen.h"

/* Layout facts the mutators need (see the comment at the top of io/kxp_layout.h). */
#define HDR_FIXED 16
#define CHDR_LEN  32

static uint64_t rng;

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static size_t rnd(size_t n)
{
	return n ? (size_t)(gen_rng(&rng) % n) : 0;
}

/* A mutable byte string. */
struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void b_reserve(struct bytes *b, size_t n)
{
	if (n <= b->cap)
		return;
	b->cap = n * 2;
	b->p = realloc(b->p, b->cap);
	if (!b->p)
		abort();
}

static void b_set(struct bytes *b, const uint8_t *p, size_t n)
{
	b_reserve(b, n + 1);
	memcpy(b->p, p, n);
	b->len = n;
}

static void b_insert(struct bytes *b, size_t at, const uint8_t *p, size_t n)
{
	b_reserve(b, b->len + n + 1);
	memmove(b->p + at + n, b->p + at, b->len - at);
	memcpy(b->p + at, p, n);
	b->len += n;
}

static void b_delete(struct bytes *b, size_t at, size_t n)
{
	if (at + n > b->len)
		n = b->len - at;
	memmove(b->p + at, b->p + at + n, b->len - at - n);
	b->len -= n;
}

/* Chunk offsets of a well-formed file (before mutation). */
static size_t chunk_offs(const struct bytes *b, size_t *offs, size_t max)
{
	size_t n = 0, off;

	if (b->len < HDR_FIXED)
		return 0;
	off = le32(b->p + 12);
	/* Whole chunks only, so mutators may touch every byte of one. */
	while (n < max && off + CHDR_LEN <= b->len && memcmp(b->p + off, "KXCK", 4) == 0 &&
	       le32(b->p + off + 12) <= b->len - off - CHDR_LEN) {
		offs[n++] = off;
		off += CHDR_LEN + le32(b->p + off + 12);
	}
	return n;
}

static void fix_chunk_hdr_crc(uint8_t *h)
{
	set_le32(h + 28, (uint32_t)crc32(0, h, 28));
}

static void fix_header_crc(struct bytes *b)
{
	uint32_t hlen = le32(b->p + 12);

	if (hlen >= HDR_FIXED + 4 && hlen <= b->len)
		set_le32(b->p + hlen - 4, (uint32_t)crc32(0, b->p, hlen - 4));
}

/* Damages some raw bytes in place: flips, inserts, deletes or cuts. */
static void damage(struct bytes *b)
{
	size_t n;
	uint8_t junk[16];

	switch (rnd(4)) {
	case 0:
		for (n = 1 + rnd(8); n && b->len; n--)
			b->p[rnd(b->len)] ^= (uint8_t)(1u << rnd(8));
		break;
	case 1:
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)gen_rng(&rng);
		b_insert(b, rnd(b->len + 1), junk, 1 + rnd(sizeof(junk)));
		break;
	case 2:
		if (b->len)
			b_delete(b, rnd(b->len), 1 + rnd(16));
		break;
	default:
		b->len = rnd(b->len + 1);
		break;
	}
}

/* Decompresses chunk c, damages its records, recompresses with valid CRCs. */
static void mutate_records(struct bytes *b, size_t c_off)
{
	uint8_t *h = b->p + c_off;
	uint32_t raw_len = le32(h + 8), comp_len = le32(h + 12);
	struct bytes raw = {0};
	size_t dlen, clen;
	uint8_t *comp;

	if (raw_len > (64u << 20))
		return;
	b_reserve(&raw, (size_t)raw_len + 64);
	dlen = ZSTD_decompress(raw.p, raw_len, h + CHDR_LEN, comp_len);
	if (ZSTD_isError(dlen))
		goto out;
	raw.len = dlen;
	for (size_t k = 1 + rnd(3); k; k--)
		damage(&raw);
	clen = ZSTD_compressBound(raw.len);
	comp = malloc(clen);
	if (!comp)
		abort();
	clen = ZSTD_compress(comp, clen, raw.p, raw.len, 1);
	if (ZSTD_isError(clen))
		abort();
	b_delete(b, c_off + CHDR_LEN, comp_len);
	b_insert(b, c_off + CHDR_LEN, comp, clen);
	h = b->p + c_off;
	set_le32(h + 8, (uint32_t)raw.len);
	set_le32(h + 12, (uint32_t)clen);
	if (rnd(4) == 0)
		set_le32(h + 16, le32(h + 16) + (uint32_t)rnd(3) - 1);
	set_le32(h + 20, (uint32_t)crc32(0, comp, (uInt)clen));
	fix_chunk_hdr_crc(h);
	free(comp);
out:
	free(raw.p);
}

static const uint32_t odd_values[] = {
        0,         1,          2,          27,         28,         255,
        4096,      65535,      262144,     262145,     0x3ffffff,  0x4000000,
        0x4000001, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
};

static void mutate(struct bytes *b)
{
	size_t offs[4096], n = chunk_offs(b, offs, 4096);
	size_t c = rnd(n), at, len;
	uint32_t hlen = b->len >= HDR_FIXED ? le32(b->p + 12) : 0;

	switch (rnd(10)) {
	case 0:
	case 1:
		damage(b);
		break;
	case 2: /* a chunk length/count field, header CRC fixed or not */
		if (!n)
			break;
		at = offs[c] + 8 + 4 * rnd(3);
		if (rnd(2))
			set_le32(b->p + at,
			         odd_values[rnd(sizeof(odd_values) / sizeof(odd_values[0]))]);
		else
			set_le32(b->p + at, le32(b->p + at) + (uint32_t)rnd(64) - 32);
		if (rnd(4))
			fix_chunk_hdr_crc(b->p + offs[c]);
		break;
	case 3: /* duplicate a chunk somewhere at a chunk boundary */
		if (!n)
			break;
		len = CHDR_LEN + le32(b->p + offs[c] + 12);
		{
			uint8_t *copy = malloc(len);
			size_t to = rnd(2) ? offs[rnd(n)] : b->len;

			if (!copy)
				abort();
			memcpy(copy, b->p + offs[c], len);
			b_insert(b, to, copy, len);
			free(copy);
		}
		break;
	case 4: /* drop a chunk */
		if (n)
			b_delete(b, offs[c], CHDR_LEN + le32(b->p + offs[c] + 12));
		break;
	case 5: /* swap two adjacent chunks */
		if (c + 1 < n) {
			size_t l1 = offs[c + 1] - offs[c];
			uint8_t *copy = malloc(l1);

			if (!copy)
				abort();
			memcpy(copy, b->p + offs[c], l1);
			b_delete(b, offs[c], l1);
			b_insert(b, offs[c] + CHDR_LEN + le32(b->p + offs[c] + 12), copy, l1);
			free(copy);
		}
		break;
	case 6:
	case 7: /* records inside a chunk, past its CRCs */
		if (n)
			mutate_records(b, offs[c]);
		break;
	case 8: /* header capture info, CRC fixed */
		if (hlen < HDR_FIXED + 4 || hlen > b->len)
			break;
		at = HDR_FIXED + rnd(hlen - HDR_FIXED - 4);
		if (rnd(2)) {
			b->p[at] ^= (uint8_t)(1u << rnd(8));
		} else {
			uint8_t junk[8];

			for (size_t i = 0; i < sizeof(junk); i++)
				junk[i] = (uint8_t)gen_rng(&rng);
			len = 1 + rnd(sizeof(junk));
			b_insert(b, at, junk, len);
			set_le32(b->p + 12, hlen + (uint32_t)len);
		}
		fix_header_crc(b);
		break;
	default: /* cut */
		b->len = rnd(b->len + 1);
		break;
	}
}

static int str_ok(const char *s, size_t size)
{
	return strnlen(s, size) < size;
}

static unsigned int sink;

/* Error with a message, or a store and capinfo that are safe to use. */
static int result_ok(int rc, const struct kx_store *s, const struct kx_capinfo *ci,
                     const struct kx_kxp_read_result *res, const char *err, size_t len)
{
	if (rc)
		return rc == -1 && err[0] && kx_store_ioctl_count(s) == 0 &&
		       kx_store_task_count(s) == 0 && kx_store_job_count(s) == 0;
	if ((res->truncated || res->bad_tail_bytes) && !err[0])
		return 0;
	if (res->bad_tail_bytes > len)
		return 0;
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		size_t n = (size_t)e->arg_in_len + e->arg_out_len;
		const uint8_t *a = kx_store_arg(s, e);

		if (!e || (n && !a) || (!n && a))
			return 0;
		for (size_t k = 0; k < n; k++)
			sink += a[k];
	}
	for (size_t i = 0; i < kx_store_task_count(s); i++) {
		const struct kx_task *t = kx_store_task(s, i);

		if (!t || !str_ok(t->comm, sizeof(t->comm)) || !kx_store_comm(s, t->tid))
			return 0;
	}
	for (size_t i = 0; i < kx_store_job_count(s); i++) {
		const struct kx_job *j = kx_store_job(s, i);

		if (!j || !str_ok(j->ring, sizeof(j->ring)))
			return 0;
		sink += j->phase;
	}
	if (ci->ndevices > KX_MAX_DEVICES || ci->nhooks > KX_MAX_HOOKS ||
	    ci->ndrvcalls > KX_DRV_FN_MAX)
		return 0;
	for (uint32_t i = 0; i < ci->ndrvcalls; i++)
		if (!str_ok(ci->drvcalls[i].fn, sizeof(ci->drvcalls[i].fn)) ||
		    !str_ok(ci->drvcalls[i].mech, sizeof(ci->drvcalls[i].mech)))
			return 0;
	if (!str_ok(ci->hostname, sizeof(ci->hostname)) ||
	    !str_ok(ci->kernel, sizeof(ci->kernel)) || !str_ok(ci->cmdline, sizeof(ci->cmdline)))
		return 0;
	for (uint32_t i = 0; i < ci->ndevices; i++)
		if (!str_ok(ci->devices[i].node, sizeof(ci->devices[i].node)) ||
		    !str_ok(ci->devices[i].driver, sizeof(ci->devices[i].driver)))
			return 0;
	for (uint32_t i = 0; i < ci->nhooks; i++)
		if (!str_ok(ci->hooks[i].name, sizeof(ci->hooks[i].name)) ||
		    !str_ok(ci->hooks[i].mech, sizeof(ci->hooks[i].mech)) ||
		    !str_ok(ci->hooks[i].why, sizeof(ci->hooks[i].why)))
			return 0;
	return 1;
}

static struct kx_capinfo ci;

static void fuzz_file(size_t nioc, int flush_every, int trailer, long iters, uint64_t seed)
{
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	struct bytes b = {0};
	char path[256], err[512];
	long errors = 0, truncated = 0, whole = 0;
	uint8_t *orig;
	size_t len;
	struct gen g;

	CHECK(s);
	gen_tmp_path(path, sizeof(path), "fuzz");
	gen_events(&g, nioc, seed);
	CHECK(gen_write(path, &g, flush_every, trailer) == 0);
	gen_free(&g);
	orig = gen_slurp(path, &len);
	unlink(path);
	CHECK(orig);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (long it = 0; it < iters; it++) {
		int rc;

		b_set(&b, orig, len);
		for (size_t k = 1 + rnd(3); k; k--)
			mutate(&b);
		kx_store_reset(s);
		err[0] = '\0';
		rc = kx_kxp_read_mem(b.p, b.len, s, &ci, &res, err, sizeof(err));
		if (!result_ok(rc, s, &ci, &res, err, b.len)) {
			printf("# iteration %ld (seed %llu): rc %d truncated %d err '%s'\n", it,
			       (unsigned long long)seed, rc, res.truncated, err);
			CHECK(0);
		}
		if (rc)
			errors++;
		else if (res.truncated)
			truncated++;
		else
			whole++;
	}
	printf("# %ld mutations: %ld rejected, %ld truncated, %ld whole\n", iters, errors,
	       truncated, whole);
	free(b.p);
	free(orig);
	kx_store_free(s);
}

#define MAX_CHUNKS 1024

/* Marks the chunks holding any byte of [from, to) lost; 1 when the file header is hit. */
static int mark_lost(const struct gen_chunk *ch, size_t nch, size_t from, size_t to, uint8_t *lost)
{
	for (size_t k = 0; k < nch; k++)
		if (from < ch[k].off + ch[k].len && to > ch[k].off)
			lost[k] = 1;
	return nch && from < ch[0].off;
}

/*
 * Seeded damage that keeps offsets (runs of bytes changed, then perhaps a
 * cut): no intact chunk is lost. The store holds exactly the events of the
 * chunks whose bytes were not touched, the trailer is kept when untouched,
 * and each damaged stretch is reported as corrupt or cut short.
 */
static void fuzz_intact(size_t nioc, int flush_every, long iters, uint64_t seed)
{
	static struct gen_chunk ch[MAX_CHUNKS];
	static uint8_t lost[MAX_CHUNKS];
	struct kx_kxp_read_result res;
	struct kx_store *s = kx_store_new(0);
	uint8_t *orig, *buf;
	size_t len, nch;
	struct gen g;
	char err[512];

	CHECK(s);
	gen_events(&g, nioc, seed);
	orig = gen_file(&g, flush_every, "fuzzintact", &len, ch, MAX_CHUNKS, &nch);
	CHECK(orig && nch > 3 && (buf = malloc(len)));
	rng = seed * 0x9e3779b97f4a7c15ull + 7;
	for (long it = 0; it < iters; it++) {
		size_t cut = len, nlost = 0;
		int fatal = 0, rc;

		memcpy(buf, orig, len);
		memset(lost, 0, nch);
		for (size_t n = 1 + rnd(3); n; n--) {
			size_t at = rnd(len), run = 1 + rnd(rnd(2) ? 4 : 300);

			run = at + run < len ? run : len - at;
			for (size_t i = 0; i < run; i++)
				buf[at + i] ^= (uint8_t)(1 + rnd(255));
			fatal |= mark_lost(ch, nch, at, at + run, lost);
		}
		if (rnd(4) == 0) {
			cut = rnd(len);
			fatal |= mark_lost(ch, nch, cut, len, lost);
		}
		for (size_t k = 0; k < nch; k++)
			nlost += lost[k];
		kx_store_reset(s);
		err[0] = '\0';
		rc = kx_kxp_read_mem(buf, cut, s, &ci, &res, err, sizeof(err));
		if (fatal ? rc == -1 && err[0]
		          : rc == 0 && gen_matches_except(&g, s, ch, nch, lost) &&
		                    res.chunks == nch - nlost && res.truncated == lost[nch - 1] &&
		                    (!nlost || err[0]) &&
		                    (cut < len || (res.ncorrupt > 0) == (nlost > 0)))
			continue;
		printf("# iteration %ld (seed %llu): rc %d lost %zu of %zu, cut %zu of %zu, "
		       "corrupt "
		       "%llu, err '%s'\n",
		       it, (unsigned long long)seed, rc, nlost, nch, cut, len,
		       (unsigned long long)res.ncorrupt, err);
		CHECK(0);
	}
	free(buf);
	free(orig);
	gen_free(&g);
	kx_store_free(s);
}

static uint64_t seed = 1;
static long iters = 6000;

/* Many small chunks: every mutation reaches chunk boundaries. */
static void test_fuzz_small_chunks(void)
{
	fuzz_file(1500, 40, 1, iters, seed);
}

/* Full 256 KiB chunks, as a real capture writes them. */
static void test_fuzz_full_chunks(void)
{
	fuzz_file(25000, 0, 1, iters / 20, seed + 1);
}

static void test_fuzz_no_trailer(void)
{
	fuzz_file(300, 25, 0, iters / 4, seed + 2);
}

/* Damage in place, small and full chunks: every untouched chunk is read. */
static void test_fuzz_intact_kept(void)
{
	fuzz_intact(3000, 60, iters / 2, seed + 3);
	fuzz_intact(25000, 0, iters / 40, seed + 4);
}

int main(void)
{
	const char *e;

	if ((e = getenv("KXP_FUZZ_SEED")))
		seed = strtoull(e, NULL, 0);
	if ((e = getenv("KXP_FUZZ_ITERS")))
		iters = strtol(e, NULL, 0);
	RUN(test_fuzz_small_chunks);
	RUN(test_fuzz_full_chunks);
	RUN(test_fuzz_no_trailer);
	RUN(test_fuzz_intact_kept);
	KXT_EXIT();
}
