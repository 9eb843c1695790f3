/*
 * The .kxp reader's damage recovery and its report. A chunk whose header
 * checks out but whose data does not (data CRC, decompression, records) is
 * skipped whole. Bytes that do not start a valid chunk header are skipped
 * up to the next offset that does (magic, header CRC, lengths within
 * limits). Either way the stretch is noted (chunk number, offset, bytes)
 * and reading goes on, so every intact chunk after it and the trailer are
 * kept. A file that ends inside a chunk was cut short: its last whole chunk
 * is kept and the bytes after it counted.
 *
 * Here: finding the next valid chunk header after damage, the chunk
 * numbers of the stretches skipped, and the message that says what was
 * lost (kx_kxp_read_result holds the same, counted).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/kxp_reader.h"

void kx_kxp_note_damage(struct reader *r, uint64_t num, uint64_t n, uint64_t off, uint64_t len,
                        const char *why)
{
	struct kx_kxp_read_result *res = r->res;

	if (res->ncorrupt < KX_KXP_DAMAGE_MAX) {
		res->corrupt[res->ncorrupt].chunk = num;
		res->corrupt[res->ncorrupt].nchunks = n;
		res->corrupt[res->ncorrupt].offset = off;
		res->corrupt[res->ncorrupt].bytes = len;
		r->why[res->ncorrupt] = why;
	}
	res->ncorrupt++;
	res->corrupt_bytes += len;
}

/* Why a slot's chunk was rejected. */
static const char *cs_why(int status)
{
	switch (status) {
	case CS_CRC:
		return "data checksum mismatch";
	case CS_NOMEM:
		return "too large to decompress here: out of memory";
	case CS_INFLATE:
		return "decompression failed";
	default:
		return "bad records";
	}
}

void kx_kxp_damage_slot(struct reader *r, const struct cslot *c)
{
	kx_kxp_note_damage(r, c->num, 1, c->off, r->chl + (uint64_t)c->comp_len, cs_why(c->status));
}

#define SCAN_WIN (1u << 20) /* bytes searched per read while looking for a chunk */

/*
 * The offset of the first valid chunk header at or after from, or the file
 * size when there is none; UINT64_MAX on a read error. A header is trusted
 * only with its CRC, so bytes that merely look like the magic are passed.
 */
static uint64_t resync(struct reader *r, uint64_t from)
{
	struct src *s = r->src;
	struct chdr ch;

	while (s->size - from >= r->chl) {
		size_t n = s->size - from < SCAN_WIN ? (size_t)(s->size - from) : SCAN_WIN, i;
		const uint8_t *w = kx_kxp_src_get(s, from, n);

		if (!w)
			return s->ioerr ? UINT64_MAX : s->size;
		for (i = 0; i + r->chl <= n; i++)
			if (w[i] == CHUNK_MAGIC[0] && !kx_kxp_chdr_parse(w + i, r->chl, &ch))
				return from + i;
		if (n == s->size - from)
			break;
		/* The next window starts where a header no longer fit in this one. */
		from += i;
	}
	return s->size;
}

uint64_t kx_kxp_skip_bad(struct reader *r, uint64_t off, const uint8_t *h, const char *why)
{
	struct src *s = r->src;
	uint64_t left = s->size - off;
	uint64_t next = resync(r, off + 1);

	if (next == UINT64_MAX)
		return next;
	if (next == s->size && left < r->chl && !memcmp(h, CHUNK_MAGIC, left < 4 ? left : 4)) {
		/* The start of a chunk header: the file ends inside it. */
		r->res->bad_tail_bytes = left;
		r->cut_chunk = ++r->nseen;
		r->cut_off = off;
		return next;
	}
	/* How many chunks it held is known at the next one (version 3). */
	r->pend = 1;
	r->pend_off = off;
	r->pend_bytes = next - off;
	r->pend_why = why;
	return next;
}

/* Its own number (version 3), else the next in file order. */
uint64_t kx_kxp_chunk_number(struct reader *r, const struct chdr *ch, uint64_t off)
{
	uint64_t next = r->nseen + 1;
	uint64_t num = r->version >= 3 ? ch->num : next + (uint64_t)r->pend;

	if (r->pend)
		kx_kxp_note_damage(r, next, num > next ? num - next : 1, r->pend_off, r->pend_bytes,
		                   r->pend_why);
	else if (num > next)
		kx_kxp_note_damage(r, next, num - next, off, 0, "the chunk numbers skip");
	r->pend = 0;
	r->nseen = num;
	return num;
}

void kx_kxp_end_stretch(struct reader *r)
{
	if (r->pend)
		kx_kxp_note_damage(r, r->nseen + 1, 0, r->pend_off, r->pend_bytes, r->pend_why);
	r->pend = 0;
}

static void msg_add(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg_add(struct reader *r, const char *fmt, ...)
{
	size_t n = strlen(r->err);
	va_list ap;

	if (n + 1 >= r->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - n, fmt, ap);
	va_end(ap);
}

#define MSG_LISTED 4 /* corrupt stretches named one by one in the message */

/* "chunk 3", "chunks 3 to 5", or "chunk 3 onward" (a stretch at the end). */
static void say_chunks(struct reader *r, const struct kx_kxp_damage *d)
{
	if (d->nchunks > 1)
		msg_add(r, "chunks %llu to %llu", (unsigned long long)d->chunk,
		        (unsigned long long)(d->chunk + d->nchunks - 1));
	else
		msg_add(r, "chunk %llu%s", (unsigned long long)d->chunk,
		        d->nchunks ? "" : " onward");
}

static void say_corrupt(struct reader *r)
{
	const struct kx_kxp_read_result *res = r->res;
	const struct kx_kxp_damage *d = res->corrupt;
	uint64_t i;

	if (res->ncorrupt == 1) {
		say_chunks(r, d);
		if (!d->bytes)
			msg_add(r, " missing before offset %llu (%s)",
			        (unsigned long long)d->offset, r->why[0]);
		else
			msg_add(r, " at offset %llu %s corrupt (%s): skipped, %llu bytes lost",
			        (unsigned long long)d->offset, d->nchunks > 1 ? "are" : "is",
			        r->why[0], (unsigned long long)d->bytes);
		return;
	}
	msg_add(r, "%llu corrupt stretches skipped, %llu bytes lost:",
	        (unsigned long long)res->ncorrupt, (unsigned long long)res->corrupt_bytes);
	for (i = 0; i < res->ncorrupt && i < MSG_LISTED; i++) {
		msg_add(r, "%s", i ? ", " : " ");
		say_chunks(r, &d[i]);
		msg_add(r, " at offset %llu (%s, %llu bytes)", (unsigned long long)d[i].offset,
		        r->why[i], (unsigned long long)d[i].bytes);
	}
	if (res->ncorrupt > MSG_LISTED)
		msg_add(r, ", and %llu more", (unsigned long long)(res->ncorrupt - MSG_LISTED));
}

void kx_kxp_say_losses(struct reader *r)
{
	const struct kx_kxp_read_result *res = r->res;
	const char *sep = "";

	if (!res->ncorrupt && !res->truncated && !res->bad_tail_bytes)
		return;
	kx_kxp_msg(r, "%s", "");
	if (res->ncorrupt) {
		say_corrupt(r);
		sep = "; ";
	}
	if (r->cut_chunk)
		msg_add(r, "%sfile cut short inside chunk %llu at offset %llu (%llu bytes ignored)",
		        sep, (unsigned long long)r->cut_chunk, (unsigned long long)r->cut_off,
		        (unsigned long long)res->bad_tail_bytes);
	else if (res->truncated)
		msg_add(r, "%sno trailer after chunk %llu: the capture did not finish%s", sep,
		        (unsigned long long)r->nseen,
		        res->ncorrupt ? ", or its trailer was lost with the damage" : "");
	else if (res->bad_tail_bytes)
		msg_add(r, "%s%llu bytes after the trailer were ignored", sep,
		        (unsigned long long)res->bad_tail_bytes);
}
