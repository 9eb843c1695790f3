/*
 * Shared helpers for the kxprof test workloads: counted ioctl wrappers that
 * remember how often each named ioctl was issued and which errnos it returned,
 * a small JSON writer for those counts, clock helpers and option parsing.
 *
 * Every workload prints exactly one JSON object on stdout on success so that
 * tests can compare what a tracer saw against what was really issued.
 * Header-only: each workload is a single translation unit.
 */
#ifndef KXPROF_WORKLOAD_H
#define KXPROF_WORKLOAD_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WL_MAX_NAMES 32
#define WL_MAX_ERRNO 256

/* One named request: calls issued and failures by errno value. */
struct wl_counter {
	const char *name;
	unsigned long calls;
	unsigned long err[WL_MAX_ERRNO];
};

/* A set of counters, owned by one thread (no locking inside). */
struct wl_counts {
	int n;
	struct wl_counter c[WL_MAX_NAMES];
};

static const char *wl_prog = "workload";

static inline void wl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void wl_die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", wl_prog, msg);
	exit(1);
}

static inline struct wl_counter *wl_counter(struct wl_counts *wc, const char *name)
{
	int i;

	for (i = 0; i < wc->n; i++)
		if (wc->c[i].name == name || strcmp(wc->c[i].name, name) == 0)
			return &wc->c[i];
	if (wc->n == WL_MAX_NAMES)
		wl_die("internal: too many ioctl names");
	wc->c[wc->n].name = name;
	return &wc->c[wc->n++];
}

/*
 * The kvm device: /dev/kvm, or the node KXW_KVM names (a node of the same
 * device that a test made for an ordinary user's group, where /dev/kvm is
 * root's alone). Dies with the path and the reason when it cannot be opened.
 */
static inline int wl_open_kvm(void)
{
	const char *path = getenv("KXW_KVM");
	int fd;

	if (!path || !*path)
		path = "/dev/kvm";
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		wl_die("cannot open %s: %s", path, strerror(errno));
	return fd;
}

/* Record one issued request and its outcome (ret < 0 means it failed with err). */
static inline void wl_record(struct wl_counts *wc, const char *name, long ret, int err)
{
	struct wl_counter *c = wl_counter(wc, name);

	c->calls++;
	if (ret < 0)
		c->err[err >= 0 && err < WL_MAX_ERRNO ? err : 0]++;
}

/*
 * Issue one ioctl and count it under NAME. Returns the ioctl's result; errno
 * is preserved for the caller when it fails.
 */
static inline long wl_ioctl(struct wl_counts *wc, const char *name, int fd, unsigned long req,
                            unsigned long arg)
{
	long ret = ioctl(fd, req, arg);
	int err = errno;

	wl_record(wc, name, ret, err);
	errno = err;
	return ret;
}

/* Issue, count, and die with a clear message if it fails. */
static inline long wl_ioctl_ok(struct wl_counts *wc, const char *name, int fd, unsigned long req,
                               unsigned long arg)
{
	long ret = wl_ioctl(wc, name, fd, req, arg);

	if (ret < 0)
		wl_die("%s failed: %s", name, strerror(errno));
	return ret;
}

/* Add every counter of SRC into DST (by name). */
static inline void wl_counts_merge(struct wl_counts *dst, const struct wl_counts *src)
{
	int i, e;

	for (i = 0; i < src->n; i++) {
		struct wl_counter *d = wl_counter(dst, src->c[i].name);

		d->calls += src->c[i].calls;
		for (e = 0; e < WL_MAX_ERRNO; e++)
			d->err[e] += src->c[i].err[e];
	}
}

static inline const char *wl_errno_name(int err, char *buf, size_t len)
{
	const char *s = err ? strerrorname_np(err) : NULL;

	if (s)
		return s;
	snprintf(buf, len, "E%d", err);
	return buf;
}

/* Prints "ioctls":{...},"errors":{...} (errors holds only observed failures). */
static inline void wl_print_counts(FILE *f, const struct wl_counts *wc)
{
	char buf[16];
	int i, e, first;

	fputs("\"ioctls\":{", f);
	for (i = 0; i < wc->n; i++)
		fprintf(f, "%s\"%s\":%lu", i ? "," : "", wc->c[i].name, wc->c[i].calls);
	fputs("},\"errors\":{", f);
	first = 1;
	for (i = 0; i < wc->n; i++) {
		int any = 0;

		for (e = 0; e < WL_MAX_ERRNO; e++) {
			if (!wc->c[i].err[e])
				continue;
			if (!any)
				fprintf(f, "%s\"%s\":{", first ? "" : ",", wc->c[i].name);
			fprintf(f, "%s\"%s\":%lu", any ? "," : "",
			        wl_errno_name(e, buf, sizeof(buf)), wc->c[i].err[e]);
			any = 1;
			first = 0;
		}
		if (any)
			fputc('}', f);
	}
	fputc('}', f);
}

/* Prints S as a JSON string literal (quotes, backslashes and controls escaped). */
static inline void wl_print_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static inline uint64_t wl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Parses a non-negative decimal option value in [min, max] or dies. */
static inline unsigned long long wl_parse_num(const char *opt, const char *s,
                                              unsigned long long min, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-')
		wl_die("option %s: expected a number, got '%s'", opt, s ? s : "");
	v = strtoull(s, &end, 10);
	if (errno || *end)
		wl_die("option %s: expected a number, got '%s'", opt, s);
	if (v < min || v > max)
		wl_die("option %s: %llu is out of range [%llu, %llu]", opt, v, min, max);
	return v;
}

/* Seconds for option opt: a decimal in (0, max]; dies with a message otherwise. */
static inline double wl_parse_seconds(const char *opt, const char *s, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > max)
		wl_die("option %s: expected seconds in (0, %g], got '%s'", opt, max, s);
	return v;
}

/* Simple min/total/max of durations. */
struct wl_stats {
	uint64_t n, total, min, max;
};

static inline void wl_stats_add(struct wl_stats *s, uint64_t v)
{
	if (!s->n || v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	s->total += v;
	s->n++;
}

static inline void wl_stats_merge(struct wl_stats *d, const struct wl_stats *s)
{
	if (!s->n)
		return;
	if (!d->n || s->min < d->min)
		d->min = s->min;
	if (s->max > d->max)
		d->max = s->max;
	d->total += s->total;
	d->n += s->n;
}

static inline void wl_print_stats(FILE *f, const char *key, const struct wl_stats *s)
{
	fprintf(f, "\"%s\":{\"n\":%llu,\"min\":%llu,\"mean\":%llu,\"max\":%llu}", key,
	        (unsigned long long)s->n, (unsigned long long)s->min,
	        (unsigned long long)(s->n ? s->total / s->n : 0), (unsigned long long)s->max);
}

/* ---- fork mode: a child runs the workload too, its JSON under "children" ---- */

/* Forks; in the parent returns the child's pid with *rfd the read end of the
 * pipe the child writes its JSON to; in the child returns 0 with *wfd the
 * write end. Call before any fd or thread exists, so the child starts clean. */
static inline pid_t wl_fork_child(int *rfd, int *wfd)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		wl_die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		wl_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		*wfd = pfd[1];
		*rfd = -1;
	} else {
		close(pfd[1]);
		*rfd = pfd[0];
		*wfd = -1;
	}
	return pid;
}

/* Reads the child's JSON (without the trailing newline) and reaps it; dies
 * when the child failed or printed no JSON object. */
static inline char *wl_collect_child(pid_t pid, int rfd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	int status;
	ssize_t n;

	if (!buf)
		wl_die("out of memory");
	for (;;) {
		if (len + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				wl_die("out of memory");
			buf = nb;
		}
		n = read(rfd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			wl_die("reading the child's result failed: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(rfd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			wl_die("waitpid failed: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		wl_die("child workload %d failed (%s %d)", (int)pid,
		       WIFEXITED(status) ? "exit status" : "signal",
		       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	buf[len] = 0;
	if (!len || buf[0] != '{' || buf[len - 1] != '}')
		wl_die("child workload %d printed no JSON result", (int)pid);
	return buf;
}

#endif /* KXPROF_WORKLOAD_H */
