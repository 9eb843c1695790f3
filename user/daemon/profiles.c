/* The daemon's rules for a session's profiles (contract: profiles.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/profiles.h"

int kx_user_kernel_parse(const char *s, int *mode, char *err, size_t len)
{
	static const char *const names[] = {"auto", "yes", "no"};

	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*mode = i;
			return 0;
		}
	snprintf(err, len, "--user-kernel: '%s' is not auto, yes or no", s);
	return -1;
}

const char *kx_user_kernel_name(int mode)
{
	return mode == KX_USER_KERNEL_YES ? "yes" : mode == KX_USER_KERNEL_NO ? "no" : "auto";
}

/* The sysctl's value, or -1 with why when it cannot be read. */
static long paranoid_level(const char *path, char *why, size_t len)
{
	FILE *f = fopen(path, "r");
	long v = 0;
	int ok = f && fscanf(f, "%ld", &v) == 1 && v >= -1;

	if (f)
		fclose(f);
	if (ok)
		return v;
	snprintf(why, len, "kernel.perf_event_paranoid cannot be read: not for users here");
	return -1;
}

/* Why a client other than root gets no kernel-mode profiling, into why ("" when it does). */
static void kernel_rule(const struct kx_profile_rules *r, char *why, size_t len)
{
	long level;

	why[0] = 0;
	if (r->user_kernel == KX_USER_KERNEL_YES)
		return;
	if (r->user_kernel == KX_USER_KERNEL_NO) {
		snprintf(why, len, "not for users on this daemon (kxprof serve --user-kernel no)");
		return;
	}
	level = paranoid_level(r->paranoid ? r->paranoid : KX_PARANOID_PATH, why, len);
	if (level > 1)
		snprintf(why, len,
		         "kernel.perf_event_paranoid is %d: as for perf, not for users (serve "
		         "--user-kernel)",
		         (int)(level < 9 ? level : 9));
}

int kx_profile_grant(const struct kx_profile_rules *r, uid_t uid, const struct kx_dw_request *req,
                     struct kx_profile_grant *g, char *err, size_t len)
{
	memset(g, 0, sizeof(*g));
	if (uid != 0 && req->sample_hz > r->max_hz) {
		snprintf(err, len,
		         "sampling at %u Hz is over this daemon's limit of %u Hz for users (ask "
		         "for less with -F; kxprof serve --max-sample-hz sets it)",
		         req->sample_hz, r->max_hz);
		return -1;
	}
	if (req->counters[0] && kx_counters_parse(req->counters, &g->counters, err, len))
		return -1;
	if (uid != 0)
		kernel_rule(r, g->no_kernel_why, sizeof(g->no_kernel_why));
	return 0;
}
