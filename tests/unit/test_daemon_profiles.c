/*
 * The daemon's rules for the profiles a session asks for (daemon/profiles.h),
 * no privilege needed: the sampling ceiling for users and none for root;
 * the counter list checked with record's messages; kernel-mode profiling
 * given or not, with its reason: --user-kernel yes and no, and auto against
 * kernel.perf_event_paranoid values (a file of the test's standing in for
 * the sysctl), including an unreadable one; root always gets it.
 */
#include <unistd.h>

#include "kxtest.h"
#include "daemon/profiles.h"

static char sysctl_path[64];

/* The stand-in sysctl holds text ("" removes it). */
static void set_paranoid(const char *text)
{
	FILE *f;

	unlink(sysctl_path);
	if (!*text)
		return;
	f = fopen(sysctl_path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static struct kx_dw_request ask(uint32_t hz, const char *counters)
{
	struct kx_dw_request r;

	memset(&r, 0, sizeof(r));
	r.npids = 1;
	r.pids[0] = 1234;
	r.sample_hz = hz;
	snprintf(r.counters, sizeof(r.counters), "%s", counters);
	return r;
}

static void frequency_ceiling(void)
{
	struct kx_profile_rules rules = {.max_hz = 999, .user_kernel = KX_USER_KERNEL_YES};
	struct kx_dw_request r = ask(999, "");
	struct kx_profile_grant g;
	char err[256] = "";

	CHECK(kx_profile_grant(&rules, 1000, &r, &g, err, sizeof(err)) == 0);
	r = ask(1000, "");
	CHECK(kx_profile_grant(&rules, 1000, &r, &g, err, sizeof(err)) != 0);
	CHECK(strstr(err, "sampling at 1000 Hz is over this daemon's limit of 999 Hz for users"));
	CHECK(strstr(err, "--max-sample-hz"));
	/* Root: record's own limits only. */
	r = ask(KX_DW_HZ_MAX, "");
	CHECK(kx_profile_grant(&rules, 0, &r, &g, err, sizeof(err)) == 0);
}

static void counter_list(void)
{
	struct kx_profile_rules rules = {.max_hz = 999, .user_kernel = KX_USER_KERNEL_YES};
	struct kx_dw_request r = ask(0, "context-switches,cycles");
	struct kx_profile_grant g;
	char err[256] = "";

	CHECK(kx_profile_grant(&rules, 1000, &r, &g, err, sizeof(err)) == 0);
	CHECK(g.counters.n == 2 && !strcmp(g.counters.c[1]->name, "cycles"));
	r = ask(0, "context-switches,bogus");
	CHECK(kx_profile_grant(&rules, 1000, &r, &g, err, sizeof(err)) != 0);
	CHECK(strstr(err, "unknown counter 'bogus'"));
	r = ask(0, "cycles,cycles");
	CHECK(kx_profile_grant(&rules, 0, &r, &g, err, sizeof(err)) != 0);
	CHECK(strstr(err, "given twice"));
	r = ask(0, "");
	CHECK(kx_profile_grant(&rules, 1000, &r, &g, err, sizeof(err)) == 0);
	CHECK(g.counters.n == 0);
}

/* The reason a user of rules gets no kernel-mode profiling ("" when given). */
static const char *kernel_why(int mode, uid_t uid)
{
	static struct kx_profile_grant g;
	struct kx_profile_rules rules = {
	        .max_hz = 999, .user_kernel = mode, .paranoid = sysctl_path};
	struct kx_dw_request r = ask(99, "");
	char err[256];

	if (kx_profile_grant(&rules, uid, &r, &g, err, sizeof(err)))
		return "(refused)";
	return g.no_kernel_why;
}

static void kernel_mode_rule(void)
{
	set_paranoid("2\n");
	CHECK_STR(kernel_why(KX_USER_KERNEL_YES, 1000), "");
	CHECK(strstr(kernel_why(KX_USER_KERNEL_NO, 1000), "--user-kernel no"));
	CHECK(strstr(kernel_why(KX_USER_KERNEL_AUTO, 1000), "perf_event_paranoid is 2"));
	CHECK_STR(kernel_why(KX_USER_KERNEL_NO, 0), ""); /* root */
	set_paranoid("4\n");                             /* Debian's kernels know 3 and up */
	CHECK(strstr(kernel_why(KX_USER_KERNEL_AUTO, 1000), "perf_event_paranoid is 4"));
	set_paranoid("1\n");
	CHECK_STR(kernel_why(KX_USER_KERNEL_AUTO, 1000), "");
	set_paranoid("-1\n");
	CHECK_STR(kernel_why(KX_USER_KERNEL_AUTO, 1000), "");
	set_paranoid("junk\n");
	CHECK(strstr(kernel_why(KX_USER_KERNEL_AUTO, 1000), "cannot be read"));
	set_paranoid("");
	CHECK(strstr(kernel_why(KX_USER_KERNEL_AUTO, 1000), "cannot be read"));
	CHECK_STR(kernel_why(KX_USER_KERNEL_AUTO, 0), "");
	/* Every reason fits a hook's reason field whole. */
	set_paranoid("2\n");
	CHECK(strlen(kernel_why(KX_USER_KERNEL_AUTO, 1000)) <
	      sizeof(((struct kx_profile_grant *)0)->no_kernel_why) - 1);
	CHECK(strlen(kernel_why(KX_USER_KERNEL_NO, 1000)) <
	      sizeof(((struct kx_profile_grant *)0)->no_kernel_why) - 1);
}

static void option_values(void)
{
	char err[128] = "";
	int mode = -1;

	CHECK(kx_user_kernel_parse("auto", &mode, err, sizeof(err)) == 0 &&
	      mode == KX_USER_KERNEL_AUTO);
	CHECK(kx_user_kernel_parse("yes", &mode, err, sizeof(err)) == 0 &&
	      mode == KX_USER_KERNEL_YES);
	CHECK(kx_user_kernel_parse("no", &mode, err, sizeof(err)) == 0 &&
	      mode == KX_USER_KERNEL_NO);
	CHECK(kx_user_kernel_parse("maybe", &mode, err, sizeof(err)) != 0);
	CHECK(strstr(err, "'maybe' is not auto, yes or no"));
	CHECK_STR(kx_user_kernel_name(KX_USER_KERNEL_NO), "no");
}

int main(void)
{
	snprintf(sysctl_path, sizeof(sysctl_path), "/tmp/kxt_paranoid.%d", (int)getpid());
	RUN(frequency_ceiling);
	RUN(counter_list);
	RUN(kernel_mode_rule);
	RUN(option_values);
	unlink(sysctl_path);
	KXT_EXIT();
}
