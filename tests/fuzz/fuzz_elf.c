/*
 * libFuzzer target for the symbolizer's ELF reader (symbol/elfsyms.h), fed
 * files as a user could map them for a root daemon to symbolize: the input
 * is an ELF image (the seeds are real shared objects; the mutations damage
 * the header, program and section headers, .symtab, .dynsym and their
 * string tables). Reads its symbols and build id and looks up addresses
 * across the image as a profile's frames would. Passes when nothing
 * crashes, leaks or trips ASan/UBSan.
 */
#include <stdint.h>
#include <stdio.h>

#include "symbol/elfsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	uint8_t id[KX_BUILD_ID_MAX];
	struct kx_elfsyms *e;
	const uint8_t *bid;
	char err[256], hex[2 * KX_BUILD_ID_MAX + 1];
	uint64_t off;
	int k;

	kx_elf_build_id_mem(d, n, id);
	e = kx_elfsyms_read_mem(d, n, err, sizeof(err));
	if (!e)
		return 0;
	k = kx_elfsyms_build_id(e, &bid);
	if (k > 0 && k <= KX_BUILD_ID_MAX)
		kx_build_id_hex(bid, k, hex);
	/* Frames spread over the first 4 MiB of a mapping at 0x7f0000000000. */
	for (uint64_t a = 0; a < (4u << 20); a += 4093) {
		uint64_t v = kx_elfsyms_link_addr(e, 0x7f0000000000ull + a, 0x7f0000000000ull, 0);
		const char *name = kx_elfsyms_find(e, v, &off);

		if (name)
			kx_elfsyms_addr_of(e, name);
	}
	kx_elfsyms_count(e);
	kx_elfsyms_free(e);
	return 0;
}
