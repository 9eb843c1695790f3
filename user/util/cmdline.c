#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/cmdline.h"

#define CMDLINE_READ 4096 /* bytes of the file read: far more than a label keeps */

/* Where argv[0]'s last path component starts (argv[0] ends at a NUL or n). */
static size_t prog_start(const char *raw, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i < n && raw[i]; i++)
		if (raw[i] == '/' && i + 1 < n && raw[i + 1])
			start = i + 1;
	return start;
}

size_t kx_cmdline_format(char *dst, size_t dstlen, const char *raw, size_t n)
{
	size_t len = 0;
	int space = 0;

	if (!dstlen)
		return 0;
	for (size_t i = prog_start(raw, n); i < n && len + 1 < dstlen; i++) {
		unsigned char c = (unsigned char)raw[i];

		if (!c) {
			space = len > 0;
			continue;
		}
		if (space && len + 2 < dstlen) {
			dst[len++] = ' ';
			space = 0;
		} else if (space) {
			break;
		}
		dst[len++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[len] = '\0';
	return len;
}

long kx_cmdline_read(uint32_t pid, char *dst, size_t dstlen)
{
	char path[32], raw[CMDLINE_READ];
	ssize_t n;
	int fd;

	if (dstlen)
		dst[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do
		n = read(fd, raw, sizeof(raw));
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -1;
	return (long)kx_cmdline_format(dst, dstlen, raw, (size_t)n);
}
