/*
 * Leak checks for the tests that open and close capture sessions: open file
 * descriptors of this process, and BPF programs and maps of the system.
 */
#ifndef KXTEST_LEAKS_H
#define KXTEST_LEAKS_H

#include <dirent.h>
#include <unistd.h>

#include <bpf/bpf.h>

static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Objects the kernel lists through next (bpf_prog_get_next_id, bpf_map_get_next_id). */
static inline int count_bpf(int (*next)(__u32, __u32 *))
{
	__u32 id = 0;
	int n = 0;

	while (next(id, &id) == 0)
		n++;
	return n;
}

/*
 * The kernel frees programs and maps after an RCU grace period, and other
 * processes may load BPF meanwhile: wait up to 5 s for counts <= baseline.
 */
static inline int bpf_back_to(int progs, int maps)
{
	for (int i = 0; i < 50; i++) {
		if (count_bpf(bpf_prog_get_next_id) <= progs &&
		    count_bpf(bpf_map_get_next_id) <= maps)
			return 1;
		usleep(100000);
	}
	return 0;
}

#endif /* KXTEST_LEAKS_H */
