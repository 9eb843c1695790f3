/* Late annotation probes: the hold a process asked, and the late rule. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "annotate_rec.h" /* bpf/: KX_ANN_WAIT_ENV */
#include "capture/annwait.h"
#include "util/parse.h"

#define ENV_MAX (1u << 20) /* environment bytes read, at most */

/* "PID:MS" as the library reads it (plugin/annotate/annotate.c): MS, capped, or 0. */
static uint32_t hold_of(const char *v)
{
	char *p;
	long pid = strtol(v, &p, 10), ms;

	if (pid <= 0 || *p != ':')
		return 0;
	ms = strtol(p + 1, &p, 10);
	if (*p || ms <= 0)
		return 0;
	return ms > KX_ANN_WAIT_MAX_MS ? KX_ANN_WAIT_MAX_MS : (uint32_t)ms;
}

uint32_t kx_annwait_hold_ms(int procdir)
{
	static const char key[] = KX_ANN_WAIT_ENV "=";
	int fd = openat(procdir, "environ", O_RDONLY | O_CLOEXEC);
	char *buf = malloc(ENV_MAX + 1);
	size_t n = 0;
	uint32_t hold = 0;
	ssize_t r;

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return 0;
	}
	while (n < ENV_MAX && (r = read(fd, buf + n, ENV_MAX - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	/* NUL-separated entries: the first of the name, the one getenv finds. */
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (!strncmp(buf + i, key, sizeof(key) - 1)) {
			hold = hold_of(buf + i + sizeof(key) - 1);
			break;
		}
	free(buf);
	return hold;
}

int kx_annwait_late(uint64_t map_ns, uint64_t attach_ns, uint32_t hold_ms, struct kx_ann_late *out)
{
	uint64_t allowed = (uint64_t)(hold_ms ? hold_ms : KX_ANN_UNHELD_LATE_MS) * 1000000u;

	if (attach_ns <= map_ns || attach_ns - map_ns <= allowed)
		return 0;
	out->hold_ms = hold_ms;
	out->map_ns = map_ns;
	out->from_ns = map_ns + (uint64_t)hold_ms * 1000000u;
	out->to_ns = attach_ns;
	return 1;
}

uint32_t kx_annwait_test_delay_ms(void)
{
	const char *v = getenv(KX_ANN_TEST_DELAY_ENV);
	long long ms;

	if (!v || kx_parse_long(NULL, v, 0, KX_ANN_WAIT_MAX_MS * 2, &ms, NULL, 0))
		return 0;
	return (uint32_t)ms;
}
