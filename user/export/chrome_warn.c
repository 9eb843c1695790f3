/*
 * The warnings of a Chrome trace (see chrome_int.h): the summary's
 * (analysis/analysis.h, analysis/flows.h) and what the exporter had to
 * do, each once, up to MAX_WARN; written as global instants at the trace's
 * start and in otherData.warnings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/flows.h"
#include "export/chrome_int.h"

void cr_warn_add(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->nwarn >= MAX_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(c->warn[c->nwarn], WARN_LEN, fmt, ap);
	va_end(ap);
	/* Each once: the windows of a part may say the same. */
	for (int i = 0; i < c->nwarn; i++)
		if (!strcmp(c->warn[i], c->warn[c->nwarn]))
			return;
	c->nwarn++;
}

static void warn_cb(void *ctx, const char *msg)
{
	cr_warn_add(ctx, "%s", msg);
}

/* The same warnings as the summary, plus what this exporter had to do. */
int cr_collect_warnings(struct ctx *c)
{
	size_t n = kx_store_ioctl_count(c->s);
	struct kx_flows fl;

	if (kx_flows_build(&fl, c->an))
		return -1;
	kx_analysis_warnings(c->an, warn_cb, c);
	kx_flows_warnings(&fl, warn_cb, c);
	kx_flows_free(&fl);
	if (n > MANY_EVENTS && !c->part)
		cr_warn_add(c,
		            "%zu events: Perfetto and chrome://tracing struggle past ~1M events; "
		            "record less (-p PID, --device, a shorter -d) or use the summary "
		            "(kxprof report)",
		            n);
	return 0;
}

/* Warnings from the from-th on, as events. */
void cr_write_warn_events(struct wbuf *w, const struct ctx *c, int from, int *first)
{
	for (int i = from; i < c->nwarn; i++) {
		wb_need(w, 64);
		wb_sep(w, first);
		/* Global instant at the start of the trace: visible without scrolling. */
		PUT_LIT(w, "{\"ph\":\"i\",\"s\":\"g\",\"ts\":0.000,\"name\":\"kxprof warning\","
		           "\"cat\":\"kxprof\",\"args\":{\"message\":");
		wb_str(w, c->warn[i]);
		wb_lit(w, "}}");
	}
}

void cr_write_warn_list(struct wbuf *w, const struct ctx *c)
{
	wb_lit(w, ",\"warnings\":[");
	for (int i = 0; i < c->nwarn; i++) {
		if (i)
			wb_lit(w, ",");
		wb_str(w, c->warn[i]);
	}
	wb_lit(w, "]");
}
