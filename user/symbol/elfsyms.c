/*
 * User symbols of one ELF file (see elfsyms.h): function symbols of .symtab
 * and .dynsym (one per address: the sized, then the global one), the .text bias of
 * ET_DYN files and the GNU build id note.
 */
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/arena.h"
#include "symbol/elfsyms.h"
#include "util/grow.h"

struct sym {
	uint64_t addr; /* link-time address (first: kx_addr_floor) */
	uint64_t size; /* bytes, 0 when the symbol does not say */
	size_t name;   /* arena offset */
	int rank;      /* of aliases, the lowest is kept: 0 global, 1 weak, 2 local */
};

struct kx_elfsyms {
	int type;      /* ET_EXEC or ET_DYN */
	uint64_t bias; /* .text sh_addr - sh_offset: link address of file offset 0 */
	uint8_t build_id[KX_BUILD_ID_MAX];
	int build_id_len; /* bytes, 0: none */
	struct sym *syms;
	size_t n, cap;
	struct kx_arena names;
};

/* The GNU build id in a note section's data, its length (0: none there). */
static int note_build_id(Elf_Data *d, uint8_t out[KX_BUILD_ID_MAX])
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0) {
			int n = nh.n_descsz < KX_BUILD_ID_MAX ? (int)nh.n_descsz : KX_BUILD_ID_MAX;

			memcpy(out, (char *)d->d_buf + desc_off, n);
			return n;
		}
		off = next;
	}
	return 0;
}

static int find_build_id(Elf *elf, uint8_t out[KX_BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int n = 0;

	while (!n && (scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf)
			n = note_build_id(d, out);
	}
	return n;
}

static int add_syms(struct kx_elfsyms *e, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < count; i++) {
		const char *name;
		GElf_Sym s;
		int t;

		if (!gelf_getsym(d, (int)i, &s))
			continue;
		t = GELF_ST_TYPE(s.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (kx_grow((void **)&e->syms, &e->cap, e->n, sizeof(*e->syms)))
			return -1;
		e->syms[e->n].addr = s.st_value;
		e->syms[e->n].size = s.st_size;
		e->syms[e->n].rank = GELF_ST_BIND(s.st_info) == STB_GLOBAL ? 0
		                     : GELF_ST_BIND(s.st_info) == STB_WEAK ? 1
		                                                           : 2;
		e->syms[e->n].name = kx_arena_add(&e->names, name);
		if (e->syms[e->n].name == KX_ARENA_NONE)
			return -1;
		e->n++;
	}
	return 0;
}

/* Link address of file offset 0 from the first executable segment (files without .text). */
static uint64_t exec_segment_bias(Elf *elf)
{
	size_t n = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			return ph.p_vaddr - ph.p_offset;
	return 0;
}

static int read_sections(struct kx_elfsyms *e, Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int have_text = 0;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (name && strcmp(name, ".text") == 0) {
			e->bias = sh.sh_addr - sh.sh_offset;
			have_text = 1;
		}
		if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
		    add_syms(e, elf, scn, &sh))
			return -1;
	}
	if (!have_text)
		e->bias = exec_segment_bias(elf);
	return 0;
}

/* By address, then the sized (then larger) symbol first, then the global one. */
static int by_addr(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->rank - y->rank;
}

static void sort_unique(struct kx_elfsyms *e)
{
	size_t w = 0;

	if (e->n > 1)
		qsort(e->syms, e->n, sizeof(*e->syms), by_addr);
	for (size_t i = 0; i < e->n; i++)
		if (w == 0 || e->syms[w - 1].addr != e->syms[i].addr)
			e->syms[w++] = e->syms[i];
	e->n = w;
}

static struct kx_elfsyms *read_elf(Elf *elf, char *err, size_t len)
{
	struct kx_elfsyms *e;
	GElf_Ehdr eh;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		snprintf(err, len, "not an ELF file (%s)", elf_errmsg(-1));
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	e->type = eh.e_type;
	e->build_id_len = find_build_id(elf, e->build_id);
	if (read_sections(e, elf) != 0) {
		snprintf(err, len, "out of memory reading ELF symbols");
		kx_elfsyms_free(e);
		return NULL;
	}
	sort_unique(e);
	return e;
}

/* The .symtab of e's detached debug file, if the system has one
 * (KX_DEBUG_DIR/.build-id/NN/REST.debug, as Debian's -dbg packages install
 * them): the local functions a stripped file does not name (libc's
 * start_thread, clone3, __libc_start_call_main). -1 only when out of memory. */
static int add_debug_syms(struct kx_elfsyms *e)
{
	char hex[2 * KX_BUILD_ID_MAX + 1], path[sizeof(KX_DEBUG_DIR) + 64];
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int fd, rc = 0;
	Elf *elf;

	if (e->build_id_len < 2)
		return 0;
	kx_build_id_hex(e->build_id, e->build_id_len, hex);
	snprintf(path, sizeof(path), KX_DEBUG_DIR "/.build-id/%.2s/%s.debug", hex, hex + 2);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && elf_kind(elf) == ELF_K_ELF && !rc && (scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			rc = add_syms(e, elf, scn, &sh);
	elf_end(elf);
	close(fd);
	return rc;
}

struct kx_elfsyms *kx_elfsyms_read_fd(int fd, char *err, size_t len)
{
	struct kx_elfsyms *e;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	e = read_elf(elf, err, len);
	elf_end(elf);
	if (e && add_debug_syms(e)) {
		snprintf(err, len, "out of memory reading ELF symbols");
		kx_elfsyms_free(e);
		return NULL;
	}
	if (e)
		sort_unique(e);
	return e;
}

/* libelf reads a writable image: a copy, freed by mem_end. */
static Elf *mem_begin(const void *img, size_t size, char **copy)
{
	*copy = malloc(size ? size : 1);
	if (!*copy)
		return NULL;
	memcpy(*copy, img, size);
	elf_version(EV_CURRENT);
	return elf_memory(*copy, size);
}

static void mem_end(Elf *elf, char *copy)
{
	elf_end(elf);
	free(copy);
}

struct kx_elfsyms *kx_elfsyms_read_mem(const void *img, size_t size, char *err, size_t len)
{
	char *copy;
	Elf *elf = mem_begin(img, size, &copy);
	struct kx_elfsyms *e = read_elf(elf, err, len);

	mem_end(elf, copy);
	return e;
}

static int build_id_of(Elf *elf, uint8_t out[KX_BUILD_ID_MAX])
{
	return elf && elf_kind(elf) == ELF_K_ELF ? find_build_id(elf, out) : -1;
}

int kx_elf_build_id_mem(const void *img, size_t size, uint8_t out[KX_BUILD_ID_MAX])
{
	char *copy;
	Elf *elf = mem_begin(img, size, &copy);
	int n = build_id_of(elf, out);

	mem_end(elf, copy);
	return n;
}

int kx_elf_build_id_fd(int fd, uint8_t out[KX_BUILD_ID_MAX])
{
	Elf *elf;
	int n;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	n = build_id_of(elf, out);
	elf_end(elf);
	return n;
}

uint64_t kx_elfsyms_link_addr(const struct kx_elfsyms *e, uint64_t addr, uint64_t map_start,
                              uint64_t map_offset)
{
	if (e->type != ET_DYN)
		return addr;
	return addr - map_start + map_offset + e->bias;
}

const char *kx_elfsyms_find(const struct kx_elfsyms *e, uint64_t vaddr, uint64_t *off)
{
	long i = kx_addr_floor(e->syms, e->n, sizeof(*e->syms), vaddr);

	if (i < 0 || (e->syms[i].size && vaddr - e->syms[i].addr >= e->syms[i].size))
		return NULL;
	*off = vaddr - e->syms[i].addr;
	return kx_arena_str(&e->names, e->syms[i].name);
}

uint64_t kx_elfsyms_addr_of(const struct kx_elfsyms *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(kx_arena_str(&e->names, e->syms[i].name), name) == 0)
			return e->syms[i].addr;
	return 0;
}

size_t kx_elfsyms_count(const struct kx_elfsyms *e)
{
	return e->n;
}

int kx_elfsyms_build_id(const struct kx_elfsyms *e, const uint8_t **id)
{
	*id = e->build_id;
	return e->build_id_len;
}

void kx_build_id_hex(const uint8_t *id, int n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < n; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * (n > 0 ? n : 0)] = 0;
}

void kx_elfsyms_free(struct kx_elfsyms *e)
{
	if (!e)
		return;
	free(e->syms);
	kx_arena_free(&e->names);
	free(e);
}
