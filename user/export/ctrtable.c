/* The report's counters section (see ctrtable.h). */
#include <inttypes.h>
#include <string.h>

#include "export/ctrtable.h"
#include "util/json.h"

#define NAME_W 22 /* name column */
#define CTR_W  22 /* one counter: total and mean */

static double mean(const struct kx_ctrrow *r, int k)
{
	return r->counted[k] ? (double)r->total[k] / (double)r->counted[k] : 0;
}

static void head(const struct kx_ctrstats *cs, FILE *f)
{
	fprintf(f, "%-*s %9s", NAME_W, "Name", "Calls");
	for (int k = 0; k < cs->n; k++)
		fprintf(f, "   %*.*s", CTR_W - 3, CTR_W - 3, cs->names[k]);
	fprintf(f, "\n%-*s %9s", NAME_W, "", "");
	for (int k = 0; k < cs->n; k++)
		fprintf(f, "   %9s %9s", "Total", "Mean");
	fputc('\n', f);
}

static void row(const struct kx_ctrstats *cs, const struct kx_ctrrow *r, FILE *f)
{
	if (strlen(r->name) > NAME_W) /* its own line, the figures under it */
		fprintf(f, "%s\n%-*s", r->name, NAME_W, "");
	else
		fprintf(f, "%-*s", NAME_W, r->name);
	fprintf(f, " %9" PRIu64, r->calls);
	for (int k = 0; k < cs->n; k++)
		if (r->counted[k])
			fprintf(f, "   %9" PRIu64 " %9.*f", r->total[k], mean(r, k) < 1000 ? 2 : 0,
			        mean(r, k));
		else
			fprintf(f, "   %9s %9s", "-", "-");
	fputc('\n', f);
}

void kx_ctrtable_print(const struct kx_ctrstats *cs, FILE *f)
{
	const char *cat = NULL;

	if (!cs)
		return;
	fprintf(f, "\nCounters inside driver calls (counted only while the calling thread was on a "
	           "CPU)\n");
	if (cs->unmatched)
		fprintf(f,
		        "WARNING: %" PRIu64 " calls' counters have no ioctl record (it was dropped "
		        "or not stored): left out\n",
		        cs->unmatched);
	if (cs->partial)
		fprintf(f,
		        "WARNING: %" PRIu64 " calls had a counter reading fail: their values are "
		        "short\n",
		        cs->partial);
	if (cs->multiplexed)
		fprintf(f,
		        "NOTE: %" PRIu64 " values were scaled by enabled/running time (the kernel "
		        "multiplexed the counter)\n",
		        cs->multiplexed);
	for (size_t i = 0; i < cs->nrows; i++) {
		if (!cat || strcmp(cat, cs->rows[i].cat)) {
			cat = cs->rows[i].cat;
			fprintf(f, "\n%s\n", cat);
			head(cs, f);
		}
		row(cs, &cs->rows[i], f);
	}
	if (!cs->nrows)
		fprintf(f, "(no traced call was measured)\n");
}

void kx_ctrtable_json(const struct kx_ctrstats *cs, FILE *f)
{
	const char *cat = NULL;

	if (!cs) {
		fputs("null", f);
		return;
	}
	fputs("{\"Names\": [", f);
	for (int k = 0; k < cs->n; k++) {
		fputs(k ? ", " : "", f);
		kx_json_cstr(f, cs->names[k]);
	}
	fprintf(f,
	        "], \"Emitted\": %" PRIu64 ", \"Received\": %" PRIu64 ", \"Dropped\": %" PRIu64
	        ", \"ReadFailures\": %" PRIu64 ", \"NotMeasured\": %" PRIu64
	        ", \"Unmatched\": %" PRIu64 ", \"Partial\": %" PRIu64 ", \"Multiplexed\": %" PRIu64
	        ", \"Rows\": {",
	        cs->stats[KX_CTR_EMITTED], cs->stats[KX_CTR_RECEIVED], cs->stats[KX_CTR_DROPPED],
	        cs->stats[KX_CTR_READ_FAIL], cs->stats[KX_CTR_NOSLOT], cs->unmatched, cs->partial,
	        cs->multiplexed);
	for (size_t i = 0; i < cs->nrows; i++) {
		const struct kx_ctrrow *r = &cs->rows[i];

		if (!cat || strcmp(cat, r->cat)) {
			fputs(cat ? "}, " : "", f);
			cat = r->cat;
			kx_json_cstr(f, cat);
			fputs(": {", f);
		} else {
			fputs(", ", f);
		}
		kx_json_cstr(f, r->name);
		fprintf(f, ": {\"Calls\": %" PRIu64, r->calls);
		for (int k = 0; k < cs->n; k++) {
			fputs(", ", f);
			kx_json_cstr(f, cs->names[k]);
			if (r->counted[k])
				fprintf(f, ": {\"Total\": %" PRIu64 ", \"Mean\": %.6g}",
				        r->total[k], mean(r, k));
			else
				fputs(": null", f);
		}
		fputc('}', f);
	}
	fputs(cat ? "}}}" : "}}", f);
}
