/*
 * Folded stacks (see folded.h): each stack's line is built, equal lines
 * (stacks of different threads of one name) are merged, the lines sorted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/folded.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/outfile.h"

struct line {
	char *text;
	uint64_t value;
};

struct lines {
	struct line *l;
	size_t n, cap;
	struct kx_hmap ix; /* text hash -> index */
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
	uint64_t h = kx_hash_bytes(text, n);
	size_t pos = KX_HMAP_START;
	uint32_t *v;

	while ((v = kx_hmap_next(&ls->ix, h, &pos)) != NULL)
		if (!strcmp(ls->l[*v].text, text)) {
			ls->l[*v].value += value;
			return 0;
		}
	if (ls->n >= UINT32_MAX || kx_grow((void **)&ls->l, &ls->cap, ls->n, sizeof(*ls->l)) ||
	    !(ls->l[ls->n].text = strdup(text)) || kx_hmap_add(&ls->ix, h, (uint32_t)ls->n)) {
		if (ls->n < ls->cap)
			free(ls->l[ls->n].text);
		return -1;
	}
	ls->l[ls->n++].value = value;
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

static void lines_free(struct lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->l[i].text);
	free(ls->l);
	kx_hmap_free(&ls->ix);
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
	if (!rc)
		qsort(ls->l, ls->n, sizeof(*ls->l), by_text);
	return rc ? -1 : 0;
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
