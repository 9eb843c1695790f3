/*
 * kxprof's version, the one string that everything naming it prints:
 * `kxprof --version` and serve's kxprof_build_info. The record file and the
 * daemon's wire format number their own layouts (KX_KXP_VERSION in
 * io/kxp.h, KX_DW_VERSION in capture/daemon_wire.h).
 */
#ifndef KX_MODEL_VERSION_H
#define KX_MODEL_VERSION_H

#define KX_VERSION "0.1"

#endif /* KX_MODEL_VERSION_H */
