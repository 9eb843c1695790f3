/* Ring-buffer consumer thread: batch drain, validate, convert, hand to the sink. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "capture/consumer.h"
#include "capture/sampler.h"
#include "model/annot.h"
#include "util/cmdline.h"
#include "util/hashmap.h"

#define POLL_MS 100

struct kx_consumer {
	struct ring_buffer *rb;
	struct kx_sink sink;
	pthread_t thread;
	int running;
	atomic_int stop;
	/* Written by the consumer thread only; read live by others. */
	uint64_t ioctls, tasks, jobs, anns, malformed, samples, offcpu, counters;
	struct kx_hmap cmd_read; /* pids whose command line was read (consumer thread only) */
	struct kx_ustack_pair
	        *ustack; /* --call-graph dwarf: pairs copies and samples (not owned) */
};

/* ns -> µs, rounded, saturated at the field's limit. */
static uint32_t ns_to_us(uint64_t ns)
{
	uint64_t us = ns / 1000 + (ns % 1000 >= 500);

	return us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* Single writer: a relaxed store is enough, and no locked add per event. */
static inline void count(uint64_t *v)
{
	__atomic_store_n(v, *v + 1, __ATOMIC_RELAXED);
}

static int on_ioctl(struct kx_consumer *c, const struct kx_ioctl_rec *r, size_t size)
{
	uint8_t arg[2 * KX_ARG_MAX];
	struct kx_ioctl e;
	unsigned int in = r->arg_in_len, out = r->arg_out_len;

	if (size < KX_IOCTL_REC_BASE_SIZE || in > KX_ARG_MAX || out > KX_ARG_MAX ||
	    ((in || out) && size < sizeof(*r))) {
		count(&c->malformed);
		return 0;
	}
	memset(&e, 0, sizeof(e));
	e.ts = r->ts;
	e.dur = r->dur;
	e.pid = r->pid;
	e.tid = r->tid;
	e.dev = r->dev;
	e.cmd = r->cmd;
	e.ret = r->ret;
	e.fd = r->fd;
	e.offcpu_us = ns_to_us(r->offcpu_ns);
	/* Escapes are 8-bit nrs; anything wider is not a valid XFER: name it as such. */
	e.xfer_cmd = r->xfer_cmd <= 0xff ? (uint8_t)r->xfer_cmd : 0;
	e.arg_off = KX_NO_ARG;
	e.fkind = (uint8_t)r->fkind;
	e.drv = (uint8_t)r->drv;
	e.cpu_hi = (uint8_t)(r->hdr.cpu >> 8);
	e.cpu_lo = (uint8_t)r->hdr.cpu;
	e.arg_in_len = (uint8_t)in;
	e.arg_out_len = (uint8_t)out;
	/* The ring is read-only here: pack in+out contiguously in a local copy. */
	if (in)
		memcpy(arg, r->arg, in);
	if (out)
		memcpy(arg + in, r->arg + KX_ARG_MAX, out);
	count(&c->ioctls);
	if (c->sink.ioctl)
		c->sink.ioctl(c->sink.ctx, &e, (in || out) ? arg : NULL);
	return 0;
}

/*
 * The process's command line, read from /proc once per process while it
 * lives and again at each exec, onto the task record that made it known.
 * Best effort: a process already gone (or exec'd again) leaves "" or the
 * newer line. Out of memory, the line is read again next time.
 */
static void task_cmd(struct kx_consumer *c, struct kx_task *t)
{
	int isnew = 0;

	if (t->what == KX_TASK_EXIT) {
		if (t->tid == t->pid)
			kx_hmap_del(&c->cmd_read, t->pid); /* the pid may come back */
		return;
	}
	if (!kx_hmap_put(&c->cmd_read, t->pid, 1, &isnew))
		isnew = 1;
	if (isnew || t->what == KX_TASK_EXEC)
		kx_cmdline_read(t->pid, t->cmd, sizeof(t->cmd));
}

static int on_task(struct kx_consumer *c, const struct kx_task_rec *r, size_t size)
{
	struct kx_task t;

	if (size < sizeof(*r)) {
		count(&c->malformed);
		return 0;
	}
	memset(&t, 0, sizeof(t));
	t.ts = r->ts;
	t.pid = r->pid;
	t.tid = r->tid;
	t.ppid = r->ppid;
	t.what = r->what;
	t.tp = r->tp;
	memcpy(t.comm, r->comm, sizeof(t.comm));
	t.comm[sizeof(t.comm) - 1] = 0;
	task_cmd(c, &t);
	count(&c->tasks);
	if (c->sink.task)
		c->sink.task(c->sink.ctx, &t);
	return 0;
}

static int on_job(struct kx_consumer *c, const struct kx_job_rec *r, size_t size)
{
	struct kx_job j;

	if (size < sizeof(*r) || !r->src || r->src >= KX_JOB_SRC_MAX) {
		count(&c->malformed);
		return 0;
	}
	memset(&j, 0, sizeof(j));
	j.ts = r->ts;
	j.ctx = r->ctx;
	j.seqno = r->seqno;
	j.aux = r->aux;
	j.aux2 = r->aux2;
	j.dev = r->dev;
	j.pid = r->pid;
	j.tid = r->tid;
	j.src = r->src;
	j.phase = r->phase;
	j.flags = r->flags;
	memcpy(j.ring, r->ring, sizeof(j.ring));
	j.ring[sizeof(j.ring) - 1] = 0;
	/* Ring names the BPF side does not format, from the record's own fields
	 * (see struct kx_job). Nothing outside the record is read here: a block
	 * record without its disk's name keeps "" (registry/devices.h names it). */
	if (!j.ring[0]) {
		if (j.src == KX_JOB_SRC_KVM)
			snprintf(j.ring, sizeof(j.ring), "vcpu %u", (unsigned int)j.ctx);
		else if (j.src == KX_JOB_SRC_I915)
			snprintf(j.ring, sizeof(j.ring), "%u:%u",
			         (unsigned int)(j.aux >> 16) & 0xffff,
			         (unsigned int)j.aux & 0xffff);
	}
	count(&c->jobs);
	if (c->sink.job)
		c->sink.job(c->sink.ctx, &j);
	return 0;
}

static int on_sample(struct kx_consumer *c, const void *r, size_t size)
{
	struct kx_sample smp;

	if (kx_sample_parse(r, size, &smp)) {
		count(&c->malformed);
		return 0;
	}
	count(smp.kind == KX_SAMPLE_OFFCPU ? &c->offcpu : &c->samples);
	if (c->ustack)
		kx_ustack_pair_sample(c->ustack, &smp);
	if (c->sink.sample)
		c->sink.sample(c->sink.ctx, &smp);
	return 0;
}

static int on_counters(struct kx_consumer *c, const struct kx_counter_rec *r, size_t size)
{
	struct kx_ctr_ev e;

	if (size < sizeof(*r) || r->n > KX_MAX_COUNTERS) {
		count(&c->malformed);
		return 0;
	}
	kx_ctr_ev_from_rec(r, &e);
	count(&c->counters);
	if (c->sink.counters)
		c->sink.counters(c->sink.ctx, &e);
	return 0;
}

static int on_annot(struct kx_consumer *c, const struct kx_ann_rec *r, size_t size)
{
	char name[KX_ANN_NAME_MAX] = "", cat[KX_ANN_CAT_MAX] = "";
	int named = kx_ann_named(r->what);
	struct kx_ann a;

	if (size < KX_ANN_REC_BASE_SIZE || !r->what || r->what > KX_ANN_END ||
	    (named && size < sizeof(*r))) {
		count(&c->malformed);
		return 0;
	}
	memset(&a, 0, sizeof(a));
	a.ts = r->ts;
	a.begin = r->begin;
	a.id = r->id;
	a.pid = r->pid;
	a.tid = r->tid;
	a.what = r->what;
	a.depth = r->depth;
	a.flags = r->flags;
	if (named) {
		memcpy(name, r->name, sizeof(name) - 1);
		memcpy(cat, r->category, sizeof(cat) - 1);
	}
	count(&c->anns);
	if (c->sink.annot)
		c->sink.annot(c->sink.ctx, &a, name, cat);
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct kx_consumer *c = ctx;
	const struct kx_hdr *h = data;

	if (size < sizeof(*h)) {
		count(&c->malformed);
		return 0;
	}
	switch (h->type) {
	case KX_REC_IOCTL:
		return on_ioctl(c, data, size);
	case KX_REC_TASK:
		return on_task(c, data, size);
	case KX_REC_JOB:
		return on_job(c, data, size);
	case KX_REC_SAMPLE:
	case KX_REC_OFFCPU:
		return on_sample(c, data, size);
	case KX_REC_USTACK:
		if (!c->ustack)
			count(&c->malformed);
		else
			kx_ustack_pair_copy(c->ustack, data, size);
		return 0;
	case KX_REC_COUNTERS:
		return on_counters(c, data, size);
	case KX_REC_ANNOTATION:
		return on_annot(c, data, size);
	default:
		count(&c->malformed);
		return 0;
	}
}

static void *consumer_main(void *arg)
{
	struct kx_consumer *c = arg;

	while (!atomic_load(&c->stop)) {
		int n = ring_buffer__poll(c->rb, POLL_MS);

		if (n < 0 && n != -EINTR)
			break;
		/* Wakeups are sampled: pick up whatever arrived below the threshold. */
		ring_buffer__consume(c->rb);
		if (c->sink.tick)
			c->sink.tick(c->sink.ctx);
	}
	return NULL;
}

struct kx_consumer *kx_consumer_new(int ringbuf_fd, const struct kx_sink *sink, char *err,
                                    size_t len)
{
	struct kx_consumer *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	c->sink = *sink;
	c->rb = ring_buffer__new(ringbuf_fd, on_record, c, NULL);
	if (!c->rb) {
		snprintf(err, len, "cannot map the BPF ring buffer: %s", strerror(errno));
		free(c);
		return NULL;
	}
	return c;
}

void kx_consumer_set_ustack(struct kx_consumer *c, struct kx_ustack_pair *p)
{
	c->ustack = p;
}

int kx_consumer_start(struct kx_consumer *c, char *err, size_t len)
{
	int rc = pthread_create(&c->thread, NULL, consumer_main, c);

	if (rc) {
		snprintf(err, len, "cannot start the consumer thread: %s", strerror(rc));
		return -1;
	}
	c->running = 1;
	return 0;
}

void kx_consumer_stop(struct kx_consumer *c)
{
	if (c->running) {
		atomic_store(&c->stop, 1);
		pthread_join(c->thread, NULL);
		c->running = 0;
	}
	while (ring_buffer__consume(c->rb) > 0)
		;
	if (c->sink.tick)
		c->sink.tick(c->sink.ctx);
}

void kx_consumer_free(struct kx_consumer *c)
{
	if (!c)
		return;
	if (c->running)
		kx_consumer_stop(c);
	ring_buffer__free(c->rb);
	kx_hmap_free(&c->cmd_read);
	free(c);
}

uint64_t kx_consumer_ioctls(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->ioctls, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_tasks(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->tasks, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_jobs(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->jobs, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_anns(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->anns, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_malformed(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->malformed, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_samples(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->samples, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_offcpu(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->offcpu, __ATOMIC_RELAXED);
}

uint64_t kx_consumer_counters(const struct kx_consumer *c)
{
	return __atomic_load_n(&c->counters, __ATOMIC_RELAXED);
}
