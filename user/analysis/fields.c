/* The fields of an ioctl event (see fields.h). */
#include "analysis/fields.h"

int kx_event_has_fields(const struct kx_analysis *an, const struct kx_ioctl *e)
{
	return e->arg_in_len || e->arg_out_len || an->counters;
}

int kx_event_fields(const struct kx_analysis *an, const struct kx_ioctl *e, struct kx_field *f,
                    int max)
{
	const uint8_t *arg = kx_store_arg(an->store, e);
	int n = 0;

	if (arg)
		n = kx_ioctl_decode_args((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, arg,
		                         e->arg_in_len, arg + e->arg_in_len, e->arg_out_len, f,
		                         max);
	return n + kx_ctrstats_fields(an->counters, e, f + n, max - n);
}
