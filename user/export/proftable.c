/*
 * The report's profile section (see proftable.h): per process function
 * figures, per driver call figures and the top stacks, computed from the
 * profile's stacks, then printed as a table or JSON.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/proftable.h"
#include "model/perfdata.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/json.h"
#include "util/units.h"

#define NAME_W 60 /* columns of a function name in the tables */
#define MOD_W  29 /* columns of a module's file name (120 in all) */

/* A function of a process, or a process (fid UINT32_MAX), or a call. */
struct fig {
	uint32_t pid, fid;
	uint64_t self, total; /* value: samples (CPU) or ns (off-CPU) */
};

struct figs {
	struct fig *f;
	size_t n, cap;
	struct kx_hmap ix; /* pid << 32 | fid -> index */
};

struct tables {
	struct figs fn;    /* (pid, function) */
	struct figs procs; /* (pid, UINT32_MAX) */
	struct figs calls; /* (0, call frame) */
	struct figs under; /* (call frame, kernel leaf function) */
	uint32_t *seen;    /* per frame: the stack index + 1 that last counted it */
	uint32_t *order;   /* stacks by value */
	uint64_t total;
	int oom;
};

static uint64_t value_of(const struct kx_profile *p, const struct kx_pstack *st)
{
	return p->kind == KX_SAMPLE_OFFCPU ? st->weight_ns : st->count;
}

static struct fig *fig_get(struct tables *t, struct figs *fs, uint32_t pid, uint32_t fid)
{
	uint64_t key = (uint64_t)pid << 32 | fid;
	int isnew;
	uint32_t *v;

	if (fs->n >= UINT32_MAX || kx_grow((void **)&fs->f, &fs->cap, fs->n, sizeof(*fs->f)) ||
	    !(v = kx_hmap_put(&fs->ix, key, (uint32_t)fs->n, &isnew))) {
		t->oom = 1;
		return NULL;
	}
	if (isnew)
		fs->f[fs->n++] = (struct fig){.pid = pid, .fid = fid};
	return &fs->f[*v];
}

static void add(struct tables *t, struct figs *fs, uint32_t pid, uint32_t fid, uint64_t self,
                uint64_t total)
{
	struct fig *g = fig_get(t, fs, pid, fid);

	if (g) {
		g->self += self;
		g->total += total;
	}
}

/* One stack into the tables. */
static void count_stack(struct tables *t, const struct kx_profile *p, size_t i)
{
	const struct kx_pstack *st = &p->stacks[i];
	uint64_t v = value_of(p, st);
	uint32_t leaf;

	t->total += v;
	add(t, &t->procs, st->pid, UINT32_MAX, 0, v);
	if (!st->depth)
		return;
	leaf = p->fids[st->first + st->depth - 1];
	for (uint32_t k = 0; k < st->depth; k++) {
		uint32_t fid = p->fids[st->first + k];

		if (t->seen[fid] == i + 1) /* recursion: counted once per stack */
			continue;
		t->seen[fid] = (uint32_t)i + 1;
		add(t, &t->fn, st->pid, fid, fid == leaf ? v : 0, v);
	}
	if (st->call) {
		add(t, &t->calls, 0, st->call - 1, 0, v);
		if (p->frames[leaf].kind == KX_PF_KERNEL)
			add(t, &t->under, st->call - 1, leaf, v, 0);
	}
}

static const struct kx_profile *sort_p;

static int by_stack_value(const void *a, const void *b)
{
	uint64_t x = value_of(sort_p, &sort_p->stacks[*(const uint32_t *)a]);
	uint64_t y = value_of(sort_p, &sort_p->stacks[*(const uint32_t *)b]);

	return x < y ? 1 : x > y ? -1 : 0;
}

static int by_self(const void *a, const void *b)
{
	const struct fig *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static int by_total(const void *a, const void *b)
{
	const struct fig *x = a, *y = b;

	return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static void tables_free(struct tables *t)
{
	struct figs *all[] = {&t->fn, &t->procs, &t->calls, &t->under};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		free(all[i]->f);
		kx_hmap_free(&all[i]->ix);
	}
	free(t->seen);
	free(t->order);
}

/* qsort, which must not be handed an empty list's null pointer. */
static void sort_some(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

static int tables_build(struct tables *t, const struct kx_profile *p)
{
	t->seen = calloc(p->nframes ? p->nframes : 1, sizeof(*t->seen));
	t->order = malloc((p->nstacks ? p->nstacks : 1) * sizeof(*t->order));
	if (!t->seen || !t->order)
		return -1;
	for (size_t i = 0; i < p->nstacks && !t->oom; i++) {
		count_stack(t, p, i);
		t->order[i] = (uint32_t)i;
	}
	if (t->oom)
		return -1;
	sort_p = p;
	sort_some(t->order, p->nstacks, sizeof(*t->order), by_stack_value);
	sort_some(t->fn.f, t->fn.n, sizeof(*t->fn.f), by_self);
	sort_some(t->procs.f, t->procs.n, sizeof(*t->procs.f), by_total);
	sort_some(t->calls.f, t->calls.n, sizeof(*t->calls.f), by_total);
	sort_some(t->under.f, t->under.n, sizeof(*t->under.f), by_self);
	return 0;
}

/* A value as the table shows it: a count, or a time. */
static void fmt_value(const struct kx_profile *p, uint64_t v, char *buf, size_t len)
{
	if (p->kind == KX_SAMPLE_OFFCPU)
		kx_fmt_time(buf, len, v);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

/* name cut to w columns (bytes; names are ASCII in practice) with "...". */
static const char *cut(const char *name, char *buf, size_t w)
{
	if (strlen(name) <= w)
		return name;
	memcpy(buf, name, w - 3);
	memcpy(buf + w - 3, "...", 4);
	return buf;
}

static void print_head(const struct kx_profile *p, const struct kx_capinfo *ci, FILE *f)
{
	char share[16], w[32], lost[224] = "";
	const struct kx_sample_info *si = ci ? &ci->samples : NULL;

	kx_fmt_share(share, sizeof(share), p->in_calls, p->samples);
	if (p->kind == KX_SAMPLE_OFFCPU) {
		kx_fmt_time(w, sizeof(w), p->weight_ns);
		fprintf(f,
		        "Off-CPU profile: %" PRIu64
		        " intervals blocked inside traced ioctls, %s off the CPU\n",
		        p->samples, w);
		if (si && (si->off_dropped || si->off_noslot || si->off_stale))
			snprintf(lost, sizeof(lost),
			         "%" PRIu64 " dropped, %" PRIu64 " not kept (stash full), %" PRIu64
			         " not recorded (switch-in not seen within the call)\n",
			         si->off_dropped, si->off_noslot, si->off_stale);
	} else {
		fprintf(f, "CPU profile: %" PRIu64 " samples", p->samples);
		if (p->hz)
			fprintf(f, " at %u Hz", p->hz);
		fprintf(f, ", %s inside traced ioctls\n", share);
		if (si && si->dropped)
			snprintf(lost, sizeof(lost), "%" PRIu64 " dropped (ring buffer full)\n",
			         si->dropped);
	}
	fprintf(f, "%s[unknown] frames: %" PRIu64 " user, %" PRIu64 " kernel\n", lost,
	        p->unknown[0], p->unknown[1]);
	if (si && si->ustack_bytes && p->kind != KX_SAMPLE_OFFCPU)
		fprintf(f,
		        "DWARF unwinding (%u-byte stack copies): %" PRIu64
		        " stacks to their root, %" PRIu64 " stopped early, %" PRIu64
		        " kept their frame-pointer walk\n",
		        si->ustack_bytes, si->stacks[KX_DW_UNWOUND], si->stacks[KX_DW_PARTIAL],
		        si->stacks[KX_DW_FAILED] + si->stacks[KX_DW_NO_COPY] +
		                si->stacks[KX_DW_FP_KEPT]);
	if (si && si->sym_warning[0])
		fprintf(f, "WARNING: %s\n", si->sym_warning);
	if (si && si->syms[KX_SYM_PROCS_MISSED])
		fprintf(f,
		        "WARNING: %" PRIu64 " processes exited before their maps were read: their "
		        "frames are [unknown]\n",
		        si->syms[KX_SYM_PROCS_MISSED]);
}

/* Top functions of each process, busiest process first. */
static void print_functions(const struct kx_profile *p, const struct kx_store *s,
                            const struct tables *t, FILE *f)
{
	char a[32], b[16], c[16], nm[NAME_W + 1], mod[MOD_W + 1];
	const char *unit = p->kind == KX_SAMPLE_OFFCPU ? "Time" : "Samples";

	for (size_t i = 0; i < t->procs.n; i++) {
		uint32_t pid = t->procs.f[i].pid;
		int rows = 0;

		kx_fmt_share(b, sizeof(b), t->procs.f[i].total, t->total);
		/* Named by its command line where the capture has it. */
		fprintf(f, "\nProcess %u %s: %s of the profile\n", pid,
		        kx_store_cmd(s, pid) ? kx_store_cmd(s, pid) : kx_profile_comm(s, pid), b);
		fprintf(f, "%-*s %10s %7s %7s  %s\n", NAME_W, "Function", unit, "Self%", "Total%",
		        "Module");
		for (size_t k = 0; k < t->fn.n && rows < KX_PROFTABLE_TOP; k++) {
			const struct fig *g = &t->fn.f[k];
			const struct kx_pframe *fr = &p->frames[g->fid];

			if (g->pid != pid || !g->self)
				continue;
			fmt_value(p, g->self, a, sizeof(a));
			kx_fmt_share(b, sizeof(b), g->self, t->total);
			kx_fmt_share(c, sizeof(c), g->total, t->total);
			fprintf(f, "%-*s %10s %7s %7s  %s\n", NAME_W, cut(fr->name, nm, NAME_W), a,
			        b, c, cut(basename(fr->module), mod, MOD_W));
			rows++;
		}
	}
}

/* Each traced call the samples were taken in, with the kernel functions under it. */
static void print_calls(const struct kx_profile *p, const struct tables *t, FILE *f)
{
	char a[32], b[16], nm[NAME_W + 1];

	if (!t->calls.n)
		return;
	fprintf(f, "\nInside traced ioctls\n%-*s %10s %7s\n", NAME_W,
	        "Driver call / kernel function", p->kind == KX_SAMPLE_OFFCPU ? "Time" : "Samples",
	        "Share");
	for (size_t i = 0; i < t->calls.n; i++) {
		const struct fig *g = &t->calls.f[i];
		int rows = 0;

		fmt_value(p, g->total, a, sizeof(a));
		kx_fmt_share(b, sizeof(b), g->total, t->total);
		fprintf(f, "%-*s %10s %7s\n", NAME_W, cut(p->frames[g->fid].name, nm, NAME_W), a,
		        b);
		for (size_t k = 0; k < t->under.n && rows < 5; k++) {
			const struct fig *u = &t->under.f[k];

			if (u->pid != g->fid)
				continue;
			fmt_value(p, u->self, a, sizeof(a));
			kx_fmt_share(b, sizeof(b), u->self, t->total);
			fprintf(f, "  %-*s %10s %7s\n", NAME_W - 2,
			        cut(p->frames[u->fid].name, nm, NAME_W - 2), a, b);
			rows++;
		}
	}
}

/* The busiest stacks, root first, one frame a line. */
static void print_stacks(const struct kx_profile *p, const struct kx_store *s,
                         const struct tables *t, FILE *f)
{
	char a[32], b[16], nm[NAME_W + 1];

	fprintf(f, "\nTop stacks (root first)\n");
	for (size_t i = 0; i < p->nstacks && i < 5; i++) {
		const struct kx_pstack *st = &p->stacks[t->order[i]];

		fmt_value(p, value_of(p, st), a, sizeof(a));
		kx_fmt_share(b, sizeof(b), value_of(p, st), t->total);
		fprintf(f, "%s (%s) pid %u tid %u %s\n", a, b, st->pid, st->tid,
		        kx_profile_stack_comm(s, st));
		for (uint32_t k = 0; k < st->depth; k++)
			fprintf(f, "    %s\n",
			        cut(p->frames[p->fids[st->first + k]].name, nm, NAME_W));
	}
}

int kx_proftable_print(const struct kx_profile *p, const struct kx_store *s,
                       const struct kx_capinfo *ci, FILE *f)
{
	struct tables t = {0};
	int rc = 0;

	if (!p->samples)
		return 0;
	if (tables_build(&t, p)) {
		rc = -1;
		goto out;
	}
	fputc('\n', f);
	print_head(p, ci, f);
	print_functions(p, s, &t, f);
	print_calls(p, &t, f);
	print_stacks(p, s, &t, f);
out:
	tables_free(&t);
	return rc;
}

static void json_fig(FILE *f, const char *key, const char *name, uint64_t self, uint64_t total,
                     int first)
{
	fprintf(f, "%s{\"%s\": ", first ? "" : ", ", key);
	kx_json_cstr(f, name);
	fprintf(f, ", \"Self\": %" PRIu64 ", \"Total\": %" PRIu64 "}", self, total);
}

static void json_procs(const struct kx_profile *p, const struct kx_store *s, const struct tables *t,
                       FILE *f)
{
	fprintf(f, ", \"Processes\": [");
	for (size_t i = 0; i < t->procs.n; i++) {
		uint32_t pid = t->procs.f[i].pid;
		int rows = 0;

		fprintf(f, "%s{\"pid\": %u, \"comm\": ", i ? ", " : "", pid);
		kx_json_cstr(f, kx_profile_comm(s, pid));
		if (kx_store_cmd(s, pid)) {
			fprintf(f, ", \"cmd\": ");
			kx_json_cstr(f, kx_store_cmd(s, pid));
		}
		fprintf(f, ", \"Total\": %" PRIu64 ", \"Functions\": [", t->procs.f[i].total);
		for (size_t k = 0; k < t->fn.n && rows < KX_PROFTABLE_TOP; k++)
			if (t->fn.f[k].pid == pid && t->fn.f[k].self)
				json_fig(f, "Function", p->frames[t->fn.f[k].fid].name,
				         t->fn.f[k].self, t->fn.f[k].total, !rows++);
		fprintf(f, "]}");
	}
	fprintf(f, "]");
}

static void json_calls(const struct kx_profile *p, const struct tables *t, FILE *f)
{
	fprintf(f, ", \"Calls\": [");
	for (size_t i = 0; i < t->calls.n; i++) {
		const struct fig *g = &t->calls.f[i];
		int rows = 0;

		fprintf(f, "%s{\"Call\": ", i ? ", " : "");
		kx_json_cstr(f, p->frames[g->fid].name);
		fprintf(f, ", \"Total\": %" PRIu64 ", \"Kernel\": [", g->total);
		for (size_t k = 0; k < t->under.n && rows < KX_PROFTABLE_TOP; k++)
			if (t->under.f[k].pid == g->fid)
				json_fig(f, "Function", p->frames[t->under.f[k].fid].name,
				         t->under.f[k].self, t->under.f[k].self, !rows++);
		fprintf(f, "]}");
	}
	fprintf(f, "]");
}

static void json_stacks(const struct kx_profile *p, const struct tables *t, FILE *f)
{
	fprintf(f, ", \"Stacks\": [");
	for (size_t i = 0; i < p->nstacks && i < KX_PROFTABLE_TOP; i++) {
		const struct kx_pstack *st = &p->stacks[t->order[i]];

		fprintf(f, "%s{\"pid\": %u, \"tid\": %u, \"Value\": %" PRIu64 ", \"Frames\": [",
		        i ? ", " : "", st->pid, st->tid, value_of(p, st));
		for (uint32_t k = 0; k < st->depth; k++) {
			fputs(k ? ", " : "", f);
			kx_json_cstr(f, p->frames[p->fids[st->first + k]].name);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]");
}

int kx_proftable_json(const struct kx_profile *p, const struct kx_store *s,
                      const struct kx_capinfo *ci, FILE *f)
{
	struct tables t = {0};
	int rc = -1;

	if (tables_build(&t, p))
		goto out;
	fprintf(f,
	        "{\"Kind\": \"%s\", \"Unit\": \"%s\", \"Hz\": %u, \"Samples\": %" PRIu64
	        ", \"Total\": %" PRIu64 ", \"InCalls\": %" PRIu64
	        ", \"Unknown\": {\"user\": %" PRIu64 ", \"kernel\": %" PRIu64 "}",
	        p->kind == KX_SAMPLE_OFFCPU ? "off-cpu" : "cpu",
	        p->kind == KX_SAMPLE_OFFCPU ? "ns" : "samples", p->hz, p->samples, t.total,
	        p->in_calls, p->unknown[0], p->unknown[1]);
	if (ci) {
		const struct kx_sample_info *si = &ci->samples;
		int off = p->kind == KX_SAMPLE_OFFCPU;

		/* Received + Dropped == Emitted (the record file's trailer holds them). */
		fprintf(f,
		        ", \"Emitted\": %" PRIu64 ", \"Received\": %" PRIu64
		        ", \"Dropped\": %" PRIu64,
		        off ? si->off_emitted : si->emitted, off ? si->off_received : si->received,
		        off ? si->off_dropped : si->dropped);
		if (off)
			fprintf(f, ", \"NotKept\": %" PRIu64 ", \"Stale\": %" PRIu64,
			        si->off_noslot, si->off_stale);
		else if (si->ustack_bytes)
			fprintf(f,
			        ", \"Dwarf\": {\"StackBytes\": %u, \"Unwound\": %" PRIu64
			        ", \"StoppedEarly\": %" PRIu64 ", \"NoFrame\": %" PRIu64
			        ", \"NoCopy\": %" PRIu64 ", \"FramePointerKept\": %" PRIu64 "}",
			        si->ustack_bytes, si->stacks[KX_DW_UNWOUND],
			        si->stacks[KX_DW_PARTIAL], si->stacks[KX_DW_FAILED],
			        si->stacks[KX_DW_NO_COPY], si->stacks[KX_DW_FP_KEPT]);
		fprintf(f,
		        ", \"SymbolizeNs\": %" PRIu64 ", \"Processes\": %" PRIu64
		        ", \"ProcessesMissed\": %" PRIu64,
		        si->sym_ns, si->syms[KX_SYM_PROCS], si->syms[KX_SYM_PROCS_MISSED]);
	}
	fprintf(f, ", \"NotStored\": %" PRIu64,
	        kx_store_samples(s) ? kx_samples_not_stored(kx_store_samples(s)) : 0);
	json_procs(p, s, &t, f);
	json_calls(p, &t, f);
	json_stacks(p, &t, f);
	fprintf(f, "}");
	rc = 0;
out:
	tables_free(&t);
	return rc;
}
