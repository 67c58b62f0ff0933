/* SPDX-License-Identifier: MIT */
/*
 * make-seeds.c: writes the small seed corpora of the codec fuzz targets
 * (tests/fuzz/corpus/).  Run by `make fuzz-seeds`; the output is committed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz-common.h"

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: make-seeds DECODE_DIR ROUNDTRIP_DIR\n");
		return 2;
	}
	const struct stackcap_code_ranges *ranges = fuzz_ranges();
	uint64_t const sp = 0x7ffd00001000ull - 8 * 32;
	uint64_t words[96], regs[STACKCAP_NREGS] = { 0 };
	for (int i = 0; i < 96; i++)
		words[i] = (i % 4 == 0) ? fuzz_ranges_tab[i % 3].start + 0x40 + (uint64_t)i
			 : (i % 4 == 1) ? sp + 8 * (uint64_t)(i + 2)
			 : (i % 4 == 2) ? 0x1234 + (uint64_t)i : 0;
	regs[STACKCAP_REG_RIP] = fuzz_ranges_tab[1].start + 0x99;
	regs[STACKCAP_REG_RBP] = sp + 64;
	regs[STACKCAP_REG_RBX] = sp + 200;
	regs[STACKCAP_REG_RAX] = 42;
	static uint8_t blob[STACKCAP_CODEC_BOUND(96)];
	int seed = 0;
	for (int pol = 1; pol <= 3; pol++) {
		for (int enc = 0; enc <= 1; enc++) {
			struct stackcap_codec_input in = { .words = words, .nwords = 96, .sp = sp,
				.regs = regs, .ranges = ranges, .policy = pol, .encoding = enc };
			size_t const n = stackcap_codec_encode(blob, sizeof(blob), &in);
			if (stackcap_codec_is_error(n))
				return 1;
			char name[32];
			snprintf(name, sizeof(name), "blob-%d", seed++);
			write_file(argv[1], name, blob, n);
		}
	}
	/* An elided blob against the decode target's fixed reference
	 * (sp 0x7ffd00001000, 64 words): 32 words deeper, 64 elided. */
	struct stackcap_codec_input in = { .words = words, .nwords = 96, .sp = sp, .regs = regs,
		.ranges = ranges, .policy = STACKCAP_POLICY_F2, .encoding = STACKCAP_WORDS_RELATIVE,
		.elide_top = 64, .ref_sp = 0x7ffd00001000ull, .has_ref = 1 };
	size_t const n = stackcap_codec_encode(blob, sizeof(blob), &in);
	if (stackcap_codec_is_error(n))
		return 1;
	write_file(argv[1], "blob-elided", blob, n);

	/* Round-trip seeds: policy, encoding flags, sp, then registers and words. */
	static uint8_t rt[10 + sizeof(regs) + sizeof(words)];
	for (int k = 0; k < 3; k++) {
		rt[0] = (uint8_t)k;
		rt[1] = (uint8_t)(k & 1);
		uint64_t const s = 0x1000 + 8u * (unsigned)k;
		memcpy(rt + 2, &s, 8);
		memcpy(rt + 10, regs, sizeof(regs));
		memcpy(rt + 10 + sizeof(regs), words, sizeof(words));
		char name[32];
		snprintf(name, sizeof(name), "stack-%d", k);
		write_file(argv[2], name, rt, sizeof(rt));
	}
	return 0;
}
