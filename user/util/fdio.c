/* Whole-buffer writes (contract: fdio.h). */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "util/fdio.h"

int kx_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *c = p;

	while (n) {
		ssize_t k = write(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 && errno ? errno : EIO;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}
