/* Counter definitions and per-call readings (see counter.h). */
#include <linux/perf_event.h>
#include <string.h>

#include "model/counter.h"

static const struct kx_counter_def defs[] = {
        {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, "cpu-cycles"},
        {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, NULL},
        {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 0, NULL},
        {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 0, NULL},
        {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 0,
         "branch-instructions"},
        {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 0, NULL},
        {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, "faults"},
        {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, NULL},
        {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 0, NULL},
        {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, "cs"},
        /* The kernel counts a migration where the wakeup runs, not on the
         * migrated thread's CPU: counted at sched_switch instead. */
        {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1, "migrations"},
};

const struct kx_counter_def *kx_counter_find(const char *name)
{
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (!strcmp(defs[i].name, name) || (defs[i].alias && !strcmp(defs[i].alias, name)))
			return &defs[i];
	return NULL;
}

const char *kx_counter_names(void)
{
	return "cycles, instructions, cache-misses, cache-references, branches, branch-misses, "
	       "page-faults, minor-faults, major-faults, context-switches, cpu-migrations";
}

void kx_ctr_ev_from_rec(const struct kx_counter_rec *r, struct kx_ctr_ev *e)
{
	uint32_t n = r->n < KX_MAX_COUNTERS ? r->n : KX_MAX_COUNTERS;

	memset(e, 0, sizeof(*e));
	e->ts = r->ts;
	e->pid = r->pid;
	e->tid = r->tid;
	e->n = (uint8_t)n;
	e->flags = (uint8_t)r->flags;
	for (uint32_t i = 0; i < n; i++) {
		const struct kx_ctr_value *v = &r->v[i];

		if (v->running == 0 && v->enabled > 0) {
			e->not_counted |= (uint8_t)(1u << i);
			continue;
		}
		if (v->running < v->enabled) {
			e->v[i] = (uint64_t)((unsigned __int128)v->count * v->enabled / v->running);
			e->multiplexed |= (uint8_t)(1u << i);
		} else {
			e->v[i] = v->count;
		}
	}
}
