/*
 * What /proc/PID/status says of a process: its name, credentials, thread
 * group and parent, as the kernel shows them to anyone who may read the
 * file. One reader for every part that asks (the daemon's authorisation,
 * the symbol reader acting for a user).
 */
#ifndef KX_UTIL_PROCSTATUS_H
#define KX_UTIL_PROCSTATUS_H

#include <stdint.h>

#define KX_PROCSTATUS_GROUPS 256 /* supplementary groups kept, at most */

struct kx_procstatus {
	char name[64];   /* Name: (the comm) */
	long uid[4];     /* real, effective, saved, file-system */
	long gid[4];     /* the same order */
	long tgid, ppid; /* Tgid:, PPid: */
	int kthread;     /* Kthread: 1 or 0; -1 when not said (before 6.x) */
	unsigned int groups[KX_PROCSTATUS_GROUPS]; /* Groups: the first ngroups */
	int ngroups;                               /* groups kept */
	int groups_cut;                            /* more groups than were kept */
	uint64_t cap_prm;  /* CapPrm: permitted capabilities, a bit per capability */
	int cap_prm_known; /* the line was there */
	/* Owner of the status file as opened: the process's effective uid and
	 * gid while it is dumpable, root's (of its user namespace) while it is
	 * not (proc's task_dump_owner): how user space sees dumpability. */
	long file_uid, file_gid;
	int has_mm; /* a VmSize: line: the process has its memory (not exiting, not a zombie) */
};

/* Reads /proc/PID/status into st: 0, or -1 when it cannot be read or lacks
 * the Uid, Gid, Tgid or PPid line. */
int kx_procstatus_read(uint32_t pid, struct kx_procstatus *st);

#endif /* KX_UTIL_PROCSTATUS_H */
