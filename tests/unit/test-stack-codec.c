/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of compress/: code ranges, classifier, encoder,
 * decoder, round trips over random and adversarial stacks, and every class
 * of malformed blob.  Check runs each case in its own process and reports
 * TAP, so a crash fails one case and the others still run.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compress/stack-codec.h"
#include "common/varint.h"
#include "tests/unit/check-main.h"

/* xorshift64*: reproducible pseudo-random inputs. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* A fake address space: three modules' code and a stack at STACK_BASE. */
#define STACK_BASE 0x7ffd00000000ull
static const struct stackcap_code_range test_ranges[] = {
	{ 0x0000555555554000ull, 0x0000555555580000ull, 0 },
	{ 0x00007f0000100000ull, 0x00007f0000300000ull, 1 },
	{ 0x00007f0000400000ull, 0x00007f0000410000ull, 2 },
};
static struct stackcap_code_ranges ranges;

static void setup_ranges(void)
{
	ck_assert_int_eq(stackcap_code_ranges_init(&ranges, test_ranges, 3), 0);
}

/* A word of the kind found on real stacks. */
static uint64_t random_word(uint64_t sp, uint64_t nwords)
{
	switch (rnd() % 8) {
	case 0: /* return address */
	{
		const struct stackcap_code_range *r = &test_ranges[rnd() % 3];
		return r->start + rnd() % (r->end - r->start);
	}
	case 1: /* saved frame pointer / stack pointer */
		return nwords ? sp + 8 * (rnd() % nwords) + (rnd() % 2) * 4 : 0;
	case 2: return 0;
	case 3: return rnd() % 256;                 /* small integer */
	case 4: return 0x0000555555600000ull + (rnd() % 0x100000); /* heap */
	case 5: return rnd();                        /* random data, a secret */
	case 6: return sp - 8 - rnd() % 64;         /* just below the copy */
	default: return sp + 8 * nwords + rnd() % 64; /* just above the copy */
	}
}

struct sample {
	uint64_t sp;
	uint64_t nwords;
	uint64_t *words;
	uint64_t regs[STACKCAP_NREGS];
};

static void sample_fill(struct sample *s, uint64_t nwords)
{
	s->nwords = nwords;
	s->sp = STACK_BASE + 8 * (rnd() % 4096);
	s->words = calloc(nwords ? nwords : 1, 8);
	for (uint64_t i = 0; i < nwords; i++)
		s->words[i] = random_word(s->sp, nwords);
	for (int r = 0; r < STACKCAP_NREGS; r++)
		s->regs[r] = random_word(s->sp, nwords);
	s->regs[STACKCAP_REG_RSP] = s->sp;
	s->regs[STACKCAP_REG_RIP] = test_ranges[1].start + 0x1234;
}

static int expect_kept(uint64_t w, uint64_t sp, uint64_t nwords, enum stackcap_policy pol)
{
	if (w == 0)
		return 0;
	int const code = stackcap_code_ranges_find(&ranges, w) >= 0;
	int const stack = w >= sp && w < sp + 8 * nwords;
	switch (pol) {
	case STACKCAP_POLICY_F1: return code;
	case STACKCAP_POLICY_F2: return code || stack;
	default: return 1;
	}
}

struct image_buf {
	struct stackcap_image img;
	uint64_t *words;
	uint8_t *kept;
};

static void image_alloc(struct image_buf *b, uint64_t capacity)
{
	memset(b, 0, sizeof(*b));
	/* One canary word past the capacity catches out-of-bounds writes. */
	b->words = malloc((capacity + 1) * 8);
	b->kept = malloc((capacity + 7) / 8 + 1);
	b->words[capacity] = 0xCA7A11CA7A11CA7Aull;
	b->kept[(capacity + 7) / 8] = 0xA5;
	b->img.words = b->words;
	b->img.kept = b->kept;
	b->img.capacity = capacity;
}

static void image_check_canary(const struct image_buf *b)
{
	ck_assert_uint_eq(b->words[b->img.capacity], 0xCA7A11CA7A11CA7Aull);
	ck_assert_uint_eq(b->kept[(b->img.capacity + 7) / 8], 0xA5);
}

static void image_free(struct image_buf *b)
{
	free(b->words);
	free(b->kept);
}

static size_t encode(const struct sample *s, enum stackcap_policy pol,
		     enum stackcap_word_encoding enc, uint8_t **out)
{
	struct stackcap_codec_input in = {
		.words = s->words, .nwords = s->nwords, .sp = s->sp, .regs = s->regs,
		.ranges = &ranges, .policy = pol, .encoding = enc,
	};
	size_t const cap = STACKCAP_CODEC_BOUND(s->nwords);
	*out = malloc(cap);
	size_t const n = stackcap_codec_encode(*out, cap, &in);
	ck_assert_msg(!stackcap_codec_is_error(n), "encode failed: %s", stackcap_codec_error_name(n));
	ck_assert_uint_le(n, cap);
	return n;
}

/* Decode BLOB and check it equals S filtered by POL. */
static void check_decodes_to(const uint8_t *blob, size_t n, const struct sample *s,
			     enum stackcap_policy pol)
{
	struct image_buf b;
	image_alloc(&b, s->nwords);
	size_t const r = stackcap_codec_decode(blob, n, &ranges, NULL, &b.img);
	ck_assert_msg(!stackcap_codec_is_error(r), "decode failed: %s", stackcap_codec_error_name(r));
	ck_assert_uint_eq(r, n);
	ck_assert_uint_eq(b.img.sp, s->sp);
	ck_assert_uint_eq(b.img.nwords, s->nwords);
	ck_assert_int_eq(b.img.policy, pol);
	for (uint64_t i = 0; i < s->nwords; i++) {
		int const k = expect_kept(s->words[i], s->sp, s->nwords, pol);
		ck_assert_uint_eq(b.img.words[i], k ? s->words[i] : 0);
		ck_assert_int_eq(stackcap_image_word_kept(&b.img, i), k);
	}
	for (int r2 = 0; r2 < STACKCAP_NREGS; r2++) {
		int k = expect_kept(s->regs[r2], s->sp, s->nwords, pol);
		if (r2 == STACKCAP_REG_RIP || r2 == STACKCAP_REG_RSP)
			k = 1;
		ck_assert_uint_eq(b.img.regs[r2], k ? s->regs[r2] : 0);
		ck_assert_int_eq(!!(b.img.regs_kept & (1u << r2)), k);
	}
	image_check_canary(&b);
	/* Decoded after a peek of its header: the same image. */
	struct stackcap_codec_header h;
	size_t const hs = stackcap_codec_peek(blob, n, &h);
	ck_assert(!stackcap_codec_is_error(hs));
	struct image_buf c;
	image_alloc(&c, s->nwords);
	ck_assert_uint_eq(stackcap_codec_decode_peeked(blob, n, &h, hs, ranges.ranges, ranges.count, NULL, &c.img), n);
	ck_assert_uint_eq(c.img.sp, b.img.sp);
	ck_assert_uint_eq(c.img.nwords, b.img.nwords);
	ck_assert_uint_eq(c.img.regs_kept, b.img.regs_kept);
	ck_assert_mem_eq(c.img.regs, b.img.regs, sizeof(b.img.regs));
	if (s->nwords)
		ck_assert_mem_eq(c.img.words, b.img.words, s->nwords * 8);
	image_check_canary(&c);
	image_free(&c);
	image_free(&b);
}

/* ---- code ranges and classifier --------------------------------------- */

START_TEST(ranges_find)
{
	setup_ranges();
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, 0), -1);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, test_ranges[0].start), 0);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, test_ranges[0].end - 1), 0);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, test_ranges[0].end), -1);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, test_ranges[1].start + 5), 1);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, test_ranges[2].end - 1), 2);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, test_ranges[2].end), -1);
	ck_assert_int_eq(stackcap_code_ranges_find(&ranges, UINT64_MAX), -1);
	struct stackcap_code_ranges empty;
	ck_assert_int_eq(stackcap_code_ranges_init(&empty, NULL, 0), 0);
	ck_assert_int_eq(stackcap_code_ranges_find(&empty, 12345), -1);
}
END_TEST

START_TEST(ranges_reject_unsorted)
{
	struct stackcap_code_ranges set;
	const struct stackcap_code_range overlap[] = { { 100, 200, 0 }, { 150, 300, 1 } };
	ck_assert_int_eq(stackcap_code_ranges_init(&set, overlap, 2), -1);
	const struct stackcap_code_range unsorted[] = { { 300, 400, 0 }, { 100, 200, 1 } };
	ck_assert_int_eq(stackcap_code_ranges_init(&set, unsorted, 2), -1);
	const struct stackcap_code_range empty_range[] = { { 100, 100, 0 } };
	ck_assert_int_eq(stackcap_code_ranges_init(&set, empty_range, 1), -1);
}
END_TEST

START_TEST(classify_policies)
{
	setup_ranges();
	uint64_t const lo = STACK_BASE, hi = STACK_BASE + 4096;
	uint64_t const code = test_ranges[1].start + 10, stk = lo + 64, data = 0x1234;
	ck_assert(stackcap_codec_classify(code, &ranges, lo, hi, STACKCAP_POLICY_F1));
	ck_assert(!stackcap_codec_classify(stk, &ranges, lo, hi, STACKCAP_POLICY_F1));
	ck_assert(stackcap_codec_classify(code, &ranges, lo, hi, STACKCAP_POLICY_F2));
	ck_assert(stackcap_codec_classify(stk, &ranges, lo, hi, STACKCAP_POLICY_F2));
	ck_assert(!stackcap_codec_classify(hi, &ranges, lo, hi, STACKCAP_POLICY_F2));
	ck_assert(!stackcap_codec_classify(data, &ranges, lo, hi, STACKCAP_POLICY_F2));
	ck_assert(!stackcap_codec_classify(0, &ranges, lo, hi, STACKCAP_POLICY_ALL));
	ck_assert(stackcap_codec_classify(data, &ranges, lo, hi, STACKCAP_POLICY_ALL));
}
END_TEST

/* The second stack range (alternate-stack handlers): pointers into it are
 * kept by F2 and ALL, dropped by F1 and when no range is given; registers
 * too.  The blob format does not change: the image decodes the same way. */
START_TEST(also_range_keeps_pointers_into_it)
{
	setup_ranges();
	uint64_t const sp = STACK_BASE, also_lo = 0x7ffe00000000ull, also_hi = also_lo + 8192;
	uint64_t words[6] = { also_lo + 16, 0x1234, also_hi - 8, also_hi, also_lo - 8, test_ranges[1].start + 4 };
	uint64_t regs[STACKCAP_NREGS] = { 0 };
	regs[STACKCAP_REG_RSP] = sp;
	regs[STACKCAP_REG_RIP] = test_ranges[1].start;
	regs[STACKCAP_REG_RBP] = also_lo + 64;
	for (int with = 0; with <= 1; with++) {
		for (int pol = STACKCAP_POLICY_F1; pol <= STACKCAP_POLICY_F2; pol++) {
			struct stackcap_codec_input in = {
				.words = words, .nwords = 6, .sp = sp, .regs = regs, .ranges = &ranges,
				.policy = (enum stackcap_policy)pol, .encoding = STACKCAP_WORDS_RELATIVE,
				.also_lo = with ? also_lo : 0, .also_hi = with ? also_hi : 0,
			};
			uint8_t blob[STACKCAP_CODEC_BOUND(6)];
			size_t const n = stackcap_codec_encode(blob, sizeof(blob), &in);
			ck_assert(!stackcap_codec_is_error(n));
			struct image_buf b;
			image_alloc(&b, 6);
			ck_assert_uint_eq(stackcap_codec_decode(blob, n, &ranges, NULL, &b.img), n);
			int const keep = with && pol == STACKCAP_POLICY_F2;
			ck_assert_uint_eq(b.img.words[0], (keep ? words[0] : 0));
			ck_assert_uint_eq(b.img.words[1], 0);
			ck_assert_uint_eq(b.img.words[2], (keep ? words[2] : 0));
			ck_assert_uint_eq(b.img.words[3], 0); /* one past the range */
			ck_assert_uint_eq(b.img.words[4], 0); /* just below it */
			ck_assert_uint_eq(b.img.words[5], words[5]);
			ck_assert_uint_eq(b.img.regs[STACKCAP_REG_RBP], (keep ? regs[STACKCAP_REG_RBP] : 0));
			image_check_canary(&b);
			image_free(&b);
		}
	}
	struct stackcap_codec_input bad = { .words = words, .nwords = 6, .sp = sp,
		.policy = STACKCAP_POLICY_F2, .also_lo = 16, .also_hi = 8 };
	uint8_t blob[STACKCAP_CODEC_BOUND(6)];
	ck_assert(stackcap_codec_is_error(stackcap_codec_encode(blob, sizeof(blob), &bad)));
}
END_TEST

/* ---- round trips -------------------------------------------------------- */

START_TEST(round_trip_random)
{
	setup_ranges();
	rng_state += (uint64_t)_i * 7919;
	const uint64_t sizes[] = { 0, 1, 2, 7, 64, 256, 1024, 8192 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (int pol = STACKCAP_POLICY_F1; pol <= STACKCAP_POLICY_ALL; pol++) {
			for (int enc = 0; enc <= 1; enc++) {
				struct sample s;
				sample_fill(&s, sizes[si]);
				uint8_t *blob;
				size_t const n = encode(&s, (enum stackcap_policy)pol,
							(enum stackcap_word_encoding)enc, &blob);
				check_decodes_to(blob, n, &s, (enum stackcap_policy)pol);
				free(blob);
				free(s.words);
			}
		}
	}
}
END_TEST

START_TEST(round_trip_adversarial)
{
	setup_ranges();
	/* Stacks built to stress one path each. */
	uint64_t const n = 4096;
	struct sample s;
	sample_fill(&s, n);
	for (int shape = 0; shape < 6; shape++) {
		for (uint64_t i = 0; i < n; i++) {
			switch (shape) {
			case 0: s.words[i] = 0; break;                               /* all zero */
			case 1: s.words[i] = test_ranges[2].end - 1; break;          /* all code, range edge */
			case 2: s.words[i] = s.sp + 8 * n - 1; break;                /* all stack, top edge */
			case 3: s.words[i] = (i & 1) ? test_ranges[0].start : 0xdeadbeef; break; /* alternating */
			case 4: s.words[i] = UINT64_MAX - i; break;                   /* huge values */
			default: s.words[i] = s.sp; break;                           /* all sp */
			}
		}
		for (int pol = STACKCAP_POLICY_F1; pol <= STACKCAP_POLICY_ALL; pol++) {
			for (int enc = 0; enc <= 1; enc++) {
				uint8_t *blob;
				size_t const len = encode(&s, (enum stackcap_policy)pol,
							  (enum stackcap_word_encoding)enc, &blob);
				check_decodes_to(blob, len, &s, (enum stackcap_policy)pol);
				free(blob);
			}
		}
	}
	free(s.words);
}
END_TEST

START_TEST(round_trip_stack_at_top_of_address_space)
{
	setup_ranges();
	struct sample s;
	sample_fill(&s, 16);
	s.sp = UINT64_MAX - 16 * 8; /* the copy ends at the last address */
	for (int i = 0; i < 16; i++)
		s.words[i] = i % 2 ? s.sp + 8 : test_ranges[0].start;
	s.regs[STACKCAP_REG_RSP] = s.sp;
	uint8_t *blob;
	size_t const len = encode(&s, STACKCAP_POLICY_F2, STACKCAP_WORDS_RELATIVE, &blob);
	check_decodes_to(blob, len, &s, STACKCAP_POLICY_F2);
	free(blob);
	free(s.words);
}
END_TEST

START_TEST(relative_smaller_than_raw)
{
	setup_ranges();
	struct sample s;
	sample_fill(&s, 2048);
	uint8_t *a, *b;
	size_t const raw = encode(&s, STACKCAP_POLICY_F2, STACKCAP_WORDS_RAW, &a);
	size_t const rel = encode(&s, STACKCAP_POLICY_F2, STACKCAP_WORDS_RELATIVE, &b);
	ck_assert_uint_lt(rel, raw);
	ck_assert_uint_lt(raw, 2048 * 8);
	free(a);
	free(b);
	free(s.words);
}
END_TEST

START_TEST(secret_never_in_blob)
{
	setup_ranges();
	uint64_t const secret = 0x5EC2E75EC2E75EC2ull;
	struct sample s;
	sample_fill(&s, 1024);
	for (uint64_t i = 0; i < s.nwords; i += 5)
		s.words[i] = secret;
	s.regs[STACKCAP_REG_R12] = secret;
	for (int pol = STACKCAP_POLICY_F1; pol <= STACKCAP_POLICY_F2; pol++) {
		for (int enc = 0; enc <= 1; enc++) {
			uint8_t *blob;
			size_t const len = encode(&s, (enum stackcap_policy)pol,
						  (enum stackcap_word_encoding)enc, &blob);
			/* Any 4 consecutive bytes of the secret would be a leak. */
			for (size_t off = 0; off + 4 <= len; off++)
				for (int k = 0; k + 4 <= 8; k++)
					ck_assert_msg(memcmp(blob + off, (const uint8_t *)&secret + k, 4) != 0,
						      "secret bytes found at %zu", off);
			free(blob);
		}
	}
	free(s.words);
}
END_TEST

/* ---- bounds ------------------------------------------------------------- */

START_TEST(worst_case_fits_bound)
{
	setup_ranges();
	/* Every word kept and raw: random values under ALL. */
	uint64_t const n = 8192;
	struct sample s;
	sample_fill(&s, n);
	for (uint64_t i = 0; i < n; i++)
		s.words[i] = rnd() | (1ull << 63);
	for (int r = 0; r < STACKCAP_NREGS; r++)
		s.regs[r] = rnd() | (1ull << 63);
	uint8_t *blob;
	size_t const len = encode(&s, STACKCAP_POLICY_ALL, STACKCAP_WORDS_RELATIVE, &blob);
	ck_assert_uint_le(len, STACKCAP_CODEC_BOUND(n));
	ck_assert_uint_ge(len, 9 * n);
	free(blob);
	free(s.words);
}
END_TEST

START_TEST(small_dst_fails_cleanly)
{
	setup_ranges();
	struct sample s;
	sample_fill(&s, 300);
	struct stackcap_codec_input in = {
		.words = s.words, .nwords = s.nwords, .sp = s.sp, .regs = s.regs,
		.ranges = &ranges, .policy = STACKCAP_POLICY_F2, .encoding = STACKCAP_WORDS_RELATIVE,
	};
	uint8_t full[STACKCAP_CODEC_BOUND(300)];
	size_t const need = stackcap_codec_encode(full, sizeof(full), &in);
	ck_assert(!stackcap_codec_is_error(need));
	uint8_t buf[STACKCAP_CODEC_BOUND(300) + 1];
	for (size_t cap = 0; cap < need; cap++) {
		memset(buf, 0xEE, sizeof(buf));
		size_t const r = stackcap_codec_encode(buf, cap, &in);
		ck_assert_uint_eq(stackcap_codec_error_code(r), STACKCAP_CODEC_E_DST_TOO_SMALL);
		for (size_t k = cap; k < sizeof(buf); k++)
			ck_assert_uint_eq(buf[k], 0xEE);
	}
	ck_assert_uint_eq(stackcap_codec_encode(buf, need, &in), need);
	ck_assert_int_eq(memcmp(buf, full, need), 0);
	free(s.words);
}
END_TEST

START_TEST(encoder_rejects_bad_input)
{
	setup_ranges();
	uint64_t w[4] = { 0 };
	uint8_t buf[256];
	struct stackcap_codec_input in = { .words = w, .nwords = 4, .sp = STACK_BASE,
		.ranges = &ranges, .policy = STACKCAP_POLICY_F2 };
	ck_assert(!stackcap_codec_is_error(stackcap_codec_encode(buf, sizeof(buf), &in)));
	in.policy = 0;
	ck_assert_uint_eq(stackcap_codec_error_code(stackcap_codec_encode(buf, sizeof(buf), &in)),
			  STACKCAP_CODEC_E_BAD_INPUT);
	in.policy = STACKCAP_POLICY_F2;
	in.encoding = 7;
	ck_assert_uint_eq(stackcap_codec_error_code(stackcap_codec_encode(buf, sizeof(buf), &in)),
			  STACKCAP_CODEC_E_BAD_INPUT);
	in.encoding = STACKCAP_WORDS_RAW;
	in.sp = UINT64_MAX - 8;
	ck_assert_uint_eq(stackcap_codec_error_code(stackcap_codec_encode(buf, sizeof(buf), &in)),
			  STACKCAP_CODEC_E_SIZE_OVERFLOW);
	in.sp = STACK_BASE;
	in.elide_top = 5;
	ck_assert_uint_eq(stackcap_codec_error_code(stackcap_codec_encode(buf, sizeof(buf), &in)),
			  STACKCAP_CODEC_E_BAD_INPUT);
	ck_assert_uint_eq(stackcap_codec_error_code(stackcap_codec_encode(buf, sizeof(buf), NULL)),
			  STACKCAP_CODEC_E_BAD_INPUT);
}
END_TEST

/* ---- second stage: top-elided delta ------------------------------------ */

START_TEST(elided_top_round_trip)
{
	setup_ranges();
	/* Two samples of one thread: same stack top, the second deeper. */
	struct sample a, s;
	sample_fill(&a, 600);
	sample_fill(&s, 700);
	s.sp = a.sp - 100 * 8;
	for (int i = 0; i < 500; i++) {
		/* A pointer into [s.sp, a.sp) is kept in S only: make it data. */
		if (a.words[100 + i] >= s.sp && a.words[100 + i] < a.sp)
			a.words[100 + i] = 0x42;
		s.words[200 + i] = a.words[100 + i];
	}
	uint8_t *blob_a;
	size_t const la = encode(&a, STACKCAP_POLICY_F2, STACKCAP_WORDS_RELATIVE, &blob_a);
	struct image_buf ia, is;
	image_alloc(&ia, a.nwords);
	ck_assert_uint_eq(stackcap_codec_decode(blob_a, la, &ranges, NULL, &ia.img), la);

	/* First stage of S, decoded: what the writer thread holds. */
	uint8_t *blob_s;
	size_t const ls = encode(&s, STACKCAP_POLICY_F2, STACKCAP_WORDS_RELATIVE, &blob_s);
	image_alloc(&is, s.nwords);
	ck_assert_uint_eq(stackcap_codec_decode(blob_s, ls, &ranges, NULL, &is.img), ls);

	uint64_t const k = stackcap_image_common_top(&is.img, &ia.img);
	ck_assert_uint_ge(k, 500);
	struct stackcap_codec_input in = {
		.words = is.img.words, .nwords = is.img.nwords, .sp = is.img.sp,
		.regs = is.img.regs, .ranges = &ranges, .policy = STACKCAP_POLICY_F2,
		.encoding = STACKCAP_WORDS_RELATIVE, .elide_top = k, .ref_sp = ia.img.sp, .has_ref = 1,
	};
	uint8_t out[STACKCAP_CODEC_BOUND(700)];
	size_t const l2 = stackcap_codec_encode(out, sizeof(out), &in);
	ck_assert(!stackcap_codec_is_error(l2));
	ck_assert_uint_lt(l2, ls);

	struct image_buf d;
	image_alloc(&d, s.nwords);
	ck_assert_uint_eq(stackcap_codec_decode(out, l2, &ranges, NULL, &d.img),
			  STACKCAP_CODEC_ERROR(NEED_REF));
	ck_assert_uint_eq(stackcap_codec_decode(out, l2, &ranges, &ia.img, &d.img), l2);
	ck_assert_uint_eq(d.img.sp, s.sp);
	ck_assert_uint_eq(d.img.elided, k);
	ck_assert_int_eq(memcmp(d.img.words, is.img.words, s.nwords * 8), 0);
	ck_assert_int_eq(memcmp(d.img.regs, is.img.regs, sizeof(d.img.regs)), 0);
	for (uint64_t i = 0; i < s.nwords; i++)
		ck_assert_int_eq(stackcap_image_word_kept(&d.img, i), stackcap_image_word_kept(&is.img, i));
	image_check_canary(&d);

	/* A reference with another stack top is refused (sp is a delta from
	 * the reference's, so only its length can move the top). */
	ia.img.nwords++;
	ck_assert_uint_eq(stackcap_codec_decode(out, l2, &ranges, &ia.img, &d.img),
			  STACKCAP_CODEC_ERROR(BAD_REF));
	/* And so is one shorter than the elided part. */
	ia.img.nwords = k - 1;
	ck_assert_uint_eq(stackcap_codec_decode(out, l2, &ranges, &ia.img, &d.img),
			  STACKCAP_CODEC_ERROR(BAD_REF));
	image_check_canary(&d);

	image_free(&d);
	image_free(&ia);
	image_free(&is);
	free(blob_a);
	free(blob_s);
	free(a.words);
	free(s.words);
}
END_TEST

START_TEST(common_top_needs_same_top)
{
	uint64_t wa[4] = { 1, 2, 3, 4 }, wb[3] = { 9, 3, 4 };
	struct stackcap_image a = { .sp = 1000, .nwords = 4, .words = wa };
	struct stackcap_image b = { .sp = 1008, .nwords = 3, .words = wb };
	ck_assert_uint_eq(stackcap_image_common_top(&a, &b), 2);
	b.sp = 1016;
	ck_assert_uint_eq(stackcap_image_common_top(&a, &b), 0);
}
END_TEST

/* ---- malformed blobs ---------------------------------------------------- */

/* A valid F2 relative blob of a small stack, for corrupting. */
static size_t small_blob(uint8_t *buf, size_t cap, struct sample *s)
{
	setup_ranges();
	sample_fill(s, 32);
	for (int i = 0; i < 32; i++)
		s->words[i] = (i % 3 == 0) ? test_ranges[i % 3].start + 0x100 + (uint64_t)i
			    : (i % 3 == 1) ? s->sp + 8 * 31 : 0x77;
	struct stackcap_codec_input in = {
		.words = s->words, .nwords = s->nwords, .sp = s->sp, .regs = s->regs,
		.ranges = &ranges, .policy = STACKCAP_POLICY_F2, .encoding = STACKCAP_WORDS_RELATIVE,
	};
	size_t const n = stackcap_codec_encode(buf, cap, &in);
	ck_assert(!stackcap_codec_is_error(n));
	return n;
}

static size_t decode_into(const uint8_t *blob, size_t n, uint64_t capacity)
{
	struct image_buf b;
	image_alloc(&b, capacity);
	size_t const r = stackcap_codec_decode(blob, n, &ranges, NULL, &b.img);
	image_check_canary(&b);
	/* After a peek: the same answer (the peek's own error when the
	 * header does not parse; a header size past the blob refused). */
	struct stackcap_codec_header h;
	size_t const hs = stackcap_codec_peek(blob, n, &h);
	if (stackcap_codec_is_error(hs)) {
		ck_assert_uint_eq(hs, r);
	} else {
		ck_assert_uint_eq(stackcap_codec_decode_peeked(blob, n, &h, hs, ranges.ranges, ranges.count, NULL, &b.img),
				  r);
		ck_assert(stackcap_codec_is_error(stackcap_codec_decode_peeked(blob, n, &h, n + 1, ranges.ranges,
									      ranges.count, NULL, &b.img)));
	}
	image_check_canary(&b);
	image_free(&b);
	return r;
}

START_TEST(malformed_truncated)
{
	uint8_t buf[1024];
	struct sample s;
	size_t const n = small_blob(buf, sizeof(buf), &s);
	ck_assert_uint_eq(decode_into(buf, n, 32), n);
	for (size_t len = 0; len < n; len++) {
		size_t const r = decode_into(buf, len, 32);
		ck_assert_msg(stackcap_codec_is_error(r), "truncated to %zu decoded", len);
	}
	ck_assert_uint_eq(decode_into(buf, 1, 32), STACKCAP_CODEC_ERROR(TRUNCATED));
	free(s.words);
}
END_TEST

START_TEST(malformed_trailing_bytes)
{
	uint8_t buf[1024];
	struct sample s;
	size_t const n = small_blob(buf, sizeof(buf), &s);
	buf[n] = 0;
	ck_assert_uint_eq(decode_into(buf, n + 1, 32), STACKCAP_CODEC_ERROR(TRAILING_BYTES));
	free(s.words);
}
END_TEST

START_TEST(malformed_version_and_flags)
{
	uint8_t buf[1024];
	struct sample s;
	size_t const n = small_blob(buf, sizeof(buf), &s);
	buf[0] = 2;
	ck_assert_uint_eq(decode_into(buf, n, 32), STACKCAP_CODEC_ERROR(BAD_VERSION));
	buf[0] = 0;
	ck_assert_uint_eq(decode_into(buf, n, 32), STACKCAP_CODEC_ERROR(BAD_VERSION));
	buf[0] = 1;
	uint8_t const flags = buf[1];
	buf[1] = flags | 0x80;
	ck_assert_uint_eq(decode_into(buf, n, 32), STACKCAP_CODEC_ERROR(BAD_FLAGS));
	buf[1] = flags & ~0x03;
	ck_assert_uint_eq(decode_into(buf, n, 32), STACKCAP_CODEC_ERROR(BAD_FLAGS));
	free(s.words);
}
END_TEST

/* Hand-built blob: header with SP and NWORDS, no registers, then BODY. */
static size_t handmade(uint8_t *buf, uint64_t sp, uint64_t nwords, const uint8_t *body, size_t blen)
{
	size_t n = 0;
	buf[n++] = 1;
	buf[n++] = STACKCAP_POLICY_F2 | 0x04;
	n += varint_put(buf + n, sp);
	n += varint_put(buf + n, nwords);
	buf[n++] = 0; /* register mask: none */
	memcpy(buf + n, body, blen);
	return n + blen;
}

START_TEST(malformed_overlong_run)
{
	setup_ranges();
	uint8_t buf[64];
	const uint8_t run4[] = { (4 - 1) << 2 };
	size_t n = handmade(buf, STACK_BASE, 4, run4, 1);
	ck_assert_uint_eq(decode_into(buf, n, 4), n);
	n = handmade(buf, STACK_BASE, 3, run4, 1);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(OVERLONG_RUN));
	/* A run of 2^62 words. */
	uint8_t huge[VARINT_MAX_BYTES];
	size_t const hl = varint_put(huge, UINT64_MAX & ~3ull);
	n = handmade(buf, STACK_BASE, 4, huge, hl);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(OVERLONG_RUN));
}
END_TEST

START_TEST(malformed_size_overflow)
{
	setup_ranges();
	uint8_t buf[64];
	const uint8_t run1[] = { 0 };
	size_t n = handmade(buf, UINT64_MAX - 7, 2, run1, 1);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(SIZE_OVERFLOW));
	n = handmade(buf, 8, UINT64_MAX / 4, run1, 1);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(SIZE_OVERFLOW));
	/* Larger than the caller's image: refused before any write. */
	n = handmade(buf, STACK_BASE, 5, run1, 1);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(TOO_LARGE));
}
END_TEST

START_TEST(malformed_tokens)
{
	setup_ranges();
	uint8_t buf[64];
	size_t n;
	/* Raw token with stray high bits. */
	const uint8_t raw_bad[] = { 0x07, 1, 2, 3, 4, 5, 6, 7, 8 };
	n = handmade(buf, STACK_BASE, 1, raw_bad, sizeof(raw_bad));
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_TOKEN));
	/* Raw token of value zero: a kept word is never zero. */
	const uint8_t raw_zero[] = { 0x03, 0, 0, 0, 0, 0, 0, 0, 0 };
	n = handmade(buf, STACK_BASE, 1, raw_zero, sizeof(raw_zero));
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_TOKEN));
	/* Raw token cut short. */
	n = handmade(buf, STACK_BASE, 1, raw_zero, 5);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(TRUNCATED));
	/* Code token naming range 3 of 3. */
	const uint8_t code_bad_idx[] = { (3 << 2) | 1, 0x10 };
	n = handmade(buf, STACK_BASE, 1, code_bad_idx, sizeof(code_bad_idx));
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_RANGE));
	/* Code token with an offset past its range (range 2 is 0x10000 long). */
	uint8_t code_bad_off[8] = { (2 << 2) | 1 };
	size_t const ol = varint_put(code_bad_off + 1, 0x10000);
	n = handmade(buf, STACK_BASE, 1, code_bad_off, 1 + ol);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_RANGE));
	/* Code tokens without ranges. */
	struct image_buf b;
	image_alloc(&b, 4);
	const uint8_t code_ok[] = { (2 << 2) | 1, 0x10 };
	n = handmade(buf, STACK_BASE, 1, code_ok, sizeof(code_ok));
	ck_assert_uint_eq(stackcap_codec_decode(buf, n, &ranges, NULL, &b.img), n);
	ck_assert_uint_eq(b.img.words[0], test_ranges[2].start + 0x10);
	ck_assert_uint_eq(stackcap_codec_decode(buf, n, NULL, NULL, &b.img), STACKCAP_CODEC_ERROR(BAD_RANGE));
	image_free(&b);
	/* Varint of 11 bytes as a token. */
	const uint8_t longv[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	n = handmade(buf, STACK_BASE, 1, longv, sizeof(longv));
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_VARINT));
}
END_TEST

START_TEST(malformed_registers)
{
	setup_ranges();
	uint8_t buf[64];
	size_t n = 0;
	buf[n++] = 1;
	buf[n++] = STACKCAP_POLICY_F2;
	n += varint_put(buf + n, STACK_BASE);
	n += varint_put(buf + n, 0);
	size_t const hdr = n;
	/* rsp bit set: rsp is always sp and never written. */
	n = hdr + varint_put(buf + hdr, 1u << STACKCAP_REG_RSP);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_REGS));
	/* A bit beyond the 17 registers. */
	n = hdr + varint_put(buf + hdr, 1u << STACKCAP_NREGS);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_REGS));
	/* A zero run where a register value should be. */
	n = hdr + varint_put(buf + hdr, 1u << STACKCAP_REG_RIP);
	buf[n++] = 0;
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_REGS));
	/* A register announced but missing. */
	n = hdr + varint_put(buf + hdr, 1u << STACKCAP_REG_RIP);
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(TRUNCATED));
}
END_TEST

START_TEST(malformed_elision)
{
	setup_ranges();
	uint8_t buf[64];
	size_t n = 0;
	buf[n++] = 1;
	buf[n++] = STACKCAP_POLICY_F2 | 0x10;
	n += varint_put(buf + n, STACK_BASE);
	n += varint_put(buf + n, 4);
	size_t const at = n;
	buf[n++] = 5; /* elided > nwords */
	buf[n++] = 0;
	buf[n++] = 0;
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_FLAGS));
	buf[at] = 0; /* elided flag with a count of 0 */
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(BAD_FLAGS));
	buf[at] = 2; /* fine, but there is no reference */
	ck_assert_uint_eq(decode_into(buf, n, 4), STACKCAP_CODEC_ERROR(NEED_REF));
}
END_TEST

START_TEST(garbage_never_crashes)
{
	setup_ranges();
	uint8_t buf[512];
	int ok = 0;
	for (int iter = 0; iter < 20000; iter++) {
		size_t const len = rnd() % sizeof(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		/* Valid-looking header half of the time, to get past it. */
		if (len >= 2 && (iter & 1)) {
			buf[0] = 1;
			buf[1] &= 0x07;
			buf[1] |= 2;
		}
		size_t const r = decode_into(buf, len, 64);
		if (!stackcap_codec_is_error(r)) {
			ck_assert_uint_eq(r, len);
			ok++;
		}
	}
	(void)ok;
}
END_TEST

START_TEST(peek_reads_header)
{
	uint8_t buf[1024];
	struct sample s;
	size_t const n = small_blob(buf, sizeof(buf), &s);
	struct stackcap_codec_header h;
	size_t const hl = stackcap_codec_peek(buf, n, &h);
	ck_assert(!stackcap_codec_is_error(hl));
	ck_assert_uint_lt(hl, n);
	ck_assert_uint_eq(h.version, STACKCAP_CODEC_VERSION);
	ck_assert_uint_eq(h.nwords, 32);
	ck_assert_uint_eq(h.sp_or_delta, s.sp);
	ck_assert_int_eq(h.policy, STACKCAP_POLICY_F2);
	ck_assert_int_eq(h.encoding, STACKCAP_WORDS_RELATIVE);
	free(s.words);
}
END_TEST

START_TEST(error_names)
{
	for (int e = 0; e < STACKCAP_CODEC_E_MAX; e++) {
		size_t const code = (size_t)0 - (size_t)e;
		ck_assert_ptr_nonnull(stackcap_codec_error_name(code));
		ck_assert_int_eq(stackcap_codec_is_error(code), e != 0);
		for (int f = 0; f < e; f++)
			ck_assert_str_ne(stackcap_codec_error_name(code),
					 stackcap_codec_error_name((size_t)0 - (size_t)f));
	}
	ck_assert(!stackcap_codec_is_error(STACKCAP_CODEC_BOUND(1 << 20)));
}
END_TEST

static Suite *codec_suite(void)
{
	Suite *s = suite_create("stack-codec");
	TCase *tc = tcase_create("codec");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ranges_find);
	tcase_add_test(tc, ranges_reject_unsorted);
	tcase_add_test(tc, classify_policies);
	tcase_add_test(tc, also_range_keeps_pointers_into_it);
	tcase_add_loop_test(tc, round_trip_random, 0, 4);
	tcase_add_test(tc, round_trip_adversarial);
	tcase_add_test(tc, round_trip_stack_at_top_of_address_space);
	tcase_add_test(tc, relative_smaller_than_raw);
	tcase_add_test(tc, secret_never_in_blob);
	tcase_add_test(tc, worst_case_fits_bound);
	tcase_add_test(tc, small_dst_fails_cleanly);
	tcase_add_test(tc, encoder_rejects_bad_input);
	tcase_add_test(tc, elided_top_round_trip);
	tcase_add_test(tc, common_top_needs_same_top);
	tcase_add_test(tc, malformed_truncated);
	tcase_add_test(tc, malformed_trailing_bytes);
	tcase_add_test(tc, malformed_version_and_flags);
	tcase_add_test(tc, malformed_overlong_run);
	tcase_add_test(tc, malformed_size_overflow);
	tcase_add_test(tc, malformed_tokens);
	tcase_add_test(tc, malformed_registers);
	tcase_add_test(tc, malformed_elision);
	tcase_add_test(tc, garbage_never_crashes);
	tcase_add_test(tc, peek_reads_header);
	tcase_add_test(tc, error_names);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(codec_suite)
