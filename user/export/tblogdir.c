/*
 * TensorBoard log directory writer (see tblogdir.h). Owns the layout XProf
 * and TensorBoard look for: the run folder LOGDIR/plugins/profile/<run>/
 * named after the capture start, the <host>.xplane.pb in it (the bytes come
 * from export/xspace.h), and the events.out.tfevents.*.profile-empty marker
 * (one TFRecord-framed Event) that makes TensorBoard list the run.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "export/tblogdir.h"
#include "util/fdio.h"
#include "util/pbwire.h"

/* CRC-32C (Castagnoli), as TFRecord framing wants it, masked. */
static uint32_t crc32c_masked(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	c = ~c;
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int has_marker(const char *logdir)
{
	static const char suffix[] = ".profile-empty";
	DIR *d = opendir(logdir);
	struct dirent *de;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		found = n >= sizeof(suffix) - 1 &&
		        !strcmp(de->d_name + n - (sizeof(suffix) - 1), suffix);
	}
	closedir(d);
	return found;
}

/* The marker TensorBoard needs to list the run: what TensorFlow writes, a
 * TFRecord file holding one Event {wall_time, file_version "brain.Event:2"}.
 * rec gets its bytes; their count is returned. */
static size_t marker_bytes(time_t when, uint8_t rec[64])
{
	static const char version[] = "brain.Event:2";
	uint8_t *p = rec + 12;
	double wall = (double)when;
	uint64_t bits;
	size_t elen;

	/* Event: wall_time = 1 (double), file_version = 3 (string). */
	memcpy(&bits, &wall, sizeof(bits));
	p = kx_pb_f64field(p, 1, bits);
	p = kx_pb_bytes(p, 3, version, sizeof(version) - 1);
	elen = (size_t)(p - (rec + 12));
	/* TFRecord: u64 length, masked crc of it, data, masked crc of data. */
	put_le(rec, elen, 8);
	put_le(rec + 8, crc32c_masked(rec, 8), 4);
	put_le(p, crc32c_masked(rec + 12, elen), 4);
	p += 4;
	return (size_t)(p - rec);
}

/* The marker's temporary file, like TensorFlow only when the logdir has no
 * *.profile-empty file yet. */
static int open_marker(struct kx_tblogdir *xo, const char *logdir, char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (has_marker(logdir))
		return 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/events.out.tfevents.%lld.%s.profile-empty",
	                     logdir, (long long)xo->when, xo->host) >= sizeof(path)) {
		snprintf(err, errlen, "path too long under %s", logdir);
		return -1;
	}
	if (kx_outfile_open(&xo->marker, path, 0, err, errlen))
		return -1;
	xo->with_marker = 1;
	return 0;
}

int kx_tblogdir_open(const struct kx_capinfo *ci, const char *logdir, const char *suffix,
                     struct kx_tblogdir *xo, char *err, size_t errlen)
{
	int64_t start_rt = kx_capinfo_realtime(ci, ci->start_mono_ns);
	char run[128], parent[PATH_MAX], path[PATH_MAX];
	struct tm tm;

	memset(xo, 0, sizeof(*xo));
	xo->pb.fd = xo->marker.fd = -1;
	xo->pb.slot = xo->marker.slot = -1;
	if (kx_outdir_check(logdir, err, errlen))
		return -1;
	/* The run is named after the capture start, in local time like TensorFlow. */
	xo->when = start_rt > 0 ? (time_t)(start_rt / 1000000000) : time(NULL);
	if (!localtime_r(&xo->when, &tm) || !strftime(run, sizeof(run), "%Y_%m_%d_%H_%M_%S", &tm)) {
		snprintf(err, errlen, "cannot format the capture start time");
		return -1;
	}
	if (suffix && strlen(run) + strlen(suffix) >= sizeof(run)) {
		snprintf(err, errlen, "run name suffix too long: %s", suffix);
		return -1;
	}
	if (suffix)
		strcat(run, suffix);
	snprintf(xo->host, sizeof(xo->host), "%s", ci->hostname[0] ? ci->hostname : "localhost");
	for (char *c = xo->host; *c; c++)
		if (*c == ':' || *c == '/')
			*c = '_';
	if ((size_t)snprintf(parent, sizeof(parent), "%s/plugins/profile", logdir) >=
	    sizeof(parent)) {
		snprintf(err, errlen, "log directory path too long: %s", logdir);
		return -1;
	}
	/* A run folder of its own: a capture from the same second gets <run>-2. */
	if (kx_outdir_make(&xo->dir, parent, run, err, errlen))
		return -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.xplane.pb", xo->dir.path, xo->host) >=
	            sizeof(path) ||
	    (size_t)snprintf(xo->path, sizeof(xo->path), "%s", path) >= sizeof(xo->path)) {
		snprintf(err, errlen, "log directory path too long: %s", logdir);
		kx_tblogdir_abort(xo);
		return -1;
	}
	if (kx_outfile_open(&xo->pb, path, 0, err, errlen) ||
	    open_marker(xo, logdir, err, errlen)) {
		kx_tblogdir_abort(xo);
		return -1;
	}
	return 0;
}

int kx_tblogdir_write(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                      struct kx_tblogdir *xo, char *err, size_t errlen)
{
	char msg[512];
	uint8_t rec[64];
	size_t n;
	int e;

	if (kx_xspace_write_fd(an, o, xo->pb.fd, msg, sizeof(msg))) {
		snprintf(err, errlen, "cannot write %s: %s", xo->path, msg);
		return -1;
	}
	if (!xo->with_marker)
		return 0;
	n = marker_bytes(xo->when, rec);
	if ((e = kx_write_all(xo->marker.fd, rec, n))) {
		snprintf(err, errlen, "cannot write %s: %s", xo->marker.path, strerror(e));
		return -1;
	}
	return 0;
}

int kx_tblogdir_commit(struct kx_tblogdir *xo, char *err, size_t errlen)
{
	/* The profile first: a marker without it would list an empty run. */
	if (kx_outfile_commit(&xo->pb, err, errlen)) {
		kx_tblogdir_abort(xo);
		return -1;
	}
	kx_outdir_keep(&xo->dir);
	if (xo->with_marker && kx_outfile_commit(&xo->marker, err, errlen))
		return -1;
	xo->with_marker = 0;
	return 0;
}

void kx_tblogdir_abort(struct kx_tblogdir *xo)
{
	kx_outfile_abort(&xo->pb);
	if (xo->with_marker)
		kx_outfile_abort(&xo->marker);
	xo->with_marker = 0;
	kx_outdir_abort(&xo->dir);
}

int kx_tblogdir_write_run(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                          const char *logdir, char *path_out, size_t path_len, char *err,
                          size_t errlen)
{
	struct kx_tblogdir xo;

	if (kx_tblogdir_open(an->ci, logdir, NULL, &xo, err, errlen))
		return -1;
	if (kx_tblogdir_write(an, o, &xo, err, errlen)) {
		kx_tblogdir_abort(&xo);
		return -1;
	}
	if (kx_tblogdir_commit(&xo, err, errlen))
		return -1;
	if (path_out && path_len)
		snprintf(path_out, path_len, "%s", xo.path);
	return 0;
}
