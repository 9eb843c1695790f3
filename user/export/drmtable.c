/* The report's DRM usage section (see export/drmtable.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export/drmtable.h"
#include "util/json.h"
#include "util/units.h"

static const char *const basis_names[] = {"none", "ns", "cycles", "maxfreq"};

static const char *basis_name(unsigned int b)
{
	return b < sizeof(basis_names) / sizeof(basis_names[0]) ? basis_names[b] : "?";
}

/* Bytes as "812K", "13.0M", "2.00G" (binary units), "-" when not given. */
static void fmt_bytes(char *buf, size_t len, uint64_t v, int given)
{
	if (!given)
		snprintf(buf, len, "-");
	else if (v < 1024)
		snprintf(buf, len, "%" PRIu64 "B", v);
	else if (v < (1ull << 20))
		snprintf(buf, len, "%.1fK", v / 1024.0);
	else if (v < (1ull << 30))
		snprintf(buf, len, "%.1fM", v / 1048576.0);
	else
		snprintf(buf, len, "%.2fG", v / 1073741824.0);
}

static void pct(char *buf, size_t len, double share)
{
	if (share < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", share * 100);
}

static void print_engines(const struct kx_drmstats *s, FILE *f)
{
	fprintf(f, "\n%-8s %-15s %-10s %-16s %6s %6s %10s %4s %s\n", "PID", "COMM", "DRIVER",
	        "ENGINE", "BUSY%", "PEAK%", "BUSY", "CAP", "BASIS");
	for (size_t i = 0; i < s->neng; i++) {
		const struct kx_drm_proc_engine *e = &s->eng[i];
		double busy = kx_drm_proc_engine_busy(e);
		char b[16], p[16], t[32];

		pct(b, sizeof(b), busy);
		pct(p, sizeof(p), busy < 0 ? -1 : e->peak);
		kx_fmt_time(t, sizeof(t), (uint64_t)(e->busy_ns + 0.5));
		fprintf(f, "%-8u %-15.15s %-10.10s %-16.16s %6s %6s %10s %4u %-7s\n", e->pid,
		        e->comm, e->driver, e->engine, b, p, busy < 0 ? "-" : t,
		        e->capacity ? e->capacity : 1, basis_name(e->basis));
	}
	if (!s->neng)
		fprintf(f, "(no engine figures: the drivers gave none)\n");
}

static void print_memory(const struct kx_drmstats *s, FILE *f)
{
	if (!s->nmem)
		return;
	fprintf(f, "\n%-8s %-15s %-10s %-14s %9s %9s %9s %9s %9s %9s\n", "PID", "COMM", "DRIVER",
	        "REGION", "TOTAL", "RESIDENT", "PEAK-RES", "SHARED", "ACTIVE", "PURGEABLE");
	for (size_t i = 0; i < s->nmem; i++) {
		const struct kx_drm_proc_mem *m = &s->mem[i];
		char v[KX_DRM_MEM_MAX][16], peak[16];

		for (int k = 0; k < KX_DRM_MEM_MAX; k++)
			fmt_bytes(v[k], sizeof(v[k]), m->last[k], m->has & (1u << k));
		fmt_bytes(peak, sizeof(peak), m->peak_resident,
		          m->has & (1u << KX_DRM_MEM_RESIDENT));
		fprintf(f, "%-8u %-15.15s %-10.10s %-14.14s %9s %9s %9s %9s %9s %9s\n", m->pid,
		        m->comm, m->driver, m->region, v[KX_DRM_MEM_TOTAL], v[KX_DRM_MEM_RESIDENT],
		        peak, v[KX_DRM_MEM_SHARED], v[KX_DRM_MEM_ACTIVE], v[KX_DRM_MEM_PURGEABLE]);
	}
}

void kx_drmtable_print(const struct kx_drmstats *s, const struct kx_capinfo *ci, FILE *f)
{
	const uint64_t *st = ci->drm.stats;

	if (!ci->drm.interval_ms && !(s && s->rows))
		return;
	fprintf(f,
	        "\nDRM usage per process (fdinfo every %.3g s: %" PRIu64 " passes, %" PRIu64
	        " fdinfo reads)\n",
	        ci->drm.interval_ms / 1000.0, st[KX_DRMI_PASSES], st[KX_DRMI_FDINFO_READS]);
	if (st[KX_DRMI_ROWS_LOST])
		fprintf(f, "WARNING: %" PRIu64 " DRM usage records were lost to a write error\n",
		        st[KX_DRMI_ROWS_LOST]);
	if (st[KX_DRMI_UNREADABLE])
		fprintf(f,
		        "NOTE: %" PRIu64 " fd directories or fdinfo files could not be read "
		        "(processes of other users need root)\n",
		        st[KX_DRMI_UNREADABLE]);
	if (!s || !s->rows) {
		fprintf(f, "(no DRM or accel client among the traced processes)\n");
		return;
	}
	print_engines(s, f);
	print_memory(s, f);
}

static void json_pct(FILE *f, double share)
{
	if (share < 0)
		fputs("null", f);
	else
		fprintf(f, "%.3f", share * 100);
}

static void json_key(FILE *f, const char *k, const char *v)
{
	fprintf(f, "\"%s\": ", k);
	kx_json_cstr(f, v);
}

/* The start of row i of a list: its process, device and what (kind: its
 * key, "Engine" or "Region"). */
static void row_key(FILE *f, size_t i, uint32_t pid, const char *comm, const char *driver,
                    const char *pdev, const char *kind, const char *what)
{
	fprintf(f, "%s{\"Pid\": %u, ", i ? ", " : "", pid);
	json_key(f, "Comm", comm);
	fputs(", ", f);
	json_key(f, "Driver", driver);
	fputs(", ", f);
	json_key(f, "Pdev", pdev);
	fputs(", ", f);
	json_key(f, kind, what);
}

void kx_drmtable_json(const struct kx_drmstats *s, const struct kx_capinfo *ci, FILE *f)
{
	const uint64_t *st = ci->drm.stats;

	fprintf(f,
	        "{\"IntervalMs\": %" PRIu64 ", \"Passes\": %" PRIu64 ", \"FdinfoReads\": %" PRIu64
	        ", \"Engines\": [",
	        ci->drm.interval_ms, st[KX_DRMI_PASSES], st[KX_DRMI_FDINFO_READS]);
	for (size_t i = 0; s && i < s->neng; i++) {
		const struct kx_drm_proc_engine *e = &s->eng[i];
		double busy = kx_drm_proc_engine_busy(e);

		row_key(f, i, e->pid, e->comm, e->driver, e->pdev, "Engine", e->engine);
		fprintf(f, ", \"Capacity\": %u, \"Basis\": \"%s\", \"BusyPct\": ",
		        e->capacity ? e->capacity : 1, basis_name(e->basis));
		json_pct(f, busy);
		fputs(", \"PeakPct\": ", f);
		json_pct(f, busy < 0 ? -1 : e->peak);
		fprintf(f, ", \"BusyNs\": %.0f, \"ObservedNs\": %" PRIu64 "}", e->busy_ns,
		        e->observed_ns);
	}
	fputs("], \"Memory\": [", f);
	for (size_t i = 0; s && i < s->nmem; i++) {
		const struct kx_drm_proc_mem *m = &s->mem[i];

		row_key(f, i, m->pid, m->comm, m->driver, m->pdev, "Region", m->region);
		fprintf(f, ", \"PeakResident\": %" PRIu64, m->peak_resident);
		for (int k = 0; k < KX_DRM_MEM_MAX; k++)
			if (m->has & (1u << k))
				fprintf(f, ", \"%s\": %" PRIu64, kx_drm_mem_names[k], m->last[k]);
		fputs("}", f);
	}
	fputs("]}", f);
}

/* Resident bytes of pid on driver, all regions; given: whether any region said. */
static uint64_t resident_of(const struct kx_drmstats *s, uint32_t pid, const char *driver,
                            int *given)
{
	uint64_t b = 0;

	*given = 0;
	for (size_t i = 0; i < s->nmem; i++)
		if (s->mem[i].pid == pid && !strcmp(s->mem[i].driver, driver) &&
		    (s->mem[i].has & (1u << KX_DRM_MEM_RESIDENT))) {
			b += s->mem[i].last[KX_DRM_MEM_RESIDENT];
			*given = 1;
		}
	return b;
}

static int has_engine(const struct kx_drmstats *s, uint32_t pid, const char *driver)
{
	for (size_t i = 0; i < s->neng; i++)
		if (s->eng[i].pid == pid && !strcmp(s->eng[i].driver, driver))
			return 1;
	return 0;
}

void kx_drmtable_print_live(const struct kx_drmstats *s, FILE *f, int rows, int cols)
{
	char line[512], b[16], r[16];
	int shown = 0, given;

	if (!s)
		return;
	fprintf(f, "\n%.*s\n", cols, "DRM usage (fdinfo) of the last interval");
	snprintf(line, sizeof(line), "%-8s %-15s %-10s %-16s %6s %9s", "PID", "COMM", "DRIVER",
	         "ENGINE", "BUSY%", "RESIDENT");
	fprintf(f, "%.*s\n", cols, line);
	for (size_t i = 0; i < s->neng && shown < rows; i++, shown++) {
		const struct kx_drm_proc_engine *e = &s->eng[i];
		uint64_t res = resident_of(s, e->pid, e->driver, &given);

		pct(b, sizeof(b), kx_drm_proc_engine_busy(e));
		fmt_bytes(r, sizeof(r), res, given);
		snprintf(line, sizeof(line), "%-8u %-15.15s %-10.10s %-16.16s %6s %9s", e->pid,
		         e->comm, e->driver, e->engine, b, r);
		fprintf(f, "%.*s\n", cols, line);
	}
	/* Clients with memory and no engine figures (an accel device's). */
	for (size_t i = 0; i < s->nmem && shown < rows; i++) {
		const struct kx_drm_proc_mem *m = &s->mem[i];
		int first = 1;

		for (size_t k = 0; k < i; k++)
			first &= !(s->mem[k].pid == m->pid && !strcmp(s->mem[k].driver, m->driver));
		if (!first || has_engine(s, m->pid, m->driver))
			continue;
		fmt_bytes(r, sizeof(r), resident_of(s, m->pid, m->driver, &given), given);
		snprintf(line, sizeof(line), "%-8u %-15.15s %-10.10s %-16s %6s %9s", m->pid,
		         m->comm, m->driver, "-", "-", r);
		fprintf(f, "%.*s\n", cols, line);
		shown++;
	}
	if (!s->neng && !s->nmem)
		fprintf(f, "(no DRM or accel client among the traced processes)\n");
}
