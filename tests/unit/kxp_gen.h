/*
 * Test data for the record-file tests: a capture info with devices, hooks,
 * job counters and driver-call stats, a deterministic, realistic event
 * stream (a few processes and threads, ts advancing by 1-50 us, a tenth of
 * the ioctls with argument bytes, a third with off-CPU time, task events now
 * and then, a job event every few ioctls of every source and phase, with
 * extreme keys and ring names of every length), writing it to a .kxp file
 * and checking what a reader got back against it.
 */
#ifndef KXP_GEN_H
#define KXP_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/kxp.h"
#include "model/store.h"

static inline uint64_t gen_rng(uint64_t *s)
{
	/* xorshift64*: deterministic and good enough for test data. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Argument bytes of ioctl i are a function of i, so nothing is kept. */
static inline void gen_arg(uint8_t *arg, size_t n, uint64_t i)
{
	for (size_t k = 0; k < n; k++)
		arg[k] = (uint8_t)(i * 131 + k * 29 + (i >> 8));
}

enum { GEN_IOCTL, GEN_TASK, GEN_JOB };

struct gen_item {
	uint8_t kind; /* GEN_* */
	uint32_t idx;
};

struct gen {
	struct kx_ioctl *ioc;
	size_t nioc;
	struct kx_task *task;
	size_t ntask;
	struct kx_job *job;
	size_t njob;
	struct gen_item *items; /* write order */
	size_t nitems;
};

static inline void gen_free(struct gen *g)
{
	free(g->ioc);
	free(g->task);
	free(g->job);
	free(g->items);
	memset(g, 0, sizeof(*g));
}

static inline void gen_events(struct gen *g, size_t nioc, uint64_t seed)
{
	static const uint32_t cmds[] = {0xc008ae67, 0xae80, 0xc0106440, 0x40086409, 0xc0206466};
	size_t ntask_max = nioc / 200 + 8, njob_max = nioc / 3 + 8;
	uint64_t ts = 5000000000ull, rng = seed | 1;

	memset(g, 0, sizeof(*g));
	g->ioc = calloc(nioc ? nioc : 1, sizeof(*g->ioc));
	g->task = calloc(ntask_max, sizeof(*g->task));
	g->job = calloc(njob_max, sizeof(*g->job));
	g->items = calloc(nioc + ntask_max + njob_max, sizeof(*g->items));
	if (!g->ioc || !g->task || !g->job || !g->items)
		abort();
	for (size_t i = 0; i < nioc; i++) {
		struct kx_ioctl *e = &g->ioc[i];
		uint64_t r = gen_rng(&rng);
		uint32_t t = (uint32_t)(r % 8);

		if (i % 250 == 0 && g->ntask < ntask_max) {
			struct kx_task *k = &g->task[g->ntask];

			k->ts = ts;
			k->pid = 4000 + t % 3;
			k->tid = 4000 + t;
			k->ppid = 1;
			k->what = 1 + (uint32_t)(r >> 40) % 4;
			snprintf(k->comm, sizeof(k->comm), "%s%u",
			         (r >> 50) & 1 ? "vcpu" : "worker", (unsigned int)(g->ntask % 100));
			g->items[g->nitems++] = (struct gen_item){GEN_TASK, (uint32_t)g->ntask++};
		}
		if (i % 3 == 1 && g->njob < njob_max) {
			struct kx_job *j = &g->job[g->njob];
			uint64_t q = gen_rng(&rng);
			size_t rl = (size_t)(q >> 60); /* 0..15 characters: empty to the limit */

			/* Sources and phases cycle through all, plus unknown ones. */
			j->ts = ts - (q % 3000); /* a little behind: the ring buffer reorders */
			j->src = (uint16_t)(g->njob % 13 == 12 ? 300 : 1 + g->njob % 11);
			j->phase = (uint8_t)(g->njob % 17 == 16 ? 200 : 1 + (q >> 8) % 7);
			j->flags = (uint8_t)(q >> 16);
			j->dev = (q >> 20) % 4 ? (253u << 20) : UINT32_MAX;
			j->pid = (q >> 24) % 3 ? 4000 + t % 3 : 0;
			j->tid = j->pid ? 4000 + t : 0;
			j->ctx = (q >> 28) % 5 ? (q >> 32) % 64 : UINT64_MAX - (q & 0xff);
			j->seqno = g->njob / 3 + ((q >> 36) % 9 ? 0 : (1ull << 63));
			j->aux = (q >> 40) % 2 ? q : 0;
			j->aux2 = (q >> 41) % 2 ? ~q : 0;
			memset(j->ring, 0, sizeof(j->ring));
			for (size_t k = 0; k < rl && k < sizeof(j->ring) - 1; k++)
				j->ring[k] = (char)('a' + (k + g->njob) % 26);
			g->items[g->nitems++] = (struct gen_item){GEN_JOB, (uint32_t)g->njob++};
		}
		ts += 1000 + (r >> 8) % 49000;
		e->ts = ts;
		e->dur = 500 + (r >> 24) % 20000;
		e->pid = 4000 + t % 3;
		e->tid = 4000 + t;
		e->dev = (10u << 20) | 232;
		e->cmd = cmds[(r >> 32) % 5 < 3 ? t % 2 : (r >> 32) % 5];
		e->ret = (r >> 36) % 50 == 0 ? -11 : 0;
		e->fd = 10 + (int32_t)t;
		e->xfer_cmd = 0;
		e->fkind = (uint8_t)(t < 4 ? 4 : 1);
		e->drv = 3;
		e->cpu_hi = 0;
		e->cpu_lo = (uint8_t)(t % 4);
		if ((r >> 44) % 10 == 0) {
			e->arg_in_len = (uint8_t)(16 + (r >> 48) % 49);
			e->arg_out_len = (uint8_t)((r >> 56) % 2 ? 16 : 0);
		}
		/* Off-CPU time on a third, one of them past what a u16 holds. */
		e->offcpu_us = (r >> 52) % 3 ? 0 : (uint32_t)((r >> 8) % (i % 7 ? 5000 : 200000));
		e->arg_off = KX_NO_ARG;
		g->items[g->nitems++] = (struct gen_item){GEN_IOCTL, (uint32_t)i};
	}
	g->nioc = nioc;
}

static inline void gen_capinfo(struct kx_capinfo *ci, int final)
{
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	snprintf(ci->kernel, sizeof(ci->kernel), "6.1.0-test-amd64");
	snprintf(ci->cmdline, sizeof(ci->cmdline), "kvm_workload -j 100 --name \"a b\"");
	ci->clock_start.offset_ns = -1234567890123ll;
	ci->clock_start.uncertainty_ns = 250;
	ci->clock_start.mono_ns = 5000000000ull;
	ci->start_mono_ns = 5000000000ull;
	ci->ndevices = 3;
	ci->devices[0] = (struct kx_device){(10u << 20) | 232, 1, 3, 0, "/dev/kvm", "kvm"};
	ci->devices[1] = (struct kx_device){0, 4, 3, 0, "anon_inode:kvm-vcpu", "kvm"};
	ci->devices[2] = (struct kx_device){(226u << 20) | 0xfffff, 1,       5, 1,
	                                    "/dev/dri/renderD128",  "amdgpu"};
	ci->nhooks = 2;
	snprintf(ci->hooks[0].name, sizeof(ci->hooks[0].name), "ioctl");
	snprintf(ci->hooks[0].mech, sizeof(ci->hooks[0].mech), "tp_btf");
	ci->hooks[0].state = KX_HOOK_ATTACHED;
	snprintf(ci->hooks[1].name, sizeof(ci->hooks[1].name), "sched_process_fork");
	snprintf(ci->hooks[1].mech, sizeof(ci->hooks[1].mech), "-");
	ci->hooks[1].state = KX_HOOK_FAILED;
	snprintf(ci->hooks[1].why, sizeof(ci->hooks[1].why), "no BTF for this kernel");
	ci->ringbuf_bytes = 16u << 20;
	ci->all_pids = 1;
	if (final) {
		ci->clock_stop.offset_ns = -1234567890000ll;
		ci->clock_stop.uncertainty_ns = 300;
		ci->clock_stop.mono_ns = 9000000000ull;
		ci->stop_mono_ns = 9000000000ull;
		ci->emitted = 1000003;
		ci->received = 1000000;
		ci->dropped = 3;
		ci->not_stored = 7;
		ci->inflight_full = 1;
		ci->pidset_full = 2;
		ci->arg_faults = 9;
		ci->bpf_missed = 5;
		ci->job_emitted = 777;
		ci->job_received = 770;
		ci->job_dropped = 7;
		ci->job_done_lost = 4;
		ci->ndrvcalls = 2;
		snprintf(ci->drvcalls[0].fn, sizeof(ci->drvcalls[0].fn), "drm_ioctl");
		snprintf(ci->drvcalls[0].mech, sizeof(ci->drvcalls[0].mech), "fentry");
		ci->drvcalls[0].calls = 12345;
		ci->drvcalls[0].sum_ns = 987654321;
		ci->drvcalls[0].max_ns = UINT64_MAX;
		for (int k = 0; k < KX_HIST_SLOTS; k++)
			ci->drvcalls[0].slots[k] = (uint64_t)k * k + (k == KX_HIST_SLOTS - 1);
		snprintf(ci->drvcalls[1].fn, sizeof(ci->drvcalls[1].fn), "amdgpu_cs_ioctl");
		snprintf(ci->drvcalls[1].mech, sizeof(ci->drvcalls[1].mech), "kprobe");
		ci->drvcalls[1].calls = 1;
	}
}

/* Writes g to path; flush_every > 0 flushes that often; no trailer when !close_ci. */
static inline int gen_write(const char *path, const struct gen *g, int flush_every, int trailer)
{
	struct kx_capinfo *ci = malloc(sizeof(*ci));
	struct kx_kxp_writer *w;
	uint8_t arg[256];
	char err[512];
	int ret = 0;

	if (!ci)
		abort();
	gen_capinfo(ci, 0);
	w = kx_kxp_create(path, ci, err, sizeof(err));
	if (!w) {
		printf("# %s\n", err);
		free(ci);
		return -1;
	}
	for (size_t i = 0; i < g->nitems; i++) {
		const struct gen_item *it = &g->items[i];

		if (it->kind == GEN_TASK) {
			ret |= kx_kxp_add_task(w, &g->task[it->idx]);
		} else if (it->kind == GEN_JOB) {
			ret |= kx_kxp_add_job(w, &g->job[it->idx]);
		} else {
			const struct kx_ioctl *e = &g->ioc[it->idx];

			gen_arg(arg, (size_t)e->arg_in_len + e->arg_out_len, it->idx);
			ret |= kx_kxp_add_ioctl(w, e, arg);
		}
		if (flush_every && i % (size_t)flush_every == (size_t)flush_every - 1)
			ret |= kx_kxp_flush(w);
	}
	gen_capinfo(ci, 1);
	if (!trailer)
		ret |= kx_kxp_flush(w);
	ret |= kx_kxp_close(w, trailer ? ci : NULL, err, sizeof(err));
	free(ci);
	return ret ? -1 : 0;
}

static inline uint8_t *gen_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		p = malloc((size_t)n + 1);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return p;
}

static inline int gen_same_ioctl(const struct kx_ioctl *a, const struct kx_ioctl *b)
{
	return a->ts == b->ts && a->dur == b->dur && a->pid == b->pid && a->tid == b->tid &&
	       a->dev == b->dev && a->cmd == b->cmd && a->ret == b->ret && a->fd == b->fd &&
	       a->xfer_cmd == b->xfer_cmd && a->fkind == b->fkind && a->cpu_hi == b->cpu_hi &&
	       a->cpu_lo == b->cpu_lo && a->arg_in_len == b->arg_in_len &&
	       a->arg_out_len == b->arg_out_len && a->drv == b->drv && a->offcpu_us == b->offcpu_us;
}

static inline int gen_same_job(const struct kx_job *a, const struct kx_job *b)
{
	return a->ts == b->ts && a->ctx == b->ctx && a->seqno == b->seqno && a->aux == b->aux &&
	       a->aux2 == b->aux2 && a->dev == b->dev && a->pid == b->pid && a->tid == b->tid &&
	       a->src == b->src && a->phase == b->phase && a->flags == b->flags &&
	       !memcmp(a->ring, b->ring, sizeof(a->ring));
}

/* 1 when the store holds a prefix of g's ioctls, tasks and jobs, args intact. */
static inline int gen_is_prefix(const struct gen *g, const struct kx_store *s)
{
	uint8_t arg[256];

	if (kx_store_ioctl_count(s) > g->nioc || kx_store_task_count(s) > g->ntask ||
	    kx_store_job_count(s) > g->njob)
		return 0;
	for (size_t i = 0; i < kx_store_job_count(s); i++)
		if (!gen_same_job(kx_store_job(s, i), &g->job[i]))
			return 0;
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		size_t n = (size_t)e->arg_in_len + e->arg_out_len;
		const uint8_t *a = kx_store_arg(s, e);

		if (!gen_same_ioctl(e, &g->ioc[i]))
			return 0;
		if (n) {
			gen_arg(arg, n, i);
			if (!a || memcmp(a, arg, n) != 0)
				return 0;
		} else if (a) {
			return 0;
		}
	}
	for (size_t i = 0; i < kx_store_task_count(s); i++) {
		const struct kx_task *t = kx_store_task(s, i), *w = &g->task[i];

		if (t->ts != w->ts || t->pid != w->pid || t->tid != w->tid || t->ppid != w->ppid ||
		    t->what != w->what || strcmp(t->comm, w->comm) != 0)
			return 0;
	}
	return 1;
}

/* A fresh temp path in $TMPDIR (or /tmp); the caller unlinks it. */
static inline void gen_tmp_path(char *buf, size_t len, const char *tag)
{
	const char *dir = getenv("TMPDIR");

	snprintf(buf, len, "%s/kxp-test-%s-%d.kxp", dir && *dir ? dir : "/tmp", tag, (int)getpid());
}

/* A chunk of a record file as written: where it is, and which items it holds. */
struct gen_chunk {
	size_t off, len;    /* bytes: header included */
	size_t first, nrec; /* its records: g->items[first .. first + nrec) */
	int trailer;
};

/*
 * The chunks of an undamaged file buf written by gen_write (32-byte chunk
 * headers: type at 4, compressed length at 12, record count at 16); at
 * most max of them. Returns how many, or 0 when the layout does not add up.
 */
static inline size_t gen_chunks(const uint8_t *buf, size_t len, struct gen_chunk *out, size_t max)
{
	size_t off = buf[12] | buf[13] << 8 | buf[14] << 16 | (size_t)buf[15] << 24, n = 0,
	       item = 0;

	while (off + 32 <= len && n < max) {
		const uint8_t *h = buf + off;
		size_t clen = h[12] | h[13] << 8 | h[14] << 16 | (size_t)h[15] << 24;
		size_t nrec = h[16] | h[17] << 8 | h[18] << 16 | (size_t)h[19] << 24;

		out[n] = (struct gen_chunk){off, 32 + clen, item, nrec, h[4] == 2};
		item += nrec;
		off += 32 + clen;
		n++;
	}
	return off == len ? n : 0;
}

/*
 * The bytes of g written with a trailer (flushing every flush_every items)
 * to a temp file named after tag, and their chunks in ch (at most max, *nch
 * of them; 0 when the layout does not add up). NULL when writing failed.
 */
static inline uint8_t *gen_file(const struct gen *g, int flush_every, const char *tag, size_t *len,
                                struct gen_chunk *ch, size_t max, size_t *nch)
{
	uint8_t *buf = NULL;
	char path[256];

	gen_tmp_path(path, sizeof(path), tag);
	*nch = 0;
	if (gen_write(path, g, flush_every, 1) == 0)
		buf = gen_slurp(path, len);
	unlink(path);
	if (buf)
		*nch = gen_chunks(buf, *len, ch, max);
	return buf;
}

/* Ioctl i of g against a stored one, argument bytes included. */
static inline int gen_same_stored_ioctl(const struct kx_store *s, const struct kx_ioctl *e,
                                        const struct gen *g, size_t i)
{
	size_t n = (size_t)e->arg_in_len + e->arg_out_len;
	const uint8_t *a = kx_store_arg(s, e);
	uint8_t arg[256];

	if (!gen_same_ioctl(e, &g->ioc[i]))
		return 0;
	if (!n)
		return !a;
	gen_arg(arg, n, i);
	return a && memcmp(a, arg, n) == 0;
}

static inline int gen_same_task(const struct kx_task *t, const struct kx_task *w)
{
	return t->ts == w->ts && t->pid == w->pid && t->tid == w->tid && t->ppid == w->ppid &&
	       t->what == w->what && strcmp(t->comm, w->comm) == 0;
}

/*
 * 1 when the store holds exactly the items of g's chunks not marked lost[k],
 * in file order, arguments intact: nothing of an intact chunk is missing
 * and nothing else is there.
 */
static inline int gen_matches_except(const struct gen *g, const struct kx_store *s,
                                     const struct gen_chunk *ch, size_t nch, const uint8_t *lost)
{
	size_t io = 0, ta = 0, jo = 0;

	for (size_t k = 0; k < nch; k++) {
		if (lost[k])
			continue;
		for (size_t i = ch[k].first; i < ch[k].first + ch[k].nrec && i < g->nitems; i++) {
			const struct gen_item *it = &g->items[i];

			if (it->kind == GEN_TASK) {
				if (ta >= kx_store_task_count(s) ||
				    !gen_same_task(kx_store_task(s, ta++), &g->task[it->idx]))
					return 0;
			} else if (it->kind == GEN_JOB) {
				if (jo >= kx_store_job_count(s) ||
				    !gen_same_job(kx_store_job(s, jo++), &g->job[it->idx]))
					return 0;
			} else if (io >= kx_store_ioctl_count(s) ||
			           !gen_same_stored_ioctl(s, kx_store_ioctl(s, io++), g, it->idx)) {
				return 0;
			}
		}
	}
	return io == kx_store_ioctl_count(s) && ta == kx_store_task_count(s) &&
	       jo == kx_store_job_count(s);
}

#endif /* KXP_GEN_H */
