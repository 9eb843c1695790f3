/*
 * util/safepath and util/printable: a privileged process's socket directory
 * is refused when another user owns or can write any directory on its path
 * or when a component is a symbolic link; the mode and group of a file are
 * set without following a link put at its name; another process's text is
 * printed with control characters escaped.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kxtest.h"
#include "util/printable.h"
#include "util/safepath.h"

static char root[128]; /* a fresh root-owned 0755 directory per case */

static void fresh(void)
{
	snprintf(root, sizeof(root), "/tmp/kxtest-safepath-XXXXXX");
	if (!mkdtemp(root))
		root[0] = 0;
	else
		chmod(root, 0755);
}

static void gone(void)
{
	char cmd[sizeof(root) + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
}

static const char *at(char *buf, size_t n, const char *rel)
{
	snprintf(buf, n, "%s/%s", root, rel);
	return buf;
}

static void trusted_rule(void)
{
	struct stat st = {.st_mode = S_IFDIR | 0755, .st_uid = 0};

	CHECK(kx_safe_dir_trusted(&st, 0));
	st.st_uid = 1000;
	CHECK(!kx_safe_dir_trusted(&st, 0));
	CHECK(kx_safe_dir_trusted(&st, 1000)); /* the daemon's own uid */
	st.st_uid = 0;
	st.st_mode = S_IFDIR | 0775;
	CHECK(!kx_safe_dir_trusted(&st, 0));
	st.st_mode = S_IFDIR | 0757;
	CHECK(!kx_safe_dir_trusted(&st, 0));
	st.st_mode = S_IFDIR | 01777; /* sticky, as /tmp */
	CHECK(kx_safe_dir_trusted(&st, 0));
	st.st_mode = S_IFLNK | 0777;
	CHECK(!kx_safe_dir_trusted(&st, 0));
}

static void dir_open_checks(void)
{
	char p[256], q[256], err[512];
	int fd;

	if (geteuid() != 0)
		SKIP("needs root (chown)");
	fresh();
	CHECK(root[0]);
	/* A missing last directory is created, and usable. */
	fd = kx_safe_dir_open(at(p, sizeof(p), "run"), 0755, err, sizeof(err));
	CHECK(fd >= 0);
	close(fd);
	/* Its parent is not: only the last component is made. */
	CHECK(kx_safe_dir_open(at(p, sizeof(p), "a/b"), 0755, err, sizeof(err)) < 0);
	/* '..' is refused, even where it would lead back to a good directory. */
	CHECK(kx_safe_dir_open(at(p, sizeof(p), "run/../run"), 0, err, sizeof(err)) < 0);
	CHECK(strstr(err, "'..' is not allowed in this path"));
	/* Another user's directory, also higher up. */
	CHECK(mkdir(at(p, sizeof(p), "user"), 0755) == 0 && chown(p, 65534, 65534) == 0);
	CHECK(mkdir(at(p, sizeof(p), "user/sub"), 0755) == 0);
	CHECK(kx_safe_dir_open(p, 0, err, sizeof(err)) < 0);
	CHECK(strstr(err, "owned by uid 65534"));
	/* Writable by others without the sticky bit. */
	CHECK(mkdir(at(p, sizeof(p), "open"), 0755) == 0 && chmod(p, 0777) == 0);
	CHECK(kx_safe_dir_open(p, 0, err, sizeof(err)) < 0);
	CHECK(strstr(err, "writable by group or others"));
	/* A symbolic link to a directory, even root's own. */
	CHECK(symlink(at(q, sizeof(q), "run"), at(p, sizeof(p), "link")) == 0);
	CHECK(kx_safe_dir_open(p, 0755, err, sizeof(err)) < 0);
	CHECK(strstr(err, "is a symbolic link"));
	/* A relative path is checked from / too. */
	CHECK(chdir(root) == 0);
	fd = kx_safe_dir_open("run", 0, err, sizeof(err));
	CHECK(fd >= 0);
	close(fd);
	CHECK(kx_safe_dir_open("user/sub", 0, err, sizeof(err)) < 0);
	CHECK(chdir("/") == 0);
	gone();
}

static void chmod_follows_no_link(void)
{
	char p[256], q[256], err[512];
	struct stat st;
	int dfd;

	fresh();
	CHECK(root[0]);
	/* A root-only file, and a link to it where the socket would be. */
	CHECK(close(open(at(p, sizeof(p), "secret"), O_CREAT | O_WRONLY, 0600)) == 0);
	CHECK(chmod(p, 0600) == 0);
	CHECK(symlink(p, at(q, sizeof(q), "kxprof.sock")) == 0);
	dfd = kx_safe_dir_open(root, 0, err, sizeof(err));
	CHECK(dfd >= 0);
	CHECK(kx_safe_chmod_at(dfd, "kxprof.sock", 0666, -1) != 0);
	CHECK(errno == ELOOP);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
	/* A plain file at the name gets its mode. */
	CHECK(close(open(at(p, sizeof(p), "plain"), O_CREAT | O_WRONLY, 0600)) == 0);
	CHECK(kx_safe_chmod_at(dfd, "plain", 0644, (long)getegid()) == 0);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0644);
	close(dfd);
	gone();
}

static void printable_escapes(void)
{
	char out[64];
	static const char in[] = "\x1b[2Jhi\n\x7f\xc2\x9b";

	CHECK_STR(kx_printable(out, sizeof(out), in, sizeof(in) - 1),
	          "\\x1b[2Jhi\\x0a\\x7f\\xc2\\x9b");
	CHECK_STR(kx_printable(out, sizeof(out), "plain text", 64), "plain text");
	/* Cut without splitting an escape. */
	CHECK_STR(kx_printable(out, 7, "ab\x1b\x1b", 4), "ab\\x1b");
	CHECK_STR(kx_printable(out, 6, "ab\x1b\x1b", 4), "ab");
}

int main(void)
{
	RUN(trusted_rule);
	RUN(dir_open_checks);
	RUN(chmod_follows_no_link);
	RUN(printable_escapes);
	KXT_EXIT();
}
