/*
 * Prometheus text exposition (contract: prometheus.h). Owns the metric
 * names, HELP texts, label sets and number formats. Durations are exact
 * integers of nanoseconds in the kernel, so seconds are printed as exact
 * decimals (no float rounding): a bucket's le is the same string on every
 * scrape.
 */
#include <inttypes.h>
#include <string.h>

#include "export/prometheus.h"
#include "util/hist.h"
#include "util/json.h"

/* Exact decimal seconds of ns: "0.000001024", "34.359738368", "2". */
static const char *secs(uint64_t ns, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);

	if (n <= 0 || (size_t)n >= len)
		return buf;
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = 0;
	return buf;
}

const char *kx_prom_label_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, n = strlen(s);

	if (!len)
		return buf;
	for (size_t i = 0; i < n;) {
		const char *esc = NULL;
		size_t l = 1;

		if (p[i] == '\\')
			esc = "\\\\";
		else if (p[i] == '"')
			esc = "\\\"";
		else if (p[i] == '\n')
			esc = "\\n";
		else if (p[i] < 0x20 || p[i] == 0x7f || !(l = kx_utf8_len(p + i, n - i)))
			esc = "?", l = 1;
		if (esc) {
			if (o + strlen(esc) >= len)
				break;
			memcpy(buf + o, esc, strlen(esc));
			o += strlen(esc);
		} else {
			if (o + l >= len)
				break;
			memcpy(buf + o, p + i, l);
			o += l;
		}
		i += l;
	}
	buf[o] = 0;
	return buf;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* driver="..",device="..",ioctl=".."[,pid="..",comm=".."|,cgroup_id=".."] */
static void ioctl_labels(const struct kx_agg_row *r, enum kx_agg_by by, char *out, size_t len)
{
	char drv[64], dev[192], ioc[192], comm[64];
	int n;

	n = snprintf(out, len, "driver=\"%s\",device=\"%s\",ioctl=\"%s\"",
	             kx_prom_label_escape(r->driver, drv, sizeof(drv)),
	             kx_prom_label_escape(r->device, dev, sizeof(dev)),
	             kx_prom_label_escape(r->ioctl, ioc, sizeof(ioc)));
	if (n < 0 || (size_t)n >= len)
		return;
	if (by == KX_AGG_BY_PID)
		snprintf(out + n, len - (size_t)n, ",pid=\"%" PRIu64 "\",comm=\"%s\"",
		         (uint64_t)r->key.who, kx_prom_label_escape(r->comm, comm, sizeof(comm)));
	else if (by == KX_AGG_BY_CGROUP)
		snprintf(out + n, len - (size_t)n, ",cgroup_id=\"%" PRIu64 "\"",
		         (uint64_t)r->key.who);
}

/* device="..",ring=".." */
static void job_labels(const struct kx_jobagg_series *js, char *out, size_t len)
{
	char dev[192], ring[64];

	snprintf(out, len, "device=\"%s\",ring=\"%s\"",
	         kx_prom_label_escape(js->device, dev, sizeof(dev)),
	         kx_prom_label_escape(js->ring, ring, sizeof(ring)));
}

/* name="..",category=".." of an annotation series. */
static void ann_labels(const struct kx_annagg_series *as, char *out, size_t len)
{
	char name[4 * KX_ANN_NAME_MAX], cat[4 * KX_ANN_CAT_MAX];

	snprintf(out, len, "name=\"%s\",category=\"%s\"",
	         kx_prom_label_escape(as->name, name, sizeof(name)),
	         kx_prom_label_escape(as->cat, cat, sizeof(cat)));
}

/* One histogram series: cumulative buckets, +Inf == _count, _sum in seconds. */
static void histogram(FILE *f, const char *name, const char *labels, const uint64_t *slots,
                      uint64_t sum_ns)
{
	uint64_t cum = 0;
	char le[32];

	for (int i = 0; i < KX_HIST_SLOTS - 1; i++) {
		cum += slots[i];
		fprintf(f, "%s_bucket{%s,le=\"%s\"} %" PRIu64 "\n", name, labels,
		        secs(kx_hist_upper_ns((unsigned int)i), le, sizeof(le)), cum);
	}
	cum += slots[KX_HIST_SLOTS - 1];
	fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, labels, cum);
	fprintf(f, "%s_sum{%s} %s\n", name, labels, secs(sum_ns, le, sizeof(le)));
	fprintf(f, "%s_count{%s} %" PRIu64 "\n", name, labels, cum);
}

/* The same from fine slots: their log2 sums are the buckets. */
static void histogram_fine(FILE *f, const char *name, const char *labels, const uint64_t *fine,
                           uint64_t sum_ns)
{
	uint64_t slots[KX_HIST_SLOTS] = {0};

	kx_hist_fine_log2(fine, slots);
	histogram(f, name, labels, slots, sum_ns);
}

/* Annotation ranges (histogram) and marks (counter) per name and category. */
static void annotation_families(FILE *f, const struct kx_annagg_snapshot *as)
{
	char labels[1024];

	family(f, "kxprof_annotation_duration_seconds", "histogram",
	       "Time from an annotation range's start to its end, per name and category "
	       "(log2 buckets).");
	for (size_t i = 0; i < as->nseries; i++) {
		if (as->series[i].mark)
			continue;
		ann_labels(&as->series[i], labels, sizeof(labels));
		histogram_fine(f, "kxprof_annotation_duration_seconds", labels, as->series[i].fine,
		               as->series[i].sum_ns);
	}
	family(f, "kxprof_annotation_marks_total", "counter",
	       "Annotation marks, per name and category.");
	for (size_t i = 0; i < as->nseries; i++) {
		if (!as->series[i].mark)
			continue;
		ann_labels(&as->series[i], labels, sizeof(labels));
		fprintf(f, "kxprof_annotation_marks_total{%s} %" PRIu64 "\n", labels,
		        as->series[i].count);
	}
	family(f, "kxprof_annotation_lost_total", "counter",
	       "Annotation range ends whose start was not seen (begun before the start or a "
	       "reset, or evicted from a full table).");
	fprintf(f, "kxprof_annotation_lost_total %" PRIu64 "\n", as->lost);
}

int kx_prom_write(FILE *f, const struct kx_agg_snapshot *snap, const struct kx_prom_info *info)
{
	struct kx_agg_snapshot s;
	char labels[640], a[128], b[128], c[128], t[32];
	const char *jobs_help;
	int64_t since_rt;

	/* Label sets must be unique: rows that share names are one series. */
	if (kx_agg_snapshot_copy(snap, &s))
		return -1;
	kx_agg_fold_names(&s);

	family(f, "kxprof_build_info", "gauge",
	       "kxprof build and capture facts (value is always 1).");
	fprintf(f, "kxprof_build_info{version=\"%s\",kernel=\"%s\",mech=\"%s\"} 1\n",
	        kx_prom_label_escape(info->version ? info->version : "", a, sizeof(a)),
	        kx_prom_label_escape(info->kernel ? info->kernel : "", b, sizeof(b)),
	        kx_prom_label_escape(info->mech ? info->mech : "", c, sizeof(c)));

	since_rt = (int64_t)s.since_mono_ns + s.realtime_offset_ns;
	family(f, "kxprof_aggregation_start_time_seconds", "gauge",
	       "Unix time the aggregates count from (start, or the last reset).");
	fprintf(f, "kxprof_aggregation_start_time_seconds %s\n",
	        secs(since_rt > 0 ? (uint64_t)since_rt : 0, t, sizeof(t)));

	family(f, "kxprof_ioctl_duration_seconds", "histogram",
	       "Time from ioctl entry to exit, per driver, device and ioctl (log2 buckets).");
	for (size_t i = 0; i < s.nrows; i++) {
		ioctl_labels(&s.rows[i], s.by, labels, sizeof(labels));
		histogram_fine(f, "kxprof_ioctl_duration_seconds", labels, s.rows[i].fine,
		               s.rows[i].sum_ns);
	}

	family(f, "kxprof_ioctl_errors_total", "counter",
	       "Ioctls that returned an error, per driver, device and ioctl.");
	for (size_t i = 0; i < s.nrows; i++) {
		ioctl_labels(&s.rows[i], s.by, labels, sizeof(labels));
		fprintf(f, "kxprof_ioctl_errors_total{%s} %" PRIu64 "\n", labels, s.rows[i].errors);
	}

	family(f, "kxprof_ioctl_offcpu_seconds_total", "counter",
	       s.offcpu_measured
	               ? "Time blocked off-CPU inside ioctls, per driver, device and ioctl."
	               : "Time blocked off-CPU inside ioctls (not measured: sched_switch not "
	                 "attached).");
	for (size_t i = 0; s.offcpu_measured && i < s.nrows; i++) {
		ioctl_labels(&s.rows[i], s.by, labels, sizeof(labels));
		fprintf(f, "kxprof_ioctl_offcpu_seconds_total{%s} %s\n", labels,
		        secs(s.rows[i].offcpu_ns, t, sizeof(t)));
	}

	jobs_help = info->jobs_attached ? "" : " (no job source attached: no series)";
	fprintf(f,
	        "# HELP kxprof_job_queue_seconds Time jobs wait between queue and run, per device "
	        "and ring%s.\n"
	        "# TYPE kxprof_job_queue_seconds histogram\n",
	        jobs_help);
	for (size_t i = 0; info->jobs && i < info->jobs->nseries; i++) {
		const struct kx_jobagg_series *js = &info->jobs->series[i];

		job_labels(js, labels, sizeof(labels));
		histogram(f, "kxprof_job_queue_seconds", labels, js->queue_slots, js->queue_sum_ns);
	}
	fprintf(f,
	        "# HELP kxprof_job_exec_seconds Time jobs run on the device, per device and "
	        "ring%s.\n"
	        "# TYPE kxprof_job_exec_seconds histogram\n",
	        jobs_help);
	for (size_t i = 0; info->jobs && i < info->jobs->nseries; i++) {
		const struct kx_jobagg_series *js = &info->jobs->series[i];

		job_labels(js, labels, sizeof(labels));
		histogram(f, "kxprof_job_exec_seconds", labels, js->exec_slots, js->exec_sum_ns);
	}
	if (info->jobs) {
		family(f, "kxprof_job_inflight", "gauge",
		       "Jobs queued or running on the device now.");
		for (size_t i = 0; i < info->jobs->ndevs; i++)
			fprintf(f, "kxprof_job_inflight{device=\"%s\"} %" PRIu64 "\n",
			        kx_prom_label_escape(info->jobs->devs[i].device, a, sizeof(a)),
			        info->jobs->devs[i].inflight);
		family(f, "kxprof_job_busy_seconds_total", "counter",
		       "Time the device ran at least one job (from its run, or its queue "
		       "where the source reports no run, to its end).");
		for (size_t i = 0; i < info->jobs->ndevs; i++)
			fprintf(f, "kxprof_job_busy_seconds_total{device=\"%s\"} %s\n",
			        kx_prom_label_escape(info->jobs->devs[i].device, a, sizeof(a)),
			        secs(info->jobs->devs[i].busy_ns, t, sizeof(t)));
		family(f, "kxprof_job_busy_cut_seconds_total", "counter",
		       "Busy time that may be missing from kxprof_job_busy_seconds_total: parts of "
		       "late jobs cut where they reach back before busy intervals already folded "
		       "together (a bounded number is kept apart per device); 0: busy time is "
		       "exact.");
		for (size_t i = 0; i < info->jobs->ndevs; i++)
			fprintf(f, "kxprof_job_busy_cut_seconds_total{device=\"%s\"} %s\n",
			        kx_prom_label_escape(info->jobs->devs[i].device, a, sizeof(a)),
			        secs(info->jobs->devs[i].busy_cut_ns, t, sizeof(t)));
	}

	if (info->anns)
		annotation_families(f, info->anns);

	family(f, "kxprof_events_dropped_total", "counter",
	       "Events lost: ring buffer full (records), too many ioctls in flight, runs of "
	       "the programs the kernel skipped (one tracing program at a time per CPU), or "
	       "block request completions that never reached the program (completion_lost).");
	fprintf(f, "kxprof_events_dropped_total{reason=\"ringbuf_full\"} %" PRIu64 "\n", s.dropped);
	fprintf(f, "kxprof_events_dropped_total{reason=\"inflight_full\"} %" PRIu64 "\n",
	        s.inflight_full);
	fprintf(f, "kxprof_events_dropped_total{reason=\"kernel_skipped\"} %" PRIu64 "\n",
	        s.bpf_missed);
	fprintf(f, "kxprof_events_dropped_total{reason=\"completion_lost\"} %" PRIu64 "\n",
	        s.job_done_lost);

	family(f, "kxprof_map_overflow_total", "counter",
	       info->jobs || info->anns
	               ? "Ioctls (map=ioctl), jobs (map=jobs) or annotations (map=annotations) "
	                 "not aggregated: key, pending or series limit reached."
	               : "Ioctls not aggregated because the aggregation map reached its key "
	                 "limit.");
	fprintf(f, "kxprof_map_overflow_total{map=\"ioctl\"} %" PRIu64 "\n", s.overflow);
	if (info->jobs)
		fprintf(f, "kxprof_map_overflow_total{map=\"jobs\"} %" PRIu64 "\n",
		        info->jobs->overflow);
	if (info->anns)
		fprintf(f, "kxprof_map_overflow_total{map=\"annotations\"} %" PRIu64 "\n",
		        info->anns->overflow);

	family(f, "kxprof_aggregation_keys", "gauge", "Keys in use in the aggregation map.");
	fprintf(f, "kxprof_aggregation_keys{map=\"ioctl\"} %zu\n", snap->nrows);
	family(f, "kxprof_aggregation_keys_limit", "gauge",
	       "Key limit (cardinality) of the aggregation map.");
	fprintf(f, "kxprof_aggregation_keys_limit{map=\"ioctl\"} %u\n", s.max_keys);

	kx_agg_snapshot_free(&s);
	return ferror(f) ? -1 : 0;
}
