/*
 * Folded stacks (see folded.h): each stack's line is built, equal lines
 * (stacks of different threads of one name) are merged, the lines sorted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/folded.h"
#include "util/grow.h"
#include "util/intern.h"
#include "util/outfile.h"

struct line {
	const char *text;
	uint64_t value; /* samples, or off-CPU microseconds */
};

struct lines {
	struct kx_intern texts; /* the distinct lines */
	uint64_t *value;        /* value[id] of line id */
	size_t nv, cap;
	struct line *l; /* the lines sorted by text, once all are in */
	size_t n;
};

/* Appends name to b with ';' and line breaks replaced. */
static void put_name(struct kx_bytes *b, const char *name)
{
	size_t n = strlen(name);
	char *d = (char *)kx_bytes_room(b, n);

	if (!d)
		return;
	for (size_t i = 0; i < n; i++)
		d[i] = name[i] == ';' ? ':' : (name[i] == '\n' || name[i] == '\r') ? ' ' : name[i];
	b->len += n;
}

/* The text of stack st, NUL-terminated in b (emptied first). */
static void stack_text(const struct kx_profile *p, const struct kx_store *s,
                       const struct kx_pstack *st, struct kx_bytes *b)
{
	const char *comm = kx_profile_stack_comm(s, st);
	char tid[16];

	b->len = 0;
	if (!comm[0]) {
		snprintf(tid, sizeof(tid), "%u", st->tid);
		comm = tid;
	}
	put_name(b, comm);
	for (uint32_t i = 0; i < st->depth; i++) {
		if (kx_bytes_room(b, 1))
			b->p[b->len++] = ';';
		put_name(b, p->frames[p->fids[st->first + i]].name);
	}
	if (kx_bytes_room(b, 1))
		b->p[b->len] = 0;
}

/* Adds value to the line of text, made when new. */
static int add_line(struct lines *ls, const char *text, size_t n, uint64_t value)
{
	long id = kx_intern_add(&ls->texts, text, n);

	if (id < 0 || ((size_t)id == ls->nv &&
	               kx_grow((void **)&ls->value, &ls->cap, ls->nv, sizeof(*ls->value))))
		return -1;
	if ((size_t)id == ls->nv)
		ls->value[ls->nv++] = 0;
	ls->value[id] += value;
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* The lines in text order. 0, or -1 out of memory. */
static int sort_lines(struct lines *ls)
{
	ls->l = malloc((ls->nv ? ls->nv : 1) * sizeof(*ls->l));
	if (!ls->l)
		return -1;
	for (size_t i = 0; i < ls->nv; i++)
		ls->l[i] = (struct line){kx_intern_str(&ls->texts, i), ls->value[i]};
	ls->n = ls->nv;
	qsort(ls->l, ls->n, sizeof(*ls->l), by_text);
	return 0;
}

static void lines_free(struct lines *ls)
{
	kx_intern_free(&ls->texts);
	free(ls->value);
	free(ls->l);
}

/* The profile's lines, merged and sorted. 0, or -1 out of memory. */
static int build(const struct kx_profile *p, const struct kx_store *s, struct lines *ls)
{
	struct kx_bytes b = {0};
	int rc = 0;

	for (size_t i = 0; i < p->nstacks && !rc; i++) {
		const struct kx_pstack *st = &p->stacks[i];
		uint64_t v = p->kind == KX_SAMPLE_OFFCPU ? (st->weight_ns + 500) / 1000 : st->count;

		stack_text(p, s, st, &b);
		rc = b.oom || add_line(ls, (const char *)b.p, b.len, v);
	}
	free(b.p);
	return rc || sort_lines(ls) ? -1 : 0;
}

int kx_folded_print(const struct kx_profile *p, const struct kx_store *s, FILE *f)
{
	struct lines ls = {0};
	int rc = build(p, s, &ls);

	for (size_t i = 0; !rc && i < ls.n; i++)
		fprintf(f, "%s %llu\n", ls.l[i].text, (unsigned long long)ls.l[i].value);
	lines_free(&ls);
	return rc;
}

int kx_folded_write(const struct kx_profile *p, const struct kx_store *s, const char *path,
                    char *err, size_t len)
{
	struct lines ls = {0};
	struct kx_bytes b = {0};
	int e;

	if (build(p, s, &ls)) {
		snprintf(err, len, "%s: out of memory", path);
		lines_free(&ls);
		return -1;
	}
	for (size_t i = 0; i < ls.n; i++) {
		size_t n = strlen(ls.l[i].text);
		char *d = (char *)kx_bytes_room(&b, n + 24);

		if (d)
			b.len += (size_t)snprintf(d, n + 24, "%s %llu\n", ls.l[i].text,
			                          (unsigned long long)ls.l[i].value);
	}
	lines_free(&ls);
	if (b.oom) {
		snprintf(err, len, "%s: out of memory", path);
		free(b.p);
		return -1;
	}
	e = kx_outfile_write(path, KX_OUT_STDOUT, b.p, b.len, err, len);
	free(b.p);
	return e;
}
