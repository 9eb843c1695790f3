/* Event sinks: bounded store, streamed record file. */
#include "capture/clock.h"
#include "capture/sinks.h"

static void store_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	kx_store_add_ioctl(ctx, e, arg);
}

static void store_task(void *ctx, const struct kx_task *t)
{
	kx_store_add_task(ctx, t);
}

static void store_job(void *ctx, const struct kx_job *j)
{
	kx_store_add_job(ctx, j);
}

static void store_annot(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	kx_store_add_ann(ctx, a, name, cat);
}

struct kx_sink kx_sink_store(struct kx_store *store)
{
	return (struct kx_sink){.ctx = store,
	                        .ioctl = store_ioctl,
	                        .task = store_task,
	                        .job = store_job,
	                        .annot = store_annot};
}

static void kxp_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_ioctl(ks->w, e, arg) != 0 && !ks->write_error)
		ks->write_error = 1;
}

static void kxp_task(void *ctx, const struct kx_task *t)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_task(ks->w, t) != 0 && !ks->write_error)
		ks->write_error = 1;
}

static void kxp_job(void *ctx, const struct kx_job *j)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_job(ks->w, j) != 0 && !ks->write_error)
		ks->write_error = 1;
}

static void kxp_annot(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_ann(ks->w, a, name, cat) != 0 && !ks->write_error)
		ks->write_error = 1;
}

static void kxp_tick(void *ctx)
{
	struct kx_kxp_sink *ks = ctx;
	unsigned long long now = kx_mono_ns();

	if (now - ks->last_flush_ns >= (unsigned long long)ks->flush_ms * 1000000ull) {
		if (kx_kxp_flush(ks->w) != 0 && !ks->write_error)
			ks->write_error = 1;
		ks->last_flush_ns = now;
	}
}

static int kxp_begin(void *ctx, const struct kx_capinfo *ci, char *err, size_t len)
{
	struct kx_kxp_sink *ks = ctx;

	ks->w = ks->stream ? kx_kxp_create_stream(ks->stream, ci, err, len)
	                   : kx_kxp_create(ks->path, ci, err, len);
	ks->last_flush_ns = kx_mono_ns();
	return ks->w ? 0 : -1;
}

struct kx_sink kx_sink_kxp(struct kx_kxp_sink *ks)
{
	if (!ks->flush_ms)
		ks->flush_ms = 1000;
	ks->last_flush_ns = kx_mono_ns();
	return (struct kx_sink){.ctx = ks,
	                        .ioctl = kxp_ioctl,
	                        .task = kxp_task,
	                        .job = kxp_job,
	                        .annot = kxp_annot,
	                        .tick = kxp_tick,
	                        .begin = kxp_begin};
}

int kx_kxp_sink_close(struct kx_kxp_sink *ks, const struct kx_capinfo *ci, char *err, size_t len)
{
	struct kx_kxp_writer *w = ks->w;

	if (!w)
		return 0;
	ks->w = NULL;
	return kx_kxp_close(w, ci, err, len);
}

void kx_kxp_sink_discard(struct kx_kxp_sink *ks)
{
	if (ks->w)
		kx_kxp_discard(ks->w);
	ks->w = NULL;
}
