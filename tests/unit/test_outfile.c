/*
 * util/outfile, the one rule for every file kxprof writes: bytes go to a
 * temporary file beside the target and reach the target's name only at
 * commit; an abort, a failed commit or a caught signal leaves no temporary
 * file and the target as it was; NAME.old on request; empty paths, devices,
 * directories, fifos and outputs equal to an input (also through a symbolic
 * or hard link) are refused; new run folders are never existing ones and go
 * away, with the parents they created, when their outputs fail.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kxtest.h"
#include "util/outfile.h"

static char root[256]; /* a fresh directory per case */

static void fresh_root(void)
{
	static int n;
	char cmd[sizeof(root) + 16];

	if (root[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", root);
	}
	snprintf(root, sizeof(root), "/tmp/kxtest-outfile-%d-%d", (int)getpid(), n++);
	if (mkdir(root, 0700))
		printf("# mkdir %s: %s\n", root, strerror(errno));
}

/* root/name into buf. */
static const char *at(char *buf, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", root, name);
	return buf;
}

static int put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The file's text ("" when it cannot be read). */
static const char *get(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Entries of dir whose name ends in suffix. */
static int count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t m = strlen(suffix);
	int n = 0;

	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		n += l >= m && !strcmp(de->d_name + l - m, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

/* Entries of dir other than . and .. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static int write_text(struct kx_outfile *o, const char *text)
{
	return write(o->fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
}

static void new_file_appears_at_commit(void)
{
	struct kx_outfile o;
	char p[PATH_MAX], err[256];

	fresh_root();
	CHECK(kx_outfile_open(&o, at(p, "out.json"), 0, err, sizeof(err)) == 0);
	CHECK(!strncmp(o.tmp, p, strlen(p)) && strstr(o.tmp, ".tmp"));
	CHECK(access(o.tmp, F_OK) == 0);
	CHECK(write_text(&o, "new") == 0);
	CHECK(access(p, F_OK) != 0);
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == 0);
	CHECK_STR(get(p), "new");
	CHECK_EQ_U(count_suffix(root, ".tmp"), 0);
}

static void existing_file_replaced_whole(void)
{
	struct kx_outfile o;
	char p[PATH_MAX], err[256];

	fresh_root();
	CHECK(put(at(p, "out.json"), "old") == 0);
	CHECK(kx_outfile_open(&o, p, 0, err, sizeof(err)) == 0);
	CHECK(write_text(&o, "new") == 0);
	CHECK_STR(get(p), "old"); /* untouched until the commit */
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == 0);
	CHECK_STR(get(p), "new");
	CHECK_EQ_U(count_entries(root), 1); /* no .old without KX_OUT_KEEP_OLD */
}

static void keep_old_keeps_the_previous_file(void)
{
	struct kx_outfile o;
	char p[PATH_MAX], old[PATH_MAX], err[256];

	fresh_root();
	CHECK(put(at(p, "run.kxp"), "first") == 0);
	CHECK(kx_outfile_open(&o, p, KX_OUT_KEEP_OLD, err, sizeof(err)) == 0);
	CHECK(write_text(&o, "second") == 0);
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == 0);
	CHECK_STR(get(p), "second");
	CHECK_STR(get(at(old, "run.kxp.old")), "first");
	CHECK_EQ_U(count_entries(root), 2);
}

static void abort_leaves_the_target_as_it_was(void)
{
	struct kx_outfile o;
	char p[PATH_MAX], err[256];

	fresh_root();
	CHECK(put(at(p, "out.json"), "keep me") == 0);
	CHECK(kx_outfile_open(&o, p, KX_OUT_KEEP_OLD, err, sizeof(err)) == 0);
	CHECK(write_text(&o, "half") == 0);
	kx_outfile_abort(&o);
	CHECK_STR(get(p), "keep me");
	CHECK_EQ_U(count_entries(root), 1);
	kx_outfile_abort(&o); /* twice: harmless */
	CHECK_EQ_U(count_entries(root), 1);
}

/* Refused, with a message naming the path, and nothing created. */
static int refused(const char *path, unsigned int flags, const char *const *in, int n,
                   const char *says)
{
	struct kx_outfile o;
	char err[512];
	int rc = n ? kx_outfile_check(path, flags, in, n, err, sizeof(err))
	           : kx_outfile_open(&o, path, flags, err, sizeof(err));

	if (rc != -1 || !strstr(err, says)) {
		printf("# %s: rc %d, '%s'\n", path, rc, rc ? err : "");
		return 0;
	}
	return count_suffix(root, ".tmp") == 0;
}

static void refusals(void)
{
	char p[PATH_MAX], in[PATH_MAX], ln[PATH_MAX], hard[PATH_MAX];
	const char *inputs[2] = {NULL, in};

	fresh_root();
	CHECK(refused("", 0, NULL, 0, "empty output path"));
	CHECK(refused("/dev/null", 0, NULL, 0, "/dev/null is a device"));
	CHECK(refused(root, 0, NULL, 0, "is a directory"));
	CHECK(mkfifo(at(p, "fifo"), 0600) == 0);
	CHECK(refused(p, 0, NULL, 0, "is a fifo"));
	/* An input as the output: itself, a symbolic link to it, a hard link. */
	CHECK(put(at(in, "capture.kxp"), "data") == 0);
	CHECK(refused(in, 0, inputs, 2, "same file as the input"));
	CHECK(symlink(in, at(ln, "link.json")) == 0);
	CHECK(refused(ln, 0, inputs, 2, "same file as the input"));
	CHECK(link(in, at(hard, "hard.json")) == 0);
	CHECK(refused(hard, 0, inputs, 2, "same file as the input"));
	CHECK_STR(get(in), "data");
	/* Another file, or a new one, is fine. */
	CHECK(kx_outfile_check(at(p, "other.json"), 0, inputs, 2, ln, sizeof(ln)) == 0);
}

static void dash_is_stdout_only_when_asked(void)
{
	struct kx_outfile o;
	char err[256];
	struct stat a, b;

	fresh_root();
	CHECK(kx_outfile_open(&o, "-", KX_OUT_STDOUT, err, sizeof(err)) == 0);
	CHECK(o.to_stdout && !o.tmp[0]);
	CHECK(fstat(o.fd, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0);
	CHECK(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == 0);
	CHECK(fstat(STDOUT_FILENO, &b) == 0); /* stdout itself stays open */
}

static void symbolic_link_target_replaced(void)
{
	struct kx_outfile o;
	char p[PATH_MAX], ln[PATH_MAX], err[256];
	struct stat st;

	fresh_root();
	CHECK(put(at(p, "real.json"), "old") == 0);
	CHECK(symlink(p, at(ln, "link.json")) == 0);
	CHECK(kx_outfile_open(&o, ln, 0, err, sizeof(err)) == 0);
	CHECK(write_text(&o, "new") == 0);
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == 0);
	CHECK(lstat(ln, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK_STR(get(p), "new");
}

static void failed_commit_removes_the_temporary(void)
{
	struct kx_outfile o;
	char p[PATH_MAX], inner[PATH_MAX], err[256];

	fresh_root();
	CHECK(kx_outfile_open(&o, at(p, "out.json"), 0, err, sizeof(err)) == 0);
	CHECK(write_text(&o, "data") == 0);
	/* Meanwhile the name became a directory with something in it. */
	CHECK(mkdir(p, 0755) == 0);
	CHECK(put(at(inner, "out.json/x"), "x") == 0);
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == -1);
	CHECK(strstr(err, p) != NULL);
	CHECK_EQ_U(count_suffix(root, ".tmp"), 0);
	CHECK_STR(get(inner), "x");
}

static void unlink_live_removes_only_temporaries(void)
{
	struct kx_outfile a, b;
	char p[PATH_MAX], q[PATH_MAX], err[256];

	fresh_root();
	CHECK(put(at(p, "a.json"), "mine") == 0);
	CHECK(kx_outfile_open(&a, p, 0, err, sizeof(err)) == 0);
	CHECK(kx_outfile_open(&b, at(q, "b.json"), 0, err, sizeof(err)) == 0);
	CHECK_EQ_U(count_suffix(root, ".tmp"), 2);
	kx_outfile_unlink_live();
	CHECK_EQ_U(count_suffix(root, ".tmp"), 0);
	CHECK_STR(get(p), "mine");
	kx_outfile_abort(&a);
	kx_outfile_abort(&b);
	CHECK_EQ_U(count_entries(root), 1);
}

/* In a child: catch signals, open an output over an existing file and a run
 * folder under new parents, write, then take sig. */
static void die_mid_write(int sig, int hold)
{
	struct kx_outfile o;
	struct kx_outdir d;
	char p[PATH_MAX], parent[PATH_MAX], err[256];
	sigset_t old;

	if (kx_outfile_catch_signals() || kx_outfile_open(&o, at(p, "out.json"), 0, err, 256) ||
	    kx_outdir_make(&d, at(parent, "logdir/plugins/profile"), "run", err, 256) ||
	    write_text(&o, "partial"))
		_exit(3);
	if (hold) {
		kx_outfile_hold_signals(&old);
		raise(sig);
		/* Held: still alive here; the signal acts at the release. */
		if (put(at(p, "alive"), "yes"))
			_exit(4);
		kx_outfile_release_signals(&old);
		_exit(5);
	}
	raise(sig);
	_exit(6);
}

static void signal_leaves_nothing(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
	char p[PATH_MAX], q[PATH_MAX];

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int hold = (int)(i % 2), st = 0;
		pid_t pid;

		fresh_root();
		CHECK(put(at(p, "out.json"), "previous") == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			die_mid_write(sigs[i], hold);
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != sigs[i])
			printf("# signal %d: status 0x%x\n", sigs[i], st);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i]);
		CHECK_STR(get(p), "previous");
		CHECK_EQ_U(count_suffix(root, ".tmp"), 0);
		/* The run folder and the parents it made are gone. */
		CHECK(access(at(q, "logdir"), F_OK) != 0);
		CHECK_EQ_U(count_entries(root), 1 + hold);
		if (hold)
			CHECK_STR(get(at(q, "alive")), "yes");
	}
}

/* A child forked while an output and a run folder are being written (a
 * workload before its exec) that a signal kills with kxprof's handlers still
 * installed: the parent's temporary file and run folder stay. */
static void forked_child_signal_keeps_parent_files(void)
{
	struct kx_outfile o;
	struct kx_outdir d;
	char p[PATH_MAX], parent[PATH_MAX], err[256];
	int st = 0;
	pid_t pid;

	fresh_root();
	CHECK(kx_outfile_catch_signals() == 0);
	CHECK(kx_outfile_open(&o, at(p, "out.json"), 0, err, sizeof(err)) == 0);
	CHECK(kx_outdir_make(&d, at(parent, "logdir/plugins/profile"), "run", err, sizeof(err)) ==
	      0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		raise(SIGINT);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
	CHECK(access(o.tmp, F_OK) == 0);
	CHECK(access(d.path, F_OK) == 0);
	CHECK(write(o.fd, "new", 3) == 3);
	CHECK(kx_outfile_commit(&o, err, sizeof(err)) == 0);
	CHECK_STR(get(p), "new");
	kx_outdir_abort(&d);
	CHECK(access(at(p, "logdir"), F_OK) != 0);
	signal(SIGINT, SIG_DFL); /* and the other stops kxprof catches */
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
}

static void outdir_names_are_new(void)
{
	struct kx_outdir a, b, c;
	char parent[PATH_MAX], q[PATH_MAX], err[256];

	fresh_root();
	at(parent, "logdir/plugins/profile");
	CHECK(kx_outdir_make(&a, parent, "2026_01_02_03_04_05", err, sizeof(err)) == 0);
	CHECK_STR(a.path, at(q, "logdir/plugins/profile/2026_01_02_03_04_05"));
	CHECK_EQ_U(a.n, 4); /* logdir, plugins, profile and the run */
	kx_outdir_keep(&a);
	CHECK(kx_outdir_make(&b, parent, "2026_01_02_03_04_05", err, sizeof(err)) == 0);
	CHECK_STR(b.path, at(q, "logdir/plugins/profile/2026_01_02_03_04_05-2"));
	CHECK_EQ_U(b.n, 1);
	CHECK(kx_outdir_make(&c, parent, "2026_01_02_03_04_05", err, sizeof(err)) == 0);
	CHECK_STR(c.path, at(q, "logdir/plugins/profile/2026_01_02_03_04_05-3"));
	/* An abort removes its own run folder only. */
	kx_outdir_abort(&c);
	CHECK(access(c.path, F_OK) != 0);
	CHECK(access(b.path, F_OK) == 0 && access(a.path, F_OK) == 0);
	kx_outdir_keep(&b);
}

static void outdir_abort_keeps_what_it_did_not_make(void)
{
	struct kx_outdir d;
	char parent[PATH_MAX], q[PATH_MAX], err[256];

	fresh_root();
	/* Parents made by the abort's own make go, deepest first... */
	CHECK(kx_outdir_make(&d, at(parent, "a/b"), "run", err, sizeof(err)) == 0);
	kx_outdir_abort(&d);
	CHECK_EQ_U(count_entries(root), 0);
	/* ... but an existing directory stays, and so does one that is not empty. */
	CHECK(mkdir(at(q, "logdir"), 0755) == 0);
	CHECK(kx_outdir_make(&d, at(parent, "logdir/new"), "run", err, sizeof(err)) == 0);
	CHECK(put(at(q, "logdir/new/someone-else"), "x") == 0);
	kx_outdir_abort(&d);
	CHECK(access(at(q, "logdir/new/someone-else"), F_OK) == 0);
	CHECK(access(at(q, "logdir/new/run"), F_OK) != 0);
}

static void outdir_refusals(void)
{
	struct kx_outdir d;
	char p[PATH_MAX], err[256];

	fresh_root();
	CHECK(kx_outdir_check("", err, sizeof(err)) == -1 && strstr(err, "empty"));
	CHECK(put(at(p, "file"), "x") == 0);
	CHECK(kx_outdir_check(p, err, sizeof(err)) == -1 && strstr(err, "not a directory"));
	CHECK(kx_outdir_check("/dev/null", err, sizeof(err)) == -1 && strstr(err, "a device"));
	CHECK(kx_outdir_make(&d, "", "run", err, sizeof(err)) == -1);
	/* A file where a parent should be: refused, nothing left. */
	CHECK(kx_outdir_make(&d, at(p, "file/sub"), "run", err, sizeof(err)) == -1);
	CHECK(strstr(err, "cannot create") != NULL);
	CHECK_EQ_U(count_entries(root), 1);
	CHECK(kx_outdir_check(at(p, "new/dir"), err, sizeof(err)) == 0);
}

int main(void)
{
	RUN(new_file_appears_at_commit);
	RUN(existing_file_replaced_whole);
	RUN(keep_old_keeps_the_previous_file);
	RUN(abort_leaves_the_target_as_it_was);
	RUN(refusals);
	RUN(dash_is_stdout_only_when_asked);
	RUN(symbolic_link_target_replaced);
	RUN(failed_commit_removes_the_temporary);
	RUN(unlink_live_removes_only_temporaries);
	RUN(signal_leaves_nothing);
	RUN(forked_child_signal_keeps_parent_files);
	RUN(outdir_names_are_new);
	RUN(outdir_abort_keeps_what_it_did_not_make);
	RUN(outdir_refusals);
	fresh_root();
	rmdir(root);
	KXT_EXIT();
}
