/*
 * Resolved symbols (see symres.h). Strings are interned: the index keeps
 * the arena offsets sorted by content, so each name is stored once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/symres.h"
#include "util/grow.h"

int kx_symres_add(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr)
{
	if (kx_grow((void **)&r->e, &r->cap, r->n, sizeof(*r->e)))
		return -1;
	memset(&r->e[r->n], 0, sizeof(r->e[r->n]));
	r->e[r->n].pid = pid;
	r->e[r->n].gen = gen;
	r->e[r->n].addr = addr;
	r->e[r->n].pending = 1;
	r->n++;
	return 0;
}

/* By (pid, gen, addr), resolved entries before pending ones. */
static int by_key(const void *a, const void *b)
{
	const struct kx_symres_entry *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)x->pending - (int)y->pending;
}

/* The sorted entry of the key, resolved or not; NULL when none. */
static struct kx_symres_entry *sorted_find(const struct kx_symres *r, uint32_t pid, uint32_t gen,
                                           uint64_t addr)
{
	size_t lo = 0, hi = r->nsorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct kx_symres_entry *e = &r->e[mid];
		int c = e->pid != pid     ? (e->pid < pid ? -1 : 1)
		        : e->gen != gen   ? (e->gen < gen ? -1 : 1)
		        : e->addr != addr ? (e->addr < addr ? -1 : 1)
		                          : 0;

		if (c == 0)
			return &r->e[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int kx_symres_note(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr)
{
	if (sorted_find(r, pid, gen, addr))
		return 0;
	return kx_symres_add(r, pid, gen, addr) ? -1 : 1;
}

/* Where s is, or would go, in the index; *found when it is there. */
static size_t index_pos(const struct kx_symres *r, const char *s, int *found)
{
	size_t lo = 0, hi = r->nindex;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(kx_symres_str(r, r->index[mid]), s);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

/* Puts arena offset off at index position at. 0, or -1 out of memory. */
static int index_insert(struct kx_symres *r, size_t at, size_t off)
{
	if (off > UINT32_MAX ||
	    kx_grow((void **)&r->index, &r->index_cap, r->nindex, sizeof(*r->index)))
		return -1;
	memmove(&r->index[at + 1], &r->index[at], (r->nindex - at) * sizeof(*r->index));
	r->index[at] = (uint32_t)off;
	r->nindex++;
	return 0;
}

int64_t kx_symres_intern(struct kx_symres *r, const char *s)
{
	int found;
	size_t at = index_pos(r, s, &found), off;

	if (found)
		return r->index[at];
	off = kx_arena_add(&r->strs, s);
	if (off == KX_ARENA_NONE || index_insert(r, at, off) != 0)
		return -1;
	return (int64_t)off;
}

/* Fills e (a pending entry) from n. 0, or -1 out of memory. */
static int fill(struct kx_symres *r, struct kx_symres_entry *e, const struct kx_symres_names *n)
{
	int64_t fn = kx_symres_intern(r, n->func), mod = kx_symres_intern(r, n->module),
	        bid = kx_symres_intern(r, n->build_id);

	if (fn < 0 || mod < 0 || bid < 0)
		return -1;
	e->func = (uint32_t)fn;
	e->module = (uint32_t)mod;
	e->build_id = (uint32_t)bid;
	e->offset = n->offset;
	e->mod_offset = n->mod_offset;
	e->known = n->known != 0;
	e->pending = 0;
	r->unknown += !n->known;
	return 0;
}

int kx_symres_put(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr,
                  const struct kx_symres_names *n)
{
	if (kx_symres_add(r, pid, gen, addr))
		return -1;
	if (fill(r, &r->e[r->n - 1], n)) {
		r->n--;
		return -1;
	}
	return 0;
}

void kx_symres_settle(struct kx_symres *r)
{
	size_t w = 0;

	if (r->nsorted == r->n)
		return;
	qsort(r->e, r->n, sizeof(*r->e), by_key);
	for (size_t i = 0; i < r->n; i++) /* the first of each key: resolved if one is */
		if (w == 0 || r->e[w - 1].pid != r->e[i].pid || r->e[w - 1].gen != r->e[i].gen ||
		    r->e[w - 1].addr != r->e[i].addr)
			r->e[w++] = r->e[i];
	r->n = r->nsorted = w;
}

const struct kx_symres_entry *kx_symres_find(const struct kx_symres *r, uint32_t pid, uint32_t gen,
                                             uint64_t addr)
{
	const struct kx_symres_entry *e = sorted_find(r, pid, gen, addr);

	return e && !e->pending ? e : NULL;
}

/* Interns every string of the (checked) arena, so later additions share them. */
static int index_arena(struct kx_symres *r)
{
	for (size_t off = 0; off < r->strs.len; off += strlen(r->strs.buf + off) + 1) {
		int found;
		size_t at = index_pos(r, r->strs.buf + off, &found);

		if (!found && index_insert(r, at, off) != 0)
			return -1;
	}
	return 0;
}

static int entry_ok(const struct kx_symres_entry *e, size_t strs_len)
{
	return e->func < strs_len && e->module < strs_len && e->build_id < strs_len &&
	       e->known <= 1 && e->pending == 0;
}

int kx_symres_load(struct kx_symres *r, const struct kx_symres_entry *e, size_t n, const char *strs,
                   size_t strs_len, char *err, size_t len)
{
	if (strs_len == 0 || strs_len > UINT32_MAX || strs[strs_len - 1] != 0) {
		snprintf(err, len,
		         "resolved symbols: the string table is empty, too large or "
		         "not NUL-terminated");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!entry_ok(&e[i], strs_len)) {
			snprintf(err, len, "resolved symbols: entry %zu refers past the strings",
			         i);
			return -1;
		}
	r->e = malloc((n ? n : 1) * sizeof(*r->e));
	r->strs.buf = malloc(strs_len);
	if (!r->e || !r->strs.buf) {
		snprintf(err, len, "out of memory");
		kx_symres_free(r);
		return -1;
	}
	memcpy(r->e, e, n * sizeof(*e));
	memcpy(r->strs.buf, strs, strs_len);
	r->n = r->cap = n;
	r->strs.len = r->strs.cap = strs_len;
	for (size_t i = 0; i < n; i++)
		r->unknown += !e[i].known;
	kx_symres_settle(r);
	if (index_arena(r) != 0) {
		snprintf(err, len, "out of memory");
		kx_symres_free(r);
		return -1;
	}
	return 0;
}

void kx_symres_free(struct kx_symres *r)
{
	free(r->e);
	free(r->index);
	kx_arena_free(&r->strs);
	memset(r, 0, sizeof(*r));
}
