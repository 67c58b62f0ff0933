/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: arbitrary bytes into the decoder, with and without a
 * reference image.  A blob that decodes must re-encode to an image that
 * decodes identically, and no write may pass the image's capacity.
 */
#include "tests/fuzz/fuzz-common.h"

#define CAP 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t words[CAP + 1], words2[CAP + 1], ref_words[CAP];
	static uint8_t kept[CAP / 8 + 1], kept2[CAP / 8 + 1];
	const struct stackcap_code_ranges *ranges = fuzz_ranges();

	/* A fixed reference: the previous sample of the thread. */
	struct stackcap_image ref = { .sp = 0x7ffd00001000ull, .nwords = 64, .words = ref_words,
				      .capacity = CAP };
	for (int i = 0; i < 64; i++)
		ref_words[i] = (i % 3) ? 0 : fuzz_ranges_tab[i % 3].start + (uint64_t)i;

	words[CAP] = 0x1122334455667788ull;
	struct stackcap_image img = { .words = words, .kept = kept, .capacity = CAP };
	size_t const r = stackcap_codec_decode(data, size, ranges, &ref, &img);
	FUZZ_CHECK(words[CAP] == 0x1122334455667788ull);
	if (stackcap_codec_is_error(r)) {
		FUZZ_CHECK(stackcap_codec_error_name(r) != NULL);
		return 0;
	}
	FUZZ_CHECK(r == size);
	FUZZ_CHECK(img.nwords <= CAP);

	/* Re-encode the decoded image (no elision) and decode it again. */
	static uint8_t blob[STACKCAP_CODEC_BOUND(CAP)];
	struct stackcap_codec_input in = {
		.words = img.words, .nwords = img.nwords, .sp = img.sp, .regs = img.regs,
		.ranges = ranges, .policy = img.policy, .encoding = img.encoding,
	};
	size_t const n = stackcap_codec_encode(blob, sizeof(blob), &in);
	FUZZ_CHECK(!stackcap_codec_is_error(n));
	struct stackcap_image img2 = { .words = words2, .kept = kept2, .capacity = CAP };
	FUZZ_CHECK(stackcap_codec_decode(blob, n, ranges, NULL, &img2) == n);
	FUZZ_CHECK(img2.sp == img.sp && img2.nwords == img.nwords);
	/* Words the policy keeps survive; the rest read back as zero. */
	for (uint64_t i = 0; i < img.nwords; i++) {
		int const keep = stackcap_codec_classify(img.words[i], ranges, img.sp,
							 img.sp + 8 * img.nwords, img.policy);
		FUZZ_CHECK(img2.words[i] == (keep ? img.words[i] : 0));
	}
	return 0;
}
