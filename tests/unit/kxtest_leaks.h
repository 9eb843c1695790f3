/*
 * Leak checks for the tests that open and close capture sessions: open file
 * descriptors of this process, and the BPF programs and maps it holds.
 */
#ifndef KXTEST_LEAKS_H
#define KXTEST_LEAKS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
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

/*
 * BPF objects of one kind (next: bpf_prog_get_next_id for programs,
 * bpf_map_get_next_id for maps) that this process holds, by the ids its
 * file descriptors name (/proc/self/fdinfo "prog_id:" or "map_id:"). Only
 * the process's own: other captures on a shared machine load and free
 * theirs at any time, so machine-wide counts say nothing about a leak here.
 */
static inline int count_bpf(int (*next)(__u32, __u32 *))
{
	const char *key = next == bpf_prog_get_next_id ? "prog_id:" : "map_id:";
	DIR *d = opendir("/proc/self/fdinfo");
	struct dirent *e;
	char path[300], line[128];
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, key, strlen(key))) {
				n++;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * The process's programs and maps back to at most the given counts; the
 * kernel frees objects after an RCU grace period, so wait up to 5 s.
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
