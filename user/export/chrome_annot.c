/*
 * Annotation ranges and marks in a Chrome trace (see chrome_int.h): thread
 * ranges as "X" slices on their thread (the ioctls they hold nest under
 * them), marks as thread-scoped instants, cross-thread ranges as async
 * "b"/"e" pairs (id: the range's index + 1, on the threads that started and
 * ended them); args: depth, the ioctls and device time held (device_us),
 * range id, the thread's name then, open, category.
 */
#include "export/chrome_int.h"

/* The start of an annotation event: phase, name, category, pid, tid, ts. */
static void ann_head(struct wbuf *w, const struct ctx *c, int *first, const char *ph,
                     const struct kx_range *r, uint32_t tid, uint64_t rel_ns)
{
	wb_need(w, 64);
	wb_sep(w, first);
	PUT_LIT(w, "{\"ph\":\"");
	put_mem(w, ph, strlen(ph));
	PUT_LIT(w, "\",\"name\":");
	wb_str(w, kx_store_ann_str(c->an->ranges->strings, r->name));
	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\"cat\":\"annotation\",\"pid\":");
	put_u64(w, r->pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, rel_ns);
}

/* The args of an annotation: its category, what it holds, whether it stayed open. */
static void ann_args(struct wbuf *w, const struct ctx *c, const struct kx_range *r)
{
	const char *cat = kx_store_ann_str(c->an->ranges->strings, r->cat);

	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\"args\":{\"depth\":");
	put_u64(w, r->depth);
	if (r->kind == KX_RANGE_THREAD) {
		PUT_LIT(w, ",\"ioctls\":");
		put_u64(w, r->ioctls);
	}
	if (r->jobs) {
		PUT_LIT(w, ",\"device_jobs\":");
		put_u64(w, r->jobs);
		PUT_LIT(w, ",\"device_us\":");
		put_us(w, r->device_ns);
	}
	if (r->kind == KX_RANGE_CROSS) {
		PUT_LIT(w, ",\"range_id\":");
		put_u64(w, r->id);
	}
	cr_write_thread_name(w, c, r->tid, r->begin);
	if (r->open)
		PUT_LIT(w, ",\"open\":true");
	if (cat[0]) {
		wb_lit(w, ",\"category\":");
		wb_str(w, cat);
	}
	wb_lit(w, "}}");
}

/*
 * Thread ranges as "X" slices on their thread (the ioctls they hold nest
 * under them), marks as thread-scoped instants, cross-thread ranges as
 * async "b"/"e" pairs (id: the range's index + 1, on the threads that
 * started and ended them).
 */
void cr_write_annotations(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	const struct kx_ranges *rg = c->an->ranges;

	for (size_t i = 0; i < rg->n && !w->err; i++) {
		const struct kx_range *r = &rg->r[i];
		uint64_t rel = r->begin - c->first_ts + rem;

		if (!in_part(c, r->begin))
			continue;
		if (r->kind == KX_RANGE_MARK) {
			ann_head(w, c, first, "i", r, r->tid, rel);
			PUT_LIT(w, ",\"s\":\"t\"");
			ann_args(w, c, r);
			continue;
		}
		if (r->kind == KX_RANGE_THREAD) {
			ann_head(w, c, first, "X", r, r->tid, rel);
			PUT_LIT(w, ",\"dur\":");
			put_us(w, r->dur);
			ann_args(w, c, r);
			continue;
		}
		ann_head(w, c, first, "b", r, r->tid, rel);
		PUT_LIT(w, ",\"id\":");
		put_u64(w, i + 1);
		ann_args(w, c, r);
		ann_head(w, c, first, "e", r, r->end_tid ? r->end_tid : r->tid, rel + r->dur);
		PUT_LIT(w, ",\"id\":");
		put_u64(w, i + 1);
		wb_lit(w, "}");
	}
}
