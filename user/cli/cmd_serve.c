/*
 * kxprof serve: the always-on daemon. Keeps an aggregate-mode session
 * attached and serves its live aggregates over HTTP (libmicrohttpd):
 * /metrics (Prometheus text), /summary.json (summary JSON; ?reset=1 also
 * clears the aggregates), / (index). SIGHUP rescans the devices (also done
 * every --rescan seconds for hot-plug), SIGTERM/SIGINT detach everything and
 * exit 0.
 *
 * Bounds: kernel memory is the aggregation map (--max-keys) and a small ring
 * buffer; per request, one snapshot (at most max-keys rows) and its text,
 * freed when sent. libmicrohttpd enforces the request size limit (per
 * connection memory), an idle timeout, a connection cap and per-IP cap, and
 * serves from a small thread pool with non-blocking sockets, so a slow or
 * stalled client holds one connection slot, not a thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "live/aggregate.h"
#include "cli/cli.h"
#include "capture/clock.h"
#include "registry/devices.h"
#include "live/jobs.h"
#include "export/prometheus.h"
#include "capture/session.h"
#include "export/summary.h"

#define SERVE_VERSION "0.1"
#define MAX_SPECS     32

struct serve {
	struct kx_agg *agg;
	struct kx_jobagg *jobs; /* fed by the consumer thread, read by HTTP threads */
	struct kx_prom_info info;
	char kernel[96];
	const char *mech;
};

static void serve_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof serve [--listen ADDR:PORT] [-p PID[,PID...]] [--device SPEC]...\n"
	        "                    [--by-pid | --by-cgroup] [--max-keys N] [--rescan SECONDS]\n"
	        "                    [--http-timeout SECONDS] [--max-clients N] [--attach MECH]\n"
	        "  --listen ADDR:PORT    HTTP address (default 127.0.0.1:9464; loopback unless\n"
	        "                        another address is given; [::1]:PORT for IPv6)\n"
	        "  -p, --pid PIDS        aggregate only these processes and their children\n"
	        "                        (default: every process)\n"
	        "      --device SPEC     also trace this device (see kxprof record --help)\n"
	        "      --by-pid          split series by process (pid, comm labels); keys of\n"
	        "                        exited processes are dropped\n"
	        "      --by-cgroup       split series by cgroup id\n"
	        "      --max-keys N      aggregation key limit (default %u); ioctls of new keys\n"
	        "                        past it are counted in kxprof_map_overflow_total\n"
	        "      --rescan SECONDS  rescan devices this often (default 60, 0 = SIGHUP only)\n"
	        "      --http-timeout S  close idle or stalled connections after S seconds "
	        "(default 10)\n"
	        "      --max-clients N   concurrent connections (default 32)\n"
	        "      --attach MECH     force tp_btf, raw_tp or tp\n"
	        "HTTP: GET /metrics (Prometheus text); GET /summary.json or /summary (table) of\n"
	        "      the live aggregates, ?reset=1 clears them after reading, sort=KEY,\n"
	        "      ascending=1, hist=1 as in kxprof report (also: kxprof report --from URL).\n"
	        "Signals: SIGHUP rescans devices; SIGTERM/SIGINT detach and exit 0.\n",
	        KX_AGG_MAX_KEYS);
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, int *v6)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
		colon = s - 1;
	} else if ((size_t)(colon - s) >= sizeof(host)) {
		return -1;
	} else {
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = 0;
	}
	port = strtol(colon + 1, &end, 10);
	if (*end || colon[1] == 0 || port < 0 || port > 65535)
		return -1;
	if (host[0] == '[') {
		size_t n = strlen(host);
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		if (n < 3 || host[n - 1] != ']')
			return -1;
		host[n - 1] = 0;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return -1;
		*v6 = 1;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &a4->sin_addr) != 1)
			return -1;
		*v6 = 0;
	}
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
                             char *body, size_t len, int must_free)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	r = MHD_create_response_from_buffer(
	        len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (must_free)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), 0);
}

static int arg_true(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"));
}

static enum MHD_Result page_metrics(struct serve *sv, struct MHD_Connection *c)
{
	struct kx_agg_snapshot snap;
	struct kx_jobagg_snapshot js;
	struct kx_prom_info info = sv->info;
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc, jobs = sv->jobs && sv->info.jobs_attached;

	if (kx_agg_snapshot(sv->agg, &snap, 0, err, sizeof(err)))
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		                  "cannot read the aggregates\n");
	if (jobs && kx_jobagg_snapshot(sv->jobs, &js, kx_mono_ns(), 0)) {
		kx_agg_snapshot_free(&snap);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	info.jobs = jobs ? &js : NULL;
	f = open_memstream(&buf, &len);
	if (!f) {
		kx_agg_snapshot_free(&snap);
		if (jobs)
			kx_jobagg_snapshot_free(&js);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	rc = kx_prom_write(f, &snap, &info);
	kx_agg_snapshot_free(&snap);
	if (jobs)
		kx_jobagg_snapshot_free(&js);
	if (fclose(f) || rc) {
		free(buf);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, KX_PROM_CONTENT_TYPE, buf, len, 1);
}

/* /summary.json (JSON) or /summary (table); ?reset=1, hist=1, sort=KEY, ascending=1. */
static enum MHD_Result page_summary(struct serve *sv, struct MHD_Connection *c, int json)
{
	const char *sort_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sort");
	int sort = sort_s ? kx_sort_key_parse(sort_s) : KX_SORT_AVG;
	struct kx_agg_snapshot snap;
	struct kx_capinfo *ci = malloc(sizeof(*ci));
	struct kx_summary *sum = NULL;
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;

	if (sort < 0) {
		free(ci);
		return reply_text(c, MHD_HTTP_BAD_REQUEST,
		                  "bad sort (avg, min, max, total, count)\n");
	}
	if (!ci)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	kx_agg_capinfo(sv->agg, ci);
	if (kx_agg_snapshot(sv->agg, &snap, arg_true(c, "reset"), err, sizeof(err))) {
		free(ci);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		                  "cannot read the aggregates\n");
	}
	if (arg_true(c, "reset") && sv->jobs) {
		struct kx_jobagg_snapshot js;

		if (kx_jobagg_snapshot(sv->jobs, &js, kx_mono_ns(), 1) == 0)
			kx_jobagg_snapshot_free(&js);
	}
	sum = kx_summary_from_agg(&snap, ci);
	kx_agg_snapshot_free(&snap);
	free(ci);
	if (sum)
		f = open_memstream(&buf, &len);
	if (f) {
		kx_summary_sort(sum, (enum kx_sort_key)sort, arg_true(c, "ascending"));
		if (json)
			kx_summary_print_json(sum, f, arg_true(c, "hist"));
		else
			kx_summary_print_table(sum, f, arg_true(c, "hist"));
		if (fclose(f)) {
			free(buf);
			buf = NULL;
		}
	}
	kx_summary_free(sum);
	if (!buf)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return reply(c, MHD_HTTP_OK, json ? "application/json" : "text/plain; charset=utf-8", buf,
	             len, 1);
}

static const char index_page[] =
        "kxprof serve: always-on driver ioctl aggregates\n"
        "  /metrics                   Prometheus text exposition\n"
        "  /summary.json              summary JSON of the live aggregates\n"
        "  /summary                   the same as a table\n"
        "  ?reset=1                   (either) then clears the aggregates\n"
        "  ?sort=avg|min|max|total|count&ascending=1&hist=1   as kxprof report\n";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct serve *sv = cls;

	(void)version;
	(void)upload;
	(void)con_cls;
	/* Bodies are never wanted: answer on the first call, MHD drops the rest. */
	if (*upload_size)
		*upload_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (!strcmp(url, "/metrics"))
		return page_metrics(sv, c);
	if (!strcmp(url, "/summary.json") || !strcmp(url, "/summary"))
		return page_summary(sv, c, !strcmp(url, "/summary.json"));
	if (!strcmp(url, "/"))
		return reply_text(c, MHD_HTTP_OK, index_page);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (!kx_verbose)
		return;
	fputs("kxprof serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* Default devices plus the user's specs, resolved now (hot-plug changes both). */
static int scan_devices(struct kx_device *out, char **specs, int nspecs, int quiet)
{
	int n = kx_devices_default(out, KX_MAX_DEVICES);
	char err[256];

	for (int i = 0; i < nspecs && n < KX_MAX_DEVICES; i++) {
		int k = kx_device_resolve(specs[i], out + n, KX_MAX_DEVICES - n, err, sizeof(err));

		if (k < 0) {
			if (!quiet)
				kx_err("%s", err);
			continue;
		}
		n += k;
	}
	return n;
}

static int same_devices(const struct kx_device *a, int na, const struct kx_device *b, int nb)
{
	if (na != nb)
		return 0;
	for (int i = 0; i < na; i++)
		if (a[i].dev != b[i].dev || a[i].fkind != b[i].fkind || a[i].drv != b[i].drv ||
		    a[i].any_minor != b[i].any_minor || strcmp(a[i].node, b[i].node))
			return 0;
	return 1;
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (*end || s == end || !(*out >= lo && *out <= hi)) {
		kx_err("bad %s '%s' (a number from %g to %g)", opt, s, lo, hi);
		return -1;
	}
	return 0;
}

static void on_job(void *ctx, const struct kx_job *j)
{
	kx_jobagg_add(ctx, j);
}

static int jobs_attached(const struct kx_capinfo *ci)
{
	for (uint32_t i = 0; i < ci->nhooks; i++)
		if (!strncmp(ci->hooks[i].name, "jobs:", 5) &&
		    ci->hooks[i].state == KX_HOOK_ATTACHED)
			return 1;
	return 0;
}

static void nop_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	(void)ctx;
	(void)e;
	(void)arg;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"listen", required_argument, NULL, 'l'},
	        {"pid", required_argument, NULL, 'p'},
	        {"device", required_argument, NULL, 'D'},
	        {"by-pid", no_argument, NULL, 'P'},
	        {"by-cgroup", no_argument, NULL, 'C'},
	        {"max-keys", required_argument, NULL, 'k'},
	        {"rescan", required_argument, NULL, 'r'},
	        {"http-timeout", required_argument, NULL, 't'},
	        {"max-clients", required_argument, NULL, 'c'},
	        {"attach", required_argument, NULL, 'm'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	static struct kx_device devices[KX_MAX_DEVICES], fresh[KX_MAX_DEVICES];
	const char *listen_s = "127.0.0.1:9464", *pids = NULL, *mech = NULL;
	char *specs[MAX_SPECS];
	int nspecs = 0, by = KX_AGG_BY_NONE, ndev, opt, v6 = 0, rc = 1;
	double max_keys = KX_AGG_MAX_KEYS, rescan = 60, timeout = 10, clients = 32;
	struct sockaddr_storage addr;
	struct kx_session_opts so = {0};
	struct kx_session *s = NULL;
	struct serve sv = {0};
	struct MHD_Daemon *d = NULL;
	sigset_t set, old;
	uint64_t last_scan, last_prune;
	char err[512];

	optind = 1;
	while ((opt = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			listen_s = optarg;
			break;
		case 'p':
			pids = optarg;
			break;
		case 'D':
			if (nspecs == MAX_SPECS) {
				kx_err("at most %d --device options", MAX_SPECS);
				return 2;
			}
			specs[nspecs++] = optarg;
			break;
		case 'P':
			by = KX_AGG_BY_PID;
			break;
		case 'C':
			by = KX_AGG_BY_CGROUP;
			break;
		case 'k':
			if (parse_num("--max-keys", optarg, 16, 1 << 20, &max_keys))
				return 2;
			break;
		case 'r':
			if (parse_num("--rescan", optarg, 0, 86400, &rescan))
				return 2;
			break;
		case 't':
			if (parse_num("--http-timeout", optarg, 1, 3600, &timeout))
				return 2;
			break;
		case 'c':
			if (parse_num("--max-clients", optarg, 1, 1024, &clients))
				return 2;
			break;
		case 'm':
			mech = optarg;
			break;
		case 'h':
			serve_usage(stdout);
			return 0;
		default:
			kx_err("see kxprof serve --help");
			return 2;
		}
	}
	if (optind < argc) {
		kx_err("unexpected argument '%s' (see kxprof serve --help)", argv[optind]);
		return 2;
	}
	if (parse_listen(listen_s, &addr, &v6)) {
		kx_err("bad --listen '%s' (ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)",
		       listen_s);
		return 2;
	}
	for (int i = 0; i < nspecs; i++) {
		/* Fail early on a typo; later rescans only warn. */
		if (kx_device_resolve(specs[i], fresh, KX_MAX_DEVICES, err, sizeof(err)) < 0) {
			kx_err("%s", err);
			return 2;
		}
	}
	/* Snapshots and responses are large and short-lived: a fixed mmap
	 * threshold returns them to the kernel when freed, so a burst of keys
	 * does not leave the heap (and RSS) at its high-water mark for days. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	ndev = scan_devices(devices, specs, nspecs, 1);
	if (ndev == 0)
		kx_err("warning: no accelerator device found yet; rescans (SIGHUP, --rescan) add "
		       "them");

	/* Signals are taken synchronously by the main loop: block them before any
	 * thread (consumer, HTTP pool) exists so every thread inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	signal(SIGPIPE, SIG_IGN);

	so.all = pids == NULL;
	so.devices = devices;
	so.ndevices = ndev;
	/* Aggregate mode emits no ioctl records; job records (user/live/jobs.h) do flow. */
	so.ringbuf_bytes = 1 << 20;
	so.mech = mech;
	so.verbose = kx_verbose;
	so.sink.ioctl = nop_ioctl;
	/* Always-on cost: no driver entry hooks. Job records are paired online. */
	sv.jobs = kx_jobagg_new(0, 0);
	if (!sv.jobs) {
		kx_err("out of memory");
		goto out;
	}
	so.sink.ctx = sv.jobs;
	so.sink.job = on_job;
	so.no_drvhooks = 1;
	so.aggregate = 1;
	so.agg_by_pid = by == KX_AGG_BY_PID;
	so.agg_by_cgroup = by == KX_AGG_BY_CGROUP;
	so.agg_max_keys = (uint32_t)max_keys;
	s = kx_session_open(&so, err, sizeof(err));
	if (!s) {
		kx_err("%s", err);
		goto out;
	}
	if (pids && kx_cli_add_pids(s, pids))
		goto out;
	kx_session_set_cmdline(s, "serve");
	if (kx_session_start(s, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	sv.agg = kx_agg_new(s, by);
	if (!sv.agg) {
		kx_err("out of memory");
		goto out;
	}
	sv.mech = kx_session_mech(s);
	snprintf(sv.kernel, sizeof(sv.kernel), "%s", kx_session_capinfo(s)->kernel);
	sv.info.version = SERVE_VERSION;
	sv.info.kernel = sv.kernel;
	sv.info.mech = sv.mech;
	sv.info.jobs_attached = jobs_attached(kx_session_capinfo(s));

	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
	                             (v6 ? MHD_USE_IPv6 : 0),
	                     0, NULL, NULL, on_request, &sv, MHD_OPTION_SOCK_ADDR,
	                     (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2,
	                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)timeout,
	                     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)clients,
	                     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)clients,
	                     /* Request line + headers must fit: 32 KiB, else 431/413. */
	                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32 * 1024,
	                     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (!d) {
		kx_err("cannot listen on %s: %s", listen_s,
		       errno ? strerror(errno) : "libmicrohttpd refused the options (-v says why)");
		goto out;
	}
	fprintf(stderr, "kxprof serve: http://%s/metrics (%s, %d devices, %s, key limit %u)\n",
	        listen_s, sv.mech, ndev, pids ? "given processes" : "all processes",
	        kx_session_agg_max_keys(s));

	last_scan = last_prune = kx_mono_ns();
	for (;;) {
		struct timespec ts = {1, 0};
		int sig = sigtimedwait(&set, NULL, &ts);
		uint64_t now = kx_mono_ns();
		int due = rescan > 0 && now - last_scan >= (uint64_t)(rescan * 1e9);

		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGHUP || due) {
			int n = scan_devices(fresh, specs, nspecs, !(sig == SIGHUP));

			if (!same_devices(fresh, n, devices, ndev)) {
				if (kx_agg_set_devices(sv.agg, fresh, n, err, sizeof(err)) == 0) {
					memcpy(devices, fresh, (size_t)n * sizeof(*fresh));
					fprintf(stderr, "kxprof serve: devices: %d (were %d)\n", n,
					        ndev);
					ndev = n;
				} else {
					kx_err("device rescan: %s", err);
				}
			} else if (sig == SIGHUP) {
				fprintf(stderr, "kxprof serve: SIGHUP: devices unchanged (%d)\n",
				        ndev);
			}
			last_scan = now;
		}
		/* Per-process keys of exited processes would fill the map over days. */
		if (by == KX_AGG_BY_PID && now - last_prune >= 2000000000ULL) {
			kx_agg_prune_exited(sv.agg);
			last_prune = now;
		}
	}
	fprintf(stderr, "kxprof serve: stopping\n");
	rc = 0;
out:
	if (d)
		MHD_stop_daemon(d);
	kx_agg_free(sv.agg);
	kx_session_close(s);
	kx_jobagg_free(sv.jobs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
