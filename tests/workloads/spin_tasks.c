/*
 * spin_tasks: known threads and processes for the sampling tests' pid and
 * tid checks. For -s SECONDS (wall clock) three tasks spin at once, each in
 * a function of its own, so every sample's leaf names the task it was
 * taken on:
 *   kxw_task_main    the main thread (tid == pid)
 *   kxw_task_thread  a second thread of the same process, named "kxw_thread"
 *   kxw_task_child   the main thread of a forked child process, named
 *                    "kxw_child"
 * JSON: workload, pid, tid_main, tid_thread, child_pid.
 */
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

static volatile unsigned long sink;
static double secs = 1;
static volatile pid_t thread_tid;

static inline __attribute__((always_inline)) void spin(double s)
{
	uint64_t end = wl_now_ns() + (uint64_t)(s * 1e9);
	volatile unsigned long acc = 0;

	while (wl_now_ns() < end)
		for (int i = 0; i < 10000; i++)
			acc += (unsigned long)i ^ (acc >> 3);
	sink += acc;
}

__attribute__((noinline)) void kxw_task_main(void)
{
	spin(secs);
}

__attribute__((noinline)) void kxw_task_thread(void)
{
	spin(secs);
}

__attribute__((noinline)) void kxw_task_child(void)
{
	spin(secs);
}

static void *thread_main(void *arg)
{
	(void)arg;
	/* Named before its first sample can be taken in its function. */
	pthread_setname_np(pthread_self(), "kxw_thread");
	thread_tid = gettid();
	kxw_task_thread();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	pid_t child;
	int c, st;

	wl_prog = "spin_tasks";
	while ((c = getopt(argc, argv, "s:")) != -1) {
		if (c != 's')
			wl_die("usage: spin_tasks [-s SECONDS]");
		secs = wl_parse_seconds("-s", optarg, 60);
	}
	fflush(stdout);
	child = fork();
	if (child < 0)
		wl_die("fork failed: %s", strerror(errno));
	if (child == 0) {
		prctl(PR_SET_NAME, "kxw_child");
		kxw_task_child();
		_exit(0);
	}
	if ((errno = pthread_create(&th, NULL, thread_main, NULL)))
		wl_die("pthread_create failed: %s", strerror(errno));
	kxw_task_main();
	pthread_join(th, NULL);
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		wl_die("the child process failed");
	printf("{\"workload\":\"spin_tasks\",\"pid\":%d,\"tid_main\":%d,\"tid_thread\":%d,"
	       "\"child_pid\":%d}\n",
	       (int)getpid(), (int)gettid(), (int)thread_tid, (int)child);
	return 0;
}
