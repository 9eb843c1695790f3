/*
 * An annotation range or mark as an XEvent of the /host:CPU plane (see
 * xspace_int.h): named after the range (event metadata per annotation
 * string), with its depth, the ioctls and device time it holds (device_time_ps),
 * a cross-thread range's id and threads, its category, "open" when it never
 * ended, and the name its thread had then when that was before an exec or a
 * rename (export/evnames.h).
 */
#include "export/evnames.h"
#include "export/xspace_int.h"

/* An annotation string's id in a per-string table, interned when new (not frozen). */
static uint32_t ann_string(struct exporter *x, uint32_t *table, struct kx_intern *t, uint32_t sid,
                           int frozen)
{
	if (!table[sid] && !frozen)
		table[sid] = meta_cstr(t, kx_store_ann_str(x->rg->strings, sid));
	return table[sid];
}

/* The stats of a range event: (metadata id, value field, value), n of them. */
struct ann_stats {
	uint32_t mid[XS_ANN_STATS];
	uint64_t v[XS_ANN_STATS];
	unsigned int vfield[XS_ANN_STATS];
	int n;
};

enum {
	SA_DEPTH,
	SA_IOCTLS,
	SA_DJOBS,
	SA_DTIME,
	SA_CAT,
	SA_OPEN,
	SA_RID,
	SA_TID,
	SA_ETID,
	SA_THREAD
};
static const char *const ann_stat_names[XS_ANN_STATS] = {
        "depth", "ioctls",   "device_jobs", "device_time_ps", "category",
        "open",  "range_id", "tid",         "end_tid",        "thread"};

static void ann_stat_add(struct ann_stats *a, uint32_t mid, unsigned int vfield, uint64_t v)
{
	a->mid[a->n] = mid;
	a->vfield[a->n] = vfield;
	a->v[a->n++] = v;
}

/* The name r's thread had when r began, as a stat value ref, when its line
 * is named otherwise (it began before an exec or a rename); 0 when not, or
 * on OOM (*oom set). */
static uint32_t ann_thread_ref(struct exporter *x, const struct kx_range *r, int frozen, int *oom)
{
	const char *then = kx_thread_name_then(&x->names, x->s, r->tid, r->begin);
	size_t n;
	uint32_t ref;

	if (!then)
		return 0;
	n = strnlen(then, KX_COMM_LEN);
	ref = frozen ? meta_find(&x->st, then, n) : meta_id(&x->st, then, n);
	*oom = !ref;
	return ref;
}

/*
 * What a range event carries: depth; thread ranges the ioctls they hold
 * and their jobs' device time; cross-thread ones their id and threads; its
 * category; "open" when it never ended; "thread", the name its thread had
 * then, when that was before an exec or a rename. 0, or -1 when a name is
 * missing.
 */
static int ann_stats_of(struct exporter *x, const struct kx_range *r, struct ann_stats *a,
                        int frozen)
{
	const uint32_t *id = x->st_ann;

	a->n = 0;
	for (int i = 0; !frozen && i < (int)(sizeof(ann_stat_names) / sizeof(ann_stat_names[0]));
	     i++)
		if (!xs_host_stat(x, &x->st_ann[i], ann_stat_names[i]))
			return -1;
	ann_stat_add(a, id[SA_DEPTH], XSTAT_UINT64, r->depth);
	if (r->kind == KX_RANGE_THREAD)
		ann_stat_add(a, id[SA_IOCTLS], XSTAT_UINT64, r->ioctls);
	if (r->jobs) {
		ann_stat_add(a, id[SA_DJOBS], XSTAT_UINT64, r->jobs);
		ann_stat_add(a, id[SA_DTIME], XSTAT_UINT64, r->device_ns * 1000);
	}
	if (r->kind == KX_RANGE_CROSS) {
		ann_stat_add(a, id[SA_RID], XSTAT_UINT64, r->id);
		ann_stat_add(a, id[SA_TID], XSTAT_INT64, r->tid);
		if (r->end_tid)
			ann_stat_add(a, id[SA_ETID], XSTAT_INT64, r->end_tid);
	}
	if (r->cat) {
		uint32_t ref = ann_string(x, x->ann_cat, &x->st, r->cat, frozen);

		if (!ref)
			return -1;
		ann_stat_add(a, id[SA_CAT], XSTAT_REF, ref);
	}
	if (r->open)
		ann_stat_add(a, id[SA_OPEN], XSTAT_UINT64, 1);
	if (r->kind != KX_RANGE_CROSS) {
		int oom = 0;
		uint32_t ref = ann_thread_ref(x, r, frozen, &oom);

		if (oom)
			return -1;
		if (ref)
			ann_stat_add(a, id[SA_THREAD], XSTAT_REF, ref);
	}
	return 0;
}

/* The sizing pass's view of put_ann_event, interning what it needs. 0 on OOM. */
size_t xs_ann_event_size(struct exporter *x, const struct kx_range *r, uint64_t start, uint64_t dur)
{
	uint32_t mid = ann_string(x, x->ann_mid, &x->ev, r->name, 0);
	struct ann_stats a;
	size_t n;

	if (!mid || ann_stats_of(x, r, &a, 0))
		return 0;
	n = 1 + kx_pb_varint_size(mid) + 1 + kx_pb_varint_size(start * 1000);
	if (dur)
		n += 1 + kx_pb_varint_size(dur * 1000);
	for (int i = 0; i < a.n; i++)
		n += stat_size(a.mid[i], a.v[i]);
	return n;
}

/* One range or mark as an XEvent into p (EVENT_SCRATCH bytes), tables frozen. */
uint8_t *xs_put_ann_event(struct exporter *x, const struct kx_range *r, uint64_t start,
                          uint64_t dur, uint8_t *p)
{
	uint32_t mid = ann_string(x, x->ann_mid, &x->ev, r->name, 1);
	struct ann_stats a;

	if (!mid || ann_stats_of(x, r, &a, 1))
		return NULL;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, start * 1000); /* oneof: written even when 0 */
	if (dur)
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, dur * 1000);
	for (int i = 0; i < a.n; i++)
		p = put_stat_varint(p, XEVENT_STATS, a.mid[i], a.vfield[i], a.v[i]);
	return p;
}
