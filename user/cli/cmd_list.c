/*
 * kxprof list: accelerator and test devices present, and for each hook family
 * whether it works here and which mechanism a capture would use.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "registry/devices.h"
#include "capture/drvcall.h"
#include "capture/ioctl.h"
#include "registry/ioctl_decode.h"
#include "capture/jobsrc.h"
#include "capture/probe.h"
#include "capture/session.h"
#include "util/json.h"

struct family {
	char name[40];
	char state[16]; /* "available", "unavailable", "skipped" */
	char mech[16];
	char note[256];
};

/* Tries each ioctl attach mechanism: ok[i] and a note per mechanism into note. */
static void probe_ioctl_mechs(const char *const *mechs, size_t n, int *ok, char *note, size_t len)
{
	char err[256];
	int w = 0;

	for (size_t i = 0; i < n; i++) {
		/* No sink: nothing is kept, the session only has to load. */
		struct kx_session_opts o = {.mech = mechs[i], .no_drvhooks = 1};
		struct kx_session *s = kx_session_open(&o, err, sizeof(err));

		ok[i] = s != NULL;
		kx_session_close(s);
		if (!ok[i] && strstr(err, " (run with -v"))
			*strstr(err, " (run with -v") = 0;
		/* "--attach fentry: fentry on F refused: ..." -> "fentry on F refused: ..." */
		if (!ok[i] && !strncmp(err, "--attach ", 9) && strchr(err, ':'))
			memmove(err, strchr(err, ':') + 2, strlen(strchr(err, ':') + 2) + 1);
		if (!ok[i] && strncmp(err, mechs[i], strlen(mechs[i])))
			w += snprintf(note + w, len - (size_t)w, "%s%s: %s", w ? "; " : "",
			              mechs[i], err);
		else
			w += snprintf(note + w, len - (size_t)w, "%s%s%s", w ? "; " : "",
			              ok[i] ? mechs[i] : err, ok[i] ? ": ok" : "");
		if (w >= (int)len)
			w = (int)len - 1;
	}
}

/* The mechanism a mode takes: the first of its order that works here. */
static const char *first_ok(const char *const *order, size_t n, const char *const *mechs,
                            const int *ok)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (ok[j] && !strcmp(order[i], mechs[j]))
				return order[i];
	return NULL;
}

/*
 * The ioctl hooks: one line for targeted captures (record -p or a command,
 * the plugin) with every mechanism's result, one for host-wide modes (top,
 * serve, record -a), whose default differs.
 */
static void probe_ioctl_family(struct family *f)
{
	size_t n;
	const char *const *mechs = kx_session_mechs(0, &n);
	const char *const *host = kx_session_mechs(1, &n);
	const char *t, *h;
	int ok[8] = {0};

	probe_ioctl_mechs(mechs, n < 8 ? n : 8, ok, f[0].note, sizeof(f[0].note));
	t = first_ok(mechs, n, mechs, ok);
	h = first_ok(host, n, mechs, ok);
	snprintf(f[0].name, sizeof(f[0].name), "ioctl syscall hooks");
	snprintf(f[1].name, sizeof(f[1].name), "ioctl syscall hooks, host-wide");
	for (int i = 0; i < 2; i++) {
		const char *m = i ? h : t;

		snprintf(f[i].state, sizeof(f[i].state), m ? "available" : "unavailable");
		snprintf(f[i].mech, sizeof(f[i].mech), "%s", m ? m : "-");
	}
	snprintf(f[1].note, sizeof(f[1].note),
	         "top, serve and record -a: the least for the host's other syscalls");
}

/* One line per job lifecycle source: does this kernel have its tracepoints. */
static int probe_job_families(struct family *f, int max, const char *ioctl_mech)
{
	struct kx_jobsrc_avail a[16];
	int n = kx_jobsrc_probe(a, 16 < max ? 16 : max);

	for (int i = 0; i < n; i++) {
		int typed = !strcmp(a[i].name, "block") || !strcmp(a[i].name, "kvm") ||
		            !strcmp(a[i].name, "dma_fence");

		snprintf(f[i].name, sizeof(f[i].name), "jobs: %.24s", a[i].name);
		snprintf(f[i].state, sizeof(f[i].state), a[i].present ? "available" : "skipped");
		/* Typed sources follow the ioctl hooks' mechanism; GPU ones are classic. */
		snprintf(f[i].mech, sizeof(f[i].mech), "%s",
		         !a[i].present ? "-"
		         : typed       ? ioctl_mech
		                       : "tp");
		snprintf(f[i].note, sizeof(f[i].note), "%s", a[i].note);
	}
	return n;
}

/*
 * Driver entry hooks: a summary line for the family, then one line per
 * function (fentry, else kprobe, else skipped and why).
 */
static int probe_driver_families(struct family *f, int max)
{
	struct kx_drvhook_status st[KX_DRV_FN_MAX];
	int n = kx_drvhook_probe(st, KX_DRV_FN_MAX < max - 1 ? KX_DRV_FN_MAX : max - 1);
	int usable = 0, first_usable = -1, first_skipped = -1;

	for (int i = 0; i < n; i++) {
		struct family *l = &f[1 + i];

		snprintf(l->name, sizeof(l->name), "driver: %.30s", st[i].fn);
		snprintf(l->state, sizeof(l->state), st[i].usable ? "available" : "skipped");
		snprintf(l->mech, sizeof(l->mech), "%s", st[i].mech);
		snprintf(l->note, sizeof(l->note), "%s", st[i].usable ? "" : st[i].why);
		usable += st[i].usable;
		if (st[i].usable && first_usable < 0)
			first_usable = i;
		if (!st[i].usable && first_skipped < 0)
			first_skipped = i;
	}
	snprintf(f->name, sizeof(f->name), "driver entry hooks");
	snprintf(f->state, sizeof(f->state), usable ? "available" : "skipped");
	snprintf(f->mech, sizeof(f->mech), "%s", first_usable >= 0 ? st[first_usable].mech : "-");
	snprintf(f->note, sizeof(f->note), "%d of %d driver functions hookable%s%s", usable, n,
	         first_skipped >= 0 ? "; " : "", first_skipped >= 0 ? st[first_skipped].why : "");
	return n + 1;
}

static void probe_simple(struct family *f, const char *name, const char *mech,
                         int (*probe)(char *, size_t))
{
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->note[0] = 0; /* probes write a reason only when they fail */
	if (probe(f->note, sizeof(f->note))) {
		snprintf(f->state, sizeof(f->state), "available");
		snprintf(f->mech, sizeof(f->mech), "%s", mech);
	} else {
		snprintf(f->state, sizeof(f->state), "unavailable");
		snprintf(f->mech, sizeof(f->mech), "-");
	}
}

/* --json into *json. -1 to go on; else the exit code. */
static int list_parse(int argc, char **argv, int *json)
{
	static const struct option opts[] = {
	        {"json", no_argument, NULL, 'j'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int opt;

	optind = 1;
	while ((opt = kx_getopt(argc, argv, "h", opts)) != -1) {
		if (opt == 'j') {
			*json = 1;
		} else if (opt == 'h') {
			printf("usage: kxprof list [--json]\n");
			return 0;
		} else {
			fprintf(stderr, "usage: kxprof list [--json]\n");
			return 2;
		}
	}
	if (optind < argc) {
		kx_err("unexpected argument '%s' (usage: kxprof list [--json])", argv[optind]);
		return 2;
	}
	return -1;
}

/* Every hook family, BPF ones only when privileged; the count. */
static int probe_families(struct family *fam, int priv)
{
	int nfam = 0;

	if (priv) {
		const char *hooks;

		probe_ioctl_family(&fam[nfam]);
		nfam += 2;
		hooks = kx_ioctl_hooks_mech(fam[0].mech);
		snprintf(fam[nfam].name, sizeof(fam[nfam].name), "process tracking");
		snprintf(fam[nfam].state, sizeof(fam[nfam].state), "%s", fam[0].state);
		snprintf(fam[nfam].mech, sizeof(fam[nfam].mech), "%s", hooks ? hooks : "-");
		snprintf(fam[nfam].note, sizeof(fam[nfam].note),
		         "sched_process_fork/exit/exec, task_rename, sched_switch (off-CPU time)");
		nfam++;
		nfam += probe_job_families(&fam[nfam], 20, hooks ? hooks : "-");
		nfam += probe_driver_families(&fam[nfam], KX_DRV_FN_MAX + 1);
	}
	probe_simple(&fam[nfam++], "uprobes/USDT", "uprobe", kx_probe_uprobe);
	probe_simple(&fam[nfam++], "perf cpu-clock sampling", "perf_event",
	             kx_probe_perf_cpu_clock);
	probe_simple(&fam[nfam++], "hardware counters", "perf_event", kx_probe_hw_counters);
	return nfam;
}

static void print_text(const struct kx_device *devs, int ndev, const struct family *fam, int nfam,
                       int priv, const char *why);

int cmd_list(int argc, char **argv)
{
	static struct kx_device devs[KX_MAX_DEVICES];
	struct family fam[40];
	int nfam, json = 0, ndev, priv, rc = list_parse(argc, argv, &json);
	char why[256] = "";

	if (rc >= 0)
		return rc;
	ndev = kx_devices_default(devs, KX_MAX_DEVICES);
	priv = kx_probe_privileges(why, sizeof(why)) && kx_probe_btf(why, sizeof(why));
	nfam = probe_families(fam, priv);

	if (json) {
		printf("{\"devices\": [");
		for (int i = 0; i < ndev; i++) {
			printf("%s{\"node\": ", i ? ", " : "");
			kx_json_cstr(stdout, devs[i].node);
			printf(", \"major\": %u, \"minor\": ", KX_MAJOR(devs[i].dev));
			if (devs[i].any_minor)
				printf("\"*\"");
			else
				printf("%u", KX_MINOR(devs[i].dev));
			printf(", \"kind\": \"%s\", \"driver\": ",
			       devs[i].fkind == KX_FK_CHR   ? "char"
			       : devs[i].fkind == KX_FK_BLK ? "block"
			                                    : "anon");
			kx_json_cstr(stdout, kx_driver_name((enum kx_driver)devs[i].drv));
			printf("}");
		}
		printf("], \"privileged\": %s, ", priv ? "true" : "false");
		if (!priv) {
			printf("\"privilege_note\": ");
			kx_json_cstr(stdout, why);
			printf(", ");
		}
		printf("\"hooks\": [");
		for (int i = 0; i < nfam; i++) {
			printf("%s{\"family\": ", i ? ", " : "");
			kx_json_cstr(stdout, fam[i].name);
			printf(", \"state\": \"%s\", \"mechanism\": \"%s\", \"note\": ",
			       fam[i].state, fam[i].mech);
			kx_json_cstr(stdout, fam[i].note);
			printf("}");
		}
		printf("]}\n");
		return 0;
	}
	print_text(devs, ndev, fam, nfam, priv, why);
	return 0;
}

static void print_text(const struct kx_device *devs, int ndev, const struct family *fam, int nfam,
                       int priv, const char *why)
{
	printf("Devices traced by default (%d):\n", ndev);
	printf("  %-28s %-10s %-6s %s\n", "NODE", "DEV", "KIND", "DRIVER");
	for (int i = 0; i < ndev; i++) {
		char dev[24];

		if (devs[i].fkind == KX_FK_CHR || devs[i].fkind == KX_FK_BLK) {
			if (devs[i].any_minor)
				snprintf(dev, sizeof(dev), "%u:*", KX_MAJOR(devs[i].dev));
			else
				snprintf(dev, sizeof(dev), "%u:%u", KX_MAJOR(devs[i].dev),
				         KX_MINOR(devs[i].dev));
		} else {
			snprintf(dev, sizeof(dev), "-");
		}
		printf("  %-28s %-10s %-6s %s\n", devs[i].node, dev,
		       devs[i].fkind == KX_FK_CHR   ? "char"
		       : devs[i].fkind == KX_FK_BLK ? "block"
		                                    : "anon",
		       kx_driver_name((enum kx_driver)devs[i].drv));
	}
	if (!ndev)
		printf("  (none: name devices with kxprof record --device)\n");
	printf("\nHooks:\n  %-40s %-12s %-11s %s\n", "FAMILY", "STATE", "MECHANISM", "NOTE");
	if (!priv)
		printf("  (BPF hooks not probed: %s)\n", why);
	for (int i = 0; i < nfam; i++)
		printf("  %-40s %-12s %-11s %s\n", fam[i].name, fam[i].state, fam[i].mech,
		       fam[i].note);
}
