/*
 * Bounded event store (see store.h). Owns the memory of a capture's events:
 * fixed-size chunks of ioctl, task and job records, an arena of argument bytes
 * split in chunks, a tid -> latest task index table for comm lookups, and the
 * annotation strings (util/intern.h).
 * Every allocation is charged against the limit before it is made, so the
 * store never holds more than the limit; what does not fit is counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/drmusage.h"
#include "model/perfdata.h"
#include "model/store.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/intern.h"

/*
 * Small chunks keep the refusal granularity fine for small limits and cost
 * one malloc per few thousand events; chunks never move, so element
 * pointers stay valid while the directories of chunk pointers grow.
 */
#define IOC_PER_CHUNK  4096
#define TASK_PER_CHUNK 512
#define JOB_PER_CHUNK  2048
#define ANN_PER_CHUNK  1024
#define ARENA_CHUNK    (256u * 1024)
/* arg_off is a u32 that must stay below KX_NO_ARG. */
#define ARENA_MAX_CHUNKS ((size_t)(UINT32_MAX / ARENA_CHUNK) - 1)
#define DEFAULT_LIMIT    ((size_t)512 << 20)
#define DIR_MIN          16

struct kx_store {
	size_t limit;
	size_t bytes;
	uint64_t not_stored;

	struct kx_ioctl **ioc;
	size_t nioc, ioc_chunks, ioc_dir;

	struct kx_task **task;
	size_t ntask, task_chunks, task_dir;

	struct kx_job **job;
	size_t njob, job_chunks, job_dir;

	uint8_t **arena;
	size_t arena_chunks, arena_dir;
	size_t arena_pos; /* bytes used in the last arena chunk */

	struct kx_hmap comm; /* tid -> index of its latest task */

	struct kx_samples *samples; /* CPU samples and their stacks, charged to the same limit */
	struct kx_samples *lent;    /* another store's samples, used instead (not freed here) */
	struct kx_ann **ann;        /* annotation events */
	size_t nann, ann_chunks, ann_dir;
	struct kx_intern strs; /* annotation strings: id i + 1 is interned string i */
	struct kx_drm_ev *drm; /* DRM usage rows */
	size_t ndrm, drm_cap;
};

/* Charges n bytes when they fit under the limit. */
static int charge(struct kx_store *s, size_t n)
{
	if (n > s->limit || s->bytes > s->limit - n)
		return -1;
	s->bytes += n;
	return 0;
}

/* Makes room for one more pointer in a chunk directory. The doubling is
 * written out: the new size is charged to the limit before it is allocated. */
static int dir_reserve(struct kx_store *s, void ***dir, size_t *cap, size_t used)
{
	size_t ncap;
	void **p;

	if (used < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : DIR_MIN;
	if (charge(s, (ncap - *cap) * sizeof(void *)))
		return -1;
	p = realloc(*dir, ncap * sizeof(void *));
	if (!p) {
		s->bytes -= (ncap - *cap) * sizeof(void *);
		return -1;
	}
	*dir = p;
	*cap = ncap;
	return 0;
}

/* Appends a new chunk of size bytes to a directory. */
static void *chunk_new(struct kx_store *s, void ***dir, size_t *cap, size_t *nchunks, size_t size)
{
	void *c;

	if (dir_reserve(s, dir, cap, *nchunks) || charge(s, size))
		return NULL;
	c = malloc(size);
	if (!c) {
		s->bytes -= size;
		return NULL;
	}
	(*dir)[(*nchunks)++] = c;
	return c;
}

/* The samples table's budget: the store's limit. */
static int charge_samples(void *ctx, long long n)
{
	struct kx_store *s = ctx;

	if (n < 0) {
		s->bytes -= (size_t)-n;
		return 0;
	}
	return charge(s, (size_t)n);
}

struct kx_store *kx_store_new(size_t limit_bytes)
{
	struct kx_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->limit = limit_bytes ? limit_bytes : DEFAULT_LIMIT;
	s->bytes = sizeof(*s);
	s->samples = kx_samples_new(charge_samples, s);
	if (!s->samples) {
		free(s);
		return NULL;
	}
	return s;
}

static void free_dir(void **dir, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(dir[i]);
	free(dir);
}

void kx_store_reset(struct kx_store *s)
{
	size_t limit = s->limit;

	free_dir((void **)s->ioc, s->ioc_chunks);
	free_dir((void **)s->task, s->task_chunks);
	free_dir((void **)s->job, s->job_chunks);
	free_dir((void **)s->arena, s->arena_chunks);
	kx_hmap_free(&s->comm);
	kx_samples_free(s->samples);
	free_dir((void **)s->ann, s->ann_chunks);
	kx_intern_free(&s->strs);
	free(s->drm);
	memset(s, 0, sizeof(*s));
	s->limit = limit;
	s->bytes = sizeof(*s);
	/* Out of memory: NULL, and kx_store_add_sample refuses what comes. */
	s->samples = kx_samples_new(charge_samples, s);
}

void kx_store_free(struct kx_store *s)
{
	if (!s)
		return;
	kx_store_reset(s);
	kx_samples_free(s->samples);
	free(s);
}

/* Finds the arena offset for len bytes, allocating a chunk when needed. */
static int arena_alloc(struct kx_store *s, size_t len, uint32_t *off)
{
	if (!s->arena_chunks || s->arena_pos + len > ARENA_CHUNK) {
		if (s->arena_chunks >= ARENA_MAX_CHUNKS)
			return -1;
		if (!chunk_new(s, (void ***)&s->arena, &s->arena_dir, &s->arena_chunks,
		               ARENA_CHUNK))
			return -1;
		s->arena_pos = 0;
	}
	*off = (uint32_t)((s->arena_chunks - 1) * ARENA_CHUNK + s->arena_pos);
	return 0;
}

int kx_store_add_ioctl(struct kx_store *s, const struct kx_ioctl *e, const uint8_t *arg)
{
	size_t len = arg ? (size_t)e->arg_in_len + e->arg_out_len : 0;
	struct kx_ioctl *dst;
	uint32_t off = KX_NO_ARG;

	/* Chunk first, arena second: a chunk kept after a refused arena
	 * allocation is charged and simply used by the next event. */
	if (s->nioc == s->ioc_chunks * IOC_PER_CHUNK &&
	    !chunk_new(s, (void ***)&s->ioc, &s->ioc_dir, &s->ioc_chunks,
	               IOC_PER_CHUNK * sizeof(struct kx_ioctl)))
		goto refuse;
	if (len && arena_alloc(s, len, &off))
		goto refuse;

	dst = &s->ioc[s->nioc / IOC_PER_CHUNK][s->nioc % IOC_PER_CHUNK];
	*dst = *e;
	if (len) {
		memcpy(s->arena[s->arena_chunks - 1] + s->arena_pos, arg, len);
		s->arena_pos += len;
	} else {
		/* No bytes known: say so rather than keep lengths without data. */
		dst->arg_in_len = 0;
		dst->arg_out_len = 0;
	}
	dst->arg_off = off;
	s->nioc++;
	return 0;
refuse:
	s->not_stored++;
	return -1;
}

size_t kx_store_add_ioctls(struct kx_store *s, const struct kx_ioctl *e, size_t n)
{
	size_t done = 0;

	while (done < n) {
		size_t room, k;
		struct kx_ioctl *dst;

		if (s->nioc == s->ioc_chunks * IOC_PER_CHUNK &&
		    !chunk_new(s, (void ***)&s->ioc, &s->ioc_dir, &s->ioc_chunks,
		               IOC_PER_CHUNK * sizeof(struct kx_ioctl))) {
			s->not_stored += n - done;
			break;
		}
		room = IOC_PER_CHUNK - s->nioc % IOC_PER_CHUNK;
		k = n - done < room ? n - done : room;
		dst = &s->ioc[s->nioc / IOC_PER_CHUNK][s->nioc % IOC_PER_CHUNK];
		memcpy(dst, e + done, k * sizeof(*dst));
		for (size_t i = 0; i < k; i++) {
			dst[i].arg_off = KX_NO_ARG;
			dst[i].arg_in_len = 0;
			dst[i].arg_out_len = 0;
		}
		s->nioc += k;
		done += k;
	}
	return done;
}

size_t kx_store_ioctl_reserve(struct kx_store *s, size_t upto)
{
	while (s->ioc_chunks * IOC_PER_CHUNK < upto)
		if (!chunk_new(s, (void ***)&s->ioc, &s->ioc_dir, &s->ioc_chunks,
		               IOC_PER_CHUNK * sizeof(struct kx_ioctl)))
			break;
	return s->ioc_chunks * IOC_PER_CHUNK < upto ? s->ioc_chunks * IOC_PER_CHUNK : upto;
}

size_t kx_store_ioctl_ranges(const struct kx_store *s, size_t from, size_t to,
                             struct kx_store_range *r, size_t max)
{
	size_t n = 0;

	if (to > s->ioc_chunks * IOC_PER_CHUNK)
		to = s->ioc_chunks * IOC_PER_CHUNK;
	while (from < to && n < max) {
		size_t end = (from / IOC_PER_CHUNK + 1) * IOC_PER_CHUNK;

		if (end > to)
			end = to;
		r[n].p = &s->ioc[from / IOC_PER_CHUNK][from % IOC_PER_CHUNK];
		r[n].len = (end - from) * sizeof(struct kx_ioctl);
		n++;
		from = end;
	}
	return n;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void kx_store_prefault(const struct kx_store_range *r, size_t n)
{
	static int unsupported;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < n && !__atomic_load_n(&unsupported, __ATOMIC_RELAXED); i++) {
		/* Whole pages inside the range: its neighbours' bytes are not ours. */
		uintptr_t a = ((uintptr_t)r[i].p + pg - 1) & ~(uintptr_t)(pg - 1);
		uintptr_t b = ((uintptr_t)r[i].p + r[i].len) & ~(uintptr_t)(pg - 1);

		/* Faulting in keeps the bytes: safe while another thread writes there. */
		if (b > a && madvise((void *)a, b - a, MADV_POPULATE_WRITE) && errno == EINVAL)
			__atomic_store_n(&unsupported, 1, __ATOMIC_RELAXED);
	}
}

/* Room for one more tid in the comm map, charged to the limit. */
static int comm_reserve(struct kx_store *s)
{
	size_t grow = kx_hmap_grow_bytes(&s->comm), old = s->comm.cap * sizeof(struct kx_hslot);

	if (!grow)
		return 0;
	/* Old and new tables coexist while rehashing. */
	if (charge(s, grow))
		return -1;
	if (kx_hmap_reserve(&s->comm)) {
		s->bytes -= grow;
		return -1;
	}
	s->bytes -= old;
	return 0;
}

int kx_store_add_task(struct kx_store *s, const struct kx_task *t)
{
	uint32_t *latest = kx_hmap_get(&s->comm, t->tid);
	struct kx_task *dst;

	if (s->ntask >= UINT32_MAX - 1)
		goto refuse;
	if (!latest && comm_reserve(s))
		goto refuse;
	if (s->ntask == s->task_chunks * TASK_PER_CHUNK &&
	    !chunk_new(s, (void ***)&s->task, &s->task_dir, &s->task_chunks,
	               TASK_PER_CHUNK * sizeof(struct kx_task)))
		goto refuse;

	dst = &s->task[s->ntask / TASK_PER_CHUNK][s->ntask % TASK_PER_CHUNK];
	*dst = *t;
	dst->comm[KX_COMM_LEN - 1] = '\0';
	dst->cmd[KX_CMD_LEN - 1] = '\0';
	/* Arrival order is the ring buffer's order: the last event wins. The
	 * add allocates nothing: comm_reserve made room. */
	if (latest)
		*latest = (uint32_t)s->ntask;
	else
		kx_hmap_add(&s->comm, t->tid, (uint32_t)s->ntask);
	s->ntask++;
	return 0;
refuse:
	s->not_stored++;
	return -1;
}

int kx_store_add_job(struct kx_store *s, const struct kx_job *j)
{
	struct kx_job *dst;

	if (s->njob == s->job_chunks * JOB_PER_CHUNK &&
	    !chunk_new(s, (void ***)&s->job, &s->job_dir, &s->job_chunks,
	               JOB_PER_CHUNK * sizeof(struct kx_job))) {
		s->not_stored++;
		return -1;
	}
	dst = &s->job[s->njob / JOB_PER_CHUNK][s->njob % JOB_PER_CHUNK];
	*dst = *j;
	/* Readers treat ring as a C string. */
	dst->ring[sizeof(dst->ring) - 1] = '\0';
	s->njob++;
	return 0;
}

size_t kx_store_ioctl_count(const struct kx_store *s)
{
	return s->nioc;
}

size_t kx_store_task_count(const struct kx_store *s)
{
	return s->ntask;
}

const struct kx_ioctl *kx_store_ioctl(const struct kx_store *s, size_t i)
{
	if (i >= s->nioc)
		return NULL;
	return &s->ioc[i / IOC_PER_CHUNK][i % IOC_PER_CHUNK];
}

const struct kx_ioctl *kx_store_ioctl_run(const struct kx_store *s, size_t i, size_t *n)
{
	size_t left = IOC_PER_CHUNK - i % IOC_PER_CHUNK;

	if (i >= s->nioc) {
		*n = 0;
		return NULL;
	}
	*n = s->nioc - i < left ? s->nioc - i : left;
	return &s->ioc[i / IOC_PER_CHUNK][i % IOC_PER_CHUNK];
}

const struct kx_task *kx_store_task(const struct kx_store *s, size_t i)
{
	if (i >= s->ntask)
		return NULL;
	return &s->task[i / TASK_PER_CHUNK][i % TASK_PER_CHUNK];
}

size_t kx_store_job_count(const struct kx_store *s)
{
	return s->njob;
}

const struct kx_job *kx_store_job(const struct kx_store *s, size_t i)
{
	if (i >= s->njob)
		return NULL;
	return &s->job[i / JOB_PER_CHUNK][i % JOB_PER_CHUNK];
}

const uint8_t *kx_store_arg(const struct kx_store *s, const struct kx_ioctl *e)
{
	size_t len = (size_t)e->arg_in_len + e->arg_out_len;
	size_t c, pos;

	if (e->arg_off == KX_NO_ARG || !len)
		return NULL;
	c = e->arg_off / ARENA_CHUNK;
	pos = e->arg_off % ARENA_CHUNK;
	if (c >= s->arena_chunks || pos + len > ARENA_CHUNK)
		return NULL;
	return s->arena[c] + pos;
}

uint64_t kx_store_not_stored(const struct kx_store *s)
{
	return s->not_stored;
}

size_t kx_store_bytes(const struct kx_store *s)
{
	return s->bytes;
}

size_t kx_store_limit(const struct kx_store *s)
{
	return s->limit;
}

const char *kx_store_comm(const struct kx_store *s, uint32_t tid)
{
	const uint32_t *latest = kx_hmap_get(&s->comm, tid);

	return latest ? kx_store_task(s, *latest)->comm : NULL;
}

const char *kx_store_cmd(const struct kx_store *s, uint32_t pid)
{
	const uint32_t *main_latest = kx_hmap_get(&s->comm, pid);

	/* The recorder reads the line onto the first record of a process and
	 * onto its execs, which are its main thread's: when that thread's
	 * latest record has one, no later record does. */
	if (main_latest && kx_store_task(s, *main_latest)->cmd[0])
		return kx_store_task(s, *main_latest)->cmd;
	/* Else a backward scan (task records are a handful per thread). */
	for (size_t i = s->ntask; i-- > 0;) {
		const struct kx_task *t = kx_store_task(s, i);

		if (t->pid == pid && t->cmd[0])
			return t->cmd;
	}
	return NULL;
}

struct kx_samples *kx_store_samples(const struct kx_store *s)
{
	return s->lent ? s->lent : s->samples;
}

void kx_store_borrow_samples(struct kx_store *s, struct kx_samples *t)
{
	s->lent = t;
}

int kx_store_add_ctr(struct kx_store *s, const struct kx_ctr_ev *e)
{
	if (!s->samples) {
		s->not_stored++;
		return -1;
	}
	return kx_samples_add_ctr(s->samples, e);
}

int kx_store_add_drm(struct kx_store *s, const struct kx_drm_ev *e)
{
	size_t cap = s->drm_cap;

	if (s->ndrm == cap && charge(s, (cap ? cap : 16) * sizeof(*e))) {
		s->not_stored++;
		return -1;
	}
	if (kx_grow((void **)&s->drm, &s->drm_cap, s->ndrm, sizeof(*e))) {
		s->not_stored++;
		return -1;
	}
	s->drm[s->ndrm++] = *e;
	return 0;
}

const struct kx_drm_ev *kx_store_drm(const struct kx_store *s, size_t *n)
{
	*n = s->ndrm;
	return s->drm;
}

const struct kx_samples *kx_store_ctrs(const struct kx_store *s)
{
	return s->samples;
}

int kx_store_add_sample(struct kx_store *s, const struct kx_sample *smp)
{
	if (s->lent || !s->samples) {
		s->not_stored++;
		return -1;
	}
	return kx_samples_add(s->samples, smp);
}

/* ---- annotation events and their strings ---- */

/* The id (>= 1) of str, interned when new (NULL and "": 0); UINT32_MAX when refused. */
static uint32_t str_id(struct kx_store *s, const char *str)
{
	size_t len = str ? strnlen(str, KX_ANN_NAME_MAX - 1) : 0;
	long id;

	if (!len)
		return 0;
	s->strs.charge = charge_samples; /* the strings' budget: the store's limit */
	s->strs.charge_ctx = s;
	id = s->strs.n >= UINT32_MAX - 2 ? kx_intern_find(&s->strs, str, len)
	                                 : kx_intern_add(&s->strs, str, len);
	return id < 0 ? UINT32_MAX : (uint32_t)id + 1;
}

uint32_t kx_store_ann_intern(struct kx_store *s, const char *str)
{
	return str_id(s, str);
}

int kx_store_add_ann(struct kx_store *s, const struct kx_ann *a, const char *name, const char *cat)
{
	uint32_t nid = 0, cid = 0;
	struct kx_ann *dst;

	if (kx_ann_named(a->what)) {
		nid = str_id(s, name);
		cid = str_id(s, cat);
		if (nid == UINT32_MAX || cid == UINT32_MAX)
			goto refuse;
	}
	if (s->nann == s->ann_chunks * ANN_PER_CHUNK &&
	    !chunk_new(s, (void ***)&s->ann, &s->ann_dir, &s->ann_chunks,
	               ANN_PER_CHUNK * sizeof(struct kx_ann)))
		goto refuse;
	dst = &s->ann[s->nann / ANN_PER_CHUNK][s->nann % ANN_PER_CHUNK];
	*dst = *a;
	dst->name = nid;
	dst->cat = cid;
	dst->pad = 0;
	s->nann++;
	return 0;
refuse:
	s->not_stored++;
	return -1;
}

size_t kx_store_ann_count(const struct kx_store *s)
{
	return s->nann;
}

const struct kx_ann *kx_store_ann(const struct kx_store *s, size_t i)
{
	if (i >= s->nann)
		return NULL;
	return &s->ann[i / ANN_PER_CHUNK][i % ANN_PER_CHUNK];
}

const char *kx_store_ann_str(const struct kx_store *s, uint32_t id)
{
	return id && id <= s->strs.n ? kx_intern_str(&s->strs, id - 1) : "";
}

size_t kx_store_ann_strings(const struct kx_store *s)
{
	return s->strs.n;
}
