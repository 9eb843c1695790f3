/*
 * How the session picks the ioctl hooks' attach mechanism, against the real
 * kernel (root only, else skipped): the order per mode (host-wide modes:
 * fentry, then the classic syscall tracepoints; targeted captures: fentry,
 * then the raw ones), the ioctl syscall's entry function found through BTF,
 * fentry's refusal (forced with a function that does not exist, and the
 * kernel's own where fentry is refused) falling back with the reason kept in
 * the hook facts, --attach fentry failing with that reason, the facts
 * surviving a record file's round trip, and no_offcpu leaving sched_switch
 * unhooked with the reason.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capture/probe.h"
#include "capture/session.h"
#include "io/kxp.h"
#include "kxtest.h"
#include "model/store.h"

#define NO_FN "kx_no_such_function"

#define NEED_ROOT()                                                                                \
	do {                                                                                       \
		if (geteuid() != 0)                                                                \
			SKIP("needs root");                                                        \
	} while (0)

static const struct kx_hook *hook(const struct kx_capinfo *ci, const char *name, const char *mech,
                                  int state)
{
	for (uint32_t i = 0; i < ci->nhooks && i < KX_MAX_HOOKS; i++) {
		const struct kx_hook *h = &ci->hooks[i];

		if (!strcmp(h->name, name) && (!mech || !strcmp(h->mech, mech)) &&
		    (!state || h->state == state))
			return h;
	}
	return NULL;
}

static struct kx_session *open_mode(int host_wide, const char *mech, const char *fn, int no_offcpu,
                                    char *err, size_t len)
{
	struct kx_session_opts o = {
	        .mech = mech,
	        .aggregate = host_wide,
	        .no_drvhooks = 1,
	        .no_offcpu = no_offcpu,
	        .entry_fn = fn,
	};

	return kx_session_open(&o, err, len);
}

static void mechanism_order(void)
{
	size_t n, m;
	const char *const *t = kx_session_mechs(0, &n);
	const char *const *h = kx_session_mechs(1, &m);

	CHECK_EQ_U(n, 4);
	CHECK_EQ_U(m, 4);
	CHECK_STR(t[0], "fentry");
	CHECK_STR(t[1], "tp_btf");
	CHECK_STR(t[2], "raw_tp");
	CHECK_STR(t[3], "tp");
	CHECK_STR(h[0], "fentry");
	CHECK_STR(h[1], "tp");
	CHECK_STR(h[2], "tp_btf");
	CHECK_STR(h[3], "raw_tp");
}

static void ioctl_entry_found(void)
{
	char fn[64], why[160];

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		SKIP("no kernel BTF");
#if defined(__x86_64__)
	CHECK(kx_probe_ioctl_entry(fn, sizeof(fn), why, sizeof(why)));
	CHECK_STR(fn, "__x64_sys_ioctl");
#else
	SKIP("the expected name is known for x86-64 only");
#endif
}

/* The first mechanism of the mode's order that the fallback reached. */
static void forced_refusal_falls_back(void)
{
	char err[512];
	const struct kx_hook *h;
	struct kx_session *s;

	NEED_ROOT();
	for (int host = 0; host <= 1; host++) {
		s = open_mode(host, NULL, NO_FN, 0, err, sizeof(err));
		CHECK(s);
		h = hook(kx_session_capinfo(s), "ioctl", "fentry", KX_HOOK_SKIPPED);
		if (!h || !strstr(h->why, NO_FN) || strcmp(kx_session_mech(s), "fentry") == 0) {
			kx_session_close(s);
			CHECK(!"fentry skipped with the missing function named, another mechanism "
			       "ran");
		}
		h = hook(kx_session_capinfo(s), "ioctl", kx_session_mech(s), KX_HOOK_ATTACHED);
		if (!h) {
			kx_session_close(s);
			CHECK(h);
		}
		/* Host-wide: the classic tracepoints when tracefs is there. */
		if (host && kx_probe_tracefs(err, sizeof(err)) &&
		    strcmp(kx_session_mech(s), "tp")) {
			kx_session_close(s);
			CHECK(!"host-wide default after fentry is tp");
		}
		if (!host && strcmp(kx_session_mech(s), "tp_btf")) {
			kx_session_close(s);
			CHECK(!"targeted default after fentry is tp_btf");
		}
		kx_session_close(s);
	}
}

/* This kernel's own answer: fentry runs (noting its function), or its refusal
 * is kept as the reason of a skipped hook. */
static void kernel_answer_recorded(void)
{
	char err[512], fn[64];
	const struct kx_hook *h;
	struct kx_session *s;

	NEED_ROOT();
	if (!kx_probe_ioctl_entry(fn, sizeof(fn), err, sizeof(err)))
		SKIP("no ioctl syscall entry function in BTF here");
	s = open_mode(0, NULL, NULL, 0, err, sizeof(err));
	CHECK(s);
	if (!strcmp(kx_session_mech(s), "fentry")) {
		h = hook(kx_session_capinfo(s), "ioctl", "fentry", KX_HOOK_ATTACHED);
		printf("INFO %s: fentry on %s allowed here\n", kxt_cur, h ? h->why : "?");
		CHECK(h && !strcmp(h->why, fn));
	} else {
		h = hook(kx_session_capinfo(s), "ioctl", "fentry", KX_HOOK_SKIPPED);
		printf("INFO %s: %s\n", kxt_cur, h ? h->why : "no fentry hook line");
		CHECK(h && strstr(h->why, fn) && strstr(h->why, "refused"));
	}
	kx_session_close(s);
}

static void forced_fentry_fails_with_reason(void)
{
	char err[512] = "";
	struct kx_session *s;

	NEED_ROOT();
	s = open_mode(0, "fentry", NO_FN, 0, err, sizeof(err));
	kx_session_close(s);
	CHECK(!s);
	CHECK(!strncmp(err, "--attach fentry: ", 17));
	CHECK(strstr(err, NO_FN " not in kernel BTF") != NULL);
}

/* The hook facts (the refused mechanism and why, the one that ran) are in the
 * record file's header. */
static void facts_in_record_file(void)
{
	char err[512], path[] = "/tmp/kxtest-attach.XXXXXX";
	struct kx_kxp_read_result r;
	struct kx_kxp_writer *w;
	struct kx_capinfo back;
	struct kx_store *st;
	struct kx_session *s;
	int fd;

	NEED_ROOT();
	s = open_mode(0, NULL, NO_FN, 0, err, sizeof(err));
	CHECK(s);
	fd = mkstemp(path);
	if (fd < 0) {
		kx_session_close(s);
		CHECK(fd >= 0);
	}
	close(fd);
	w = kx_kxp_create(path, kx_session_capinfo(s), err, sizeof(err));
	if (!w || kx_kxp_close(w, kx_session_capinfo(s), err, sizeof(err))) {
		kx_session_close(s);
		unlink(path);
		CHECK(!"record file written");
	}
	kx_session_close(s);
	st = kx_store_new(0);
	memset(&back, 0, sizeof(back));
	fd = kx_kxp_read(path, st, &back, &r, err, sizeof(err));
	unlink(path);
	kx_store_free(st);
	CHECK(fd == 0);
	CHECK(hook(&back, "ioctl", "fentry", KX_HOOK_SKIPPED) != NULL);
	CHECK(strstr(hook(&back, "ioctl", "fentry", KX_HOOK_SKIPPED)->why, NO_FN) != NULL);
	CHECK(hook(&back, "ioctl", "tp_btf", KX_HOOK_ATTACHED) != NULL);
}

static void no_offcpu_leaves_sched_switch(void)
{
	char err[512];
	const struct kx_hook *h;
	struct kx_session *s;

	NEED_ROOT();
	s = open_mode(1, NULL, NULL, 1, err, sizeof(err));
	CHECK(s);
	h = hook(kx_session_capinfo(s), "sched_switch (off-CPU)", NULL, 0);
	if (!h || h->state != KX_HOOK_SKIPPED || !strstr(h->why, "--no-offcpu")) {
		kx_session_close(s);
		CHECK(!"sched_switch skipped because of --no-offcpu");
	}
	kx_session_close(s);
	s = open_mode(1, NULL, NULL, 0, err, sizeof(err));
	CHECK(s);
	h = hook(kx_session_capinfo(s), "sched_switch (off-CPU)", NULL, KX_HOOK_ATTACHED);
	kx_session_close(s);
	CHECK(h != NULL);
}

int main(void)
{
	RUN(mechanism_order);
	RUN(ioctl_entry_found);
	RUN(forced_refusal_falls_back);
	RUN(kernel_answer_recorded);
	RUN(forced_fentry_fails_with_reason);
	RUN(facts_in_record_file);
	RUN(no_offcpu_leaves_sched_switch);
	KXT_EXIT();
}
