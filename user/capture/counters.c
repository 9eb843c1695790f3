/* Perf counters inside traced ioctls (see counters.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/counters.h"

struct slot {
	const struct kx_counter_def *def;
	int *fd; /* per possible CPU, -1 when none (offline, or counted at sched_switch) */
};

struct kx_counters {
	int ncpu;
	uint32_t n;
	struct slot s[KX_MAX_COUNTERS];
};

int kx_counters_parse(const char *list, struct kx_counter_list *out, char *err, size_t len)
{
	char name[64];

	memset(out, 0, sizeof(*out));
	for (const char *p = list;;) {
		size_t k = strcspn(p, ",");
		const struct kx_counter_def *d;

		if (k == 0 || k >= sizeof(name)) {
			snprintf(err, len, "--counters: an empty or overlong name in '%s'", list);
			return -1;
		}
		memcpy(name, p, k);
		name[k] = 0;
		d = kx_counter_find(name);
		if (!d) {
			snprintf(err, len, "--counters: unknown counter '%s' (known: %s)", name,
			         kx_counter_names());
			return -1;
		}
		for (int i = 0; i < out->n; i++)
			if (out->c[i] == d) {
				snprintf(err, len, "--counters: '%s' is given twice", name);
				return -1;
			}
		if (out->n == KX_MAX_COUNTERS) {
			snprintf(err, len, "--counters: at most %d counters at once",
			         KX_MAX_COUNTERS);
			return -1;
		}
		out->c[out->n++] = d;
		if (!p[k])
			return 0;
		p += k + 1;
	}
}

void kx_counters_format(const struct kx_counter_list *l, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = 0;
	for (int i = 0; i < l->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "", l->c[i]->name);
}

int kx_counter_is_hw(const struct kx_counter_def *d)
{
	return d->type != PERF_TYPE_SOFTWARE && !d->at_switch;
}

static long perf_open(struct perf_event_attr *a, int cpu)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void close_slot(struct slot *s, int ncpu)
{
	for (int i = 0; s->fd && i < ncpu; i++)
		if (s->fd[i] >= 0)
			close(s->fd[i]);
	free(s->fd);
	s->fd = NULL;
}

/* Opens d on every online CPU into s. 0, or the errno that refused it. */
static int open_slot(struct kx_counters *c, struct slot *s, const struct kx_counter_def *d)
{
	struct perf_event_attr a = {.type = d->type, .size = sizeof(a), .config = d->config};
	int opened = 0, err = 0;

	s->def = d;
	s->fd = malloc(sizeof(*s->fd) * (size_t)c->ncpu);
	if (!s->fd)
		return ENOMEM;
	for (int i = 0; i < c->ncpu; i++)
		s->fd[i] = -1;
	if (d->at_switch)
		return 0;
	for (int cpu = 0; cpu < c->ncpu && !err; cpu++) {
		long fd = perf_open(&a, cpu);

		if (fd >= 0) {
			s->fd[cpu] = (int)fd;
			opened++;
		} else if (errno != ENODEV) { /* ENODEV: an offline CPU */
			err = errno;
		}
	}
	if (!err && !opened)
		err = ENODEV;
	if (err)
		close_slot(s, c->ncpu);
	return err;
}

/* Notes a refused counter as a skipped hook, with what to do. */
static void skipped(struct kx_capinfo *ci, const struct kx_counter_def *d, int err)
{
	struct kx_hook *h;
	char name[48];

	snprintf(name, sizeof(name), "counter:%s", d->name);
	h = kx_capinfo_hook(ci, name, "perf_event", KX_HOOK_SKIPPED);
	if (!h)
		return;
	if (d->type == PERF_TYPE_HARDWARE && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV))
		snprintf(h->why, sizeof(h->why), "no hardware counters here (%s)", strerror(err));
	else if (err == EACCES || err == EPERM)
		snprintf(h->why, sizeof(h->why),
		         "not allowed (%s): needs CAP_PERFMON or kernel.perf_event_paranoid <= 0",
		         strerror(err));
	else
		snprintf(h->why, sizeof(h->why), "cannot open it: %s", strerror(err));
}

static void attached(struct kx_capinfo *ci, const struct kx_counter_def *d)
{
	char name[48];

	snprintf(name, sizeof(name), "counter:%s", d->name);
	kx_capinfo_hook(ci, name, d->at_switch ? "sched_switch" : "perf_event", KX_HOOK_ATTACHED);
}

/* ci's counter names: the kept ones, in slot order. */
static void names(const struct kx_counters *c, struct kx_capinfo *ci)
{
	size_t at = 0;

	ci->counters.names[0] = 0;
	for (uint32_t i = 0; i < c->n && at < sizeof(ci->counters.names); i++)
		at += (size_t)snprintf(ci->counters.names + at, sizeof(ci->counters.names) - at,
		                       "%s%s", i ? "," : "", c->s[i].def->name);
}

/* Notes a counter this session may not have as a skipped hook. */
static void refused(struct kx_capinfo *ci, const struct kx_counter_def *d, const char *why)
{
	struct kx_hook *h;
	char name[48];

	snprintf(name, sizeof(name), "counter:%s", d->name);
	h = kx_capinfo_hook(ci, name, "perf_event", KX_HOOK_SKIPPED);
	if (h)
		snprintf(h->why, sizeof(h->why), "%s", why);
}

struct kx_counters *kx_counters_open(const struct kx_counter_list *want, const char *no_hw_why,
                                     struct kx_capinfo *ci)
{
	struct kx_counters *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ncpu = libbpf_num_possible_cpus();
	if (c->ncpu <= 0)
		c->ncpu = 1;
	for (int i = 0; i < want->n; i++) {
		int err;

		if (no_hw_why && kx_counter_is_hw(want->c[i])) {
			refused(ci, want->c[i], no_hw_why);
			continue;
		}
		err = open_slot(c, &c->s[c->n], want->c[i]);

		if (err == ENOMEM) {
			kx_counters_close(c);
			return NULL;
		}
		if (err) {
			skipped(ci, want->c[i], err);
			continue;
		}
		attached(ci, want->c[i]);
		c->n++;
	}
	names(c, ci);
	return c;
}

uint32_t kx_counters_nslots(const struct kx_counters *c)
{
	return c ? c->n : 0;
}

uint32_t kx_counters_switch_slot(const struct kx_counters *c)
{
	for (uint32_t i = 0; c && i < c->n; i++)
		if (c->s[i].def->at_switch)
			return i;
	return KX_MAX_COUNTERS;
}

int kx_counters_attach(struct kx_counters *c, const int arrays[KX_MAX_COUNTERS], char *err,
                       size_t len)
{
	for (uint32_t i = 0; c && i < c->n; i++)
		for (int cpu = 0; cpu < c->ncpu; cpu++) {
			uint32_t key = (uint32_t)cpu;

			if (c->s[i].fd[cpu] < 0)
				continue;
			if (bpf_map_update_elem(arrays[i], &key, &c->s[i].fd[cpu], BPF_ANY)) {
				snprintf(err, len,
				         "cannot give counter %s of CPU %d to the program: %s",
				         c->s[i].def->name, cpu, strerror(errno));
				return -1;
			}
		}
	return 0;
}

void kx_counters_close(struct kx_counters *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < KX_MAX_COUNTERS; i++)
		close_slot(&c->s[i], c->ncpu);
	free(c);
}
