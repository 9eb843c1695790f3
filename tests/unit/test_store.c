/*
 * Unit tests of the bounded event store: round trips of ioctls (with and
 * without argument bytes) and tasks, comm lookup, the memory limit, reset,
 * and stores spanning many chunks.
 */
#include <stdint.h>
#include <string.h>

#include "kxtest.h"
#include "model/store.h"

static struct kx_ioctl mk_ioctl(uint64_t i, uint8_t in, uint8_t out)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = 1000000 + i * 17;
	e.dur = i % 977;
	e.pid = 100 + (uint32_t)(i % 3);
	e.tid = 200 + (uint32_t)(i % 7);
	e.dev = (10u << 20) | 232;
	e.cmd = 0xc008ae67u + (uint32_t)(i % 5);
	e.ret = (int64_t)(i % 11) - 5;
	e.fd = (int32_t)(i % 40);
	e.xfer_cmd = (uint32_t)(i % 2);
	e.fkind = (uint8_t)(i % 7);
	e.cpu_hi = (uint8_t)(i % 3);
	e.cpu_lo = (uint8_t)i;
	e.arg_in_len = in;
	e.arg_out_len = out;
	e.drv = (uint8_t)(i % 9);
	e.arg_off = 12345; /* ignored by the store */
	return e;
}

static void fill_arg(uint8_t *arg, size_t n, uint64_t seed)
{
	for (size_t k = 0; k < n; k++)
		arg[k] = (uint8_t)(seed * 31 + k * 7);
}

static int same_ioctl(const struct kx_ioctl *a, const struct kx_ioctl *b)
{
	return a->ts == b->ts && a->dur == b->dur && a->pid == b->pid && a->tid == b->tid &&
	       a->dev == b->dev && a->cmd == b->cmd && a->ret == b->ret && a->fd == b->fd &&
	       a->xfer_cmd == b->xfer_cmd && a->fkind == b->fkind && a->cpu_hi == b->cpu_hi &&
	       a->cpu_lo == b->cpu_lo && a->arg_in_len == b->arg_in_len &&
	       a->arg_out_len == b->arg_out_len && a->drv == b->drv;
}

static void test_ioctl_roundtrip(void)
{
	struct kx_store *s = kx_store_new(0);
	uint8_t arg[128];

	CHECK(s);
	CHECK_EQ_U(kx_store_limit(s), 512ull << 20);
	for (uint64_t i = 0; i < 1000; i++) {
		uint8_t in = (uint8_t)(i % 3 == 0 ? 0 : i % 65);
		uint8_t out = (uint8_t)(i % 5 == 0 ? 0 : i % 64);
		struct kx_ioctl e = mk_ioctl(i, in, out);

		fill_arg(arg, (size_t)in + out, i);
		CHECK(kx_store_add_ioctl(s, &e, in + out ? arg : NULL) == 0);
	}
	CHECK_EQ_U(kx_store_ioctl_count(s), 1000);
	for (uint64_t i = 0; i < 1000; i++) {
		uint8_t in = (uint8_t)(i % 3 == 0 ? 0 : i % 65);
		uint8_t out = (uint8_t)(i % 5 == 0 ? 0 : i % 64);
		struct kx_ioctl want = mk_ioctl(i, in, out);
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		const uint8_t *a;

		CHECK(e);
		CHECK(same_ioctl(e, &want));
		a = kx_store_arg(s, e);
		if (in + out == 0) {
			CHECK(a == NULL);
			CHECK(e->arg_off == KX_NO_ARG);
			continue;
		}
		CHECK(a);
		fill_arg(arg, (size_t)in + out, i);
		CHECK(memcmp(a, arg, (size_t)in + out) == 0);
	}
	CHECK(kx_store_ioctl(s, 1000) == NULL);
	CHECK_EQ_U(kx_store_not_stored(s), 0);
	kx_store_free(s);
}

/* Lengths without bytes are dropped rather than pointing at nothing. */
static void test_ioctl_lengths_without_bytes(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_ioctl e = mk_ioctl(1, 8, 8);

	CHECK(s);
	CHECK(kx_store_add_ioctl(s, &e, NULL) == 0);
	CHECK_EQ_U(kx_store_ioctl(s, 0)->arg_in_len, 0);
	CHECK(kx_store_arg(s, kx_store_ioctl(s, 0)) == NULL);
	kx_store_free(s);
}

static struct kx_task mk_task(uint64_t ts, uint32_t pid, uint32_t tid, uint32_t what,
                              const char *comm)
{
	struct kx_task t;

	memset(&t, 0, sizeof(t));
	t.ts = ts;
	t.pid = pid;
	t.tid = tid;
	t.ppid = 1;
	t.what = what;
	strncpy(t.comm, comm, sizeof(t.comm) - 1);
	return t;
}

static void test_tasks_and_comm(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_task t;
	char name[32];

	CHECK(s);
	CHECK(kx_store_comm(s, 42) == NULL);
	t = mk_task(1, 42, 42, KX_TASK_FORK, "worker");
	CHECK(kx_store_add_task(s, &t) == 0);
	t = mk_task(2, 42, 43, KX_TASK_FORK, "worker");
	CHECK(kx_store_add_task(s, &t) == 0);
	CHECK_STR(kx_store_comm(s, 42), "worker");
	t = mk_task(3, 42, 42, KX_TASK_RENAME, "renamed");
	CHECK(kx_store_add_task(s, &t) == 0);
	t = mk_task(4, 42, 42, KX_TASK_RENAME, "final-name");
	CHECK(kx_store_add_task(s, &t) == 0);
	CHECK_STR(kx_store_comm(s, 42), "final-name");
	CHECK_STR(kx_store_comm(s, 43), "worker");
	CHECK(kx_store_comm(s, 44) == NULL);

	/* An unterminated comm comes back terminated. */
	memset(&t, 0, sizeof(t));
	t.tid = 77;
	memset(t.comm, 'x', sizeof(t.comm));
	CHECK(kx_store_add_task(s, &t) == 0);
	CHECK_EQ_U(strlen(kx_store_comm(s, 77)), KX_COMM_LEN - 1);

	/* Many tids: the table grows and keeps every name. */
	for (uint32_t tid = 1000; tid < 6000; tid++) {
		snprintf(name, sizeof(name), "t%u", tid);
		t = mk_task(tid, tid, tid, KX_TASK_EXEC, name);
		CHECK(kx_store_add_task(s, &t) == 0);
	}
	for (uint32_t tid = 1000; tid < 6000; tid++) {
		snprintf(name, sizeof(name), "t%u", tid);
		CHECK_STR(kx_store_comm(s, tid), name);
	}
	CHECK_STR(kx_store_comm(s, 42), "final-name");
	CHECK_EQ_U(kx_store_task_count(s), 5005);
	CHECK_EQ_U(kx_store_task(s, 1)->tid, 43);
	CHECK_EQ_U(kx_store_task(s, 3)->ts, 4);
	CHECK(kx_store_task(s, 5005) == NULL);
	kx_store_free(s);
}

static void test_limit(void)
{
	const size_t limit = 1 << 20;
	struct kx_store *s = kx_store_new(limit);
	uint64_t refused = 0, stored = 0, i;
	uint8_t arg[128];
	struct kx_task t;

	CHECK(s);
	for (i = 0; i < 40000; i++) {
		uint8_t n = (uint8_t)(i % 4 == 0 ? 64 : 0);
		struct kx_ioctl e = mk_ioctl(i, n, n);

		fill_arg(arg, 2u * n, i);
		if (kx_store_add_ioctl(s, &e, arg))
			refused++;
		else
			stored++;
		CHECK(kx_store_bytes(s) <= limit);
		if (i % 100 == 0) {
			t = mk_task(i, 1, (uint32_t)i, KX_TASK_FORK, "x");
			if (kx_store_add_task(s, &t))
				refused++;
			CHECK(kx_store_bytes(s) <= limit);
		}
	}
	CHECK(refused > 0);
	CHECK(stored > 1000);
	CHECK_EQ_U(kx_store_not_stored(s), refused);
	CHECK_EQ_U(kx_store_ioctl_count(s), stored);
	/* What was stored is intact. */
	for (i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		const uint8_t *a = kx_store_arg(s, e);

		uint64_t src = (e->ts - 1000000) / 17; /* index it was made from */

		CHECK(e->arg_in_len == 0 || a);
		if (a) {
			CHECK(e->arg_in_len == 64 && e->arg_out_len == 64);
			fill_arg(arg, 128, src);
			CHECK(memcmp(a, arg, 128) == 0);
		}
	}

	/* A limit below the store's own size stores nothing. */
	kx_store_free(s);
	s = kx_store_new(64);
	CHECK(s);
	{
		struct kx_ioctl e = mk_ioctl(0, 0, 0);

		CHECK(kx_store_add_ioctl(s, &e, NULL) == -1);
		CHECK_EQ_U(kx_store_not_stored(s), 1);
	}
	kx_store_free(s);
}

static void test_reset(void)
{
	struct kx_store *s = kx_store_new(1 << 20);
	size_t empty;
	struct kx_task t = mk_task(1, 5, 5, KX_TASK_EXEC, "a");
	struct kx_ioctl e = mk_ioctl(1, 0, 0);

	CHECK(s);
	empty = kx_store_bytes(s);
	while (kx_store_add_ioctl(s, &e, NULL) == 0)
		;
	CHECK(kx_store_add_task(s, &t) == -1 || kx_store_task_count(s) == 1);
	CHECK(kx_store_not_stored(s) >= 1);
	kx_store_reset(s);
	CHECK_EQ_U(kx_store_ioctl_count(s), 0);
	CHECK_EQ_U(kx_store_task_count(s), 0);
	CHECK_EQ_U(kx_store_not_stored(s), 0);
	CHECK_EQ_U(kx_store_bytes(s), empty);
	CHECK_EQ_U(kx_store_limit(s), 1 << 20);
	CHECK(kx_store_comm(s, 5) == NULL);
	CHECK(kx_store_add_task(s, &t) == 0);
	CHECK(kx_store_add_ioctl(s, &e, NULL) == 0);
	CHECK_STR(kx_store_comm(s, 5), "a");
	CHECK_EQ_U(kx_store_ioctl(s, 0)->ts, e.ts);
	kx_store_free(s);
}

static void test_many_chunks(void)
{
	const uint64_t n = 200000;
	struct kx_store *s = kx_store_new(0);
	const struct kx_ioctl *first = NULL;
	uint8_t arg[16];

	CHECK(s);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t in = (uint8_t)(i % 10 == 0 ? 16 : 0);
		struct kx_ioctl e = mk_ioctl(i, in, 0);

		fill_arg(arg, in, i);
		CHECK(kx_store_add_ioctl(s, &e, arg) == 0);
		if (i == 0)
			first = kx_store_ioctl(s, 0);
	}
	/* Pointers stay put while the store grows. */
	CHECK(first == kx_store_ioctl(s, 0));
	CHECK_EQ_U(kx_store_ioctl_count(s), n);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t in = (uint8_t)(i % 10 == 0 ? 16 : 0);
		struct kx_ioctl want = mk_ioctl(i, in, 0);
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		CHECK(same_ioctl(e, &want));
		if (in) {
			fill_arg(arg, in, i);
			CHECK(memcmp(kx_store_arg(s, e), arg, in) == 0);
		}
	}
	CHECK(kx_store_bytes(s) >= n * sizeof(struct kx_ioctl));
	kx_store_free(s);
}

int main(void)
{
	RUN(test_ioctl_roundtrip);
	RUN(test_ioctl_lengths_without_bytes);
	RUN(test_tasks_and_comm);
	RUN(test_limit);
	RUN(test_reset);
	RUN(test_many_chunks);
	KXT_EXIT();
}
