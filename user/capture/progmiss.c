/* Skipped runs of a BPF object's programs (see progmiss.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <string.h>

#include "capture/progmiss.h"

uint64_t kx_bpf_missed(const struct bpf_object *obj)
{
	struct bpf_program *p;
	uint64_t sum = 0;

	if (!obj)
		return 0;
	bpf_object__for_each_program(p, obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			sum += info.recursion_misses;
	}
	return sum;
}
