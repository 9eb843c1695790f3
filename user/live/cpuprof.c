/*
 * CPU profiles on demand (see cpuprof.h): the slots of running profiles,
 * one thread per profile, and the profile itself: sample, symbolise,
 * fold, encode.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "capture/clock.h"
#include "capture/sampler.h"
#include "capture/ustack.h"
#include "export/pprof.h"
#include "live/cpuprof.h"
#include "model/perfdata.h"
#include "symbol/collect.h"
#include "symbol/kmask.h"
#include "util/parse.h"

#define POLL_MS 100

struct kx_cpuprof {
	struct kx_session *s;
	int all;
	struct kx_cpuprof_limits lim;
	pthread_mutex_t lock;
	pthread_cond_t idle; /* a profile ended */
	int running;
	atomic_int stopping;
};

/* One profile in progress, owned by its thread. */
struct job {
	struct kx_cpuprof *cp;
	uint32_t secs;
	uint32_t ustack_bytes; /* --call-graph dwarf: copied per sample; 0: fp */
	int ustack_auto;       /* --call-graph auto */
	struct kx_ustack_pair *ustack;
	kx_cpuprof_done_fn done;
	void *ctx;
	struct kx_store *store;
	struct kx_symcollect *sc;
	struct kx_symres real; /* masked profiles: symbols under real addresses */
	struct kx_kmask kmask; /* masked profiles: real kernel frame -> stand-in */
	int sym_oom;
	struct kx_capinfo ci;
	char err[256];
};

struct kx_cpuprof *kx_cpuprof_new(struct kx_session *s, int all,
                                  const struct kx_cpuprof_limits *lim)
{
	struct kx_cpuprof *cp = calloc(1, sizeof(*cp));

	if (!cp)
		return NULL;
	cp->s = s;
	cp->all = all;
	cp->lim = *lim;
	pthread_mutex_init(&cp->lock, NULL);
	pthread_cond_init(&cp->idle, NULL);
	return cp;
}

int kx_cpuprof_seconds(const struct kx_cpuprof *cp, const char *value, uint32_t *secs, char *why,
                       size_t len)
{
	char err[160];
	long long v;

	if (!value) {
		*secs = KX_CPUPROF_SECONDS < cp->lim.max_seconds ? KX_CPUPROF_SECONDS
		                                                 : cp->lim.max_seconds;
		return 0;
	}
	if (kx_parse_long("seconds", value, 1, cp->lim.max_seconds, &v, err, sizeof(err))) {
		snprintf(why, len, "bad query: %s (this server profiles 1 to %u seconds)", err,
		         cp->lim.max_seconds);
		return -1;
	}
	*secs = (uint32_t)v;
	return 0;
}

int kx_cpuprof_call_graph(const struct kx_cpuprof *cp, const char *value, uint32_t *ustack_bytes,
                          int *autom, char *why, size_t len)
{
	char err[160];

	if (!value) {
		*ustack_bytes = cp->lim.ustack_bytes;
		*autom = cp->lim.ustack_auto;
		return 0;
	}
	if (kx_call_graph_parse(value, ustack_bytes, autom, err, sizeof(err))) {
		snprintf(why, len, "bad query: call_graph=%s: %s", value, err);
		return -1;
	}
	return 0;
}

static int masked(const struct job *j)
{
	return !j->cp->lim.kernel_addresses;
}

/* Stored with stand-ins for its kernel frames when masked; noted for
 * symbols under its real addresses. */
static void on_sample(void *ctx, const struct kx_sample *in)
{
	struct job *j = ctx;
	uint64_t kips[KX_SAMPLE_MAX_DEPTH];
	struct kx_sample tmp, dw;
	const struct kx_sample *s = in;

	if (j->ustack) { /* its user frames from its stack copy, if one came */
		dw = *in;
		kx_ustack_pair_sample(j->ustack, &dw);
		s = &dw;
	}
	kx_store_add_sample(j->store,
	                    masked(j) ? kx_kmask_sample(&j->kmask, s, &tmp, kips, &j->sym_oom) : s);
	if (kx_symcollect_sample(j->sc, s))
		j->sym_oom = 1;
}

/* --call-graph dwarf: a stack copy, unwound for the sample that follows. */
static void on_copy(void *ctx, const void *rec, size_t len)
{
	struct job *j = ctx;

	kx_ustack_pair_copy(j->ustack, rec, len);
}

/* A masked profile's resolved symbol into its store: a kernel one under
 * its frame's stand-in (none: the frame was stored unknown). */
static void put_sym(void *ctx, const struct kx_symres *r, const struct kx_symres_entry *e)
{
	struct job *j = ctx;
	uint64_t addr = e->addr;
	struct kx_symres_names n = {.func = kx_symres_str(r, e->func),
	                            .module = kx_symres_str(r, e->module),
	                            .build_id = kx_symres_str(r, e->build_id),
	                            .offset = e->offset,
	                            .mod_offset = e->mod_offset,
	                            .known = e->known};

	if (e->pid == KX_SYMRES_KERNEL && !(addr = kx_kmask_addr(&j->kmask, e->addr)))
		return;
	if (kx_symres_put(kx_samples_syms(kx_store_samples(j->store)), e->pid, e->gen, addr, &n))
		j->sym_oom = 1;
}

/* The capture facts a profile carries: host, what, when, losses. */
static void facts_begin(struct job *j)
{
	kx_capinfo_fill_host(&j->ci);
	snprintf(j->ci.cmdline, sizeof(j->ci.cmdline), "kxprof serve: %u s CPU profile of %s",
	         j->secs, j->cp->all ? "every process" : "the given processes");
	j->ci.samples.hz = j->cp->lim.hz;
	j->ci.samples.ustack_bytes = j->ustack_bytes;
	kx_clock_sync_measure(&j->ci.clock_start);
	j->ci.start_mono_ns = kx_mono_ns();
}

static void facts_end(struct job *j, struct kx_sampler *sm)
{
	struct kx_sample_counts c;

	kx_sampler_counts(sm, &c);
	j->ci.samples.cpus = c.cpus;
	j->ci.samples.emitted = c.emitted;
	j->ci.samples.received = c.received;
	j->ci.samples.dropped = c.dropped;
	j->ci.samples.stacks[KX_NO_USTACK] = c.no_ustack;
	j->ci.samples.stacks[KX_NO_KSTACK] = c.no_kstack;
	j->ci.samples.stacks[KX_USTACK_CUT] = c.ustack_full;
	j->ci.samples.stacks[KX_KSTACK_CUT] = c.kstack_full;
	if (j->ustack)
		kx_ustack_facts(j->ustack, &c, &j->ci.samples);
	kx_clock_sync_measure(&j->ci.clock_stop);
	j->ci.stop_mono_ns = kx_mono_ns();
}

/* secs seconds of samples into the job's store (less when shutting down). */
static int sample(struct job *j)
{
	struct kx_sampler_maps maps;
	struct kx_sampler_opts o;
	struct kx_sampler *sm;
	uint64_t end;
	int rc = -1;

	if (kx_session_sampler_maps(j->cp->s, &maps)) {
		snprintf(j->err, sizeof(j->err), "the capture is closed");
		return -1;
	}
	if (j->ustack_bytes &&
	    !(j->ustack = kx_ustack_pair_new(j->ustack_auto, j->err, sizeof(j->err))))
		return -1;
	o = (struct kx_sampler_opts){.freq_hz = j->cp->lim.hz,
	                             .all = j->cp->all,
	                             .ustack_bytes = j->ustack_bytes,
	                             .copy_fn = j->ustack ? on_copy : NULL,
	                             .maps = &maps,
	                             .fn = on_sample,
	                             .ctx = j};
	sm = kx_sampler_open(&o, j->err, sizeof(j->err));
	if (!sm)
		return -1;
	facts_begin(j);
	if (kx_sampler_start(sm, j->err, sizeof(j->err)))
		goto out;
	end = kx_mono_ns() + (uint64_t)j->secs * 1000000000ull;
	while (kx_mono_ns() < end && !atomic_load(&j->cp->stopping))
		if (kx_sampler_poll(sm, POLL_MS, j->err, sizeof(j->err)) < 0)
			goto out;
	kx_sampler_stop(sm); /* the last samples are handed over */
	facts_end(j, sm);
	rc = 0;
out:
	kx_sampler_close(sm);
	return rc;
}

/* The job's samples as gzipped pprof. */
static int encode(struct job *j, struct kx_bytes *out)
{
	struct kx_profile *p;
	int rc;

	if (kx_symcollect_resolve(j->sc))
		j->sym_oom = 1;
	if (masked(j))
		kx_symres_settle(kx_samples_syms(kx_store_samples(j->store)));
	kx_symcollect_facts(j->sc, j->sym_oom, &j->ci.samples);
	p = kx_profile_build(j->store, &j->ci, KX_SAMPLE_CPU, j->err, sizeof(j->err));
	if (!p)
		return -1;
	rc = kx_pprof_encode(p, j->store, &j->ci, out);
	if (rc)
		snprintf(j->err, sizeof(j->err), "out of memory encoding the profile");
	kx_profile_free(p);
	return rc;
}

static int run(struct job *j, struct kx_bytes *out)
{
	j->store = kx_store_new(j->cp->lim.max_bytes);
	if (!j->store) {
		snprintf(j->err, sizeof(j->err), "out of memory");
		return -1;
	}
	if (masked(j))
		j->sc = kx_symcollect_new(&j->real, NULL, put_sym, j, j->err, sizeof(j->err));
	else
		j->sc = kx_symcollect_new(kx_samples_syms(kx_store_samples(j->store)), NULL, NULL,
		                          NULL, j->err, sizeof(j->err));
	if (!j->sc || sample(j))
		return -1;
	return encode(j, out);
}

static void release(struct kx_cpuprof *cp)
{
	pthread_mutex_lock(&cp->lock);
	cp->running--;
	pthread_cond_broadcast(&cp->idle);
	pthread_mutex_unlock(&cp->lock);
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct kx_cpuprof *cp = j->cp;
	struct kx_bytes out = {0};
	int rc = run(j, &out);

	kx_symcollect_free(j->sc);
	kx_ustack_pair_free(j->ustack);
	kx_symres_free(&j->real);
	kx_kmask_free(&j->kmask);
	kx_store_free(j->store);
	if (rc) {
		free(out.p);
		memset(&out, 0, sizeof(out));
	}
	j->done(j->ctx, rc, &out, j->err);
	free(j);
	release(cp);
	return NULL;
}

/* A slot for one more profile: 0, or -2 when all are taken, -1 when stopping. */
static int claim(struct kx_cpuprof *cp)
{
	int rc = 0;

	pthread_mutex_lock(&cp->lock);
	if (atomic_load(&cp->stopping))
		rc = -1;
	else if (cp->running >= (int)cp->lim.max_running)
		rc = -2;
	else
		cp->running++;
	pthread_mutex_unlock(&cp->lock);
	return rc;
}

int kx_cpuprof_start(struct kx_cpuprof *cp, uint32_t secs, uint32_t ustack_bytes, int autom,
                     kx_cpuprof_done_fn done, void *ctx, char *why, size_t len)
{
	pthread_attr_t at;
	struct job *j;
	pthread_t th;
	int rc = claim(cp), e;

	if (rc == -2)
		snprintf(why, len, "%u profiles are being taken already: try again later",
		         cp->lim.max_running);
	if (rc == -1)
		snprintf(why, len, "the server is stopping");
	if (rc)
		return rc;
	j = calloc(1, sizeof(*j));
	if (!j) {
		release(cp);
		snprintf(why, len, "out of memory");
		return -1;
	}
	*j = (struct job){.cp = cp,
	                  .secs = secs,
	                  .ustack_bytes = ustack_bytes,
	                  .ustack_auto = autom,
	                  .done = done,
	                  .ctx = ctx};
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&th, &at, job_main, j);
	pthread_attr_destroy(&at);
	if (e) {
		free(j);
		release(cp);
		snprintf(why, len, "cannot start the profile's thread: %s", strerror(e));
		return -1;
	}
	return 0;
}

void kx_cpuprof_shutdown(struct kx_cpuprof *cp)
{
	if (!cp)
		return;
	atomic_store(&cp->stopping, 1);
	pthread_mutex_lock(&cp->lock);
	while (cp->running > 0)
		pthread_cond_wait(&cp->idle, &cp->lock);
	pthread_mutex_unlock(&cp->lock);
}

void kx_cpuprof_free(struct kx_cpuprof *cp)
{
	if (!cp)
		return;
	kx_cpuprof_shutdown(cp);
	pthread_cond_destroy(&cp->idle);
	pthread_mutex_destroy(&cp->lock);
	free(cp);
}
