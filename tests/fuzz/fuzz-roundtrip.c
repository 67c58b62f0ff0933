/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: arbitrary stacks through encode then decode.  The first
 * bytes choose policy, encoding and sp; the rest are the stack words and
 * registers.  Checks: the blob fits STACKCAP_CODEC_BOUND, decodes to the
 * policy-filtered input, and encoding is deterministic.
 */
#include "tests/fuzz/fuzz-common.h"

#define MAXW 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 10)
		return 0;
	static uint64_t words[MAXW], out_words[MAXW];
	static uint8_t blob[STACKCAP_CODEC_BOUND(MAXW)], blob2[STACKCAP_CODEC_BOUND(MAXW)];
	const struct stackcap_code_ranges *ranges = fuzz_ranges();

	enum stackcap_policy const pol = (enum stackcap_policy)(1 + data[0] % 3);
	enum stackcap_word_encoding const enc = (enum stackcap_word_encoding)(data[1] & 1);
	uint64_t sp = 0;
	memcpy(&sp, data + 2, 8);
	if (!(data[1] & 2))
		sp = 0x7ffd00000000ull + (sp & 0xffff8); /* a realistic stack, mostly */
	data += 10;
	size -= 10;

	uint64_t regs[STACKCAP_NREGS] = { 0 };
	size_t const nregs_bytes = size < sizeof(regs) ? size : sizeof(regs);
	memcpy(regs, data, nregs_bytes);
	data += nregs_bytes;
	size -= nregs_bytes;
	uint64_t n = size / 8;
	if (n > MAXW)
		n = MAXW;
	if (n > (UINT64_MAX - sp) / 8)
		return 0;
	memcpy(words, data, n * 8);
	/* Steer some words into the code and stack ranges. */
	for (uint64_t i = 0; i < n; i++) {
		switch (words[i] & 0xf) {
		case 1: words[i] = fuzz_ranges_tab[(words[i] >> 4) % 3].start + ((words[i] >> 8) & 0xfff); break;
		case 2: if (n) words[i] = sp + ((words[i] >> 4) % (8 * n)); break;
		default: break;
		}
	}
	regs[STACKCAP_REG_RSP] = sp;

	struct stackcap_codec_input in = { .words = words, .nwords = n, .sp = sp, .regs = regs,
					   .ranges = ranges, .policy = pol, .encoding = enc };
	size_t const len = stackcap_codec_encode(blob, sizeof(blob), &in);
	FUZZ_CHECK(!stackcap_codec_is_error(len));
	FUZZ_CHECK(len <= STACKCAP_CODEC_BOUND(n));
	FUZZ_CHECK(stackcap_codec_encode(blob2, sizeof(blob2), &in) == len);
	FUZZ_CHECK(memcmp(blob, blob2, len) == 0);

	struct stackcap_image img = { .words = out_words, .capacity = MAXW };
	FUZZ_CHECK(stackcap_codec_decode(blob, len, ranges, NULL, &img) == len);
	FUZZ_CHECK(img.sp == sp && img.nwords == n);
	uint64_t const hi = sp + 8 * n;
	for (uint64_t i = 0; i < n; i++) {
		int const keep = stackcap_codec_classify(words[i], ranges, sp, hi, pol);
		FUZZ_CHECK(img.words[i] == (keep ? words[i] : 0));
	}
	FUZZ_CHECK(img.regs[STACKCAP_REG_RIP] == regs[STACKCAP_REG_RIP]);
	FUZZ_CHECK(img.regs[STACKCAP_REG_RSP] == sp);
	for (int r = 0; r < STACKCAP_NREGS; r++) {
		if (r == STACKCAP_REG_RIP || r == STACKCAP_REG_RSP)
			continue;
		int const keep = stackcap_codec_classify(regs[r], ranges, sp, hi, pol);
		FUZZ_CHECK(img.regs[r] == (keep ? regs[r] : 0));
	}
	return 0;
}
