/* Per-CPU counter arrays summed (see percpu.h). */
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/percpu.h"

int kx_percpu_sum(int map_fd, uint32_t nkeys, uint64_t *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	memset(sum, 0, nkeys * sizeof(*sum));
	if (ncpu <= 0)
		return 0;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -1;
	for (uint32_t k = 0; k < nkeys; k++) {
		if (bpf_map_lookup_elem(map_fd, &k, vals) != 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			sum[k] += vals[c];
	}
	free(vals);
	return 0;
}
