/*
 * Paths a privileged process creates files in, walked without following any
 * symbolic link and without trusting a directory another user controls. Owns
 * the rule for a trusted directory: every component from / down is a real
 * directory (no symbolic link), owned by root or by this process's effective
 * uid, and not writable by group or others unless its sticky bit is set (as
 * /tmp). Also owns changing a file's mode and group through such a directory
 * without following a link that may have been put at its name.
 */
#ifndef KX_SAFEPATH_H
#define KX_SAFEPATH_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * Opens directory dir (absolute, or relative to the working directory, whose
 * own components are checked too) as an O_PATH descriptor after checking
 * every component against the rule above. With mkdir_mode != 0 a missing last
 * component is created with that mode (its parent must exist). Returns the
 * fd, or -1 with err naming the component and saying what to do.
 */
int kx_safe_dir_open(const char *dir, mode_t mkdir_mode, char *err, size_t len);

/* Whether st (a directory) passes the rule for a process of effective uid euid. */
int kx_safe_dir_trusted(const struct stat *st, uid_t euid);

/*
 * Sets mode and, when gid >= 0, the group of name inside dirfd, refusing a
 * symbolic link at name (never following it). 0, or -1 with errno set
 * (ELOOP for a link).
 */
int kx_safe_chmod_at(int dirfd, const char *name, mode_t mode, long gid);

#endif /* KX_SAFEPATH_H */
