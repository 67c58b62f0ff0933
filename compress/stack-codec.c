/* SPDX-License-Identifier: MIT */
/*
 * stack-codec.c: classify, zero, run-length encode; and the strict decoder.
 * The wire format is specified in docs/stack-codec.md.
 */
#include "compress/stack-codec.h"

#include <string.h>

#include "common/asan.h"
#include "common/varint.h"

/* Header flag bits (byte 1). */
#define F_POLICY_MASK 0x03u
#define F_RELATIVE    0x04u
#define F_SP_DELTA    0x08u
#define F_ELIDED      0x10u
#define F_KNOWN       0x1fu

/* Token tags (low two bits of a token varint). */
#define T_ZERO  0u
#define T_CODE  1u
#define T_STACK 2u
#define T_RAW   3u

/* Longest token: a code tag varint plus an offset varint. */
#define TOKEN_MAX (2 * VARINT_MAX_BYTES)

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- code ranges -------------------------------------------------------- */

int stackcap_code_list_check(const struct stackcap_code_range *ranges, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		if (ranges[i].start >= ranges[i].end)
			return -1;
		if (i > 0 && ranges[i].start < ranges[i - 1].end)
			return -1;
	}
	return 0;
}

int stackcap_code_ranges_init(struct stackcap_code_ranges *set,
			      const struct stackcap_code_range *ranges, uint32_t count)
{
	set->ranges = ranges;
	set->count = count;
	set->lo = UINT64_MAX;
	set->hi = 0;
	if (stackcap_code_list_check(ranges, count))
		return -1;
	if (count) {
		set->lo = ranges[0].start;
		set->hi = ranges[count - 1].end;
	}
	memset(set->filter, 0, sizeof(set->filter));
	for (uint32_t i = 0; i < count; i++) {
		uint64_t const g0 = ranges[i].start >> STACKCAP_FILTER_SHIFT;
		uint64_t const g1 = (ranges[i].end - 1) >> STACKCAP_FILTER_SHIFT;
		uint64_t const span = g1 - g0 >= STACKCAP_FILTER_SIZE ? STACKCAP_FILTER_SIZE : g1 - g0 + 1;
		uint16_t const mine = i + 1 < STACKCAP_FILTER_MANY ? (uint16_t)(i + 1) : STACKCAP_FILTER_MANY;
		for (uint64_t g = g0; g < g0 + span; g++) {
			uint16_t *f = &set->filter[stackcap_code_filter_index(g << STACKCAP_FILTER_SHIFT)];
			*f = (*f == 0 || *f == mine) ? mine : STACKCAP_FILTER_MANY;
		}
	}
	return 0;
}

/* ---- encoder ------------------------------------------------------------ */

struct enc {
	uint8_t *p;
	uint8_t *end;
	int overflow;
};

/* Append the LEN bytes of a token built in TMP, if they fit. */
static void enc_append(struct enc *e, const uint8_t *tmp, size_t len)
{
	if ((size_t)(e->end - e->p) < len) {
		e->overflow = 1;
		return;
	}
	memcpy(e->p, tmp, len);
	e->p += len;
}

/* Write a token for the kept word W found at address ADDR (for registers,
 * ADDR is sp).  CODE_IDX is its range index or -1. */
static inline size_t word_token(uint8_t *p, uint64_t w, uint64_t addr, int64_t code_idx,
				const struct stackcap_code_ranges *ranges, int relative)
{
	if (relative) {
		if (code_idx >= 0) {
			uint64_t const tag = ((uint64_t)code_idx << 2) | T_CODE;
			uint64_t const off = w - ranges->ranges[code_idx].start;
			if (varint_size(tag) + varint_size(off) <= 9) {
				size_t n = varint_put(p, tag);
				return n + varint_put(p + n, off);
			}
		} else {
			int64_t const d = (int64_t)(w - addr);
			uint64_t const zz = zigzag_encode(d);
			if (zz < ((uint64_t)1 << 61) && varint_size((zz << 2) | T_STACK) <= 9)
				return varint_put(p, (zz << 2) | T_STACK);
		}
	}
	p[0] = T_RAW;
	for (int i = 0; i < 8; i++)
		p[1 + i] = (uint8_t)(w >> (8 * i));
	return 9;
}

static inline void put_token_word(struct enc *e, uint64_t w, uint64_t addr, int64_t code_idx,
				  const struct stackcap_code_ranges *ranges, int relative)
{
	if (likely((size_t)(e->end - e->p) >= TOKEN_MAX)) {
		e->p += word_token(e->p, w, addr, code_idx, ranges, relative);
	} else {
		uint8_t tmp[TOKEN_MAX];
		enc_append(e, tmp, word_token(tmp, w, addr, code_idx, ranges, relative));
	}
}

static inline void put_varint(struct enc *e, uint64_t v)
{
	if (likely((size_t)(e->end - e->p) >= VARINT_MAX_BYTES)) {
		e->p += varint_put(e->p, v);
	} else {
		uint8_t tmp[VARINT_MAX_BYTES];
		enc_append(e, tmp, varint_put(tmp, v));
	}
}

/* Zero-run token for RUN (>= 1) words. */
static inline void put_zero_run(struct enc *e, uint64_t run)
{
	put_varint(e, ((run - 1) << 2) | T_ZERO);
}

/* Could W be kept?  Cheap and branch-free: in the stack range, or in a
 * granule that holds code.  Most stack words (zeros, small integers, heap
 * pointers, doubles) are not candidates, so the branch on the answer
 * predicts well; candidates are then classified exactly. */
static inline int candidate(uint64_t w, const uint16_t *filter, uint64_t stack_lo,
			    uint64_t stack_len)
{
	return ((w - stack_lo) < stack_len) | (filter[stackcap_code_filter_index(w)] != 0);
}

/* Filters for no code at all, and for policy ALL (everything a candidate). */
static const uint16_t filter_none[STACKCAP_FILTER_SIZE];
static const uint16_t filter_all[STACKCAP_FILTER_SIZE] = {
	[0 ... STACKCAP_FILTER_SIZE - 1] = STACKCAP_FILTER_MANY
};

/* One word of a live stack: the capture reads other frames by design,
 * redzones included, so ASan must not check this load (in ASan builds it
 * is then a call; elsewhere the attribute is nothing and it inlines). */
#if SU_ASAN
#define STACK_LOAD_ATTR __attribute__((no_sanitize("address"), noinline))
#else
#define STACK_LOAD_ATTR inline __attribute__((always_inline))
#endif
static STACK_LOAD_ATTR uint64_t stack_word(const uint64_t *words, uint64_t i)
{
	return words[i];
}

/* The stack words below the elided top.  Inlined twice: with no second
 * range (ALSO_LEN 0) the extra test folds away from the hot loop. */
static inline __attribute__((always_inline)) void
encode_words(struct enc *e, const struct stackcap_codec_input *in, const struct stackcap_code_ranges *ranges,
	     const uint16_t *filter, uint64_t stack_hi, int relative, uint64_t also_lo, uint64_t also_len)
{
	uint64_t const sp = in->sp;
	uint64_t const stack_len = stack_hi - sp;
	uint64_t const n = in->nwords - in->elide_top;
	const uint64_t *const words = in->words;
	uint64_t run = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t const w = stack_word(words, i);
		int64_t idx;
		if (likely(!(candidate(w, filter, sp, stack_len) | ((w - also_lo) < also_len))) ||
		    !(stackcap_codec_classify_idx(w, ranges, sp, stack_hi, in->policy, &idx) ||
		      stackcap_codec_in_also(w, also_lo, also_lo + also_len, in->policy))) {
			run++;
			continue;
		}
		if (run) {
			put_zero_run(e, run);
			run = 0;
		}
		put_token_word(e, w, sp + 8 * i, idx, ranges, relative);
	}
	if (run)
		put_zero_run(e, run);
}

size_t stackcap_codec_encode(uint8_t *dst, size_t dst_capacity,
			     const struct stackcap_codec_input *in)
{
	if (!in || (!dst && dst_capacity))
		return STACKCAP_CODEC_ERROR(BAD_INPUT);
	if (in->policy < STACKCAP_POLICY_F1 || in->policy > STACKCAP_POLICY_ALL)
		return STACKCAP_CODEC_ERROR(BAD_INPUT);
	if (in->encoding != STACKCAP_WORDS_RAW && in->encoding != STACKCAP_WORDS_RELATIVE)
		return STACKCAP_CODEC_ERROR(BAD_INPUT);
	if (in->nwords && !in->words)
		return STACKCAP_CODEC_ERROR(BAD_INPUT);
	if (in->elide_top > in->nwords)
		return STACKCAP_CODEC_ERROR(BAD_INPUT);
	if (in->nwords > (UINT64_MAX - in->sp) / 8)
		return STACKCAP_CODEC_ERROR(SIZE_OVERFLOW);
	if (in->also_hi < in->also_lo)
		return STACKCAP_CODEC_ERROR(BAD_INPUT);
	uint64_t const also_len = in->also_hi - in->also_lo;

	uint64_t const sp = in->sp;
	uint64_t const stack_hi = sp + 8 * in->nwords;
	int const relative = in->encoding == STACKCAP_WORDS_RELATIVE;
	const struct stackcap_code_ranges *ranges =
		(in->ranges && in->ranges->count) ? in->ranges : NULL;
	struct enc e = { dst, dst + dst_capacity, 0 };

	/* Header. */
	uint8_t hdr[2 + 3 * VARINT_MAX_BYTES];
	size_t h = 0;
	hdr[h++] = STACKCAP_CODEC_VERSION;
	uint8_t flags = (uint8_t)in->policy;
	if (relative)
		flags |= F_RELATIVE;
	if (in->has_ref)
		flags |= F_SP_DELTA;
	if (in->elide_top)
		flags |= F_ELIDED;
	hdr[h++] = flags;
	h += varint_put(hdr + h, in->has_ref ? zigzag_encode((int64_t)(sp - in->ref_sp)) : sp);
	h += varint_put(hdr + h, in->nwords);
	if (in->elide_top)
		h += varint_put(hdr + h, in->elide_top);
	enc_append(&e, hdr, h);

	/* Registers: a mask, then one token per kept register; rsp is sp. */
	uint32_t reg_mask = 0;
	int64_t reg_idx[STACKCAP_NREGS];
	if (in->regs) {
		for (int r = 0; r < STACKCAP_NREGS; r++) {
			if (r == STACKCAP_REG_RSP)
				continue;
			uint64_t const v = in->regs[r];
			int keep = stackcap_codec_classify_idx(v, ranges, sp, stack_hi, in->policy, &reg_idx[r]) ||
				   stackcap_codec_in_also(v, in->also_lo, in->also_hi, in->policy);
			if (r == STACKCAP_REG_RIP && v != 0)
				keep = 1; /* always kept, even outside known code */
			if (keep)
				reg_mask |= 1u << r;
		}
	}
	put_varint(&e, reg_mask);
	for (int r = 0; r < STACKCAP_NREGS; r++)
		if (reg_mask & (1u << r))
			put_token_word(&e, in->regs[r], sp, reg_idx[r], ranges, relative);

	/* Stack words below the elided top.  A word is first tested as a
	 * candidate; only candidates are classified exactly. */
	const uint16_t *const filter = in->policy == STACKCAP_POLICY_ALL ? filter_all
				      : ranges ? ranges->filter : filter_none;
	if (also_len)
		encode_words(&e, in, ranges, filter, stack_hi, relative, in->also_lo, also_len);
	else
		encode_words(&e, in, ranges, filter, stack_hi, relative, 0, 0);

	if (e.overflow)
		return STACKCAP_CODEC_ERROR(DST_TOO_SMALL);
	return (size_t)(e.p - dst);
}

/* ---- decoder ------------------------------------------------------------ */

struct dec {
	const uint8_t *p;
	const uint8_t *end;
};

/* Read a varint; @return 0 or an error code.  Most tokens are one byte
 * (a zero run, a code range index with a short offset): read inline. */
static inline __attribute__((always_inline)) size_t dec_varint(struct dec *d, uint64_t *v)
{
	if (likely(d->p < d->end && *d->p < 0x80)) {
		*v = *d->p++;
		return 0;
	}
	int const n = varint_get(d->p, d->end, v);
	if (n == 0)
		return STACKCAP_CODEC_ERROR(TRUNCATED);
	if (n < 0)
		return STACKCAP_CODEC_ERROR(BAD_VARINT);
	d->p += n;
	return 0;
}

#define FORWARD_IF_ERROR(expr)                          \
	do {                                            \
		size_t const err_ = (expr);             \
		if (unlikely(stackcap_codec_is_error(err_))) \
			return err_;                    \
	} while (0)

#define RETURN_ERROR_IF(cond, name)                     \
	do {                                            \
		if (unlikely(cond))                     \
			return STACKCAP_CODEC_ERROR(name); \
	} while (0)

/* Decode the kept word whose token starts with tag T (already read), found
 * at ADDR.  @return 0 or an error. */
static size_t dec_word(struct dec *d, uint64_t t, uint64_t addr,
		       const struct stackcap_code_range *ranges, uint32_t count, uint64_t *out)
{
	switch (t & 3) {
	case T_CODE: {
		uint64_t const idx = t >> 2;
		uint64_t off;
		FORWARD_IF_ERROR(dec_varint(d, &off));
		RETURN_ERROR_IF(!ranges || idx >= count, BAD_RANGE);
		const struct stackcap_code_range *r = &ranges[idx];
		RETURN_ERROR_IF(off >= r->end - r->start, BAD_RANGE);
		*out = r->start + off;
		RETURN_ERROR_IF(*out == 0, BAD_TOKEN);
		return 0;
	}
	case T_STACK:
		*out = addr + (uint64_t)zigzag_decode(t >> 2);
		RETURN_ERROR_IF(*out == 0, BAD_TOKEN);
		return 0;
	case T_RAW: {
		RETURN_ERROR_IF(t != T_RAW, BAD_TOKEN);
		RETURN_ERROR_IF(d->end - d->p < 8, TRUNCATED);
		uint64_t w = 0;
		for (int i = 0; i < 8; i++)
			w |= (uint64_t)d->p[i] << (8 * i);
		d->p += 8;
		RETURN_ERROR_IF(w == 0, BAD_TOKEN);
		*out = w;
		return 0;
	}
	default:
		return STACKCAP_CODEC_ERROR(BAD_TOKEN);
	}
}

/* Parse the fixed header; leaves D after it. */
static size_t dec_header(struct dec *d, struct stackcap_codec_header *hdr)
{
	RETURN_ERROR_IF(d->end - d->p < 2, TRUNCATED);
	hdr->version = d->p[0];
	RETURN_ERROR_IF(hdr->version != 1, BAD_VERSION);
	uint8_t const flags = d->p[1];
	d->p += 2;
	RETURN_ERROR_IF(flags & ~F_KNOWN, BAD_FLAGS);
	RETURN_ERROR_IF((flags & F_POLICY_MASK) == 0, BAD_FLAGS);
	hdr->policy = (enum stackcap_policy)(flags & F_POLICY_MASK);
	hdr->encoding = (flags & F_RELATIVE) ? STACKCAP_WORDS_RELATIVE : STACKCAP_WORDS_RAW;
	hdr->sp_is_delta = !!(flags & F_SP_DELTA);
	FORWARD_IF_ERROR(dec_varint(d, &hdr->sp_or_delta));
	FORWARD_IF_ERROR(dec_varint(d, &hdr->nwords));
	hdr->elided = 0;
	if (flags & F_ELIDED) {
		FORWARD_IF_ERROR(dec_varint(d, &hdr->elided));
		RETURN_ERROR_IF(hdr->elided == 0 || hdr->elided > hdr->nwords, BAD_FLAGS);
	}
	return 0;
}

size_t stackcap_codec_peek(const uint8_t *src, size_t src_size, struct stackcap_codec_header *hdr)
{
	RETURN_ERROR_IF(!src || !hdr, BAD_INPUT);
	struct dec d = { src, src + src_size };
	FORWARD_IF_ERROR(dec_header(&d, hdr));
	return (size_t)(d.p - src);
}

size_t stackcap_codec_decode(const uint8_t *src, size_t src_size,
			     const struct stackcap_code_ranges *ranges,
			     const struct stackcap_image *ref, struct stackcap_image *dst)
{
	return stackcap_codec_decode_list(src, src_size, ranges ? ranges->ranges : NULL,
					  ranges ? ranges->count : 0, ref, dst);
}

/* The blob after its header HDR, from D (its end the blob's). */
static size_t decode_body(struct dec *d, const struct stackcap_codec_header *hdrp, size_t src_size,
			  const struct stackcap_code_range *ranges, uint32_t count,
			  const struct stackcap_image *ref, struct stackcap_image *dst)
{
	struct stackcap_codec_header const hdr = *hdrp;
	uint64_t sp = hdr.sp_or_delta;
	if (hdr.sp_is_delta) {
		RETURN_ERROR_IF(!ref, NEED_REF);
		sp = ref->sp + (uint64_t)zigzag_decode(hdr.sp_or_delta);
	}
	RETURN_ERROR_IF(hdr.nwords > (UINT64_MAX - sp) / 8, SIZE_OVERFLOW);
	RETURN_ERROR_IF(hdr.nwords > dst->capacity, TOO_LARGE);
	uint64_t const stack_top = sp + 8 * hdr.nwords;
	if (hdr.elided) {
		RETURN_ERROR_IF(!ref, NEED_REF);
		RETURN_ERROR_IF(hdr.elided > ref->nwords, BAD_REF);
		RETURN_ERROR_IF(ref->sp + 8 * ref->nwords != stack_top, BAD_REF);
	}

	dst->sp = sp;
	dst->nwords = hdr.nwords;
	dst->policy = hdr.policy;
	dst->encoding = hdr.encoding;
	dst->elided = hdr.elided;

	/* Registers. */
	uint64_t mask;
	FORWARD_IF_ERROR(dec_varint(d, &mask));
	RETURN_ERROR_IF(mask >> STACKCAP_NREGS, BAD_REGS);
	RETURN_ERROR_IF(mask & (1u << STACKCAP_REG_RSP), BAD_REGS);
	/* Each register stored once, 0 when not kept (a memset before, as
	 * rep stos, was a fifth of this function's time). */
	for (int r = 0; r < STACKCAP_NREGS; r++) {
		uint64_t v = 0;
		if (mask & (1u << r)) {
			uint64_t t;
			FORWARD_IF_ERROR(dec_varint(d, &t));
			RETURN_ERROR_IF((t & 3) == T_ZERO, BAD_REGS);
			FORWARD_IF_ERROR(dec_word(d, t, sp, ranges, count, &v));
		}
		dst->regs[r] = v;
	}
	dst->regs[STACKCAP_REG_RSP] = sp;
	dst->regs_kept = (uint32_t)mask | (1u << STACKCAP_REG_RSP);

	/* Stack words up to the elided top. */
	uint64_t const n = hdr.nwords - hdr.elided;
	if (dst->kept)
		memset(dst->kept, 0, (size_t)((hdr.nwords + 7) / 8));
	uint64_t i = 0;
	while (i < n) {
		uint64_t t;
		FORWARD_IF_ERROR(dec_varint(d, &t));
		if ((t & 3) == T_ZERO) {
			uint64_t const run = (t >> 2) + 1;
			RETURN_ERROR_IF(run > n - i, OVERLONG_RUN);
			memset(&dst->words[i], 0, (size_t)run * 8);
			i += run;
			continue;
		}
		FORWARD_IF_ERROR(dec_word(d, t, sp + 8 * i, ranges, count, &dst->words[i]));
		if (dst->kept)
			dst->kept[i >> 3] |= (uint8_t)(1u << (i & 7));
		i++;
	}
	RETURN_ERROR_IF(d->p != d->end, TRAILING_BYTES);

	/* The elided top comes from the reference.  A kept word is never
	 * zero and a dropped one always is, so kept bits follow the values. */
	if (hdr.elided) {
		uint64_t const from = ref->nwords - hdr.elided;
		/* A caller decoding over its reference, both aligned at the
		 * stack's top in one buffer, has the elided words in place. */
		if (&dst->words[n] != &ref->words[from])
			memcpy(&dst->words[n], &ref->words[from], (size_t)hdr.elided * 8);
		if (dst->kept)
			for (uint64_t k = n; k < hdr.nwords; k++)
				if (dst->words[k])
					dst->kept[k >> 3] |= (uint8_t)(1u << (k & 7));
	}
	return src_size;
}

size_t stackcap_codec_decode_list(const uint8_t *src, size_t src_size,
				  const struct stackcap_code_range *ranges, uint32_t count,
				  const struct stackcap_image *ref, struct stackcap_image *dst)
{
	RETURN_ERROR_IF(!src || !dst || (dst->capacity && !dst->words), BAD_INPUT);
	struct dec d = { src, src + src_size };
	struct stackcap_codec_header hdr;
	FORWARD_IF_ERROR(dec_header(&d, &hdr));
	return decode_body(&d, &hdr, src_size, ranges, count, ref, dst);
}

size_t stackcap_codec_decode_peeked(const uint8_t *src, size_t src_size, const struct stackcap_codec_header *hdr,
				    size_t hdr_size, const struct stackcap_code_range *ranges, uint32_t count,
				    const struct stackcap_image *ref, struct stackcap_image *dst)
{
	RETURN_ERROR_IF(!src || !hdr || hdr_size > src_size || !dst || (dst->capacity && !dst->words), BAD_INPUT);
	struct dec d = { src + hdr_size, src + src_size };
	return decode_body(&d, hdr, src_size, ranges, count, ref, dst);
}

uint64_t stackcap_image_common_top(const struct stackcap_image *img,
				   const struct stackcap_image *ref)
{
	if (!img || !ref || img->sp + 8 * img->nwords != ref->sp + 8 * ref->nwords)
		return 0;
	uint64_t k = 0;
	uint64_t const max = img->nwords < ref->nwords ? img->nwords : ref->nwords;
	while (k < max && img->words[img->nwords - 1 - k] == ref->words[ref->nwords - 1 - k])
		k++;
	return k;
}

const char *stackcap_codec_error_name(size_t code)
{
	static const char *const names[] = {
#define STACKCAP_X_NAME(name, msg) msg,
		STACKCAP_CODEC_ERRORS(STACKCAP_X_NAME)
#undef STACKCAP_X_NAME
	};
	enum stackcap_codec_error const e = stackcap_codec_error_code(code);
	return names[e];
}
