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
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "annotate.skel.h"
#include "capture/progmiss.h"
#include "capture/annotate.h"
#include "capture/annwait.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define NT_STAPSDT   3
#define API_SYMBOL   "kxprof_range_push" /* what marks a copy of the library */
#define ALL_PROBES   ((1u << KX_ANN_NPROBES) - 1)
#define DEFAULT_RING (8u << 20)
#define MAX_PENDING  256 /* processes to scan, noted between two rounds of the watcher */
#define WATCH_MS     100 /* the watcher's longest sleep, ms */
#define STR_(x)      #x
#define STR(x)       STR_(x)

static const char *const probe_names[KX_ANN_NPROBES] = {"range_push", "range_pop", "mark",
                                                        "range_start", "range_end"};

/* A process the loader reported mapping objects, and when (the first
 * report since the watcher last scanned it). */
struct noted {
	pid_t pid;
	uint64_t ns; /* CLOCK_MONOTONIC */
};

/* A file examined: its identity, and whether it is a copy (index in copies). */
struct seen {
	dev_t dev;
	ino_t ino;
	int copy; /* -1: not a copy of the library */
};

/* The probes of one copy attached for one process (-1: every process), or
 * refused by the caps; kept either way so each is decided once. */
struct att {
	size_t copy; /* index in copies */
	pid_t pid;
	int refused;
	struct bpf_link *links[KX_ANN_NPROBES];
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
	size_t ncopies, copies_cap;
	struct att *atts;
	size_t natts, atts_cap;
	struct kx_hmap att_ids;    /* hash of (copy, pid) -> index in atts */
	size_t nattached_copies;   /* copies with a probe attached (cap KX_ANN_MAX_ATTACHED) */
	uint32_t nsites, site_cap; /* uprobes attached, and the cap on them */
	uint64_t capped;           /* attachments refused by the caps */
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
	/* Noted by the notes callback, scanned by the watcher; read under lock
	 * by any scan, for when the process mapped what it attaches. */
	struct noted pending[MAX_PENDING];
	int npending, pending_all; /* pending_all: too many to list, rescan every one */
	/* Copies whose probes came too late for their wait (capture/annwait.h). */
	struct kx_ann_late late[KX_ANN_MAX_LATE];
	uint32_t nlate, more_late;
	uint32_t test_delay_ms; /* KX_ANN_TEST_DELAY_ENV, for tests only */
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

/* The kxprof probes in one .note.stapsdt section: bit per probe, and the
 * probe sites (notes) of each, which bound the uprobes and libbpf USDT
 * spec ids an attach of that probe takes. */
static uint8_t note_probes(Elf *e, Elf_Scn *scn, uint32_t sites[KX_ANN_NPROBES])
{
	size_t asz = gelf_getclass(e) == ELFCLASS32 ? 4 : 8, off = 0, noff, doff;
	Elf_Data *d = elf_getdata(scn, NULL);
	GElf_Nhdr nh;
	uint8_t found = 0;

	while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		const char *desc = (const char *)d->d_buf + doff, *prov, *name;
		size_t n = nh.n_descsz;
		int i;

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
		if (strcmp(prov, KX_ANN_PROVIDER) != 0 || (i = probe_index(name)) < 0)
			continue;
		found |= 1u << i;
		if (sites[i] < UINT32_MAX)
			sites[i]++;
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

/* What the file open at fd carries. */
struct probes {
	uint8_t found;                  /* bit i: probe i is in the notes */
	int has_api;                    /* exports the API: a copy even when stripped */
	uint32_t sites[KX_ANN_NPROBES]; /* notes (probe sites) of probe i */
};

/* Reads the probes of the file open at fd (left open). 0, or -errno. */
static int file_probes(int fd, struct probes *p)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int err = 0;
	Elf *e;

	memset(p, 0, sizeof(*p));
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
			p->found |= note_probes(e, scn, p->sites);
		else if (sh.sh_type == SHT_DYNSYM)
			p->has_api |= dynsym_has(e, scn, &sh, API_SYMBOL);
	}
out:
	if (e)
		elf_end(e);
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

/* Uprobes an attachment of copy c takes: one per probe site. */
static uint32_t copy_sites(const struct kx_annot_copy *c)
{
	uint64_t n = 0;

	for (int i = 0; i < KX_ANN_NPROBES; i++)
		if (c->found & (1u << i))
			n += c->sites[i];
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static uint64_t att_key(size_t copy, pid_t pid)
{
	return kx_hash_combine(kx_hash_combine(1, (uint64_t)copy), (uint64_t)(uint32_t)pid);
}

static struct att *att_find(struct kx_annot *a, size_t copy, pid_t pid)
{
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	while ((i = kx_hmap_next(&a->att_ids, att_key(copy, pid), &pos)))
		if (a->atts[*i].copy == copy && a->atts[*i].pid == pid)
			return &a->atts[*i];
	return NULL;
}

/*
 * Whether an attachment of copy c fits the session's caps: at most
 * KX_ANN_MAX_ATTACHED copies (files) and KX_ANN_MAX_UPROBES probe sites.
 * The site cap also keeps libbpf's USDT spec ids (one per site at most,
 * a.spec_ids of them) from running out: libbpf 1.1's error path for that
 * frees its free-id list twice. NULL, or why not.
 */
static const char *over_cap(struct kx_annot *a, const struct kx_annot_copy *c)
{
	uint32_t sites = copy_sites(c);

	if (!c->attached && a->nattached_copies >= KX_ANN_MAX_ATTACHED)
		return "not attached: this capture's cap of " STR(
		        KX_ANN_MAX_ATTACHED) " copies of the annotation library is reached";
	if (sites > a->site_cap || a->nsites > a->site_cap - sites)
		return "not attached: its probe sites would pass this capture's cap of " STR(
		        KX_ANN_MAX_UPROBES) " annotation uprobes";
	return NULL;
}

/*
 * Attaches the probes copy ci carries, for pid (-1: every process), through
 * the file open at fd: libbpf and the kernel resolve /proc/self/fd/N to
 * that very file, never a path that could have been swapped since it was
 * checked. Records what is missing, failed or refused.
 */
static void att_attach(struct kx_annot *a, struct att *t, int fd)
{
	struct kx_annot_copy *c = &a->copies[t->copy];
	const char *cap = over_cap(a, c);
	int first_err = 0, failed = -1, was = c->attached;
	char path[64];

	if (cap) {
		t->refused = 1;
		a->capped++;
		if (!c->attached)
			snprintf(c->why, sizeof(c->why), "%s", cap);
		return;
	}
	a->nsites += copy_sites(c);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int i = 0; i < KX_ANN_NPROBES; i++) {
		if (!(c->found & (1u << i)))
			continue;
		t->links[i] = bpf_program__attach_usdt(probe_prog(a, i), t->pid, path,
		                                       KX_ANN_PROVIDER, probe_names[i], NULL);
		if (!t->links[i]) {
			if (failed < 0) {
				failed = i;
				first_err = errno;
			}
			continue;
		}
		c->attached |= 1u << i;
	}
	if (c->attached && !was)
		a->nattached_copies++;
	if (failed >= 0)
		snprintf(c->why, sizeof(c->why),
		         "probe %s failed to attach: %s (uprobes with semaphores need a kernel "
		         "with ref_ctr_offset support and root or CAP_PERFMON)",
		         probe_names[failed], strerror(first_err));
	else if (c->found != ALL_PROBES)
		why_missing(c);
}

static void att_detach(struct att *t)
{
	for (int i = 0; i < KX_ANN_NPROBES; i++) {
		bpf_link__destroy(t->links[i]);
		t->links[i] = NULL;
	}
}

static struct att *att_add(struct kx_annot *a, size_t copy, pid_t pid)
{
	struct att *t;

	if (a->natts >= UINT32_MAX ||
	    kx_grow((void **)&a->atts, &a->atts_cap, a->natts, sizeof(*a->atts)) ||
	    kx_hmap_add(&a->att_ids, att_key(copy, pid), (uint32_t)a->natts))
		return NULL;
	t = &a->atts[a->natts++];
	memset(t, 0, sizeof(*t));
	t->copy = copy;
	t->pid = pid;
	return t;
}

static int copy_add(struct kx_annot *a, const char *path, const struct stat *st,
                    const struct probes *p, pid_t pid)
{
	struct kx_annot_copy *c;

	if (kx_grow((void **)&a->copies, &a->copies_cap, a->ncopies, sizeof(*a->copies)))
		return -ENOMEM;
	c = &a->copies[a->ncopies];
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->pid = pid;
	c->found = p->found;
	memcpy(c->sites, p->sites, sizeof(c->sites));
	if (!c->found)
		why_missing(c);
	return (int)a->ncopies++;
}

/*
 * The file open at fd (whose identity is st), as the process sees it at
 * path: classified once, then attached once per (copy, pid). 1 when an
 * attachment was made with at least one probe, 0 when none was (not a
 * copy, attached already, refused: see the copy list), or -errno.
 */
static int attach_fd(struct kx_annot *a, int fd, const struct stat *st, const char *path, pid_t pid)
{
	struct seen *s = seen_find(a, st->st_dev, st->st_ino);
	struct att *t;
	int ci;

	if (!s) {
		struct probes p;
		int err = file_probes(fd, &p);

		if (err && err != -ENOEXEC)
			return err;
		s = seen_add(a, st->st_dev, st->st_ino);
		if (!s)
			return -ENOMEM;
		if (err || (!p.found && !p.has_api))
			return 0; /* not an ELF file, or not a copy */
		ci = copy_add(a, path, st, &p, pid);
		if (ci < 0)
			return ci;
		s->copy = ci;
	}
	if (s->copy < 0 || !a->copies[s->copy].found || att_find(a, (size_t)s->copy, pid))
		return 0;
	t = att_add(a, (size_t)s->copy, pid);
	if (!t)
		return -ENOMEM;
	att_attach(a, t, fd);
	return t->links[0] || t->links[1] || t->links[2] || t->links[3] || t->links[4];
}

static int attach_path(struct kx_annot *a, const char *path, pid_t pid)
{
	struct stat st;
	int fd, rc;

	if (!a->all && pid < 0)
		return -EINVAL; /* a pid set's capture attaches per process */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = fstat(fd, &st) ? -errno : attach_fd(a, fd, &st, path, pid);
	close(fd);
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

/* One executable file mapping of a maps line. */
struct mapping {
	unsigned long lo, hi; /* the range, as map_files names it */
	dev_t dev;
	ino_t ino;
	const char *path; /* as the process sees it */
};

/* The file a maps line names ("... /path"), if executable and on disk. */
static int maps_file(char *line, struct mapping *m)
{
	unsigned int maj, min;
	unsigned long ino;
	char perms[8], *path;
	int n = 0;

	if (sscanf(line, "%lx-%lx %7s %*x %x:%x %lu %n", &m->lo, &m->hi, perms, &maj, &min, &ino,
	           &n) != 6 ||
	    !n || !strchr(perms, 'x'))
		return 0;
	path = line + n;
	path[strcspn(path, "\n")] = 0;
	if (path[0] != '/' || strstr(path, " (deleted)") || !ino)
		return 0;
	m->dev = makedev(maj, min);
	m->ino = (ino_t)ino;
	m->path = path;
	return 1;
}

/*
 * Opens the file the process (its /proc directory open at dir) maps at m,
 * once: through map_files (the mapped file itself, no path lookup), else
 * through the process's root with O_NOFOLLOW; either way it must be the
 * file the maps line names (device and inode), or it is not used. fd, or
 * -errno.
 */
static int open_mapped(int dir, const struct mapping *m, struct stat *st)
{
	char name[600];
	int fd;

	snprintf(name, sizeof(name), "map_files/%lx-%lx", m->lo, m->hi);
	fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(name, sizeof(name), "root%s", m->path);
		fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_dev != m->dev ||
	    st->st_ino != m->ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* 1 when the process whose /proc directory is open at dir still lives (its
 * pid then still names it, so what was attached by pid went to it). */
static int still_there(int dir)
{
	int fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* The pid set holds pid (a capture with a pid set attaches only for those). */
static int traced(struct kx_annot *a, pid_t pid)
{
	uint32_t k = (uint32_t)pid;
	uint8_t v;

	return a->all || bpf_map_lookup_elem(bpf_map__fd(a->skel->maps.pids), &k, &v) == 0;
}

/* The file of m is known: no probes, or attached for for_pid already. Under lock. */
static int known(struct kx_annot *a, const struct mapping *m, pid_t for_pid)
{
	struct seen *s = seen_find(a, m->dev, m->ino);

	return s &&
	       (s->copy < 0 || !a->copies[s->copy].found || att_find(a, (size_t)s->copy, for_pid));
}

/* When the loader last reported pid mapping objects, not yet scanned; 0 when
 * it did not (a periodic rescan, a process found at start). Under lock. */
static uint64_t noted_ns(const struct kx_annot *a, pid_t pid)
{
	for (int i = 0; i < a->npending; i++)
		if (a->pending[i].pid == pid)
			return a->pending[i].ns;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* For tests only (KX_ANN_TEST_DELAY_ENV): holds an attach until the delay
 * after map_ns has passed. Called without the lock. */
static void test_delay(const struct kx_annot *a, uint64_t map_ns)
{
	uint64_t until = map_ns + (uint64_t)a->test_delay_ms * 1000000u, now = mono_ns();

	if (now < until) {
		struct timespec t = {(time_t)((until - now) / 1000000000u),
		                     (long)((until - now) % 1000000000u)};

		while (nanosleep(&t, &t) && errno == EINTR)
			;
	}
}

/* The command name of the process open at dir, "" when it cannot be read. */
static void comm_of(int dir, char *comm, size_t len)
{
	int fd = openat(dir, "comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, comm, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	comm[n > 0 ? n : 0] = 0;
	comm[strcspn(comm, "\n")] = 0;
}

/* Probes of the copy at path attached just now in pid, which the loader
 * reported mapping it at map_ns: listed when they came too late for the
 * copy's wait (capture/annwait.h). Under lock. */
static void check_late(struct kx_annot *a, int dir, pid_t pid, const char *path, uint64_t map_ns)
{
	struct kx_ann_late l;

	memset(&l, 0, sizeof(l));
	if (!kx_annwait_late(map_ns, mono_ns(), kx_annwait_hold_ms(dir), &l))
		return;
	if (a->nlate == KX_ANN_MAX_LATE) {
		a->more_late++;
		return;
	}
	l.pid = (uint32_t)pid;
	comm_of(dir, l.comm, sizeof(l.comm));
	snprintf(l.path, sizeof(l.path), "%.*s", (int)sizeof(l.path) - 1, path);
	a->late[a->nlate++] = l;
}

/* One maps line of the process open at dir: attaches a new copy, or a copy
 * new to this process. 1 when attached, else 0 or -errno. */
static int scan_mapping(struct kx_annot *a, int dir, pid_t pid, const struct mapping *m)
{
	pid_t for_pid = a->all ? -1 : pid;
	uint64_t map_ns;
	struct stat st;
	size_t natts;
	int fd, rc;

	pthread_mutex_lock(&a->lock);
	if (known(a, m, for_pid)) {
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	map_ns = noted_ns(a, pid);
	if (map_ns && a->test_delay_ms) {
		pthread_mutex_unlock(&a->lock);
		test_delay(a, map_ns);
		pthread_mutex_lock(&a->lock);
		if (known(a, m, for_pid)) {
			pthread_mutex_unlock(&a->lock);
			return 0;
		}
	}
	fd = open_mapped(dir, m, &st);
	if (fd < 0) {
		pthread_mutex_unlock(&a->lock);
		return fd;
	}
	natts = a->natts;
	rc = attach_fd(a, fd, &st, m->path, for_pid);
	close(fd);
	/* A pid that died and was reused during the attach got probes meant
	 * for the traced process: take them off (kept refused). */
	if (for_pid > 0 && a->natts > natts && !still_there(dir)) {
		att_detach(&a->atts[a->natts - 1]);
		rc = 0;
	}
	if (rc > 0 && map_ns)
		check_late(a, dir, pid, m->path, map_ns);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int kx_annot_scan_pid(struct kx_annot *a, pid_t pid)
{
	char dname[32], line[1024];
	int added = 0, dir, fd, rc;
	FILE *f;

	snprintf(dname, sizeof(dname), "/proc/%d", (int)pid);
	dir = open(dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	if (!traced(a, pid)) {
		close(dir);
		return 0;
	}
	fd = openat(dir, "maps", O_RDONLY | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		close(dir);
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		struct mapping m;

		if (!maps_file(line, &m))
			continue;
		rc = scan_mapping(a, dir, pid, &m);
		if (rc > 0)
			added += rc;
	}
	fclose(f);
	close(dir);
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

/*
 * Takes the probes off processes that left the pid set (exited, or exec'ed
 * a program the capture stops following): none stays in a process the
 * capture no longer traces, and their uprobes stop counting against the
 * cap, so a session whose processes come and go keeps attaching.
 */
static void prune(struct kx_annot *a)
{
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->natts; i++) {
		struct att *t = &a->atts[i];
		uint32_t sites = copy_sites(&a->copies[t->copy]);

		if (t->pid <= 0 || traced(a, t->pid))
			continue;
		if (!t->refused) {
			att_detach(t);
			a->nsites -= sites < a->nsites ? sites : a->nsites;
		}
		t->pid = 0; /* found no more: a new process with this pid is attached anew */
	}
	pthread_mutex_unlock(&a->lock);
}

int kx_annot_rescan(struct kx_annot *a)
{
	int fd = bpf_map__fd(a->skel->maps.pids), added = 0, rc;
	uint32_t key, next, *prev = NULL;

	if (a->all)
		return rescan_all(a);
	prune(a);
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
	info->capped = a->capped;
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
	info->nlate = a->nlate;
	info->more_late = a->more_late;
	memcpy(info->late, a->late, sizeof(a->late[0]) * a->nlate);
	for (uint32_t i = 0; i < a->nlate; i++)
		snprintf(info->late[i].path, sizeof(info->late[i].path), "%s",
		         seen_path(a->late[i].path));
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
	pthread_mutex_lock(&a->lock);
	if (noted_ns(a, (pid_t)n->pid)) {
		pthread_mutex_unlock(&a->lock);
		return 0; /* the first report since the last scan says when */
	}
	if (a->npending == MAX_PENDING)
		a->pending_all = 1;
	else
		a->pending[a->npending++] = (struct noted){(pid_t)n->pid, n->ts ? n->ts : 1};
	pthread_mutex_unlock(&a->lock);
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
				kx_annot_scan_pid(a, a->pending[i].pid);
		}
		pthread_mutex_lock(&a->lock);
		a->npending = 0;
		a->pending_all = 0;
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

int kx_annot_watch(struct kx_annot *a, unsigned int rescan_ms, char *why, size_t len)
{
	char path[512];
	unsigned long off = 0;
	int rc = loader_hook(path, sizeof(path), &off), err = 0;

	a->rescan_ms = rescan_ms;
	a->test_delay_ms = kx_annwait_test_delay_ms();
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

/* The uprobes a capture may attach: KX_ANN_MAX_UPROBES, fewer if libbpf's
 * USDT spec map is smaller (each uprobe takes at most one spec id). */
static uint32_t site_cap(struct kx_annot *a)
{
	const struct bpf_map *m = bpf_object__find_map_by_name(a->skel->obj, "__bpf_usdt_specs");
	uint32_t n = m ? bpf_map__max_entries(m) : 0;

	return n && n < KX_ANN_MAX_UPROBES ? n : KX_ANN_MAX_UPROBES;
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
	else
		a->site_cap = site_cap(a);
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
	for (size_t t = 0; t < a->natts; t++)
		att_detach(&a->atts[t]);
	pthread_mutex_unlock(&a->lock);
}

uint64_t kx_annot_missed(const struct kx_annot *a)
{
	return a && a->skel ? kx_bpf_missed(a->skel->obj) : 0;
}

void kx_annot_close(struct kx_annot *a)
{
	if (!a)
		return;
	kx_annot_detach(a);
	ring_buffer__free(a->rb);
	annotate_bpf__destroy(a->skel);
	free(a->copies);
	free(a->atts);
	kx_hmap_free(&a->att_ids);
	free(a->seen);
	kx_hmap_free(&a->seen_ids);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
