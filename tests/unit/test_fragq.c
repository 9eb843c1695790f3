/*
 * The ordered fragment pipeline (user/util/fragq.h): literal bytes and
 * pieces encoded on worker threads come out in layout order, the same bytes
 * for any thread count; an encoding failure or a sink failure stops the
 * output there and is returned.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kxtest.h"
#include "util/fragq.h"
#include "util/workq.h"

#define NPIECES 300

struct piece {
	uint32_t id, len; /* len bytes of id's pattern */
};

struct out {
	struct kx_bytes b;
	int fail_at; /* emit fails once this many bytes are out (0: never) */
	int emits_after_failure;
	int failed;
};

static int encode(const void *desc, struct kx_bytes *out, void *wctx, void *arg)
{
	const struct piece *p = desc;
	uint8_t *d = kx_bytes_room(out, p->len);

	(void)arg;
	(*(int *)wctx)++;
	if (p->id == UINT32_MAX)
		return ENOMEM;
	if (!d)
		return ENOMEM;
	for (uint32_t i = 0; i < p->len; i++)
		d[i] = (uint8_t)(p->id * 31 + i);
	out->len += p->len;
	return 0;
}

static int emit(const uint8_t *p, size_t n, void *arg)
{
	struct out *o = arg;
	uint8_t *d = kx_bytes_room(&o->b, n);

	if (o->failed)
		o->emits_after_failure++;
	if (o->fail_at && o->b.len + n >= (size_t)o->fail_at) {
		o->failed = 1;
		return EIO;
	}
	memcpy(d, p, n);
	o->b.len += n;
	return 0;
}

static void *wctx_new(void *arg)
{
	(void)arg;
	return calloc(1, sizeof(int));
}

static void wctx_free(void *wctx, void *arg)
{
	(void)arg;
	free(wctx);
}

static const struct kx_fragq_ops ops = {encode, emit, wctx_new, wctx_free};

/* Lays out NPIECES pieces of varied length, each after a literal "<i>";
 * piece bad_at (if any) fails to encode. Returns kx_fragq_end's result. */
static int lay_out(int threads, struct out *o, uint32_t bad_at)
{
	struct kx_fragq *q;
	char lit[16];

	kx_workq_set_threads(threads);
	q = kx_fragq_new(NPIECES, sizeof(struct piece), &ops, o);
	kx_workq_set_threads(0);
	if (!q)
		return -1;
	for (uint32_t i = 0; i < NPIECES; i++) {
		struct piece p = {i == bad_at ? UINT32_MAX : i, i * 7919 % 5000};

		kx_fragq_lit(q, lit, (size_t)snprintf(lit, sizeof(lit), "<%u>", i));
		if (kx_fragq_piece(q, &p))
			break;
	}
	kx_fragq_lit(q, "end", 3);
	return kx_fragq_end(q);
}

static void test_same_bytes_any_threads(void)
{
	struct out ref = {0};

	CHECK(lay_out(1, &ref, NPIECES) == 0);
	CHECK(ref.b.len > NPIECES * 1000);
	CHECK(!memcmp(ref.b.p + ref.b.len - 3, "end", 3));
	CHECK(!memcmp(ref.b.p, "<0>", 3));
	for (int t = 2; t <= 5; t++) {
		struct out o = {0};

		CHECK(lay_out(t, &o, NPIECES) == 0);
		CHECK_EQ_U(o.b.len, ref.b.len);
		CHECK(!memcmp(o.b.p, ref.b.p, ref.b.len));
		free(o.b.p);
	}
	free(ref.b.p);
}

/* The bytes before the failed piece are out, nothing from it on. */
static void test_encode_failure_stops(void)
{
	struct out ref = {0};
	const uint8_t *at;

	CHECK(lay_out(1, &ref, NPIECES) == 0);
	at = memmem(ref.b.p, ref.b.len, "<100>", 5);
	CHECK(at);
	for (int t = 1; t <= 4; t++) {
		struct out o = {0};

		CHECK_EQ_U(lay_out(t, &o, 100), ENOMEM);
		CHECK_EQ_U(o.b.len, (size_t)(at - ref.b.p));
		CHECK(!memcmp(o.b.p, ref.b.p, o.b.len));
		free(o.b.p);
	}
	free(ref.b.p);
}

static void test_sink_failure_stops(void)
{
	for (int t = 1; t <= 4; t++) {
		struct out o = {.fail_at = 100000};

		CHECK_EQ_U(lay_out(t, &o, NPIECES), EIO);
		CHECK(o.b.len < 100000);
		CHECK_EQ_U(o.emits_after_failure, 0);
		free(o.b.p);
	}
}

int main(void)
{
	RUN(test_same_bytes_any_threads);
	RUN(test_encode_failure_stops);
	RUN(test_sink_failure_stops);
	KXT_EXIT();
}
