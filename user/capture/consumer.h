/*
 * Consumer: the thread that drains the BPF ring buffer in batches (the BPF
 * side wakes it only past a fill threshold; it also polls on a timer),
 * validates each record, converts it to the event model and hands it to the
 * sink. Counts what it received so received + dropped == emitted can be shown.
 */
#ifndef KX_CONSUMER_H
#define KX_CONSUMER_H

#include <stddef.h>
#include <stdint.h>

#include "capture/sink.h"
#include "capture/ustack.h"

struct kx_consumer;

struct kx_consumer *kx_consumer_new(int ringbuf_fd, const struct kx_sink *sink, char *err,
                                    size_t len);
/* --call-graph dwarf: stack copies go to p, and samples take their
 * unwound frames from it (before start; p stays the caller's). */
void kx_consumer_set_ustack(struct kx_consumer *c, struct kx_ustack_pair *p);
int kx_consumer_start(struct kx_consumer *c, char *err, size_t len);
/* Stops the thread, then drains everything still in the ring. */
void kx_consumer_stop(struct kx_consumer *c);
void kx_consumer_free(struct kx_consumer *c);
uint64_t kx_consumer_ioctls(const struct kx_consumer *c);
uint64_t kx_consumer_tasks(const struct kx_consumer *c);
uint64_t kx_consumer_jobs(const struct kx_consumer *c); /* job records, sink or not */
uint64_t kx_consumer_anns(const struct kx_consumer *c); /* annotation records */
uint64_t kx_consumer_malformed(const struct kx_consumer *c);
uint64_t kx_consumer_samples(const struct kx_consumer *c);  /* CPU sample records */
uint64_t kx_consumer_offcpu(const struct kx_consumer *c);   /* off-CPU records */
uint64_t kx_consumer_counters(const struct kx_consumer *c); /* counter records */

#endif /* KX_CONSUMER_H */
