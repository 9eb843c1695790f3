/*
 * Loader of the benchmark reference programs (bpf/floor.bpf.c): attaches
 * one level of them, runs a command under it, detaches, and exits with the
 * command's status. The command is held until the programs are attached
 * (and, for the tracer levels, until its pid is in the filter). Under -m
 * tsrec the loader reads the ring buffer every 10 ms while the command runs
 * and prints how many records it got on stderr.
 *
 *     floor [-m LEVEL] [-s] -- CMD ARGS...
 *
 * -m  which level: empty (default: the hook floor), clock, latency, tslat,
 *     tsrec, tpempty, fenempty (fentry on __x64_sys_ioctl) or swempty
 * -s  turn on BPF run-time statistics while the command runs and print,
 *     per attached program, its run count and mean ns per run as one JSON
 *     line on stderr (the command's stdout stays clean)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floor.skel.h"

static int print_nothing(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	(void)lvl;
	(void)fmt;
	(void)ap;
	return 0;
}

/* Programs of a level: its own syscall pair and the empty task hooks; swempty
 * has its one sched_switch program alone. */
static int wanted(const char *name, const char *level)
{
	size_t n = strlen(level);
	int own = strncmp(name, level, n) == 0 && name[n] == '_';

	if (!strcmp(level, "swempty") || !strncmp(name, "swempty_", 8))
		return own;
	if (strstr(name, "_sys_enter") || strstr(name, "_sys_exit"))
		return own;
	return strncmp(name, "empty_", 6) == 0;
}

static int count_record(void *ctx, void *data, size_t size)
{
	(void)data;
	(void)size;
	++*(unsigned long long *)ctx;
	return 0;
}

/* Waits for the command; with a ring, drains it every 10 ms meanwhile. */
static void wait_child(pid_t child, int *status, struct ring_buffer *rb)
{
	for (;;) {
		pid_t w = waitpid(child, status, rb ? WNOHANG : 0);

		if (w == child)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (rb) {
			/* No wakeups are sent: the poll only paces, consume reads. */
			ring_buffer__poll(rb, 10);
			ring_buffer__consume(rb);
		}
	}
	if (rb)
		ring_buffer__consume(rb);
}

static void print_stats(struct floor_bpf *skel)
{
	struct bpf_program *p;
	const char *sep = "";

	fprintf(stderr, "{\"floor_progs\":[");
	bpf_object__for_each_program(p, skel->obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(p))
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		fprintf(stderr,
		        "%s{\"name\":\"%s\",\"run_cnt\":%llu,"
		        "\"run_time_ns\":%llu,\"ns_per_run\":%.1f}",
		        sep, bpf_program__name(p), (unsigned long long)info.run_cnt,
		        (unsigned long long)info.run_time_ns,
		        info.run_cnt ? (double)info.run_time_ns / (double)info.run_cnt : 0.0);
		sep = ",";
	}
	fprintf(stderr, "]}\n");
}

int main(int argc, char **argv)
{
	const char *level = "empty";
	static const char *const levels[] = {"empty", "clock",   "latency",  "tslat",
	                                     "tsrec", "tpempty", "fenempty", "swempty"};
	const int nlevels = (int)(sizeof(levels) / sizeof(levels[0]));
	struct ring_buffer *rb = NULL;
	unsigned long long records = 0;
	struct floor_bpf *skel;
	struct bpf_program *p;
	int stats = 0, stats_fd = -1, opt, status = 0, err, go[2];
	pid_t child;

	while ((opt = getopt(argc, argv, "+m:s")) != -1) {
		if (opt == 'm')
			level = optarg;
		else if (opt == 's')
			stats = 1;
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	for (opt = 0; opt < nlevels && strcmp(level, levels[opt]); opt++)
		;
	if (opt == nlevels)
		goto usage;

	libbpf_set_print(print_nothing);
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: opening the BPF object failed (%s)\n", strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(p, skel->obj)
	        bpf_program__set_autoload(p, wanted(bpf_program__name(p), level));
	/* x86-64's ioctl entry (kxprof finds it through BTF; the benchmarks run here). */
	bpf_program__set_attach_target(skel->progs.fenempty_sys_enter, 0, "__x64_sys_ioctl");
	bpf_program__set_attach_target(skel->progs.fenempty_sys_exit, 0, "__x64_sys_ioctl");
	err = floor_bpf__load(skel);
	if (!err)
		err = floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "floor: loading/attaching failed (%s): need root and kernel BTF\n",
		        strerror(-err));
		floor_bpf__destroy(skel);
		return 1;
	}
	if (pipe(go)) {
		perror("floor: pipe");
		floor_bpf__destroy(skel);
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("floor: fork");
		floor_bpf__destroy(skel);
		return 1;
	}
	if (child == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		close(go[0]);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "floor: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	skel->bss->target_tgid = (__u32)child;
	if (!strcmp(level, "tsrec")) {
		rb = ring_buffer__new(bpf_map__fd(skel->maps.ring), count_record, &records, NULL);
		if (!rb)
			fprintf(stderr, "floor: cannot map the ring buffer (%s)\n",
			        strerror(errno));
	}
	if (stats) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			fprintf(stderr, "floor: cannot enable BPF run-time statistics (%s)\n",
			        strerror(errno));
	}
	signal(SIGINT, SIG_IGN); /* the command gets it and ends; we then clean up */
	if (write(go[1], "g", 1) != 1)
		perror("floor: releasing the command");
	close(go[1]);
	wait_child(child, &status, rb);
	if (rb) {
		fprintf(stderr, "{\"floor_records\":%llu}\n", records);
		ring_buffer__free(rb);
	}
	if (stats)
		print_stats(skel);
	if (stats_fd >= 0)
		close(stats_fd);
	floor_bpf__destroy(skel);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);

usage:
	fprintf(stderr,
	        "usage: floor [-m empty|clock|latency|tslat|tsrec|tpempty|fenempty|swempty] "
	        "[-s] -- CMD ARGS...\n");
	return 2;
}
