/* The process claim of the TensorFlow plugin: see tf_claim.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tf_claim.h"

static int claim_fd = -1; /* the bound socket: the claim, kept open */

/* The process's start time in clock ticks since boot (field 22 of /proc/self/stat), 0 if unknown.
 */
static unsigned long long start_ticks(void)
{
	unsigned long long t = 0;
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command name, which ends at the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
	                 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
	                 "%*d %*d %*d %llu",
	                 &t) != 1)
		return 0;
	return t;
}

int kx_tf_claim_process(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	socklen_t len;
	int fd;

	if (claim_fd >= 0)
		return 1;
	/* Abstract name: a leading NUL, gone with the socket's last fd. */
	len = (socklen_t)snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
	                          "kxprof-tf-plugin/%d/%llu", (int)getpid(), start_ticks());
	len += offsetof(struct sockaddr_un, sun_path) + 1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	if (bind(fd, (struct sockaddr *)&a, len) != 0) {
		int in_use = errno == EADDRINUSE;

		close(fd);
		return !in_use;
	}
	claim_fd = fd;
	return 1;
}
