/*
 * Event sink: where a capture's received events go. The session calls begin
 * on the caller's thread at start, the consumer thread calls the rest.
 */
#ifndef KX_CAPTURE_SINK_H
#define KX_CAPTURE_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "model/annot.h"
#include "model/capinfo.h"
#include "model/counter.h"
#include "model/event.h"
#include "model/sample.h"

/* Where received events go. Called on the consumer thread, except begin.
 * Every callback is optional (NULL: that kind of event is counted, not kept). */
struct kx_sink {
	void *ctx;
	/* arg: arg_in_len + arg_out_len bytes (in, then out), NULL when none. */
	void (*ioctl)(void *ctx, const struct kx_ioctl *e, const uint8_t *arg);
	void (*task)(void *ctx, const struct kx_task *t);
	/* Job lifecycle events (device timelines); job sources load only with it. */
	void (*job)(void *ctx, const struct kx_job *j);
	/* CPU samples and off-CPU intervals (frames borrowed for the call). */
	void (*sample)(void *ctx, const struct kx_sample *s);
	/* The perf counters of one traced call (record --counters). */
	void (*counters)(void *ctx, const struct kx_ctr_ev *e);
	/* Annotation events: name and cat (PUSH, MARK, START; else "") are
	 * NUL-terminated, a's name and cat ids unset. */
	void (*annot)(void *ctx, const struct kx_ann *a, const char *name, const char *cat);
	/* Roughly every 100 ms and once after the final drain. */
	void (*tick)(void *ctx);
	/* Once in kx_session_start, on the caller's thread, with the session's
	 * facts and start clock, before any event: 0, or -1 with err (start fails). */
	int (*begin)(void *ctx, const struct kx_capinfo *ci, char *err, size_t len);
};

#endif /* KX_CAPTURE_SINK_H */
