/*
 * Frame pointers kept by an ELF file's code (see fpcheck.h): a walk over
 * one symbol table, reading the first bytes of each function.
 */
#include <gelf.h>
#include <stdint.h>
#include <string.h>

#include "symbol/fpcheck.h"

#define FP_MIN_FUNCS 8 /* fewer functions looked at: no verdict (not kept) */

#define FP_WINDOW 32 /* bytes of a function's start looked at */

/* x86-64: endbr64 (optional), push %rbp first, and mov %rsp,%rbp among the
 * next instructions (compilers schedule other work between them). */
static int frame_setup(const uint8_t *b, size_t n)
{
	static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const uint8_t mov_rsp_rbp[] = {0x48, 0x89, 0xe5};

	if (n >= sizeof(endbr64) && !memcmp(b, endbr64, sizeof(endbr64))) {
		b += sizeof(endbr64);
		n -= sizeof(endbr64);
	}
	return n > 1 && b[0] == 0x55 /* push %rbp */ &&
	       memmem(b + 1, n - 1, mov_rsp_rbp, sizeof(mov_rsp_rbp)) != NULL;
}

/* The first *n bytes of function s (at least KX_FPCHECK_MIN_SIZE, at most
 * FP_WINDOW), NULL when its section holds no code in the file. */
static const uint8_t *func_code(Elf *elf, const GElf_Sym *s, size_t *n)
{
	Elf_Scn *scn = elf_getscn(elf, s->st_shndx);
	Elf_Data *d;
	GElf_Shdr sh;
	uint64_t off;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
	    !(sh.sh_flags & SHF_EXECINSTR) || s->st_value < sh.sh_addr)
		return NULL;
	d = elf_getdata(scn, NULL);
	off = s->st_value - sh.sh_addr;
	if (!d || !d->d_buf || off + KX_FPCHECK_MIN_SIZE > d->d_size)
		return NULL;
	*n = d->d_size - off;
	if (*n > s->st_size)
		*n = s->st_size;
	if (*n > FP_WINDOW)
		*n = FP_WINDOW;
	return (const uint8_t *)d->d_buf + off;
}

static void count_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct kx_fpcheck *c)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	const uint8_t *code;
	GElf_Sym s;
	size_t len;

	for (size_t i = 0; d && i < n && c->funcs < KX_FPCHECK_MAX_FUNCS; i++) {
		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
		    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE ||
		    s.st_size < KX_FPCHECK_MIN_SIZE || !(code = func_code(elf, &s, &len)))
			continue;
		c->funcs++;
		c->with_fp += frame_setup(code, len);
	}
}

int kx_fpcheck_elf(Elf *elf, struct kx_fpcheck *c)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh;

	memset(c, 0, sizeof(*c));
#if !defined(__x86_64__)
	return 0; /* the frame setup looked for is x86-64's */
#endif
	while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	scn = symtab ? symtab : dynsym;
	if (!scn || !gelf_getshdr(scn, &sh))
		return 0;
	count_table(elf, scn, &sh, c);
	return c->funcs >= FP_MIN_FUNCS && 2 * c->with_fp >= c->funcs;
}
