// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The thread pointer of each live thread of one process: a task iterator
 * that writes {tid, thread pointer} for every task of targ_tgid (user
 * space reads them from the iterator's fd, user/capture/threadptr.c). On
 * x86_64 the thread pointer is the fs base, which glibc's pthread_self()
 * returns; other architectures write 0 (unknown).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "kxprof.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;

SEC("iter/task")
int kx_thread_ptrs(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct kx_threadptr_rec r = {};

	if (!t || t->tgid != targ_tgid)
		return 0;
	r.tid = t->pid;
#if defined(__TARGET_ARCH_x86)
	r.tp = BPF_CORE_READ(t, thread.fsbase);
#endif
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}
