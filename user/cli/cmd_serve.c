/*
 * kxprof serve: the always-on daemon. Keeps an aggregate-mode session
 * attached and serves its live aggregates over HTTP (libmicrohttpd):
 * /metrics (Prometheus text), /summary.json (summary JSON; ?reset=1 also
 * clears the aggregates, with --allow-reset), / (index), and with --pprof
 * /debug/pprof/profile (kernel frames masked unless --pprof-kernel-addresses).
 * SIGHUP rescans the devices (also done every --rescan seconds for
 * hot-plug), SIGTERM/SIGINT detach everything and exit 0.
 *
 * Bounds: kernel memory is the aggregation map (--max-keys) and a small ring
 * buffer; per request, one snapshot (at most max-keys rows) and its text,
 * freed when sent. libmicrohttpd enforces the request size limit (per
 * connection memory) and an idle timeout, and serves from a small thread
 * pool with non-blocking sockets, so a slow or stalled client holds one
 * connection slot, not a thread. The connection limits and deadlines that
 * keep a slot for a scraper however other clients trickle are
 * cli/serve_conns.h's.
 * With --socket (or a socket systemd passes), serve also runs the capture
 * daemon for unprivileged users (cli/serve_socket.c over user/daemon/);
 * --socket without --listen runs only that.
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

#include "live/cpuprof.h"
#include "cli/cli.h"
#include "cli/serve_conns.h"
#include "cli/serve_socket.h"
#include "capture/clock.h"
#include "capture/sampler.h"
#include "live/drmseries.h"
#include "live/interval.h"
#include "export/prometheus.h"
#include "export/summary.h"
#include "model/version.h"
#include "util/parse.h"

struct serve {
	struct kx_live live;      /* the capture and its aggregates */
	pthread_mutex_t lock;     /* prof_open */
	struct serve_conns conns; /* the open connections and their limits */
	int pprof;                /* --pprof: /debug/pprof/profile served */
	int allow_reset;          /* --allow-reset: ?reset=1 clears the aggregates */
	struct kx_prom_info info;
	char kernel[96];
	struct kx_cpuprof *prof; /* GET /debug/pprof/profile */
	unsigned int prof_open;  /* profile requests not yet answered (under lock) */
};

static void serve_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof serve [--listen ADDR:PORT] [-p PID[,PID...]] [--device SPEC]...\n"
	        "                    [--by-pid | --by-cgroup] [--max-keys N] [--rescan SECONDS]\n"
	        "                    [--http-timeout SECONDS] [--http-deadline SECONDS]\n"
	        "                    [--http-header-deadline S] [--max-clients N]\n"
	        "                    [--max-per-client N] [--allow-reset]\n"
	        "                    [--attach MECH] [--no-offcpu]\n"
	        "                    [--pprof [--pprof-kernel-addresses]] [--profile-hz HZ]\n"
	        "                    [--profile-max-seconds S]\n"
	        "                    [--socket PATH [--socket-mode M] [--socket-group G] ...]\n"
	        "  --listen ADDR:PORT    HTTP address (default 127.0.0.1:9464; loopback unless\n"
	        "                        another address is given; [::1]:PORT for IPv6; port 0:\n"
	        "                        any free port, the one bound is printed)\n"
	        "  -p, --pid PIDS        aggregate only these processes and their children\n"
	        "                        (default: every process)\n"
	        "      --device SPEC     also trace this device (see kxprof record --help)\n"
	        "      --by-pid          split series by process (pid, comm labels); keys of\n"
	        "                        exited processes are dropped\n"
	        "      --by-cgroup       split series by cgroup id (not with --by-pid)\n"
	        "      --max-keys N      aggregation key limit (default %u, each %zu bytes of\n"
	        "                        kernel memory); ioctls of new keys past it are counted\n"
	        "                        in kxprof_map_overflow_total\n"
	        "      --rescan SECONDS  rescan devices this often (default 60, 0 = SIGHUP only)\n"
	        "      --http-timeout S  close idle or stalled connections after S seconds "
	        "(default 10)\n"
	        "      --http-deadline S close a connection whose request is not answered S\n"
	        "                        seconds after its connection or previous response,\n"
	        "                        however slowly it trickles in (default 30)\n"
	        "      --http-header-deadline S  close a connection whose request headers are\n"
	        "                        not all in S seconds after its connection or previous\n"
	        "                        response (default 5)\n"
	        "      --max-clients N   concurrent connections (default 32); a new one is never\n"
	        "                        kept waiting: past N (or past --max-per-client) the\n"
	        "                        connection with the least progress is closed, of the\n"
	        "                        client holding the most\n"
	        "      --max-per-client N  connections of one client: a local user (who owns\n"
	        "                        the other end) or a remote address\n"
	        "                        (default half of --max-clients)\n"
	        "      --allow-reset     let any client clear the aggregates (?reset=1); without\n"
	        "                        it reset=1 gets 403\n"
	        "      --attach MECH     force fentry, tp_btf, raw_tp or tp (default: fentry,\n"
	        "                        else tp: the least for the host's other syscalls)\n"
	        "      --no-offcpu       no off-CPU time (nothing runs on context switches)\n"
	        "      --pprof           serve /debug/pprof/profile: CPU stacks of every traced\n"
	        "                        process, readable by whoever reaches the port (off:\n"
	        "                        404); kernel frames are named, with stand-in addresses\n"
	        "      --pprof-kernel-addresses  real kernel addresses in profiles (they tell\n"
	        "                        where KASLR put the kernel)\n"
	        "      --profile-hz HZ   sampling frequency of /debug/pprof/profile (default %u)\n"
	        "      --call-graph MODE how /debug/pprof/profile walks user stacks: fp (frame\n"
	        "                        pointers, the default), dwarf[,SIZE] or auto[,SIZE]\n"
	        "                        (as kxprof record's; a request's call_graph=MODE\n"
	        "                        overrides it)\n"
	        "      --profile-max-seconds S  the longest profile served (default %u)\n"
	        "      --drm-usage[=SECS] also export, from the DRM usage statistics of the\n"
	        "                        traced processes' DRM and accel fds (/proc/PID/fdinfo,\n"
	        "                        read every SECS, default 1), engine busy seconds and\n"
	        "                        capacity per client and memory per region (kxprof_drm_*;\n"
	        "                        pid and comm labels with --by-pid; at most --max-keys\n"
	        "                        series); default when a DRM or accel device is traced\n"
	        "      --no-drm-usage    do not read them\n"
	        "%s"
	        "HTTP: GET /metrics (Prometheus text); GET /summary.json or /summary (table) of\n"
	        "      the live aggregates; sort=KEY, ascending=1, hist=1, wide=1 as in kxprof\n"
	        "      report (also: kxprof report --from URL); reset=1 clears them after\n"
	        "      reading (with --allow-reset; else 403);\n"
	        "      flags take 1, true, yes, 0, false or no. Other parameters, or any on\n"
	        "      /metrics and /, get 400 with the reason.\n"
	        "      GET /debug/pprof/profile?seconds=N (--pprof): a CPU profile (gzipped "
	        "pprof,\n"
	        "      with the driver calls as frames) of the traced processes over the next N\n"
	        "      seconds (default 30); %u at once, one per client, others get 429;\n"
	        "      call_graph=fp|dwarf[,SIZE]|auto[,SIZE] walks user stacks as --call-graph.\n"
	        "      Everything served is readable by every local user (and by whoever reaches\n"
	        "      --listen's address).\n"
	        "Signals: SIGHUP rescans devices; SIGTERM/SIGINT detach and exit 0.\n",
	        KX_AGG_MAX_KEYS, sizeof(struct kx_agg_val), KX_CPUPROF_HZ, KX_CPUPROF_MAX_SECONDS,
	        serve_socket_usage, KX_CPUPROF_MAX_RUNNING);
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, int *v6)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char err[96];
	long long port;

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
	if (kx_parse_long(NULL, colon + 1, 0, 65535, &port, err, sizeof(err)))
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

/* The query parameters a page takes: flags (1/true/yes, 0/false/no) and sort. */
struct query_check {
	int summary; /* /summary, /summary.json: reset, hist, ascending, sort, wide */
	char why[256];
};

static int flag_ok(const char *v)
{
	static const char *const ok[] = {"1", "true", "yes", "0", "false", "no"};

	for (size_t i = 0; v && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(v, ok[i]))
			return 1;
	return 0;
}

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
	struct query_check *q = cls;
	int flag = !strcmp(key, "reset") || !strcmp(key, "hist") || !strcmp(key, "ascending") ||
	           !strcmp(key, "wide");

	(void)kind;
	if (!q->summary || (!flag && strcmp(key, "sort")))
		snprintf(q->why, sizeof(q->why), "bad query: unknown parameter '%.64s' (%s)\n", key,
		         q->summary ? "reset, sort, ascending, hist, wide"
		                    : "this page takes none");
	else if (flag && !flag_ok(value))
		snprintf(q->why, sizeof(q->why),
		         "bad query: %s='%.64s' (1, true, yes, 0, false or no)\n", key,
		         value ? value : "");
	else if (!flag && (!value || kx_sort_key_parse(value) < 0))
		snprintf(q->why, sizeof(q->why),
		         "bad query: sort='%.64s' (avg, min, max, total, count)\n",
		         value ? value : "");
	return q->why[0] ? MHD_NO : MHD_YES;
}

/* 400 with the reason for a bad query, or MHD_YES with *bad 0 to go on. */
static enum MHD_Result check_query(struct MHD_Connection *c, int summary, int *bad)
{
	struct query_check q = {.summary = summary};
	char *body;

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, &q);
	*bad = q.why[0] != 0;
	if (!*bad)
		return MHD_YES;
	body = strdup(q.why);
	if (!body)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "bad query\n");
	return reply(c, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", body, strlen(body), 1);
}

static int arg_true(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"));
}

/* The 500 of a failed kx_live_read. */
static enum MHD_Result read_failed(struct MHD_Connection *c, int rc)
{
	return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
	                  rc == -1 ? "cannot read the aggregates\n" : "out of memory\n");
}

static enum MHD_Result page_metrics(struct serve *sv, struct MHD_Connection *c)
{
	struct kx_live_snap snap;
	struct kx_prom_info info = sv->info;
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = kx_live_read(&sv->live, &snap, 0, err, sizeof(err));

	if (rc)
		return read_failed(c, rc);
	info.anns = &snap.anns;
	info.jobs = sv->info.jobs_attached ? &snap.jobs : NULL;
	f = open_memstream(&buf, &len);
	rc = f ? kx_prom_write(f, &snap.agg, &info) : -1;
	if (!rc && sv->live.drm)
		rc = kx_drmlive_prom(sv->live.drm, f, sv->live.by == KX_AGG_BY_PID);
	kx_live_snap_free(&snap);
	if (!f || fclose(f) || rc) {
		free(buf);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, KX_PROM_CONTENT_TYPE, buf, len, 1);
}

/* /summary.json (JSON) or /summary (table); ?reset=1, hist=1, sort=KEY, ascending=1, wide=1. */
static enum MHD_Result page_summary(struct serve *sv, struct MHD_Connection *c, int json)
{
	const char *sort_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sort");
	int sort = sort_s ? kx_sort_key_parse(sort_s) : KX_SORT_AVG;
	struct kx_live_snap snap;
	struct kx_capinfo *ci = malloc(sizeof(*ci));
	struct kx_summary *sum = NULL;
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int rc;

	if (sort < 0) {
		free(ci);
		return reply_text(c, MHD_HTTP_BAD_REQUEST,
		                  "bad sort (avg, min, max, total, count)\n");
	}
	if (!ci)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	kx_agg_capinfo(sv->live.agg, ci);
	rc = kx_live_read(&sv->live, &snap, arg_true(c, "reset"), err, sizeof(err));
	if (rc) {
		free(ci);
		return read_failed(c, rc);
	}
	sum = kx_summary_from_agg(&snap.agg, ci);
	if (sum && (kx_summary_add_annagg(sum, &snap.anns) ||
	            (sv->info.jobs_attached && kx_summary_add_jobagg(sum, &snap.jobs)))) {
		kx_summary_free(sum);
		sum = NULL;
	}
	kx_live_snap_free(&snap);
	free(ci);
	if (sum)
		f = open_memstream(&buf, &len);
	if (f) {
		kx_summary_sort(sum, (enum kx_sort_key)sort, arg_true(c, "ascending"));
		if (json)
			kx_summary_print_json(sum, f, arg_true(c, "hist"));
		else
			kx_summary_print_table(sum, f,
			                       (arg_true(c, "hist") ? KX_TABLE_HIST : 0) |
			                               (arg_true(c, "wide") ? KX_TABLE_WIDE : 0));
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
        "  ?reset=1                   (either) then clears the aggregates (--allow-reset)\n"
        "  ?sort=avg|min|max|total|count&ascending=1&hist=1&wide=1   as kxprof report\n"
        "  /debug/pprof/profile?seconds=N   CPU profile (gzipped pprof) over N seconds "
        "(--pprof)\n";

/* The answers of what is off unless the operator turns it on. */
static const char pprof_off[] =
        "not found: /debug/pprof/profile is off (start kxprof serve with --pprof to serve CPU "
        "profiles)\n";
static const char reset_off[] =
        "forbidden: reset=1 is off (start kxprof serve with --allow-reset to let clients clear "
        "the aggregates)\n";

/* One profile request: suspended until its profile's thread is done. */
struct prof_req {
	struct MHD_Connection *c;
	struct serve *sv;
	struct serve_conn *k; /* its socket context, kept while it waits */
	unsigned int status;  /* of the answer: 200, or why not */
	struct kx_bytes body;
	char err[320];
};

static void profile_waiting(struct prof_req *r, int waiting);

/* The profile's thread: keeps the result, wakes the connection. */
static void profile_done(void *ctx, int rc, struct kx_bytes *body, const char *err)
{
	struct prof_req *r = ctx;

	profile_waiting(r, 0);
	r->status = rc ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_OK;
	r->body = *body;
	snprintf(r->err, sizeof(r->err), "%s\n", err);
	MHD_resume_connection(r->c);
}

/* Query parameters of the profile page: "seconds" only. */
static enum MHD_Result profile_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	const char **q = cls; /* seconds, an unknown parameter, call_graph */

	(void)kind;
	if (!strcmp(key, "seconds"))
		q[0] = value ? value : "";
	else if (!strcmp(key, "call_graph"))
		q[2] = value ? value : "";
	else {
		q[1] = key;
		return MHD_NO;
	}
	return MHD_YES;
}

/* The answer of a resumed profile request. */
static enum MHD_Result profile_answer(struct MHD_Connection *c, struct prof_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result rc;

	if (r->status != MHD_HTTP_OK)
		return reply_text(c, r->status, r->err);
	resp = MHD_create_response_from_buffer(r->body.len, r->body.p, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->body.p = NULL; /* the response's now */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", "attachment; filename=\"profile\"");
	rc = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* The deadline stops while the server works on the answer (the client is not
 * the slow one then) and starts again when the answer is ready. */
static void profile_waiting(struct prof_req *r, int waiting)
{
	serve_conns_waiting(&r->sv->conns, r->k, waiting);
}

/* GET /debug/pprof/profile?seconds=N: the connection waits suspended while
 * the library profiles (live/cpuprof.h), then gets the gzipped pprof. */
static enum MHD_Result page_profile(struct serve *sv, struct MHD_Connection *c, void **con_cls)
{
	const char *q[3] = {NULL, NULL, NULL}; /* seconds, an unknown parameter, call_graph */
	const union MHD_ConnectionInfo *conn;
	struct prof_req *r = *con_cls;
	struct serve_conn *k;
	char why[256];
	uint32_t secs, ustack;
	int rc, autom;

	if (r)
		return profile_answer(c, r);
	if (!sv->pprof)
		return reply_text(c, MHD_HTTP_NOT_FOUND, pprof_off);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, profile_arg, q);
	if (q[1]) {
		snprintf(why, sizeof(why),
		         "bad query: unknown parameter '%s' (seconds=N and call_graph=MODE "
		         "only)\n",
		         q[1]);
		return reply(c, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", strdup(why),
		             strlen(why), 1);
	}
	if (kx_cpuprof_seconds(sv->prof, q[0], &secs, why, sizeof(why) - 1) ||
	    kx_cpuprof_call_graph(sv->prof, q[2], &ustack, &autom, why, sizeof(why) - 1)) {
		strcat(why, "\n");
		return reply(c, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", strdup(why),
		             strlen(why), 1);
	}
	conn = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	k = conn ? conn->socket_context : NULL;
	if (serve_conns_profile(&sv->conns, k)) {
		snprintf(why, sizeof(why),
		         "a profile for %s is being taken already (one at a time per client: a "
		         "local user or a remote address; %u at once in all): try again when it "
		         "ends\n",
		         k->client.name, KX_CPUPROF_MAX_RUNNING);
		return reply(c, MHD_HTTP_TOO_MANY_REQUESTS, "text/plain; charset=utf-8",
		             strdup(why), strlen(why), 1);
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	r->c = c;
	r->sv = sv;
	pthread_mutex_lock(&sv->lock);
	sv->prof_open++;
	pthread_mutex_unlock(&sv->lock);
	r->k = k;
	*con_cls = r;
	profile_waiting(r, 1);
	/* Suspended first: the profile's thread may finish at once. */
	MHD_suspend_connection(c);
	rc = kx_cpuprof_start(sv->prof, secs, ustack, autom, profile_done, r, why, sizeof(why) - 1);
	if (rc) {
		r->status = rc == -2 ? MHD_HTTP_TOO_MANY_REQUESTS : MHD_HTTP_SERVICE_UNAVAILABLE;
		snprintf(r->err, sizeof(r->err), "%s\n", why);
		profile_waiting(r, 0);
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct serve *sv = cls;
	int summary = !strcmp(url, "/summary.json") || !strcmp(url, "/summary"), bad;
	const union MHD_ConnectionInfo *k =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	enum MHD_Result rc;

	(void)version;
	(void)upload;
	serve_conns_request(&sv->conns, k ? k->socket_context : NULL);
	/* Bodies are never wanted: answer on the first call, MHD drops the rest. */
	if (*upload_size)
		*upload_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (summary || !strcmp(url, "/metrics") || !strcmp(url, "/")) {
		rc = check_query(c, summary, &bad);
		if (bad)
			return rc;
	}
	if (!strcmp(url, "/metrics"))
		return page_metrics(sv, c);
	if (summary && arg_true(c, "reset") && !sv->allow_reset)
		return reply_text(c, MHD_HTTP_FORBIDDEN, reset_off);
	if (summary)
		return page_summary(sv, c, !strcmp(url, "/summary.json"));
	if (!strcmp(url, "/debug/pprof/profile"))
		return page_profile(sv, c, con_cls);
	if (!strcmp(url, "/"))
		return reply_text(c, MHD_HTTP_OK, index_page);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

/* Connection accepted or closed: kept in sv->conns for its limits. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct serve *sv = cls;
	const union MHD_ConnectionInfo *fd, *peer;
	MHD_socket sock;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		serve_conns_remove(&sv->conns, *socket_context);
		*socket_context = NULL;
		return;
	}
	/* libmicrohttpd 1.0 answers both in one buffer of the connection: the
	 * fd is read before the address is asked for. */
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!fd)
		return;
	sock = fd->connect_fd;
	peer = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	*socket_context = serve_conns_add(&sv->conns, sock, peer ? peer->client_addr : NULL);
}

/* A response was sent (or the request ended): the next request's clock starts. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct serve *sv = cls;
	const union MHD_ConnectionInfo *i =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	(void)toe;
	if (*con_cls) { /* a profile request (the only page that keeps state) */
		struct prof_req *r = *con_cls;

		free(r->body.p);
		free(r);
		*con_cls = NULL;
		pthread_mutex_lock(&sv->lock);
		sv->prof_open--;
		pthread_mutex_unlock(&sv->lock);
	}
	serve_conns_done(&sv->conns, i ? i->socket_context : NULL);
}

/* Waits (at most 2 s) until the profiles that shutdown woke are answered:
 * stopping the HTTP daemon closes connections whose answer is not out yet. */
static void profiles_answered(struct serve *sv)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 200; i++) {
		unsigned int open;

		pthread_mutex_lock(&sv->lock);
		open = sv->prof_open;
		pthread_mutex_unlock(&sv->lock);
		if (!open)
			return;
		nanosleep(&tick, NULL);
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (!kx_verbose)
		return;
	fputs("kxprof serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

struct serve_opts {
	const char *listen_s;
	struct sockaddr_storage addr;
	int v6;
	const char *pids;                /* -p list, checked when the capture opens */
	int by;                          /* enum kx_agg_by */
	int by_pid, by_cgroup;           /* given options, to refuse both */
	double rescan;                   /* seconds, 0: SIGHUP only */
	long long timeout, clients;      /* HTTP idle timeout (seconds), connection cap */
	long long deadline;              /* HTTP total deadline per request, seconds */
	long long header;                /* HTTP deadline of the request headers, seconds */
	long long per_client;            /* connections of one client, 0: max/2 */
	int pprof, pprof_kaddr;          /* --pprof, --pprof-kernel-addresses */
	const char *call_graph;          /* --call-graph, NULL when not given */
	uint32_t ustack_bytes;           /* its stack copy size (0: fp) */
	int ustack_auto;                 /* --call-graph auto */
	int allow_reset;                 /* --allow-reset */
	long long prof_hz, prof_secs;    /* /debug/pprof/profile: frequency, longest profile */
	struct kx_devset devices, fresh; /* traced now; the last rescan */
	struct kx_capture_opts cap;
	int listen_given;         /* --listen: HTTP too when --socket is given */
	struct serve_socket sock; /* --socket and its options */
	int drm;             /* --drm-usage 1, --no-drm-usage -1, 0: when a DRM device is traced */
	double drm_interval; /* --drm-usage=SECS, 0: the default */
};

/* getopt values of the options without a letter (past every char). */
enum {
	OPT_HEADER = 0x100,
	OPT_PER_CLIENT,
	OPT_PPROF,
	OPT_PPROF_KADDR,
	OPT_ALLOW_RESET,
	OPT_CALL_GRAPH
};

/* One numeric option into o. 0, or -1 with err. */
static int serve_num(struct serve_opts *o, int opt, char *err, size_t len)
{
	static const struct kx_num_range rescan = {.lo = 0, .hi = 86400};
	long long v = 0;
	int rc;

	switch (opt) {
	case 'k':
		rc = kx_parse_long("--max-keys", optarg, 16, 1 << 20, &v, err, len);
		o->cap.agg_max_keys = rc ? o->cap.agg_max_keys : (uint32_t)v;
		return rc;
	case 'r':
		return kx_parse_double("--rescan", optarg, &rescan, &o->rescan, err, len);
	case 't':
		return kx_parse_long("--http-timeout", optarg, 1, 3600, &o->timeout, err, len);
	case 'T':
		return kx_parse_long("--http-deadline", optarg, 1, 3600, &o->deadline, err, len);
	case OPT_HEADER:
		return kx_parse_long("--http-header-deadline", optarg, 1, 3600, &o->header, err,
		                     len);
	case OPT_PER_CLIENT:
		return kx_parse_long("--max-per-client", optarg, 1, 1024, &o->per_client, err, len);
	case 'z':
		return kx_parse_long("--profile-hz", optarg, 1, 10000, &o->prof_hz, err, len);
	case 'Z':
		return kx_parse_long("--profile-max-seconds", optarg, 1, 3600, &o->prof_secs, err,
		                     len);
	default: /* 'c' */
		return kx_parse_long("--max-clients", optarg, 1, 1024, &o->clients, err, len);
	}
}

/* One option into o. 0, 1 for --help, or -1 after a message. */
static int serve_opt(struct serve_opts *o, int opt)
{
	static const struct kx_num_range drm_ivl = {.lo = 0.01, .hi = 3600};
	char err[256];
	int rc;

	switch (opt) {
	case 'l':
		o->listen_s = optarg;
		o->listen_given = 1;
		return 0;
	case 'p':
		o->pids = optarg;
		return 0;
	case 'D':
		/* Fail early on a typo; later rescans only warn. */
		if (kx_devset_add(&o->devices, optarg, err, sizeof(err)))
			break;
		return 0;
	case 'P':
		o->by = KX_AGG_BY_PID;
		o->by_pid = 1;
		return 0;
	case 'C':
		o->by = KX_AGG_BY_CGROUP;
		o->by_cgroup = 1;
		return 0;
	case 'k':
	case 'r':
	case 't':
	case 'T':
	case 'c':
	case 'z':
	case 'Z':
	case OPT_HEADER:
	case OPT_PER_CLIENT:
		if (serve_num(o, opt, err, sizeof(err)))
			break;
		return 0;
	case 'm':
		o->cap.mech = optarg;
		return 0;
	case 'O':
		o->cap.no_offcpu = 1;
		return 0;
	case OPT_PPROF:
		o->pprof = 1;
		return 0;
	case OPT_PPROF_KADDR:
		o->pprof_kaddr = 1;
		return 0;
	case OPT_CALL_GRAPH:
		o->call_graph = optarg;
		if (kx_call_graph_parse(optarg, &o->ustack_bytes, &o->ustack_auto, err,
		                        sizeof(err)))
			break;
		return 0;
	case OPT_ALLOW_RESET:
		o->allow_reset = 1;
		return 0;
	case 'w':
		o->drm = 1;
		if (optarg && kx_parse_double("--drm-usage", optarg, &drm_ivl, &o->drm_interval,
		                              err, sizeof(err)))
			break;
		return 0;
	case 'W':
		o->drm = -1;
		return 0;
	case 'h':
		serve_usage(stdout);
		return 1;
	default:
		/* --socket and its options (a bad one has been reported). */
		rc = optarg ? serve_socket_opt(&o->sock, opt, optarg) : 0;
		if (rc)
			return rc > 0 ? 0 : -1;
		snprintf(err, sizeof(err), "see kxprof serve --help");
	}
	kx_err("%s", err);
	return -1;
}

/* Conflicting options and a bad -p list. 0, or -1 after a message. */
static int serve_check(const struct serve_opts *o)
{
	if (o->by_pid && o->by_cgroup) {
		kx_err("--by-pid and --by-cgroup exclude each other: give one");
		return -1;
	}
	return o->pids ? kx_cli_check_pids(o->pids) : 0;
}

/* Options into o. 0 to serve; else the exit code (0 after --help). */
static int serve_parse(int argc, char **argv, struct serve_opts *o)
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
	        {"http-deadline", required_argument, NULL, 'T'},
	        {"max-clients", required_argument, NULL, 'c'},
	        {"attach", required_argument, NULL, 'm'},
	        {"no-offcpu", no_argument, NULL, 'O'},
	        {"profile-hz", required_argument, NULL, 'z'},
	        {"profile-max-seconds", required_argument, NULL, 'Z'},
	        {"http-header-deadline", required_argument, NULL, OPT_HEADER},
	        {"max-per-client", required_argument, NULL, OPT_PER_CLIENT},
	        {"pprof", no_argument, NULL, OPT_PPROF},
	        {"pprof-kernel-addresses", no_argument, NULL, OPT_PPROF_KADDR},
	        {"call-graph", required_argument, NULL, OPT_CALL_GRAPH},
	        {"allow-reset", no_argument, NULL, OPT_ALLOW_RESET},
	        {"drm-usage", optional_argument, NULL, 'w'},
	        {"no-drm-usage", no_argument, NULL, 'W'},
	        {"help", no_argument, NULL, 'h'},
	        SERVE_SOCKET_OPTIONS,
	        {NULL, 0, NULL, 0},
	};
	int opt, rc;

	serve_socket_defaults(&o->sock);
	o->listen_s = "127.0.0.1:9464";
	o->cap.agg_max_keys = KX_AGG_MAX_KEYS;
	o->rescan = 60;
	o->timeout = 10;
	o->deadline = 30;
	o->header = 5;
	o->clients = 32;
	o->prof_hz = KX_CPUPROF_HZ;
	o->prof_secs = KX_CPUPROF_MAX_SECONDS;
	optind = 1;
	while ((opt = kx_getopt(argc, argv, "p:h", opts)) != -1)
		if ((rc = serve_opt(o, opt)) != 0)
			return rc < 0 ? 2 : -1;
	if (optind < argc) {
		kx_err("unexpected argument '%s' (see kxprof serve --help)", argv[optind]);
		return 2;
	}
	if (serve_check(o))
		return 2;
	if (o->pprof_kaddr && !o->pprof) {
		kx_err("--pprof-kernel-addresses needs --pprof");
		return 2;
	}
	if (o->call_graph && !o->pprof) {
		kx_err("--call-graph is how /debug/pprof/profile walks user stacks: it needs "
		       "--pprof");
		return 2;
	}
	if (!o->per_client)
		o->per_client = o->clients > 1 ? o->clients / 2 : 1;
	if (o->per_client > o->clients)
		o->per_client = o->clients;
	if (parse_listen(o->listen_s, &o->addr, &o->v6)) {
		kx_err("bad --listen '%s' (ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)",
		       o->listen_s);
		return 2;
	}
	o->cap.devices = &o->devices;
	o->cap.verbose = kx_verbose;
	o->cap.cmdline = "serve";
	return 0;
}

/* Opens and starts the capture and the readers of its aggregates. 0, or -1 after a message. */
static int serve_start(struct serve *sv, struct serve_opts *o)
{
	struct kx_cpuprof_limits lim;
	struct kx_session *s;
	char err[512];

	if (kx_live_open(&sv->live, &o->cap, o->pids, o->by, err, sizeof(err)))
		goto fail;
	s = sv->live.c.s;
	snprintf(sv->kernel, sizeof(sv->kernel), "%s", kx_session_capinfo(s)->kernel);
	sv->info.version = KX_VERSION;
	sv->info.kernel = sv->kernel;
	sv->info.mech = kx_session_mech(s);
	sv->info.jobs_attached = sv->live.jobs_attached;
	lim = (struct kx_cpuprof_limits){.hz = (uint32_t)o->prof_hz,
	                                 .max_seconds = (uint32_t)o->prof_secs,
	                                 .max_running = KX_CPUPROF_MAX_RUNNING,
	                                 .max_bytes = KX_CPUPROF_MAX_BYTES,
	                                 .kernel_addresses = o->pprof_kaddr,
	                                 .ustack_bytes = o->ustack_bytes,
	                                 .ustack_auto = o->ustack_auto};
	sv->prof = kx_cpuprof_new(s, !o->pids, &lim);
	if (!sv->prof) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (kx_live_drm(&sv->live, o->drm, (unsigned int)(o->drm_interval * 1000 + 0.5),
	                o->cap.agg_max_keys, 1, err, sizeof(err)))
		goto fail;
	return 0;
fail:
	kx_err("%s", err);
	return -1;
}

static struct MHD_Daemon *serve_listen(struct serve *sv, const struct serve_opts *o)
{
	struct MHD_Daemon *d;

	d = MHD_start_daemon(
	        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
	                MHD_ALLOW_SUSPEND_RESUME | (o->v6 ? MHD_USE_IPv6 : 0),
	        0, NULL, NULL, on_request, sv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&o->addr,
	        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2, MHD_OPTION_CONNECTION_TIMEOUT,
	        (unsigned int)o->timeout,
	        /* Far above --max-clients: a connection is never left in the accept
	         * backlog; serve_conns closes one to make room (serve_conns.h). */
	        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(2 * o->clients + 64),
	        /* Request line + headers must fit: 32 KiB, else 431/413. */
	        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32 * 1024, MHD_OPTION_NOTIFY_CONNECTION,
	        on_connection, sv, MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
	        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (!d)
		kx_err("cannot listen on %s: %s", o->listen_s,
		       errno ? strerror(errno) : "libmicrohttpd refused the options (-v says why)");
	return d;
}

/* Rescans the devices (hot-plug; on SIGHUP saying what it found). */
static void serve_rescan(struct serve *sv, struct serve_opts *o, int hup)
{
	char err[512];
	int was = o->devices.n;

	o->fresh = o->devices;
	kx_devset_resolve(&o->fresh, hup ? kx_cli_warn : NULL, NULL);
	if (kx_devset_same(&o->fresh, &o->devices)) {
		if (hup)
			fprintf(stderr, "kxprof serve: SIGHUP: devices unchanged (%d)\n", was);
		return;
	}
	if (kx_agg_set_devices(sv->live.agg, o->fresh.dev, o->fresh.n, err, sizeof(err)) != 0) {
		kx_err("device rescan: %s", err);
		return;
	}
	o->devices = o->fresh;
	fprintf(stderr, "kxprof serve: devices: %d (were %d)\n", o->devices.n, was);
}

/* Serves until SIGTERM/SIGINT; rescans on SIGHUP and every --rescan seconds. */
static void serve_loop(struct serve *sv, struct serve_opts *o, const sigset_t *set)
{
	uint64_t last_scan = kx_mono_ns(), last_prune = last_scan;

	for (;;) {
		struct timespec ts = {1, 0};
		int sig = sigtimedwait(set, NULL, &ts);
		uint64_t now = kx_mono_ns();
		int due = o->rescan > 0 && now - last_scan >= (uint64_t)(o->rescan * 1e9);

		if (sig == SIGTERM || sig == SIGINT)
			return;
		serve_conns_tick(&sv->conns, now);
		if (sv->live.agg && (sig == SIGHUP || due)) {
			serve_rescan(sv, o, sig == SIGHUP);
			last_scan = now;
		}
		/* Per-process keys of exited processes would fill the map over days. */
		if (sv->live.agg && o->by == KX_AGG_BY_PID && now - last_prune >= 2000000000ULL) {
			kx_agg_prune_exited(sv->live.agg);
			last_prune = now;
		}
	}
}

/* The address the daemon listens on, as ADDR:PORT ([ADDR]:PORT for IPv6):
 * the port bound when --listen asked for port 0. */
static void bound_address(struct MHD_Daemon *d, const struct serve_opts *o, char *buf, size_t len)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN];
	int v6;

	if (!i || getsockname(i->listen_fd, (struct sockaddr *)&ss, &sl) != 0) {
		snprintf(buf, len, "%s", o->listen_s);
		return;
	}
	v6 = ss.ss_family == AF_INET6;
	if (v6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
	snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", host,
	         ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                  : ((struct sockaddr_in *)&ss)->sin_port));
}

/* Capture, HTTP, loop. 0 after a signal, 1 on error. */
static int serve_run(struct serve *sv, struct serve_opts *o, const sigset_t *set)
{
	struct MHD_Daemon *d = NULL;
	char where[80];

	/* HTTP unless only --socket was asked for. */
	if (!serve_socket_wanted(&o->sock) || o->listen_given) {
		if (serve_start(sv, o))
			return 1;
		d = serve_listen(sv, o);
		if (!d)
			return 1;
		bound_address(d, o, where, sizeof(where));
		fprintf(stderr,
		        "kxprof serve: http://%s/metrics (%s, %d devices, %s, key limit %u)\n",
		        where, sv->info.mech, o->devices.n,
		        o->pids ? "given processes" : "all processes",
		        kx_session_agg_max_keys(sv->live.c.s));
	}
	if (serve_socket_start(&o->sock, kx_verbose)) {
		if (d)
			MHD_stop_daemon(d);
		return 1;
	}
	kx_say_attached("serving");
	serve_loop(sv, o, set);
	fprintf(stderr, "kxprof serve: stopping\n");
	serve_socket_stop(&o->sock);
	/* Profiles end early and wake their connections before the daemon goes. */
	kx_cpuprof_shutdown(sv->prof);
	if (d) {
		profiles_answered(sv);
		MHD_stop_daemon(d);
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static struct serve_opts o;
	struct serve sv = {0};
	sigset_t set, old;
	int rc = serve_parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (serve_socket_inherit(&o.sock))
		return 1;
	pthread_mutex_init(&sv.lock, NULL);
	serve_conns_init(&sv.conns, (unsigned int)o.clients, (unsigned int)o.per_client,
	                 (unsigned int)o.header, (unsigned int)o.deadline);
	sv.pprof = o.pprof;
	sv.allow_reset = o.allow_reset;
	/* Snapshots and responses are large and short-lived: a fixed mmap
	 * threshold returns them to the kernel when freed, so a burst of keys
	 * does not leave the heap (and RSS) at its high-water mark for days. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if ((!serve_socket_wanted(&o.sock) || o.listen_given) &&
	    kx_devset_resolve(&o.devices, NULL, NULL) == 0)
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
	rc = serve_run(&sv, &o, &set);
	kx_cpuprof_free(sv.prof);
	kx_live_close(&sv.live);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_destroy(&sv.lock);
	serve_conns_destroy(&sv.conns);
	return rc;
}
