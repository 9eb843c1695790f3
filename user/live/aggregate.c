/*
 * Live aggregates (contract: aggregate.h). Owns reading the kernel's agg map
 * into snapshots, naming rows, diffs, folds, the bucket arithmetic and the
 * reset and pruning of keys. One mutex serializes every map walk with
 * device-list changes, so several HTTP threads and a signal-driven rescan
 * can share one session.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "live/aggregate.h"
#include "capture/clock.h"
#include "registry/devices.h"
#include "util/grow.h"
#include "registry/ioctl_decode.h"

/* A deleted key's slot waits this long before reuse: far longer than any
 * program run that may still hold it. */
#define RECYCLE_AFTER_NS 1000000000ULL

struct recycle {
	uint32_t slot;
	uint64_t deleted_ns;
};

struct kx_agg {
	struct kx_session *s;
	enum kx_agg_by by;
	uint64_t since_mono_ns;
	pthread_mutex_t lock;
	struct recycle *wait; /* slots of deleted keys, oldest first */
	size_t nwait, capwait;
};

static const struct kx_agg_val empty_slot = {.min_ns = ~0ULL}; /* min: the first call sets it */

static int slot_free(const struct kx_agg_maps *m, uint32_t slot)
{
	if (bpf_map_update_elem(m->values_fd, &slot, &empty_slot, BPF_ANY))
		return -1;
	return bpf_map_update_elem(m->free_fd, NULL, &slot, BPF_ANY);
}

int kx_agg_maps_init(const struct kx_agg_maps *m, uint32_t nslots, char *err, size_t len)
{
	for (uint32_t i = 0; i < nslots; i++)
		if (slot_free(m, i)) {
			snprintf(err, len, "cannot fill the aggregation slots: %s",
			         strerror(errno));
			return -1;
		}
	return 0;
}

/* Slots deleted long enough ago go back to the free queue. Under the lock. */
static void recycle(struct kx_agg *a, const struct kx_agg_maps *m)
{
	uint64_t now = kx_mono_ns();
	size_t i = 0;

	while (i < a->nwait && now - a->wait[i].deleted_ns >= RECYCLE_AFTER_NS &&
	       slot_free(m, a->wait[i].slot) == 0)
		i++;
	if (!i)
		return;
	memmove(a->wait, a->wait + i, (a->nwait - i) * sizeof(*a->wait));
	a->nwait -= i;
}

/* A key's slot leaves use now. Under the lock. A slot that cannot be queued
 * (out of memory) is lost to the limit, which the overflow counter shows. */
static void slot_retire(struct kx_agg *a, uint32_t slot, uint64_t now)
{
	if (kx_grow((void **)&a->wait, &a->capwait, a->nwait, sizeof(*a->wait)))
		return;
	a->wait[a->nwait++] = (struct recycle){.slot = slot, .deleted_ns = now};
}

/* Takes key k out of the index; *slot gets its slot. 0, or -1 if gone. */
static int index_take(int fd, const struct kx_agg_key *k, uint32_t *slot, int *use_lad)
{
	int rc;

	if (*use_lad) {
		rc = bpf_map_lookup_and_delete_elem(fd, k, slot);
		/* Hash maps gained lookup-and-delete in 5.14: else two calls. */
		if (!rc || !(errno == EINVAL || errno == 524 /* ENOTSUPP */ || errno == EOPNOTSUPP))
			return rc;
		*use_lad = 0;
	}
	rc = bpf_map_lookup_elem(fd, k, slot);
	if (!rc)
		rc = bpf_map_delete_elem(fd, k);
	return rc;
}

struct kx_agg *kx_agg_new(struct kx_session *s, enum kx_agg_by by)
{
	struct kx_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->s = s;
	a->by = by;
	a->since_mono_ns = kx_session_capinfo(s)->start_mono_ns;
	if (!a->since_mono_ns)
		a->since_mono_ns = kx_mono_ns();
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

void kx_agg_free(struct kx_agg *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a->wait);
	free(a);
}

static int key_cmp(const struct kx_agg_key *a, const struct kx_agg_key *b)
{
	/* Field by field: the struct has no padding, but order matters for display. */
	if (a->drv != b->drv)
		return a->drv < b->drv ? -1 : 1;
	if (a->fkind != b->fkind)
		return a->fkind < b->fkind ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->cmd != b->cmd)
		return a->cmd < b->cmd ? -1 : 1;
	if (a->xfer_cmd != b->xfer_cmd)
		return a->xfer_cmd < b->xfer_cmd ? -1 : 1;
	if (a->who != b->who)
		return a->who < b->who ? -1 : 1;
	return 0;
}

static int row_cmp(const void *pa, const void *pb)
{
	return key_cmp(&((const struct kx_agg_row *)pa)->key,
	               &((const struct kx_agg_row *)pb)->key);
}

static void read_comm(uint64_t pid, char *out, size_t len)
{
	char path[48];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%llu/comm", (unsigned long long)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

static void row_set(struct kx_agg_row *r, const struct kx_agg_key *k, const struct kx_agg_val *v,
                    const struct kx_capinfo *ci, enum kx_agg_by by)
{
	char buf[96];

	memset(r, 0, sizeof(*r));
	r->key = *k;
	for (int i = 0; i < KX_HIST_SLOTS; i++) {
		r->slots[i] = v->slots[i];
		r->count += v->slots[i];
	}
	r->errors = v->errors;
	r->sum_ns = v->sum_ns;
	r->offcpu_ns = v->offcpu_ns;
	r->max_ns = v->max_ns;
	/* A key is created before its first update: min may still be the template's. */
	r->min_ns = r->count && v->min_ns != ~0ULL ? v->min_ns : 0;
	snprintf(r->driver, sizeof(r->driver), "%s", kx_driver_name(k->drv));
	kx_device_label(ci->devices, (int)ci->ndevices, k->fkind, k->dev, r->device,
	                sizeof(r->device));
	snprintf(r->ioctl, sizeof(r->ioctl), "%s",
	         kx_ioctl_name(k->drv, k->cmd, k->xfer_cmd, buf, sizeof(buf)));
	if (by == KX_AGG_BY_PID)
		read_comm(k->who, r->comm, sizeof(r->comm));
}

static int offcpu_attached(const struct kx_capinfo *ci)
{
	for (uint32_t i = 0; i < ci->nhooks && i < KX_MAX_HOOKS; i++)
		if (!strncmp(ci->hooks[i].name, "sched_switch", 12) &&
		    ci->hooks[i].state == KX_HOOK_ATTACHED)
			return 1;
	return 0;
}

/* Every key of the map now; *n gets the count. NULL with *n = 0 when empty. */
static struct kx_agg_key *all_keys(int fd, uint32_t max, size_t *n, char *err, size_t len)
{
	/* The walk cannot return more keys than the map holds, plus inserts racing it. */
	size_t cap = max + 64;
	struct kx_agg_key *keys = calloc(cap, sizeof(*keys));
	struct kx_agg_key *prev = NULL;

	*n = 0;
	if (!keys) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	while (*n < cap && bpf_map_get_next_key(fd, prev, &keys[*n]) == 0) {
		prev = &keys[*n];
		(*n)++;
	}
	return keys;
}

int kx_agg_snapshot(struct kx_agg *a, struct kx_agg_snapshot *out, int reset, char *err, size_t len)
{
	const struct kx_capinfo *ci;
	struct kx_agg_maps m;
	struct kx_agg_key *keys = NULL;
	uint32_t *slots = NULL;
	struct kx_agg_val v;
	size_t n, nrows = 0;
	int use_lad = 1, taken = 0;

	memset(out, 0, sizeof(*out));
	kx_session_agg_maps(a->s, &m);
	if (m.index_fd < 0) {
		snprintf(err, len, "the session does not aggregate");
		return -1;
	}
	pthread_mutex_lock(&a->lock);
	recycle(a, &m);
	keys = all_keys(m.index_fd, kx_session_agg_max_keys(a->s), &n, err, len);
	if (!keys)
		goto fail;
	slots = n ? calloc(n, sizeof(*slots)) : NULL;
	out->rows = n ? calloc(n, sizeof(*out->rows)) : NULL;
	if (n && (!out->rows || !slots)) {
		snprintf(err, len, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		int rc = reset ? index_take(m.index_fd, &keys[i], &slots[i], &use_lad)
		               : bpf_map_lookup_elem(m.index_fd, &keys[i], &slots[i]);

		if (rc)
			slots[i] = UINT32_MAX; /* deleted since the walk */
		else
			taken |= reset;
	}
	/* Before reading: threads stop adding to the slots just taken. */
	if (taken)
		__atomic_add_fetch(m.gen, 1, __ATOMIC_SEQ_CST);
	ci = kx_session_capinfo(a->s);
	out->mono_ns = kx_mono_ns();
	for (size_t i = 0; i < n; i++) {
		if (slots[i] == UINT32_MAX || bpf_map_lookup_elem(m.values_fd, &slots[i], &v))
			continue;
		row_set(&out->rows[nrows++], &keys[i], &v, ci, a->by);
		if (reset)
			slot_retire(a, slots[i], out->mono_ns);
	}
	out->nrows = nrows;
	if (nrows > 1)
		qsort(out->rows, nrows, sizeof(*out->rows), row_cmp);
	out->since_mono_ns = a->since_mono_ns;
	out->realtime_offset_ns = ci->clock_start.offset_ns;
	out->by = a->by;
	out->offcpu_measured = offcpu_attached(ci);
	out->max_keys = kx_session_agg_max_keys(a->s);
	out->overflow = kx_session_stat(a->s, KX_STAT_AGG_OVERFLOW);
	out->dropped = kx_session_stat(a->s, KX_STAT_DROPPED) +
	               kx_session_stat(a->s, KX_STAT_TASK_DROPPED);
	out->inflight_full = kx_session_stat(a->s, KX_STAT_INFLIGHT_FULL);
	if (reset)
		a->since_mono_ns = out->mono_ns;
	pthread_mutex_unlock(&a->lock);
	free(keys);
	free(slots);
	return 0;
fail:
	pthread_mutex_unlock(&a->lock);
	free(keys);
	free(slots);
	kx_agg_snapshot_free(out);
	return -1;
}

int kx_agg_set_devices(struct kx_agg *a, const struct kx_device *d, int n, char *err, size_t len)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = kx_session_set_devices(a->s, d, n, err, len);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int kx_agg_prune_exited(struct kx_agg *a)
{
	struct kx_agg_maps m;
	struct kx_agg_key *keys;
	uint64_t now = kx_mono_ns();
	uint32_t slot;
	size_t n;
	int pruned = 0, use_lad = 1;
	char err[64];

	kx_session_agg_maps(a->s, &m);
	if (m.index_fd < 0 || a->by != KX_AGG_BY_PID)
		return 0;
	pthread_mutex_lock(&a->lock);
	recycle(a, &m);
	keys = all_keys(m.index_fd, kx_session_agg_max_keys(a->s), &n, err, sizeof(err));
	for (size_t i = 0; keys && i < n; i++) {
		if (keys[i].who && kill((pid_t)keys[i].who, 0) != 0 && errno == ESRCH &&
		    index_take(m.index_fd, &keys[i], &slot, &use_lad) == 0) {
			slot_retire(a, slot, now);
			pruned++;
		}
	}
	if (pruned)
		__atomic_add_fetch(m.gen, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&a->lock);
	free(keys);
	return pruned;
}

void kx_agg_capinfo(struct kx_agg *a, struct kx_capinfo *out)
{
	pthread_mutex_lock(&a->lock);
	*out = *kx_session_capinfo(a->s);
	pthread_mutex_unlock(&a->lock);
}

void kx_agg_snapshot_free(struct kx_agg_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->rows);
	snap->rows = NULL;
	snap->nrows = 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	/* A key deleted and recreated between snapshots restarts from zero. */
	return a >= b ? a - b : a;
}

int kx_agg_diff(const struct kx_agg_snapshot *cur, const struct kx_agg_snapshot *prev,
                struct kx_agg_snapshot *out)
{
	size_t j = 0;

	*out = *cur;
	out->rows = cur->nrows ? calloc(cur->nrows, sizeof(*out->rows)) : NULL;
	if (cur->nrows && !out->rows)
		return -1;
	out->interval_s = cur->mono_ns > prev->mono_ns ? (cur->mono_ns - prev->mono_ns) / 1e9 : 0;
	out->overflow = sub0(cur->overflow, prev->overflow);
	out->dropped = sub0(cur->dropped, prev->dropped);
	out->inflight_full = sub0(cur->inflight_full, prev->inflight_full);
	for (size_t i = 0; i < cur->nrows; i++) {
		const struct kx_agg_row *c = &cur->rows[i];
		struct kx_agg_row *o = &out->rows[i];
		const struct kx_agg_row *p = NULL;
		int reset = 0;

		/* Both sorted by key: one merge pass. */
		while (j < prev->nrows && key_cmp(&prev->rows[j].key, &c->key) < 0)
			j++;
		if (j < prev->nrows && key_cmp(&prev->rows[j].key, &c->key) == 0)
			p = &prev->rows[j];
		*o = *c;
		o->min_ns = o->max_ns = 0;
		if (!p)
			continue;
		if (c->count < p->count)
			reset = 1; /* deleted and recreated: all of cur is new */
		for (int b = 0; b < KX_HIST_SLOTS && !reset; b++)
			if (c->slots[b] < p->slots[b])
				reset = 1;
		if (reset)
			continue;
		o->count = c->count - p->count;
		for (int b = 0; b < KX_HIST_SLOTS; b++)
			o->slots[b] = c->slots[b] - p->slots[b];
		o->errors = sub0(c->errors, p->errors);
		o->sum_ns = sub0(c->sum_ns, p->sum_ns);
		o->offcpu_ns = sub0(c->offcpu_ns, p->offcpu_ns);
	}
	return 0;
}

/* Adds r into o. Extremes are exact (max_ns != 0) only when both sides know them. */
static void row_fold(struct kx_agg_row *o, const struct kx_agg_row *r)
{
	if (r->count && !o->count) {
		o->min_ns = r->min_ns;
		o->max_ns = r->max_ns;
	} else if (r->count && o->max_ns && r->max_ns) {
		o->min_ns = r->min_ns < o->min_ns ? r->min_ns : o->min_ns;
		o->max_ns = r->max_ns > o->max_ns ? r->max_ns : o->max_ns;
	} else if (r->count) {
		o->min_ns = o->max_ns = 0;
	}
	o->count += r->count;
	o->errors += r->errors;
	o->sum_ns += r->sum_ns;
	o->offcpu_ns += r->offcpu_ns;
	for (int b = 0; b < KX_HIST_SLOTS; b++)
		o->slots[b] += r->slots[b];
}

static int fold_cmp(const void *pa, const void *pb)
{
	struct kx_agg_key a = ((const struct kx_agg_row *)pa)->key;
	struct kx_agg_key b = ((const struct kx_agg_row *)pb)->key;

	a.who = b.who = 0;
	return key_cmp(&a, &b);
}

int kx_agg_fold_who(struct kx_agg_snapshot *snap)
{
	size_t out = 0;

	if (snap->nrows > 1)
		qsort(snap->rows, snap->nrows, sizeof(*snap->rows), fold_cmp);
	for (size_t i = 0; i < snap->nrows; i++) {
		struct kx_agg_row *r = &snap->rows[i];

		r->key.who = 0;
		r->comm[0] = 0;
		if (out && !fold_cmp(&snap->rows[out - 1], r)) {
			row_fold(&snap->rows[out - 1], r);
			continue;
		}
		if (out != i)
			snap->rows[out] = *r;
		out++;
	}
	snap->nrows = out;
	snap->by = KX_AGG_BY_NONE;
	return 0;
}

static int name_cmp(const void *pa, const void *pb)
{
	const struct kx_agg_row *a = pa, *b = pb;
	int c = strcmp(a->driver, b->driver);

	if (!c)
		c = strcmp(a->device, b->device);
	if (!c)
		c = strcmp(a->ioctl, b->ioctl);
	if (!c && a->key.who != b->key.who)
		c = a->key.who < b->key.who ? -1 : 1;
	return c;
}

int kx_agg_fold_names(struct kx_agg_snapshot *snap)
{
	size_t out = 0;

	if (snap->nrows > 1)
		qsort(snap->rows, snap->nrows, sizeof(*snap->rows), name_cmp);
	for (size_t i = 0; i < snap->nrows; i++) {
		if (out && !name_cmp(&snap->rows[out - 1], &snap->rows[i])) {
			row_fold(&snap->rows[out - 1], &snap->rows[i]);
			continue;
		}
		if (out != i)
			snap->rows[out] = snap->rows[i];
		out++;
	}
	snap->nrows = out;
	return 0;
}

int kx_agg_snapshot_copy(const struct kx_agg_snapshot *in, struct kx_agg_snapshot *out)
{
	*out = *in;
	out->rows = in->nrows ? malloc(in->nrows * sizeof(*in->rows)) : NULL;
	if (in->nrows && !out->rows) {
		out->nrows = 0;
		return -1;
	}
	if (in->nrows)
		memcpy(out->rows, in->rows, in->nrows * sizeof(*in->rows));
	return 0;
}
