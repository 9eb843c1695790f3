/*
 * User symbols of one ELF file (executable, shared library or the vdso
 * image): the function symbols of .symtab and .dynsym read with libelf,
 * sorted by address, the file's GNU build id, and the rule that turns a
 * run-time address of a mapping into the file's own (link-time) address:
 * ET_EXEC files are loaded at their link addresses; for ET_DYN (PIE, .so,
 * vdso) the file offset is addr - map_start + map_offset and the link
 * address is that offset + (.text sh_addr - .text sh_offset). This module
 * owns the table and its names.
 */
#ifndef KX_SYMBOL_ELFSYMS_H
#define KX_SYMBOL_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

#define KX_BUILD_ID_MAX 20 /* bytes of a GNU build id (SHA-1) */

struct kx_elfsyms;

/* Where detached debug files are looked up by build id. */
#define KX_DEBUG_DIR "/usr/lib/debug"

/* Reads the symbols of the ELF file open at fd (not closed), with those of
 * its detached debug file when the system has one (KX_DEBUG_DIR/.build-id/
 * NN/REST.debug: a stripped library's local functions). NULL with err
 * set when it is not a readable ELF file; a file without symbols is not
 * an error (its frames stay unresolved). */
struct kx_elfsyms *kx_elfsyms_read_fd(int fd, char *err, size_t len);
/* The same from an image in memory (the vdso); the bytes are not kept. */
struct kx_elfsyms *kx_elfsyms_read_mem(const void *img, size_t size, char *err, size_t len);
/* The GNU build id of the ELF file at fd without reading its symbols: its
 * length in bytes (0: none, -1: not ELF). */
int kx_elf_build_id_fd(int fd, uint8_t out[KX_BUILD_ID_MAX]);
/* The same for an image in memory. */
int kx_elf_build_id_mem(const void *img, size_t size, uint8_t out[KX_BUILD_ID_MAX]);

/* The file's link-time address of run-time address addr in a mapping at
 * map_start whose first byte is file offset map_offset. */
uint64_t kx_elfsyms_link_addr(const struct kx_elfsyms *e, uint64_t addr, uint64_t map_start,
                              uint64_t map_offset);
/* The function containing link-time address vaddr, with *off = vaddr - its
 * start; NULL when none does. */
const char *kx_elfsyms_find(const struct kx_elfsyms *e, uint64_t vaddr, uint64_t *off);
/* The link-time address of the first function of that name (0 when none). */
uint64_t kx_elfsyms_addr_of(const struct kx_elfsyms *e, const char *name);
size_t kx_elfsyms_count(const struct kx_elfsyms *e);
/* Build id bytes (its length; 0 when the file has none). */
int kx_elfsyms_build_id(const struct kx_elfsyms *e, const uint8_t **id);
/* Lower-case hex of n bytes into out (2n+1 bytes). */
void kx_build_id_hex(const uint8_t *id, int n, char *out);
void kx_elfsyms_free(struct kx_elfsyms *e);

#endif /* KX_SYMBOL_ELFSYMS_H */
