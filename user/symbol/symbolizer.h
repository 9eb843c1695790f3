/*
 * Symbolizer: turns kernel and user addresses of samples into frames
 * (function, module, offset). It owns the kernel symbol table, the symbol
 * files (filecache.h) and one map snapshot per process: a process's maps
 * are taken at its first sample (kx_symbolizer_snapshot) and again after
 * it execs (kx_symbolizer_refresh), and the files they name are read then,
 * so a process that exits before the capture ends still resolves.
 * Frames that cannot be resolved are "[unknown]" with their module, and
 * counted.
 */
#ifndef KX_SYMBOL_SYMBOLIZER_H
#define KX_SYMBOL_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KX_UNKNOWN_FN  "[unknown]"
#define KX_KERNEL_MOD  "[kernel.kallsyms]" /* module of kernel-image frames */
#define KX_UNKNOWN_MOD "[unknown]"         /* module of addresses outside any mapping */

/* One resolved address; the strings live as long as the symbolizer. */
struct kx_frame {
	const char *func;     /* function name, or KX_UNKNOWN_FN */
	const char *module;   /* file path, "[vdso]", "[kvm]" (kernel module), KX_KERNEL_MOD */
	const char *build_id; /* hex, "" when unknown or none (kernel frames) */
	uint64_t offset;      /* bytes past the function's start; 0 when unknown */
	uint64_t mod_offset;  /* user: file offset of the address in module; kernel: 0 */
	int known;            /* 0 for [unknown] */
};

struct kx_symbolizer_stats {
	uint64_t kernel_resolved, kernel_unknown; /* kernel frames */
	uint64_t user_resolved, user_unknown;     /* user frames */
	uint64_t procs;                           /* processes with a map snapshot */
	uint64_t procs_missed;     /* processes gone (or unreadable) before their snapshot */
	uint64_t perfmap_resolved; /* user frames named by a /tmp/perf-PID.map (JIT code) */
	uint64_t perfmap_refused; /* perf maps not read: not a regular file of the process's user */
	uint64_t files_read, files_failed, files_shared; /* see struct kx_filecache_stats */
};

struct kx_symbolizer;

/* The address to resolve for frame `depth` of a stack (leaf = 0): a caller's
 * frame holds a return address, which may already be past the end of the
 * calling function (a call to a noreturn function ends it), so callers are
 * looked up one byte earlier, inside their call instruction. */
static inline uint64_t kx_frame_addr(uint64_t ip, unsigned int depth)
{
	return depth > 0 && ip > 0 ? ip - 1 : ip;
}

/* The same for user frame i of a sample: its leaf is the interrupted
 * instruction only when the sample was taken in user mode; otherwise it is
 * where the thread entered the kernel (after its syscall instruction). */
static inline uint64_t kx_user_frame_addr(uint64_t ip, unsigned int i, int in_kernel)
{
	return kx_frame_addr(ip, i + (in_kernel ? 1u : 0u));
}

/* kallsyms: NULL for /proc/kallsyms (a path for tests). Never fails but for
 * memory: without kernel symbols, kernel frames are [unknown] and
 * kx_symbolizer_warning says why. NULL with err set when out of memory. */
struct kx_symbolizer *kx_symbolizer_new(const char *kallsyms, char *err, size_t len);
/* User symbols only from files each process could read itself
 * (kx_filecache_as_process): a privileged reader acting for a user. */
void kx_symbolizer_as_process(struct kx_symbolizer *s);
/* Why kernel frames will not resolve ("" when they will). */
const char *kx_symbolizer_warning(const struct kx_symbolizer *s);
/* Takes pid's map snapshot unless it has one: 0, or -1 with err set when
 * the process is gone or its maps cannot be read (counted once in
 * procs_missed; later calls do not try again, kx_symbolizer_refresh does). */
int kx_symbolizer_snapshot(struct kx_symbolizer *s, pid_t pid, char *err, size_t len);
/* Takes pid's snapshot again (after exec, or one missed): 0 or -1 as above;
 * a missed snapshot taken now is no longer counted in procs_missed. */
int kx_symbolizer_refresh(struct kx_symbolizer *s, pid_t pid, char *err, size_t len);
/* 1 when pid's snapshot has a mapping holding addr (0 also without a snapshot). */
int kx_symbolizer_has_map(const struct kx_symbolizer *s, pid_t pid, uint64_t addr);
/* 1 when pid's snapshot was missed (no maps: kx_symbolizer_refresh may
 * still take it while the process lives). */
int kx_symbolizer_missed(const struct kx_symbolizer *s, pid_t pid);
void kx_symbolizer_kernel(struct kx_symbolizer *s, uint64_t addr, struct kx_frame *out);
/* An address of process pid, through its snapshot (taken now if it has none). */
void kx_symbolizer_user(struct kx_symbolizer *s, pid_t pid, uint64_t addr, struct kx_frame *out);
void kx_symbolizer_stats(const struct kx_symbolizer *s, struct kx_symbolizer_stats *st);
void kx_symbolizer_free(struct kx_symbolizer *s);

#endif /* KX_SYMBOL_SYMBOLIZER_H */
