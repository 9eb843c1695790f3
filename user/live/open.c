/* The always-on capture of top and serve (contract: open.h). */
#include <stdio.h>

#include "live/annagg.h"
#include "live/jobagg.h"
#include "live/open.h"

int kx_capture_live(struct kx_capture *c, struct kx_capture_opts *o, const char *pid_list,
                    struct kx_jobagg **jobs, struct kx_annagg **anns, char *err, size_t len)
{
	struct kx_sink job_sink;

	o->all = pid_list == NULL;
	o->pids = c->live_pids;
	o->npids = 0;
	if (pid_list &&
	    kx_pidset_parse(pid_list, c->live_pids, KX_MAX_PIDS, &o->npids, err, len) != 0)
		return -1;
	*jobs = kx_jobagg_new(0, 0);
	*anns = kx_annagg_new(o->agg_max_keys);
	if (!*jobs || !*anns) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	/* Aggregate mode sends no ioctl records; job and annotation records do flow. */
	o->ringbuf_bytes = 1 << 20;
	o->no_drvhooks = 1;
	o->aggregate = 1;
	o->annotate = 1;
	job_sink = kx_jobagg_sink(*jobs);
	o->sink = kx_annagg_sink(*anns, &job_sink);
	if (kx_capture_open(c, o, err, len) != 0)
		return -1;
	return kx_capture_start(c, err, len);
}
