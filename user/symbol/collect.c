/*
 * Symbols of a running capture (see collect.h): the image table (pid ->
 * exec_id of its snapshot), noting, and batch resolution through the
 * symbolizer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/collect.h"
#include "util/hashmap.h"

#define MAPS_REREAD_NS 200000000ull /* 0.2 s */

struct kx_symcollect {
	struct kx_symres *res;
	struct kx_symbolizer *sz;
	struct kx_hmap images; /* pid -> exec_id its snapshot was taken for */
	struct kx_hmap reread; /* pid -> when its maps were last read again, 2^20 ns units */
	int noted;             /* addresses noted since the last resolve */
	kx_symres_fn fn;       /* gets each resolved entry */
	void *ctx;
};

struct kx_symcollect *kx_symcollect_new(struct kx_symres *res, const char *kallsyms,
                                        kx_symres_fn fn, void *ctx, char *err, size_t len)
{
	struct kx_symcollect *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	c->res = res;
	c->fn = fn;
	c->ctx = ctx;
	c->sz = kx_symbolizer_new(kallsyms, err, len);
	if (!c->sz) {
		free(c);
		return NULL;
	}
	return c;
}

void kx_symcollect_as_process(struct kx_symcollect *c)
{
	kx_symbolizer_as_process(c->sz);
}

/* The image of s has a snapshot: taken now for a new pid, again for a new exec_id. */
static int image_seen(struct kx_symcollect *c, const struct kx_sample *s)
{
	char err[200];
	int isnew;
	uint32_t *gen = kx_hmap_put(&c->images, s->pid, s->exec_id, &isnew);

	if (!gen)
		return -1;
	if (isnew) {
		/* A process gone already is counted by the symbolizer (procs_missed). */
		kx_symbolizer_snapshot(c->sz, (pid_t)s->pid, err, sizeof(err));
		return 0;
	}
	if (*gen == s->exec_id)
		return 0;
	/* It exec'd: what the old image noted resolves against the old maps. */
	*gen = s->exec_id;
	if (kx_symcollect_resolve(c))
		return -1;
	kx_symbolizer_refresh(c->sz, (pid_t)s->pid, err, sizeof(err));
	return 0;
}

/* A new address outside every mapping of the snapshot: the process mapped
 * more code since (the loader, dlopen), so its maps are read again, at most
 * every MAPS_REREAD_NS per process (frame-pointer walks also yield junk
 * addresses, which no mapping will ever hold). So are they at each sample
 * of a process whose snapshot was missed: one taken inside its exec, before the
 * image was mapped, lists no code (the addresses it then noted are not new
 * again before the process may have exited). */
static void maps_check(struct kx_symcollect *c, const struct kx_sample *s, uint64_t addr)
{
	uint64_t now = s->ts_ns;
	char err[200];
	int isnew;
	uint32_t *last = kx_hmap_put(&c->reread, s->pid, 0, &isnew);

	if (kx_symbolizer_has_map(c->sz, (pid_t)s->pid, addr) || !last ||
	    (!isnew && now - ((uint64_t)*last << 20) < MAPS_REREAD_NS))
		return;
	*last = (uint32_t)(now >> 20);
	kx_symbolizer_refresh(c->sz, (pid_t)s->pid, err, sizeof(err));
}

int kx_symcollect_sample(struct kx_symcollect *c, const struct kx_sample *s)
{
	int in_kernel = (s->flags & KX_SAMPLE_F_KERNEL) != 0, rc = 0, added;

	if (s->nu && image_seen(c, s))
		return -1;
	/* A missed snapshot: tried again once a sample, not once a frame. */
	if (s->nu && kx_symbolizer_missed(c->sz, (pid_t)s->pid))
		maps_check(c, s, kx_user_frame_addr(s->uips[0], 0, in_kernel));
	for (uint32_t i = 0; i < s->nk; i++)
		rc |= kx_symres_note(c->res, KX_SYMRES_KERNEL, 0, kx_frame_addr(s->kips[i], i)) < 0;
	for (uint32_t i = 0; i < s->nu; i++) {
		uint64_t a = kx_user_frame_addr(s->uips[i], i, in_kernel);

		if (!s->uips[i]) /* where a frame-pointer walk ended, not a frame */
			continue;
		added = kx_symres_note(c->res, s->pid, s->exec_id, a);
		rc |= added < 0;
		if (added > 0)
			maps_check(c, s, a);
	}
	c->noted = 1;
	return rc ? -1 : 0;
}

/* Resolves pending entry e (copied: the table grows) and puts the result. */
static int resolve_one(struct kx_symcollect *c, struct kx_symres_entry e)
{
	struct kx_symres_names n;
	struct kx_frame f;

	if (e.pid == KX_SYMRES_KERNEL)
		kx_symbolizer_kernel(c->sz, e.addr, &f);
	else
		kx_symbolizer_user(c->sz, (pid_t)e.pid, e.addr, &f);
	n = (struct kx_symres_names){.func = f.func,
	                             .module = f.module,
	                             .build_id = f.build_id,
	                             .offset = f.offset,
	                             .mod_offset = f.mod_offset,
	                             .known = f.known};
	if (kx_symres_put(c->res, e.pid, e.gen, e.addr, &n))
		return -1;
	if (c->fn)
		c->fn(c->ctx, c->res, &c->res->e[c->res->n - 1]);
	return 0;
}

/* Before pending user addresses resolve for good, the maps of each process
 * with one outside every mapping are read again, once per call: the sample
 * may have come from code mapped after the last reading that maps_check's
 * rate limit skipped (a program sampled while exec and the loader map it).
 * Not for an image the process has left by exec: its maps are gone. */
static int refresh_stale(struct kx_symcollect *c)
{
	struct kx_symres *r = c->res;
	struct kx_hmap done = {0};
	char err[200];
	int isnew, rc = 0;

	for (size_t i = 0; i < r->n && !rc; i++) {
		const struct kx_symres_entry *e = &r->e[i];
		const uint32_t *gen;

		if (!e->pending || e->pid == KX_SYMRES_KERNEL ||
		    kx_symbolizer_has_map(c->sz, (pid_t)e->pid, e->addr))
			continue;
		/* Only for the image the process runs now: an older image's
		 * addresses resolve against the maps read while it ran. */
		gen = kx_hmap_get(&c->images, e->pid);
		if (!gen || *gen != e->gen)
			continue;
		if (!kx_hmap_put(&done, e->pid, 1, &isnew))
			rc = -1;
		else if (isnew)
			kx_symbolizer_refresh(c->sz, (pid_t)e->pid, err, sizeof(err));
	}
	kx_hmap_free(&done);
	return rc;
}

int kx_symcollect_resolve(struct kx_symcollect *c)
{
	struct kx_symres *r = c->res;
	size_t n;

	if (!c->noted)
		return 0;
	c->noted = 0;
	kx_symres_settle(r);
	n = r->n;
	if (refresh_stale(c))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (r->e[i].pending && resolve_one(c, r->e[i]))
			return -1;
	kx_symres_settle(r); /* each resolved entry replaces its pending one */
	return 0;
}

const char *kx_symcollect_warning(const struct kx_symcollect *c)
{
	return kx_symbolizer_warning(c->sz);
}

void kx_symcollect_stats(const struct kx_symcollect *c, struct kx_symbolizer_stats *st)
{
	kx_symbolizer_stats(c->sz, st);
}

void kx_symcollect_facts(const struct kx_symcollect *c, int oom, struct kx_sample_info *si)
{
	struct kx_symbolizer_stats st;
	uint64_t *y = si->syms;

	kx_symbolizer_stats(c->sz, &st);
	y[KX_SYM_KERNEL_RESOLVED] = st.kernel_resolved;
	y[KX_SYM_KERNEL_UNKNOWN] = st.kernel_unknown;
	y[KX_SYM_USER_RESOLVED] = st.user_resolved;
	y[KX_SYM_USER_UNKNOWN] = st.user_unknown;
	y[KX_SYM_PROCS] = st.procs;
	y[KX_SYM_PROCS_MISSED] = st.procs_missed;
	snprintf(si->sym_warning, sizeof(si->sym_warning), "%s",
	         oom ? "some frames unresolved: out of memory" : kx_symbolizer_warning(c->sz));
}

void kx_symcollect_free(struct kx_symcollect *c)
{
	if (!c)
		return;
	kx_symbolizer_free(c->sz);
	kx_hmap_free(&c->images);
	kx_hmap_free(&c->reread);
	free(c);
}
