/*
 * A process its own user may or may not read, for test_daemon_auth.sh
 * (built by the test into its temp dir, then copied setuid-root, setgid-root
 * or with file capabilities).
 *
 * usage: auth_victim SETUP N NR SECONDS
 *   SETUP  none; nodump: prctl(PR_SET_DUMPABLE, 0); keep0: a setuid-root
 *          copy drops to its real uid but keeps saved uid 0
 *          (setresuid(u, u, 0)); dump1: prctl(PR_SET_DUMPABLE, 1), so only
 *          the credentials keep the kernel's protection
 *   N      ioctls _IO('k', NR) on /dev/null (ENOTTY, traced all the same)
 *   SECONDS  then spins in victim_secret_loop that long (CPU samples)
 * Says "ready PID" on stderr once set up, before the ioctls; prints its
 * JSON (workloads' convention, README.md) at the end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long victim_secret_loop(double secs)
{
	volatile unsigned long x = 0;
	double end = now() + secs;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i * 2654435761u;
	return x;
}

static int setup(const char *how)
{
	uid_t u = getuid();

	if (!strcmp(how, "nodump"))
		return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!strcmp(how, "keep0"))
		return setresuid(u, u, 0) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (!strcmp(how, "dump1"))
		return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return strcmp(how, "none") ? -1 : 0;
}

int main(int argc, char **argv)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC), n, nr;

	if (argc != 5 || fd < 0 || setup(argv[1]) != 0) {
		fprintf(stderr, "usage: auth_victim none|nodump|keep0|dump1 N NR SECONDS\n");
		return 2;
	}
	n = atoi(argv[2]);
	nr = (int)strtol(argv[3], NULL, 0);
	fprintf(stderr, "ready %d\n", (int)getpid());
	for (int i = 0; i < n; i++)
		(void)ioctl(fd, _IO('k', nr), 0);
	victim_secret_loop(atof(argv[4]));
	printf("{\"pid\":%d,\"ioctls\":{\"unknown:0x6b%02x\":%d},\"errors\":{}}\n", (int)getpid(),
	       nr & 0xff, n);
	/* _exit: no exit-time leak check in a sanitizer build, which cannot run
	 * in a process that is not dumpable. */
	fflush(stdout);
	_exit(0);
}
