/*
 * Kernel symbols (see kallsyms.h). Names and module names are kept in one
 * string arena; a symbol refers to them by offset while the arena grows,
 * then by pointer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"
#include "symbol/kallsyms.h"
#include "util/grow.h"

struct kx_kallsyms {
	struct kx_ksym *syms;
	size_t n, cap;
	struct kx_arena names; /* names and module names */
	size_t last_mod;       /* arena offset of the last module name (repeats are shared) */
	int hidden;
};

/* Module name offset, shared with the previous line's when equal. */
static size_t module_ref(struct kx_kallsyms *k, const char *mod)
{
	if (k->names.len && strcmp(kx_arena_str(&k->names, k->last_mod), mod) == 0)
		return k->last_mod;
	k->last_mod = kx_arena_add(&k->names, mod);
	return k->last_mod;
}

static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* One line "ADDR TYPE NAME [MODULE]"; 0, 1 when skipped, -1 out of memory. */
static int add_line(struct kx_kallsyms *k, const char *line, int *nonzero)
{
	char name[256], mod[64] = "";
	unsigned long long addr;
	size_t noff, moff;
	char type;

	if (sscanf(line, "%llx %c %255s [%63[^]]]", &addr, &type, name, mod) < 3 || !is_text(type))
		return 1;
	*nonzero |= addr != 0;
	if (kx_grow((void **)&k->syms, &k->cap, k->n, sizeof(*k->syms)))
		return -1;
	noff = kx_arena_add(&k->names, name);
	moff = module_ref(k, mod);
	if (noff == KX_ARENA_NONE || moff == KX_ARENA_NONE)
		return -1;
	/* Offsets now, pointers once the arena stops moving (resolve_refs). */
	k->syms[k->n].addr = addr;
	k->syms[k->n].name = (const char *)(uintptr_t)noff;
	k->syms[k->n].module = (const char *)(uintptr_t)moff;
	k->n++;
	return 0;
}

static void resolve_refs(struct kx_kallsyms *k)
{
	for (size_t i = 0; i < k->n; i++) {
		k->syms[i].name = kx_arena_str(&k->names, (uintptr_t)k->syms[i].name);
		k->syms[i].module = kx_arena_str(&k->names, (uintptr_t)k->syms[i].module);
	}
}

static int by_addr(const void *a, const void *b)
{
	const struct kx_ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct kx_kallsyms *kx_kallsyms_load(const char *path, char *err, size_t len)
{
	struct kx_kallsyms *k;
	char line[512];
	int nonzero = 0, rc = 0;
	FILE *f;

	path = path ? path : "/proc/kallsyms";
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, len, "cannot read kernel symbols from %s: %s", path, strerror(errno));
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	while (k && rc >= 0 && fgets(line, sizeof(line), f))
		rc = add_line(k, line, &nonzero);
	fclose(f);
	if (!k || rc < 0) {
		snprintf(err, len, "out of memory reading kernel symbols from %s", path);
		kx_kallsyms_free(k);
		return NULL;
	}
	k->hidden = k->n > 0 && !nonzero;
	if (k->hidden)
		k->n = 0; /* every address reads 0: nothing can be looked up */
	resolve_refs(k);
	if (k->n > 1)
		qsort(k->syms, k->n, sizeof(*k->syms), by_addr);
	return k;
}

int kx_kallsyms_hidden(const struct kx_kallsyms *k)
{
	return k->hidden;
}

size_t kx_kallsyms_count(const struct kx_kallsyms *k)
{
	return k->n;
}

const struct kx_ksym *kx_kallsyms_find(const struct kx_kallsyms *k, uint64_t addr, uint64_t *off)
{
	long i = kx_addr_floor(k->syms, k->n, sizeof(*k->syms), addr);

	if (i < 0 || addr - k->syms[i].addr >= KX_KSYM_MAX_SPAN)
		return NULL;
	*off = addr - k->syms[i].addr;
	return &k->syms[i];
}

const struct kx_ksym *kx_kallsyms_by_name(const struct kx_kallsyms *k, const char *name)
{
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->syms[i].name, name) == 0)
			return &k->syms[i];
	return NULL;
}

void kx_kallsyms_free(struct kx_kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	kx_arena_free(&k->names);
	free(k);
}
