/*
 * The ids TensorFlow gives its own /host:CPU thread lines, so that kxprof's
 * events of a thread go on that same line when TensorFlow merges the
 * planes. TensorFlow 2.21 (TSL) names a thread's line by
 * std::hash<std::thread::id> of its pthread_t, which libstdc++ computes as
 * _Hash_bytes(&pthread_t, 8, 0xc70f6907); kxprof reads each thread's
 * pthread_t in the kernel (capture/threadptr.h, x86_64 with glibc).
 */
#ifndef KX_TF_LINES_H
#define KX_TF_LINES_H

#include <stdint.h>

/* TensorFlow's line id of the thread whose pthread_t is pthread_self. */
uint64_t kx_tf_line_id(uint64_t pthread_self);

/* Whether the process holds TensorFlow's library (not a stand-in host). */
int kx_tf_present(void);

#endif
