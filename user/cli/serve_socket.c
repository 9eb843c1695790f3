/* kxprof serve --socket: options and lifecycle (contract: serve_socket.h). */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/serve_socket.h"
#include "capture/remote.h"
#include "daemon/server.h"
#include "util/parse.h"

const char serve_socket_usage[] =
        "      --socket PATH     also accept capture sessions from local users on this\n"
        "                        Unix socket (without --listen: only this); record and\n"
        "                        the TensorFlow plugin use it when they cannot load BPF\n"
        "                        (clients look at $KXPROF_SOCKET, default\n"
        "                        " KX_DAEMON_SOCKET_DEFAULT "); every directory on the path\n"
        "                        must be root's, not writable by others (unless sticky),\n"
        "                        and no symbolic link\n"
        "      --socket-mode M   its file mode, octal (default 0666: any local user)\n"
        "      --socket-group G  its group (name or number), e.g. with --socket-mode 0660\n"
        "      --max-sessions N  sessions at once (default 32)\n"
        "      --max-user-sessions N  sessions at once per user (default 4)\n"
        "      --session-limit S end a session after S seconds (default 3600, 0: never)\n"
        "      --idle-timeout S  close a client that sends no request, or reads nothing\n"
        "                        of its stream, for S seconds (default 30)\n"
        "      --session-ringbuf-mb N  largest ring buffer a session may ask (default 16)\n"
        "      --max-sample-hz N highest record -F a user may ask (default 999; root: any)\n"
        "      --user-kernel auto|yes|no  kernel frames in users' CPU and off-CPU stacks,\n"
        "                        hardware counters in their calls (default auto: when\n"
        "                        kernel.perf_event_paranoid <= 1, as perf allows)\n";

void serve_socket_defaults(struct serve_socket *s)
{
	memset(s, 0, sizeof(*s));
	s->inherited = -1;
	s->mode = 0666;
	s->gid = -1;
	s->max_sessions = 32;
	s->max_user = 4;
	s->limit = 3600;
	s->idle = 30;
	s->ringbuf_mb = 16;
	s->max_hz = 999;
	s->user_kernel = KX_USER_KERNEL_AUTO;
}

static int parse_mode(const char *arg, unsigned int *mode, char *err, size_t len)
{
	char *end;
	unsigned long m = strtoul(arg, &end, 8);

	if (!*arg || *end || m > 0777) {
		snprintf(err, len, "--socket-mode: '%s' is not an octal file mode (e.g. 0660)",
		         arg);
		return -1;
	}
	*mode = (unsigned int)m;
	return 0;
}

static int parse_group(const char *arg, long *gid, char *err, size_t len)
{
	struct group gr, *found = NULL;
	char buf[4096];
	long long v;

	if (kx_parse_long(NULL, arg, 0, 0x7fffffff, &v, err, len) == 0) {
		*gid = (long)v;
		return 0;
	}
	if (getgrnam_r(arg, &gr, buf, sizeof(buf), &found) != 0 || !found) {
		snprintf(err, len, "--socket-group: no group '%s'", arg);
		return -1;
	}
	*gid = (long)found->gr_gid;
	return 0;
}

/* The numeric options into s. 0, or -1 with err. */
static int socket_num(struct serve_socket *s, int opt, const char *arg, char *err, size_t len)
{
	static const struct kx_num_range secs = {.lo = 0, .hi = 1e7};
	static const struct kx_num_range idle = {.lo = 0, .hi = 86400, .lo_open = 1};
	static const struct kx_num_range mib = {.lo = 0, .hi = 1024, .lo_open = 1};

	switch (opt) {
	case 'N':
		return kx_parse_long("--max-sessions", arg, 1, 4096, &s->max_sessions, err, len);
	case 'U':
		return kx_parse_long("--max-user-sessions", arg, 1, 4096, &s->max_user, err, len);
	case 'L':
		return kx_parse_double("--session-limit", arg, &secs, &s->limit, err, len);
	case 'I':
		return kx_parse_double("--idle-timeout", arg, &idle, &s->idle, err, len);
	case 'H':
		return kx_parse_long("--max-sample-hz", arg, 1, KX_DW_HZ_MAX, &s->max_hz, err, len);
	default: /* 'B' */
		return kx_parse_double("--session-ringbuf-mb", arg, &mib, &s->ringbuf_mb, err, len);
	}
}

int serve_socket_opt(struct serve_socket *s, int opt, const char *arg)
{
	char err[256];
	int rc;

	switch (opt) {
	case 'S':
		s->path = arg;
		return 1;
	case 'M':
		rc = parse_mode(arg, &s->mode, err, sizeof(err));
		break;
	case 'G':
		rc = parse_group(arg, &s->gid, err, sizeof(err));
		break;
	case 'N':
	case 'U':
	case 'L':
	case 'I':
	case 'B':
	case 'H':
		rc = socket_num(s, opt, arg, err, sizeof(err));
		break;
	case 'K':
		rc = kx_user_kernel_parse(arg, &s->user_kernel, err, sizeof(err));
		break;
	default:
		return 0;
	}
	if (rc == 0)
		return 1;
	kx_err("%s", err);
	return -1;
}

int serve_socket_inherit(struct serve_socket *s)
{
	char err[256];
	int rc = kx_daemon_inherited(&s->inherited, err, sizeof(err));

	if (rc < 0) {
		kx_err("%s", err);
		return -1;
	}
	if (rc > 0 && !s->path)
		s->path = KX_DAEMON_SOCKET_DEFAULT;
	return 0;
}

int serve_socket_wanted(const struct serve_socket *s)
{
	return s->path != NULL;
}

static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "kxprof serve: %s\n", line);
}

int serve_socket_start(struct serve_socket *s, int verbose)
{
	uint32_t max_rb = (uint32_t)(s->ringbuf_mb * (1 << 20));
	struct kx_daemon_opts o = {
	        .path = s->path,
	        .listen_fd = s->inherited,
	        .mode = s->mode,
	        .gid = s->gid,
	        .max_sessions = (int)s->max_sessions,
	        .max_per_uid = (int)s->max_user,
	        .conn =
	                {
	                        .max_seconds = s->limit,
	                        .idle_seconds = s->idle,
	                        .max_ringbuf_bytes = max_rb,
	                        .default_ringbuf_bytes = max_rb < (8u << 20) ? max_rb : 8u << 20,
	                        .profiles = {.max_hz = (uint32_t)s->max_hz,
	                                     .user_kernel = s->user_kernel},
	                        .verbose = verbose,
	                        .log = log_line,
	                },
	};
	char err[512];

	if (!s->path)
		return 0;
	s->d = kx_daemon_start(&o, err, sizeof(err));
	if (!s->d) {
		kx_err("%s", err);
		return -1;
	}
	if (s->inherited >= 0)
		fprintf(stderr, "kxprof serve: capture sessions on %s (from systemd)", s->path);
	else
		fprintf(stderr, "kxprof serve: capture sessions on %s (mode %04o)", s->path,
		        s->mode);
	fprintf(stderr,
	        "; at most %lld sessions, %lld per user; users' samples at most %lld Hz, "
	        "kernel-mode profiling for users: %s\n",
	        s->max_sessions, s->max_user, s->max_hz, kx_user_kernel_name(s->user_kernel));
	return 0;
}

void serve_socket_stop(struct serve_socket *s)
{
	kx_daemon_stop(s->d);
	s->d = NULL;
}
