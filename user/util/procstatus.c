/*
 * /proc/PID/status (see procstatus.h), a line at a time in a bounded
 * buffer: of a Groups line longer than it, the groups of the first piece
 * are kept (less one that may be cut) and the rest is skipped.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/procstatus.h"

/* The numbers of a Groups: line (after its key) into st. Of a line cut by
 * the buffer (not whole), the last number may be cut too: it is dropped. */
static void read_groups(const char *p, int whole, struct kx_procstatus *st)
{
	for (char *end;; p = end) {
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (st->ngroups == KX_PROCSTATUS_GROUPS) {
			st->groups_cut = 1;
			return;
		}
		st->groups[st->ngroups++] = (unsigned int)g;
	}
	if (!whole) {
		st->groups_cut = 1;
		if (st->ngroups)
			st->ngroups--;
	}
}

int kx_procstatus_read(uint32_t pid, struct kx_procstatus *st)
{
	char path[64], line[4096];
	int got = 0, in_groups = 0;
	struct stat fst;
	FILE *f;

	memset(st, 0, sizeof(*st));
	st->kthread = -1;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fstat(fileno(f), &fst) == 0) {
		st->file_uid = (long)fst.st_uid;
		st->file_gid = (long)fst.st_gid;
	} else {
		st->file_uid = st->file_gid = -1;
	}
	while (fgets(line, sizeof(line), f)) {
		int whole = strchr(line, '\n') != NULL;

		if (in_groups) /* the rest of a Groups line longer than the buffer */
			;
		else if (sscanf(line, "Name:\t%63[^\n]", st->name) == 1)
			;
		else if (sscanf(line, "Uid:\t%ld\t%ld\t%ld\t%ld", &st->uid[0], &st->uid[1],
		                &st->uid[2], &st->uid[3]) == 4)
			got |= 1;
		else if (sscanf(line, "Gid:\t%ld\t%ld\t%ld\t%ld", &st->gid[0], &st->gid[1],
		                &st->gid[2], &st->gid[3]) == 4)
			got |= 2;
		else if (sscanf(line, "Tgid:\t%ld", &st->tgid) == 1)
			got |= 4;
		else if (sscanf(line, "PPid:\t%ld", &st->ppid) == 1)
			got |= 8;
		else if (sscanf(line, "CapPrm:\t%" SCNx64, &st->cap_prm) == 1)
			st->cap_prm_known = 1;
		else if (!strncmp(line, "VmSize:", 7))
			st->has_mm = 1;
		else if (!strncmp(line, "Groups:", 7))
			read_groups(line + 7, whole, st);
		else
			sscanf(line, "Kthread:\t%d", &st->kthread);
		in_groups = !whole && (in_groups || !strncmp(line, "Groups:", 7));
	}
	fclose(f);
	return got == 15 ? 0 : -1;
}
