/*
 * Annotation capture (see annotate.h): the object, the probe notes of a
 * file, the copies found in /proc/PID/maps, attach and report per copy, and
 * the watcher thread that attaches the copies traced processes load later.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "annotate.skel.h"
#include "capture/annotate.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define NT_STAPSDT   3
#define API_SYMBOL   "kxprof_range_push" /* what marks a copy of the library */
#define ALL_PROBES   ((1u << KX_ANN_NPROBES) - 1)
#define DEFAULT_RING (8u << 20)
#define MAX_PENDING  256 /* processes to scan, noted between two rounds of the watcher */
#define WATCH_MS     100 /* the watcher's longest sleep, ms */

static const char *const probe_names[KX_ANN_NPROBES] = {"range_push", "range_pop", "mark",
                                                        "range_start", "range_end"};

/* A file examined: its identity, and whether it is a copy (index in copies). */
struct seen {
	dev_t dev;
	ino_t ino;
	int copy; /* -1: not a copy of the library */
};

struct kx_annot {
	struct annotate_bpf *skel;
	int own_events;
	struct ring_buffer *rb;
	kx_annot_cb cb;
	void *cb_ctx;
	int all;
	/* Guards the copies, their links and the files seen: the watcher
	 * thread and the callers both attach. */
	pthread_mutex_t lock;
	struct kx_annot_copy *copies;
	struct bpf_link *(*links)[KX_ANN_NPROBES]; /* per copy */
	size_t ncopies, copies_cap, links_cap;
	struct seen *seen;
	size_t nseen, seen_cap;
	struct kx_hmap seen_ids; /* hash of (dev, ino) -> index in seen */
	/* The watcher: library loads of traced processes, periodic rescans. */
	struct bpf_link *loads;    /* uprobe on the dynamic loader's debugger hook */
	struct ring_buffer *notes; /* its notes */
	pthread_t thread;
	int watching;
	atomic_int stop;
	unsigned int rescan_ms;
	pid_t pending[MAX_PENDING]; /* noted by the notes callback, scanned by the watcher */
	int npending, pending_all;  /* pending_all: too many to list, rescan every one */
};

const char *kx_annot_probe_name(int i)
{
	return i >= 0 && i < KX_ANN_NPROBES ? probe_names[i] : "?";
}

static int probe_index(const char *name)
{
	for (int i = 0; i < KX_ANN_NPROBES; i++)
		if (strcmp(name, probe_names[i]) == 0)
			return i;
	return -1;
}

/* The kxprof probes in one .note.stapsdt section: bit per probe. */
static uint8_t note_probes(Elf *e, Elf_Scn *scn)
{
	size_t asz = gelf_getclass(e) == ELFCLASS32 ? 4 : 8, off = 0, noff, doff;
	Elf_Data *d = elf_getdata(scn, NULL);
	GElf_Nhdr nh;
	uint8_t found = 0;

	while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		const char *desc = (const char *)d->d_buf + doff, *prov, *name;
		size_t n = nh.n_descsz;

		if (nh.n_type != NT_STAPSDT || nh.n_namesz != sizeof("stapsdt") ||
		    memcmp((const char *)d->d_buf + noff, "stapsdt", sizeof("stapsdt")) != 0 ||
		    n <= 3 * asz)
			continue;
		/* pc, base, semaphore addresses, then provider\0name\0args\0 */
		prov = desc + 3 * asz;
		if (!memchr(prov, 0, n - 3 * asz))
			continue;
		name = prov + strlen(prov) + 1;
		if (name >= desc + n || !memchr(name, 0, (size_t)(desc + n - name)))
			continue;
		if (strcmp(prov, KX_ANN_PROVIDER) == 0 && probe_index(name) >= 0)
			found |= 1u << probe_index(name);
	}
	return found;
}

static int dynsym_has(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *sym)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Sym s;

	for (size_t i = 0; d && i < n; i++) {
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (name && strcmp(name, sym) == 0)
			return 1;
	}
	return 0;
}

/* Which probes the file carries, and whether it exports the API (a copy of
 * the library even when stripped of its notes). 0, or -errno. */
static int file_probes(const char *path, uint8_t *found, int *has_api)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int fd, err = 0;
	Elf *e;

	*found = 0;
	*has_api = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx) != 0) {
		err = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_NOTE && name && strcmp(name, ".note.stapsdt") == 0)
			*found |= note_probes(e, scn);
		else if (sh.sh_type == SHT_DYNSYM)
			*has_api |= dynsym_has(e, scn, &sh, API_SYMBOL);
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

static uint64_t seen_key(dev_t dev, ino_t ino)
{
	return kx_hash_combine(kx_hash_combine(0, (uint64_t)dev), (uint64_t)ino);
}

static struct seen *seen_find(struct kx_annot *a, dev_t dev, ino_t ino)
{
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	while ((i = kx_hmap_next(&a->seen_ids, seen_key(dev, ino), &pos)))
		if (a->seen[*i].dev == dev && a->seen[*i].ino == ino)
			return &a->seen[*i];
	return NULL;
}

static struct seen *seen_add(struct kx_annot *a, dev_t dev, ino_t ino)
{
	struct seen *s;

	if (a->nseen >= UINT32_MAX ||
	    kx_grow((void **)&a->seen, &a->seen_cap, a->nseen, sizeof(*a->seen)) ||
	    kx_hmap_add(&a->seen_ids, seen_key(dev, ino), (uint32_t)a->nseen))
		return NULL;
	s = &a->seen[a->nseen++];
	s->dev = dev;
	s->ino = ino;
	s->copy = -1;
	return s;
}

static void why_missing(struct kx_annot_copy *c)
{
	size_t n = 0;

	if (!c->found) {
		snprintf(c->why, sizeof(c->why),
		         "exports the kxprof annotation API but has no kxprof probes (stripped "
		         "of .note.stapsdt, or built without <sys/sdt.h>): not captured");
		return;
	}
	n = (size_t)snprintf(c->why, sizeof(c->why),
	                     "probes not in this copy (an older "
	                     "library?):");
	for (int i = 0; i < KX_ANN_NPROBES && n < sizeof(c->why); i++)
		if (!(c->found & (1u << i)))
			n += (size_t)snprintf(c->why + n, sizeof(c->why) - n, " %s",
			                      probe_names[i]);
}

static struct bpf_program *probe_prog(struct kx_annot *a, int i)
{
	struct bpf_program *p[KX_ANN_NPROBES] = {a->skel->progs.ann_push, a->skel->progs.ann_pop,
	                                         a->skel->progs.ann_mark, a->skel->progs.ann_start,
	                                         a->skel->progs.ann_end};

	return p[i];
}

/* Attaches the probes the copy carries; reports what is missing or failed. */
static void copy_attach(struct kx_annot *a, size_t ci)
{
	struct kx_annot_copy *c = &a->copies[ci];
	int first_err = 0, failed = -1;

	for (int i = 0; i < KX_ANN_NPROBES; i++) {
		struct bpf_link *l;

		a->links[ci][i] = NULL;
		if (!(c->found & (1u << i)))
			continue;
		l = bpf_program__attach_usdt(probe_prog(a, i), c->pid, c->path, KX_ANN_PROVIDER,
		                             probe_names[i], NULL);
		if (!l) {
			if (failed < 0) {
				failed = i;
				first_err = errno;
			}
			continue;
		}
		a->links[ci][i] = l;
		c->attached |= 1u << i;
	}
	if (failed >= 0)
		snprintf(c->why, sizeof(c->why),
		         "probe %s failed to attach: %s (uprobes with semaphores need a kernel "
		         "with ref_ctr_offset support and root or CAP_PERFMON)",
		         probe_names[failed], strerror(first_err));
	else if (c->found != ALL_PROBES)
		why_missing(c);
}

static int copy_add(struct kx_annot *a, const char *path, const struct stat *st, pid_t pid,
                    uint8_t found)
{
	struct kx_annot_copy *c;

	if (kx_grow((void **)&a->copies, &a->copies_cap, a->ncopies, sizeof(*a->copies)) ||
	    kx_grow((void **)&a->links, &a->links_cap, a->ncopies, sizeof(*a->links)))
		return -ENOMEM;
	c = &a->copies[a->ncopies];
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->pid = pid;
	c->found = found;
	copy_attach(a, a->ncopies);
	a->ncopies++;
	return c->attached ? 1 : 0;
}

static int attach_path(struct kx_annot *a, const char *path, pid_t pid)
{
	struct stat st;
	struct seen *s;
	uint8_t found;
	int api, err, rc;

	if (stat(path, &st) != 0)
		return -errno;
	if (seen_find(a, st.st_dev, st.st_ino))
		return 0;
	err = file_probes(path, &found, &api);
	if (err && err != -ENOEXEC)
		return err;
	s = seen_add(a, st.st_dev, st.st_ino);
	if (!s)
		return -ENOMEM;
	if (err)
		return 0; /* not an ELF file: no probes */
	if (!found && !api)
		return 0;
	rc = copy_add(a, path, &st, pid, found);
	if (rc >= 0)
		s->copy = (int)a->ncopies - 1;
	return rc;
}

int kx_annot_attach_path(struct kx_annot *a, const char *path, pid_t pid)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = attach_path(a, path, pid);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

/* The file a maps line names ("... /path"), if executable and on disk. */
static const char *maps_file(char *line)
{
	char perms[8], *path;
	int n = 0;

	if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %*u %n", perms, &n) != 1 || !n ||
	    !strchr(perms, 'x'))
		return NULL;
	path = line + n;
	path[strcspn(path, "\n")] = 0;
	if (path[0] != '/' || strstr(path, " (deleted)"))
		return NULL;
	return path;
}

int kx_annot_scan_pid(struct kx_annot *a, pid_t pid)
{
	char mpath[64], line[1024], full[600];
	int added = 0, rc;
	FILE *f;

	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", (int)pid);
	f = fopen(mpath, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *path = maps_file(line);

		if (!path)
			continue;
		/* Through the process's root: right in other mount namespaces too. */
		snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, path);
		pthread_mutex_lock(&a->lock);
		rc = attach_path(a, full, -1);
		pthread_mutex_unlock(&a->lock);
		if (rc > 0)
			added += rc;
	}
	fclose(f);
	return added;
}

static int rescan_all(struct kx_annot *a)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int added = 0, rc;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		rc = kx_annot_scan_pid(a, (pid_t)pid);
		if (rc > 0)
			added += rc;
	}
	closedir(d);
	return added;
}

int kx_annot_rescan(struct kx_annot *a)
{
	int fd = bpf_map__fd(a->skel->maps.pids), added = 0, rc;
	uint32_t key, next, *prev = NULL;

	if (a->all)
		return rescan_all(a);
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		rc = kx_annot_scan_pid(a, (pid_t)next);
		if (rc > 0)
			added += rc;
		key = next;
		prev = &key;
	}
	return added;
}

int kx_annot_add_pid(struct kx_annot *a, pid_t pid)
{
	uint32_t k = (uint32_t)pid;
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(a->skel->maps.pids), &k, &one, BPF_ANY))
		return -errno;
	return 0;
}

const struct kx_annot_copy *kx_annot_copies(const struct kx_annot *a, int *n)
{
	*n = (int)a->ncopies;
	return a->copies;
}

/* The path a process sees: /proc/PID/root/... without its prefix. */
static const char *seen_path(const char *path)
{
	const char *p = path;

	if (strncmp(p, "/proc/", 6) != 0)
		return path;
	p += 6;
	while (*p >= '0' && *p <= '9')
		p++;
	return strncmp(p, "/root/", 6) == 0 ? p + 5 : path;
}

int kx_annot_info(struct kx_annot *a, struct kx_ann_info *info)
{
	uint64_t st[KX_ANN_STAT_MAX];
	int rc = kx_annot_stats(a, st);

	pthread_mutex_lock(&a->lock);
	info->enabled = 1;
	info->ncopies = 0;
	info->more_copies = 0;
	for (size_t i = 0; i < a->ncopies; i++) {
		const struct kx_annot_copy *c = &a->copies[i];
		struct kx_ann_copy *o;

		if (info->ncopies == KX_ANN_MAX_COPIES) {
			info->more_copies++;
			continue;
		}
		o = &info->copies[info->ncopies++];
		memset(o, 0, sizeof(*o));
		snprintf(o->path, sizeof(o->path), "%.*s", (int)sizeof(o->path) - 1,
		         seen_path(c->path));
		o->found = c->found;
		o->attached = c->attached;
		snprintf(o->why, sizeof(o->why), "%.*s", (int)sizeof(o->why) - 1, c->why);
	}
	pthread_mutex_unlock(&a->lock);
	if (rc)
		return rc;
	info->emitted = st[KX_ANN_STAT_EMITTED];
	info->dropped = st[KX_ANN_STAT_DROPPED];
	info->pop_no_push = st[KX_ANN_STAT_POP_NO_PUSH];
	info->depth_overflow = st[KX_ANN_STAT_DEPTH_OVERFLOW];
	info->end_no_start = st[KX_ANN_STAT_END_NO_START];
	info->threads_full = st[KX_ANN_STAT_THREADS_FULL];
	info->ranges_full = st[KX_ANN_STAT_RANGES_FULL];
	info->name_faults = st[KX_ANN_STAT_NAME_FAULT];
	return 0;
}

/* ---- the watcher ---- */

/*
 * Where this process's dynamic loader calls its debugger hook
 * (_dl_debug_state, _r_debug.r_brk) after mapping objects, as a file and an
 * offset in it: the same loader file serves the traced programs. 0, or
 * -errno.
 */
static int loader_hook(char *path, size_t len, unsigned long *off)
{
	/* Looked up, not linked: a copy relocation would hide the loader's own. */
	const struct r_debug *r = dlsym(RTLD_DEFAULT, "_r_debug");
	char line[1024];
	FILE *f;

	if (!r || !r->r_brk)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		int n = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*x:%*x %*u %n", &lo, &hi, &pgoff, &n) != 3 ||
		    !n || r->r_brk < lo || r->r_brk >= hi || line[n] != '/')
			continue;
		line[n + strcspn(line + n, "\n")] = 0;
		snprintf(path, len, "%s", line + n);
		*off = r->r_brk - lo + pgoff;
		fclose(f);
		return 0;
	}
	fclose(f);
	return -ENOENT;
}

static int on_note(void *ctx, void *data, size_t size)
{
	struct kx_annot *a = ctx;
	const struct kx_ann_note *n = data;

	if (size < sizeof(*n))
		return 0;
	for (int i = 0; i < a->npending; i++)
		if (a->pending[i] == (pid_t)n->pid)
			return 0;
	if (a->npending == MAX_PENDING)
		a->pending_all = 1;
	else
		a->pending[a->npending++] = (pid_t)n->pid;
	return 0;
}

static void *watch_main(void *arg)
{
	struct kx_annot *a = arg;
	unsigned int since = 0;

	while (!atomic_load(&a->stop)) {
		int rc = a->notes ? ring_buffer__poll(a->notes, WATCH_MS) : 0;

		if (!a->notes)
			usleep(WATCH_MS * 1000);
		if (rc < 0 && rc != -EINTR)
			break;
		since += WATCH_MS;
		if (a->pending_all || (a->rescan_ms && since >= a->rescan_ms && !a->all)) {
			kx_annot_rescan(a);
			since = 0;
		} else {
			for (int i = 0; i < a->npending; i++)
				kx_annot_scan_pid(a, a->pending[i]);
		}
		a->npending = 0;
		a->pending_all = 0;
	}
	return NULL;
}

int kx_annot_watch(struct kx_annot *a, unsigned int rescan_ms, char *why, size_t len)
{
	char path[512];
	unsigned long off = 0;
	int rc = loader_hook(path, sizeof(path), &off), err = 0;

	a->rescan_ms = rescan_ms;
	if (rc) {
		snprintf(why, len, "the dynamic loader's debugger hook was not found (%s)",
		         strerror(-rc));
		err = rc;
	} else {
		a->loads =
		        bpf_program__attach_uprobe(a->skel->progs.ann_loaded, false, -1, path, off);
		if (!a->loads) {
			err = -errno;
			snprintf(why, len, "uprobe on %s+0x%lx failed: %s", path, off,
			         strerror(errno));
		} else {
			a->notes = ring_buffer__new(bpf_map__fd(a->skel->maps.ann_notes), on_note,
			                            a, NULL);
			if (!a->notes) {
				err = -errno;
				snprintf(why, len, "cannot map the notes ring: %s",
				         strerror(errno));
			}
		}
	}
	rc = pthread_create(&a->thread, NULL, watch_main, a);
	if (rc) {
		snprintf(why, len, "cannot start the annotation watcher thread: %s", strerror(rc));
		return -rc;
	}
	a->watching = 1;
	return err;
}

static void watch_stop(struct kx_annot *a)
{
	if (a->watching) {
		atomic_store(&a->stop, 1);
		pthread_join(a->thread, NULL);
		a->watching = 0;
	}
	ring_buffer__free(a->notes);
	a->notes = NULL;
}

static int load(struct kx_annot *a, const struct kx_annot_opts *o, char *err, size_t len)
{
	int rc;

	a->skel->rodata->targ_all = o->all != 0;
	a->skel->rodata->targ_uid_only = o->uid_only != 0;
	a->skel->rodata->targ_uid = o->uid;
	a->skel->rodata->wakeup_bytes = o->wakeup_bytes ? o->wakeup_bytes : 256 * 1024;
	if (o->events_fd > 0)
		rc = bpf_map__reuse_fd(a->skel->maps.events, o->events_fd);
	else
		rc = bpf_map__set_max_entries(a->skel->maps.events,
		                              o->ring_bytes ? o->ring_bytes : DEFAULT_RING);
	if (!rc && o->pids_fd > 0)
		rc = bpf_map__reuse_fd(a->skel->maps.pids, o->pids_fd);
	if (!rc && o->stats_fd > 0)
		rc = bpf_map__reuse_fd(a->skel->maps.stats, o->stats_fd);
	if (rc) {
		snprintf(err, len, "annotations: cannot set up the shared maps: %s", strerror(-rc));
		return rc;
	}
	rc = annotate_bpf__load(a->skel);
	if (rc)
		snprintf(err, len,
		         "annotations: loading bpf/annotate.bpf.c failed: %s (needs root or "
		         "CAP_BPF+CAP_PERFMON, and a kernel with BTF)",
		         strerror(-rc));
	return rc;
}

struct kx_annot *kx_annot_open(const struct kx_annot_opts *o, char *err, size_t len)
{
	struct kx_annot *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, len, "annotations: out of memory");
		return NULL;
	}
	a->all = o->all;
	a->own_events = o->events_fd <= 0;
	pthread_mutex_init(&a->lock, NULL);
	a->skel = annotate_bpf__open();
	if (!a->skel) {
		snprintf(err, len, "annotations: cannot open the BPF object: %s", strerror(errno));
		free(a);
		return NULL;
	}
	if (load(a, o, err, len))
		goto fail;
	for (int i = 0; !o->all && i < o->npids; i++)
		if (kx_annot_add_pid(a, o->pids[i])) {
			snprintf(err, len, "annotations: cannot add pid %d to the pid set: %s",
			         (int)o->pids[i], strerror(errno));
			goto fail;
		}
	return a;
fail:
	kx_annot_close(a);
	return NULL;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	struct kx_annot *a = ctx;
	const struct kx_ann_rec *r = data;

	if (size < KX_ANN_REC_BASE_SIZE || r->hdr.type != KX_REC_ANNOTATION)
		return 0;
	return a->cb(a->cb_ctx, r, size);
}

int kx_annot_poll(struct kx_annot *a, int timeout_ms, kx_annot_cb cb, void *ctx)
{
	if (!a->own_events)
		return -EINVAL; /* the session's consumer reads a shared ring */
	if (!a->rb) {
		a->rb = ring_buffer__new(bpf_map__fd(a->skel->maps.events), on_rec, a, NULL);
		if (!a->rb)
			return -errno;
	}
	a->cb = cb;
	a->cb_ctx = ctx;
	return ring_buffer__poll(a->rb, timeout_ms);
}

int kx_annot_stats(const struct kx_annot *a, uint64_t out[KX_ANN_STAT_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(a->skel->maps.ann_stats);
	uint64_t *v;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t k = 0; k < KX_ANN_STAT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, v)) {
			free(v);
			return -errno;
		}
		for (int c = 0; c < ncpu; c++)
			out[k] += v[c];
	}
	free(v);
	return 0;
}

void kx_annot_detach(struct kx_annot *a)
{
	watch_stop(a);
	pthread_mutex_lock(&a->lock);
	bpf_link__destroy(a->loads);
	a->loads = NULL;
	for (size_t c = 0; c < a->ncopies; c++)
		for (int i = 0; i < KX_ANN_NPROBES; i++) {
			bpf_link__destroy(a->links[c][i]);
			a->links[c][i] = NULL;
		}
	pthread_mutex_unlock(&a->lock);
}

void kx_annot_close(struct kx_annot *a)
{
	if (!a)
		return;
	kx_annot_detach(a);
	ring_buffer__free(a->rb);
	annotate_bpf__destroy(a->skel);
	free(a->copies);
	free(a->links);
	free(a->seen);
	kx_hmap_free(&a->seen_ids);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
