/*
 * Symbolizer (see symbolizer.h): kernel frames through kallsyms, user frames
 * through the process's snapshot: mapping -> symbol file -> function.
 * Snapshots are kept sorted by pid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/arena.h"
#include "symbol/filecache.h"
#include "symbol/kallsyms.h"
#include "symbol/perfmap.h"
#include "symbol/procmaps.h"
#include "symbol/symbolizer.h"
#include "util/grow.h"

/* One process's executable mappings and the symbol file of each. */
struct snapshot {
	uint64_t pid; /* first: kx_addr_floor finds snapshots by pid */
	struct kx_procmap *maps;
	const struct kx_symfile **files; /* per mapping; NULL when out of memory */
	size_t n;
	int missed;   /* no maps (gone, unreadable, inside exec): only a refresh tries again */
	uint32_t uid; /* owner of /proc/PID when the maps were read */
	struct kx_perfmap *pm; /* its /tmp/perf-PID.map, read on first need; NULL: not yet */
};

struct kx_symbolizer {
	struct kx_kallsyms *ksyms; /* NULL when unreadable */
	char kwarn[200];
	char **kmods; /* "[module]" names of kernel modules, made on first use */
	size_t nkmods, kmods_cap;
	struct kx_filecache *files;
	struct snapshot *snaps; /* sorted by pid */
	size_t nsnaps, snaps_cap;
	struct kx_symbolizer_stats st;
};

struct kx_symbolizer *kx_symbolizer_new(const char *kallsyms, char *err, size_t len)
{
	struct kx_symbolizer *s = calloc(1, sizeof(*s));
	char why[160];

	if (s)
		s->files = kx_filecache_new();
	if (!s || !s->files) {
		snprintf(err, len, "out of memory");
		free(s);
		return NULL;
	}
	s->ksyms = kx_kallsyms_load(kallsyms, why, sizeof(why));
	if (!s->ksyms)
		snprintf(s->kwarn, sizeof(s->kwarn), "kernel frames unresolved: %s", why);
	else if (kx_kallsyms_hidden(s->ksyms))
		snprintf(s->kwarn, sizeof(s->kwarn),
		         "kernel frames unresolved: %s shows every address as 0 (run as root, "
		         "or with CAP_SYSLOG and kernel.kptr_restrict below 2)",
		         kallsyms ? kallsyms : "/proc/kallsyms");
	return s;
}

void kx_symbolizer_as_process(struct kx_symbolizer *s)
{
	kx_filecache_as_process(s->files);
}

const char *kx_symbolizer_warning(const struct kx_symbolizer *s)
{
	return s->kwarn;
}

/* The snapshot of pid, or where it would go; *found when it is there. */
static long snap_index(const struct kx_symbolizer *s, pid_t pid, int *found)
{
	long i = kx_addr_floor(s->snaps, s->nsnaps, sizeof(*s->snaps), (uint64_t)pid);

	*found = i >= 0 && s->snaps[i].pid == (uint64_t)pid;
	return *found ? i : i + 1;
}

static void snap_clear(struct snapshot *sn)
{
	kx_procmaps_free(sn->maps, sn->n);
	free(sn->files);
	if (sn->pm)
		kx_perfmap_free(sn->pm);
	free(sn->pm);
	sn->pm = NULL;
	sn->maps = NULL;
	sn->files = NULL;
	sn->n = 0;
}

/* Reads pid's maps and their symbol files into sn. */
static int snap_take(struct kx_symbolizer *s, struct snapshot *sn, pid_t pid, char *err, size_t len)
{
	char proc[32];
	struct stat st;

	if (kx_procmaps_read(pid, &sn->maps, &sn->n, err, len) != 0)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	sn->uid = stat(proc, &st) == 0 ? (uint32_t)st.st_uid : 0;
	sn->pid = pid;
	sn->files = calloc(sn->n ? sn->n : 1, sizeof(*sn->files));
	for (size_t i = 0; sn->files && i < sn->n; i++)
		sn->files[i] = kx_filecache_get(s->files, pid, &sn->maps[i]);
	s->st.procs++;
	return 0;
}

int kx_symbolizer_snapshot(struct kx_symbolizer *s, pid_t pid, char *err, size_t len)
{
	struct snapshot sn = {0};
	int found;
	long i = snap_index(s, pid, &found);
	int rc;

	if (found && s->snaps[i].missed)
		snprintf(err, len, "process %d was gone before its maps were read", (int)pid);
	if (found)
		return s->snaps[i].missed ? -1 : 0;
	if (kx_grow((void **)&s->snaps, &s->snaps_cap, s->nsnaps, sizeof(*s->snaps))) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	rc = snap_take(s, &sn, pid, err, len);
	if (rc != 0) { /* kept, empty: its frames are [unknown] without asking again */
		sn.pid = (uint64_t)pid;
		sn.missed = 1;
		s->st.procs_missed++;
	}
	memmove(&s->snaps[i + 1], &s->snaps[i], (s->nsnaps - i) * sizeof(*s->snaps));
	s->snaps[i] = sn;
	s->nsnaps++;
	return rc;
}

int kx_symbolizer_refresh(struct kx_symbolizer *s, pid_t pid, char *err, size_t len)
{
	struct snapshot sn = {0};
	int found;
	long i = snap_index(s, pid, &found);

	if (!found)
		return kx_symbolizer_snapshot(s, pid, err, len);
	if (snap_take(s, &sn, pid, err, len) != 0)
		return -1; /* the old snapshot stays: better than none */
	if (s->snaps[i].missed)
		s->st.procs_missed--;
	snap_clear(&s->snaps[i]);
	s->snaps[i] = sn;
	return 0;
}

int kx_symbolizer_has_map(const struct kx_symbolizer *s, pid_t pid, uint64_t addr)
{
	int found;
	long i = snap_index(s, pid, &found);

	return found && kx_procmaps_find(s->snaps[i].maps, s->snaps[i].n, addr) != NULL;
}

int kx_symbolizer_missed(const struct kx_symbolizer *s, pid_t pid)
{
	int found;
	long i = snap_index(s, pid, &found);

	return found && s->snaps[i].missed;
}

static void unknown(struct kx_frame *out, const char *module)
{
	out->func = KX_UNKNOWN_FN;
	out->module = module;
	out->build_id = "";
	out->offset = 0;
	out->mod_offset = 0;
	out->known = 0;
}

/* "[mod]" for kernel module mod, kept for the symbolizer's lifetime. */
static const char *kmod_name(struct kx_symbolizer *s, const char *mod)
{
	char want[72];
	char *n;

	if (!*mod)
		return KX_KERNEL_MOD;
	snprintf(want, sizeof(want), "[%s]", mod);
	for (size_t i = 0; i < s->nkmods; i++)
		if (strcmp(s->kmods[i], want) == 0)
			return s->kmods[i];
	if (kx_grow((void **)&s->kmods, &s->kmods_cap, s->nkmods, sizeof(*s->kmods)) ||
	    !(n = strdup(want)))
		return KX_KERNEL_MOD;
	s->kmods[s->nkmods++] = n;
	return n;
}

void kx_symbolizer_kernel(struct kx_symbolizer *s, uint64_t addr, struct kx_frame *out)
{
	const struct kx_ksym *k = s->ksyms ? kx_kallsyms_find(s->ksyms, addr, &out->offset) : NULL;

	if (!k) {
		unknown(out, KX_KERNEL_MOD);
		s->st.kernel_unknown++;
		return;
	}
	out->func = k->name;
	out->module = kmod_name(s, k->module);
	out->build_id = "";
	out->mod_offset = 0;
	out->known = 1;
	s->st.kernel_resolved++;
}

/* Resolves addr in mapping i of snapshot sn. */
static int in_mapping(const struct snapshot *sn, size_t i, uint64_t addr, struct kx_frame *out)
{
	const struct kx_procmap *m = &sn->maps[i];
	const struct kx_symfile *f = sn->files ? sn->files[i] : NULL;
	uint64_t vaddr;

	unknown(out, m->path[0] ? m->path : KX_UNKNOWN_MOD);
	out->mod_offset = addr - m->start + m->offset;
	if (!f)
		return 0;
	out->build_id = f->build_id;
	if (!f->syms)
		return 0;
	vaddr = kx_elfsyms_link_addr(f->syms, addr, m->start, m->offset);
	out->func = kx_elfsyms_find(f->syms, vaddr, &out->offset);
	out->known = out->func != NULL;
	if (!out->func) {
		out->func = KX_UNKNOWN_FN;
		out->offset = 0;
	}
	return out->known;
}

/* addr in the perf map of sn's process (read, or read again when it
 * changed, on each address no mapping explains). 1 when found. */
static int in_perfmap(struct kx_symbolizer *s, struct snapshot *sn, uint64_t addr,
                      struct kx_frame *out)
{
	char err[160];
	const char *fn;
	uint64_t off;

	if (sn->missed)
		return 0;
	if (!sn->pm) {
		sn->pm = malloc(sizeof(*sn->pm));
		if (!sn->pm)
			return 0;
		kx_perfmap_init(sn->pm, (pid_t)sn->pid, sn->uid);
	}
	if (kx_perfmap_load(sn->pm, err, sizeof(err)) < 0 && !s->st.perfmap_refused++)
		fprintf(stderr, "kxprof: %s\n", err);
	fn = kx_perfmap_find(sn->pm, addr, &off);
	if (!fn)
		return 0;
	out->func = fn;
	out->module = sn->pm->path;
	out->build_id = "";
	out->offset = off;
	out->mod_offset = 0;
	out->known = 1;
	return 1;
}

void kx_symbolizer_user(struct kx_symbolizer *s, pid_t pid, uint64_t addr, struct kx_frame *out)
{
	const struct kx_procmap *m;
	struct snapshot *sn;
	char err[160];
	int found;
	long i = snap_index(s, pid, &found);

	if (!found) { /* kept even when the process is gone (then empty) */
		kx_symbolizer_snapshot(s, pid, err, sizeof(err));
		i = snap_index(s, pid, &found);
	}
	sn = found ? &s->snaps[i] : NULL;
	m = sn ? kx_procmaps_find(sn->maps, sn->n, addr) : NULL;
	if (m && in_mapping(sn, (size_t)(m - sn->maps), addr, out)) {
		s->st.user_resolved++;
		return;
	}
	/* No mapping, or anonymous code: a JIT's, named in its perf map. */
	if ((!m || !m->path[0]) && sn && in_perfmap(s, sn, addr, out)) {
		s->st.user_resolved++;
		s->st.perfmap_resolved++;
		return;
	}
	if (!m)
		unknown(out, KX_UNKNOWN_MOD);
	s->st.user_unknown++;
}

void kx_symbolizer_stats(const struct kx_symbolizer *s, struct kx_symbolizer_stats *st)
{
	struct kx_filecache_stats fs;

	*st = s->st;
	kx_filecache_stats(s->files, &fs);
	st->files_read = fs.files_read;
	st->files_failed = fs.failed;
	st->files_shared = fs.shared_build_id;
}

void kx_symbolizer_free(struct kx_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nsnaps; i++)
		snap_clear(&s->snaps[i]);
	free(s->snaps);
	for (size_t i = 0; i < s->nkmods; i++)
		free(s->kmods[i]);
	free(s->kmods);
	kx_filecache_free(s->files);
	kx_kallsyms_free(s->ksyms);
	free(s);
}
