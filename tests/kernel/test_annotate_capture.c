/*
 * Annotation capture against the real kernel (root only, else skipped):
 * tests/workloads/annotate_workload calls libkxprof_annotate.so from a copy
 * at another path (LD_LIBRARY_PATH), a dlopen'ed copy and a copy stripped of
 * its probe notes; the loader finds the copies in /proc/PID/maps (the
 * dlopen'ed ones on a rescan), attaches by file, and the records must hold
 * exactly what the workload did: nested thread ranges paired with their
 * begin times, marks at their depth, cross-thread ranges ended on another
 * thread, unbalanced pops and too deep nests counted, nothing from an
 * untraced process. The Python module and the NVTX injection go through
 * the same capture.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/annotate.h"
#include "kxtest.h"

#define T_THREADS 4
#define T_ITERS   20
#define T_SLEEP   2000 /* us */
#define T_XRANGES 10
#define T_UNBAL   3
#define T_DEPTH   40

static char bdir[PATH_MAX]; /* build dir: the parent of this test's dir */
static char tmpdir[128];

static struct kx_ann_rec *recs;
static size_t nrecs, recs_cap;

static int on_rec(void *ctx, const struct kx_ann_rec *r, size_t size)
{
	(void)ctx;
	if (nrecs == recs_cap) {
		size_t cap = recs_cap ? recs_cap * 2 : 1024;
		struct kx_ann_rec *n = realloc(recs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		recs = n;
		recs_cap = cap;
	}
	memset(&recs[nrecs], 0, sizeof(*recs));
	memcpy(&recs[nrecs++], r, size < sizeof(*r) ? size : sizeof(*r));
	return 0;
}

static void drain(struct kx_annot *a)
{
	int quiet = 0;

	while (quiet < 2)
		quiet = kx_annot_poll(a, 100, on_rec, NULL) > 0 ? 0 : quiet + 1;
}

static size_t count(pid_t pid, int what, const char *name, int depth)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].pid == (uint32_t)pid && recs[i].what == what &&
		     (!name || strcmp(recs[i].name, name) == 0) &&
		     (depth < 0 || recs[i].depth == depth);
	return n;
}

static size_t count_pid(pid_t pid)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].pid == (uint32_t)pid;
	return n;
}

/* ---- child processes ---- */

struct child {
	pid_t pid;
	int out; /* its stdout */
};

/* Children a failed check may leave stopped: killed after each case. */
static pid_t spawned[8];
static int nspawned;

static void reap_spawned(void)
{
	for (int i = 0; i < nspawned; i++)
		if (kill(spawned[i], SIGKILL) == 0)
			waitpid(spawned[i], NULL, 0);
	nspawned = 0;
}

static int spawn(struct child *c, char *const argv[], const char *env_name, const char *env_val)
{
	int p[2];

	if (pipe(p))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid > 0 && nspawned < (int)(sizeof(spawned) / sizeof(spawned[0])))
		spawned[nspawned++] = c->pid;
	if (c->pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (env_name)
			setenv(env_name, env_val, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	c->out = p[0];
	return 0;
}

static int wait_stopped(pid_t pid)
{
	int st;

	return waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st) ? 0 : -1;
}

/* Exit status (-1: killed or lost); its stdout into out. */
static int finish(struct child *c, char *out, size_t len)
{
	ssize_t n, got = 0;
	int st;

	while (got + 1 < (ssize_t)len && (n = read(c->out, out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(c->out);
	if (waitpid(c->pid, &st, 0) != c->pid)
		return -1;
	for (int i = 0; i < nspawned; i++) /* reaped: its pid may be reused */
		if (spawned[i] == c->pid)
			spawned[i] = spawned[--nspawned];
	if (!WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755), rc = 0;
	ssize_t n;

	if (in < 0 || out < 0)
		rc = -1;
	while (!rc && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

static const struct kx_annot_copy *copy_matching(struct kx_annot *a, const char *part)
{
	int n;
	const struct kx_annot_copy *c = kx_annot_copies(a, &n);

	for (int i = 0; i < n; i++)
		if (strstr(c[i].path, part))
			return &c[i];
	return NULL;
}

static struct kx_annot *open_for(pid_t pid)
{
	struct kx_annot_opts o = {.pids = &pid, .npids = 1};
	char err[256];
	struct kx_annot *a = kx_annot_open(&o, err, sizeof(err));

	if (!a)
		printf("# %s\n", err);
	return a;
}

/* ---- checks on the records ---- */

static const struct kx_ann_rec *push_of(const struct kx_ann_rec *pop)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].what == KX_ANN_PUSH && recs[i].tid == pop->tid &&
		    recs[i].depth == pop->depth && recs[i].ts == pop->begin)
			return &recs[i];
	return NULL;
}

/* Every POP of pid pairs with a PUSH; inner ranges lie inside an outer one
 * of their thread and last at least the sleep. Pairs of `prefix` names. */
static int check_pairs(pid_t pid, const char *prefix, size_t *pairs, char *why, size_t len)
{
	char inner[32], outer[32];

	snprintf(inner, sizeof(inner), "%sinner", prefix);
	snprintf(outer, sizeof(outer), "%souter", prefix);
	*pairs = 0;
	for (size_t i = 0; i < nrecs; i++) {
		const struct kx_ann_rec *p = &recs[i], *push;
		int inside = 0;

		if (p->pid != (uint32_t)pid || p->what != KX_ANN_POP)
			continue;
		push = push_of(p);
		if (!push)
			return snprintf(why, len, "pop at %llu (tid %u depth %u) has no push",
			                p->ts, p->tid, p->depth);
		if (strcmp(push->name, inner) != 0)
			continue;
		if (p->ts - p->begin < T_SLEEP * 1000ULL)
			return snprintf(why, len, "inner range of %llu ns < the sleep",
			                p->ts - p->begin);
		for (size_t j = 0; j < nrecs; j++)
			inside |= recs[j].what == KX_ANN_POP && recs[j].tid == p->tid &&
			          recs[j].depth == 1 && recs[j].begin <= p->begin &&
			          recs[j].ts >= p->ts && push_of(&recs[j]) &&
			          strcmp(push_of(&recs[j])->name, outer) == 0;
		if (!inside)
			return snprintf(why, len, "inner range at %llu not inside an outer one",
			                p->begin);
		(*pairs)++;
	}
	return 0;
}

/* START/END: ids distinct and non-zero, each END after its START on another thread. */
static int check_xranges(pid_t pid, const char *name, size_t *ended, char *why, size_t len)
{
	*ended = 0;
	for (size_t i = 0; i < nrecs; i++) {
		const struct kx_ann_rec *e = &recs[i], *s = NULL;

		if (e->pid != (uint32_t)pid)
			continue;
		if (e->what == KX_ANN_START)
			for (size_t j = i + 1; j < nrecs; j++)
				if (recs[j].what == KX_ANN_START && recs[j].id == e->id)
					return snprintf(why, len, "id %llu started twice", e->id);
		if (e->what == KX_ANN_START && !e->id)
			return snprintf(why, len, "a range id is 0");
		if (e->what != KX_ANN_END)
			continue;
		for (size_t j = 0; j < nrecs; j++)
			if (recs[j].what == KX_ANN_START && recs[j].id == e->id)
				s = &recs[j];
		if (!s || s->ts != e->begin || s->tid == e->tid || strcmp(s->name, name) != 0)
			return snprintf(why, len, "end of id %llu: no matching start elsewhere",
			                e->id);
		if (e->ts - e->begin < T_SLEEP * 1000ULL)
			return snprintf(why, len, "cross-thread range shorter than the sleep");
		(*ended)++;
	}
	return 0;
}

/* ---- cases ---- */

static char lib[PATH_MAX + 32], wl[PATH_MAX + 32];

static void test_copies_threads_xranges(void)
{
	char libdir[256], linked[300], vendored[300], stripped[300], cmd[PATH_MAX * 2], out[4096],
	        why[200] = "";
	char sl[16], ss[16], sx[16], su[16], sd[16], st[16];
	char *argv[] = {wl, "-t", st, "-n", sl,       "-s", ss,       "-x", sx,  "-u",
	                su, "-D", sd, "-l", vendored, "-l", stripped, "-S", NULL};
	char *argv_other[] = {wl, "-t", "1", "-n", "5", "-s", "10", NULL};
	const struct kx_annot_copy *cl, *cv, *cs;
	uint64_t stats[KX_ANN_STAT_MAX];
	struct child c, other;
	struct kx_annot *a;
	size_t pairs, ended, nt = (size_t)T_THREADS * T_ITERS;

	snprintf(st, sizeof(st), "%d", T_THREADS);
	snprintf(sl, sizeof(sl), "%d", T_ITERS);
	snprintf(ss, sizeof(ss), "%d", T_SLEEP);
	snprintf(sx, sizeof(sx), "%d", T_XRANGES);
	snprintf(su, sizeof(su), "%d", T_UNBAL);
	snprintf(sd, sizeof(sd), "%d", T_DEPTH);
	snprintf(libdir, sizeof(libdir), "%s/lib", tmpdir);
	snprintf(linked, sizeof(linked), "%s/libkxprof_annotate.so", libdir);
	snprintf(vendored, sizeof(vendored), "%s/libvendored_annotations.so", tmpdir);
	snprintf(stripped, sizeof(stripped), "%s/libstripped.so", tmpdir);
	CHECK(mkdir(libdir, 0755) == 0);
	CHECK(copy_file(lib, linked) == 0);
	CHECK(copy_file(lib, vendored) == 0);
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section=.note.stapsdt %s %s", lib, stripped);
	CHECK(system(cmd) == 0);

	nrecs = 0;
	CHECK(spawn(&c, argv, "LD_LIBRARY_PATH", libdir) == 0);
	CHECK(wait_stopped(c.pid) == 0);
	a = open_for(c.pid);
	if (!a) {
		kill(c.pid, SIGKILL);
		CHECK(a);
	}
	CHECK(kx_annot_scan_pid(a, c.pid) == 1);
	cl = copy_matching(a, linked);
	CHECK(cl && cl->found == 0x1f && cl->attached == 0x1f && cl->pid == c.pid);
	/* The same file again: attached once per process; never for every
	 * process in a capture of a pid set. */
	CHECK(kx_annot_attach_path(a, linked, c.pid) == 0);
	CHECK(kx_annot_attach_path(a, linked, -1) == -EINVAL);

	/* An untraced process calling the same probes: filtered out. */
	CHECK(spawn(&other, argv_other, "LD_LIBRARY_PATH", libdir) == 0);
	CHECK(finish(&other, out, sizeof(out)) == 0);

	kill(c.pid, SIGCONT);
	CHECK(wait_stopped(c.pid) == 0); /* after the dlopens */
	CHECK(kx_annot_rescan(a) == 1);
	cv = copy_matching(a, vendored);
	cs = copy_matching(a, stripped);
	CHECK(cv && cv->attached == 0x1f && !cv->why[0]);
	CHECK(cs && cs->found == 0 && cs->attached == 0 && strstr(cs->why, "stripped"));
	printf("# stripped copy: %s\n", cs->why);
	kill(c.pid, SIGCONT);
	CHECK(finish(&c, out, sizeof(out)) == 0);
	drain(a);
	CHECK(kx_annot_stats(a, stats) == 0);
	kx_annot_close(a);

	CHECK_EQ_U(count_pid(other.pid), 0);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "outer", 1), nt);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "inner", 2), nt);
	CHECK_EQ_U(count(c.pid, KX_ANN_MARK, "tick", 1), nt);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "deep", -1), KX_ANN_DEPTH);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "dl1/outer", 1), nt);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "dl1/inner", 2), nt);
	CHECK_EQ_U(count(c.pid, KX_ANN_MARK, "dl1/tick", 1), nt);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "dl2/outer", -1), 0); /* the stripped copy */
	CHECK_EQ_U(count(c.pid, KX_ANN_POP, NULL, -1), 4 * nt + KX_ANN_DEPTH);
	CHECK_EQ_U(count(c.pid, KX_ANN_START, "xrange", 0), T_XRANGES);
	CHECK_EQ_U(count(c.pid, KX_ANN_END, NULL, -1), T_XRANGES);
	CHECK(check_pairs(c.pid, "", &pairs, why, sizeof(why)) == 0 || !printf("# %s\n", why));
	CHECK_EQ_U(pairs, nt);
	CHECK(check_pairs(c.pid, "dl1/", &pairs, why, sizeof(why)) == 0 || !printf("# %s\n", why));
	CHECK_EQ_U(pairs, nt);
	CHECK(check_xranges(c.pid, "xrange", &ended, why, sizeof(why)) == 0 ||
	      !printf("# %s\n", why));
	CHECK_EQ_U(ended, T_XRANGES);
	CHECK_EQ_U(stats[KX_ANN_STAT_POP_NO_PUSH], T_UNBAL);
	CHECK_EQ_U(stats[KX_ANN_STAT_DEPTH_OVERFLOW], T_DEPTH - KX_ANN_DEPTH);
	CHECK_EQ_U(stats[KX_ANN_STAT_DROPPED], 0);
	CHECK_EQ_U(stats[KX_ANN_STAT_EMITTED], nrecs);
	CHECK_EQ_U(stats[KX_ANN_STAT_END_NO_START], 0);
}

/* A traced process that stops itself once the library is mapped: attach, go on. */
static struct kx_annot *trace_stopped(struct child *c)
{
	struct kx_annot *a;

	if (wait_stopped(c->pid) != 0)
		return NULL;
	a = open_for(c->pid);
	if (!a || kx_annot_scan_pid(a, c->pid) != 1) {
		printf("# no copy of the library found in process %d\n", (int)c->pid);
		kx_annot_close(a);
		kill(c->pid, SIGKILL);
		return NULL;
	}
	kill(c->pid, SIGCONT);
	return a;
}

static int has_rec(pid_t pid, int what, const char *name, const char *cat, int depth)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].pid == (uint32_t)pid && recs[i].what == what &&
		    strcmp(recs[i].name, name) == 0 && strcmp(recs[i].category, cat) == 0 &&
		    (depth < 0 || recs[i].depth == depth))
			return 1;
	return 0;
}

static void test_python_module(void)
{
	char py[PATH_MAX + 32], out[4096], why[200] = "";
	char *argv[] = {py, "--workload", "25", NULL};
	struct child c;
	struct kx_annot *a;
	size_t ended;

	snprintf(py, sizeof(py), "%s/tests/test_annotate_py", bdir);
	nrecs = 0;
	CHECK(spawn(&c, argv, NULL, NULL) == 0);
	a = trace_stopped(&c);
	CHECK(a);
	CHECK(finish(&c, out, sizeof(out)) == 0);
	drain(a);
	kx_annot_close(a);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "py/step", 1), 25);
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, "py/work", 2), 25);
	CHECK_EQ_U(count(c.pid, KX_ANN_MARK, "py/tick", 1), 25);
	CHECK_EQ_U(count(c.pid, KX_ANN_POP, NULL, -1), 50);
	CHECK(has_rec(c.pid, KX_ANN_PUSH, "py/step", "py", 1));
	CHECK(check_xranges(c.pid, "py/x", &ended, why, sizeof(why)) == 0 ||
	      !printf("# %s\n", why));
	CHECK_EQ_U(ended, 1);
}

static void test_nvtx_injection(void)
{
	char drv[PATH_MAX + 32], nvtx[PATH_MAX + 32], out[4096];
	char *argv[] = {drv, "-S", NULL};
	struct child c;
	struct kx_annot *a;

	snprintf(drv, sizeof(drv), "%s/tests/nvtx_driver", bdir);
	snprintf(nvtx, sizeof(nvtx), "%s/libkxprof_nvtx.so", bdir);
	nrecs = 0;
	CHECK(spawn(&c, argv, "NVTX_INJECTION64_PATH", nvtx) == 0);
	a = trace_stopped(&c);
	CHECK(a);
	CHECK(finish(&c, out, sizeof(out)) == 0);
	drain(a);
	kx_annot_close(a);
	/* The driver's sequence (tests/workloads/nvtx_driver.c), as kxprof records it. */
	CHECK(has_rec(c.pid, KX_ANN_MARK, "m1", "", 0));
	CHECK(has_rec(c.pid, KX_ANN_PUSH, "a", "", 1));
	CHECK(has_rec(c.pid, KX_ANN_PUSH, "b", "", 2));
	CHECK(has_rec(c.pid, KX_ANN_PUSH, "c\xc3\xa9", "", 3)); /* the W form, in UTF-8 */
	CHECK(has_rec(c.pid, KX_ANN_PUSH, "d", "dom1", 1));
	CHECK(has_rec(c.pid, KX_ANN_MARK, "reg", "dom1", 1)); /* a registered string */
	CHECK(has_rec(c.pid, KX_ANN_START, "x", "", -1));
	CHECK(has_rec(c.pid, KX_ANN_START, "y", "dom1", -1));
	CHECK(has_rec(c.pid, KX_ANN_PUSH, "c2", "", 1)); /* the second client */
	CHECK_EQ_U(count(c.pid, KX_ANN_PUSH, NULL, -1), 5);
	CHECK_EQ_U(count(c.pid, KX_ANN_POP, NULL, -1), 5);
	CHECK_EQ_U(count(c.pid, KX_ANN_END, NULL, -1), 2);
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	ssize_t n;

	(void)argc;
	(void)argv;
	if (geteuid() != 0) {
		printf("SKIP annotate_capture: not root (loads BPF programs)\n");
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	*strrchr(self, '/') = 0; /* .../build/tests */
	snprintf(wl, sizeof(wl), "%s/annotate_workload", self);
	*strrchr(self, '/') = 0; /* .../build */
	snprintf(bdir, sizeof(bdir), "%s", self);
	snprintf(lib, sizeof(lib), "%s/libkxprof_annotate.so", bdir);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kxtest-annot-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(test_copies_threads_xranges);
	reap_spawned();
	RUN(test_python_module);
	reap_spawned();
	RUN(test_nvtx_injection);
	reap_spawned();
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	KXT_EXIT();
}
