/*
 * One active kxprof TensorFlow plugin per process. TensorFlow loads every
 * copy it finds (a tensorflow-plugins directory and
 * TF_PLUGGABLE_DEVICE_LIBRARY_PATH) and registers each; two copies are two
 * libraries with their own state, and both would capture every ioctl, so the
 * merged profile would hold each event twice. The first copy to register
 * claims the process; the others stay inactive.
 */
#ifndef KX_TF_CLAIM_H
#define KX_TF_CLAIM_H

/*
 * Claims the calling process for this copy of the plugin: 1 when this copy
 * holds the claim (now or from an earlier call), 0 when another copy in the
 * process holds it. The claim is an abstract unix socket named after the
 * process (pid and start time), bound for the life of the process; where no
 * such socket can be made the copy assumes it is alone (1).
 */
int kx_tf_claim_process(void);

#endif
