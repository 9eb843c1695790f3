/*
 * What a daemon session gets of the profiles it asks for (record -F,
 * --off-cpu, --counters), by the daemon's rules for clients other than
 * root: a ceiling on the sampling frequency (each sample costs every CPU
 * of the host a program run), and whether kernel-mode profiling is given:
 * kernel frames in the CPU samples and off-CPU stacks of the user's own
 * threads, and hardware counters inside their calls (which count the
 * kernel's code as well as theirs). By default the daemon gives that
 * exactly when the host lets users have it from perf: kernel.perf_event_
 * paranoid at 1 or below, read as each session opens. Root clients get
 * what record gets. The counter list is checked here too, with record's
 * own parser and messages.
 */
#ifndef KX_DAEMON_PROFILES_H
#define KX_DAEMON_PROFILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/counters.h"
#include "capture/daemon_wire.h"

#define KX_PARANOID_PATH "/proc/sys/kernel/perf_event_paranoid"

/* Kernel-mode profiling for clients other than root (serve --user-kernel). */
enum kx_user_kernel {
	KX_USER_KERNEL_AUTO = 0, /* when kernel.perf_event_paranoid <= 1, as perf allows */
	KX_USER_KERNEL_YES,
	KX_USER_KERNEL_NO,
};

struct kx_profile_rules {
	uint32_t max_hz;      /* the highest -F a client other than root may ask, Hz */
	int user_kernel;      /* enum kx_user_kernel */
	const char *paranoid; /* the sysctl's file; NULL: KX_PARANOID_PATH (tests name another) */
};

/* What a session gets. */
struct kx_profile_grant {
	struct kx_counter_list counters; /* the request's, parsed */
	char no_kernel_why[96];          /* "" when kernel-mode profiling is given, else why not */
};

/* "auto", "yes" or "no" into *mode. 0, or -1 with err. */
int kx_user_kernel_parse(const char *s, int *mode, char *err, size_t len);
const char *kx_user_kernel_name(int mode);

/* Checks the profiles req asks for against the rules, for a client of uid.
 * 0 with g filled, or -1 with the one-line refusal in err (a frequency over
 * the ceiling, a bad counter list). */
int kx_profile_grant(const struct kx_profile_rules *r, uid_t uid, const struct kx_dw_request *req,
                     struct kx_profile_grant *g, char *err, size_t len);

#endif /* KX_DAEMON_PROFILES_H */
