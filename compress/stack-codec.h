/* SPDX-License-Identifier: MIT */
/*
 * stack-codec.h: the stack codec, shared by the capture side (encode, in a
 * signal handler) and the offline side (decode).
 *
 * A captured stack is the words [sp, sp + 8 * nwords) plus the 17 x86-64
 * general-purpose registers.  The encoder keeps only the words that can
 * matter for unwinding (policy F2: words pointing into a code range or into
 * the copied stack range; F1: code pointers only), zeroes the rest and
 * run-length encodes the zero runs.  The decoder rebuilds the full-layout
 * image, zeros in place, and says which words were kept.
 *
 * Wire format: docs/stack-codec.md (format version STACKCAP_CODEC_VERSION).
 *
 * Error convention (as zstd): functions returning size_t return either a
 * size or an error code folded into the top of the size_t range; test with
 * stackcap_codec_is_error(), name with stackcap_codec_error_name().
 *
 * Signal safety: stackcap_codec_encode(), stackcap_code_ranges_find() and
 * stackcap_codec_classify() are async-signal-safe: no malloc, no locks, no
 * syscalls, no writes outside the caller's buffers.  The decoder is not
 * meant for signal handlers but also never allocates.
 */
#ifndef STACKCAP_STACK_CODEC_H
#define STACKCAP_STACK_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the blob format written by this encoder.  The decoder reads
 * every version listed in docs/stack-codec.md. */
#define STACKCAP_CODEC_VERSION 1

/* ---- registers ---------------------------------------------------------- */

/* Registers travel in DWARF x86-64 numbering, so the unwinder indexes them
 * directly: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
enum stackcap_reg {
	STACKCAP_REG_RAX = 0, STACKCAP_REG_RDX, STACKCAP_REG_RCX,
	STACKCAP_REG_RBX, STACKCAP_REG_RSI, STACKCAP_REG_RDI,
	STACKCAP_REG_RBP, STACKCAP_REG_RSP, STACKCAP_REG_R8,
	STACKCAP_REG_R9, STACKCAP_REG_R10, STACKCAP_REG_R11,
	STACKCAP_REG_R12, STACKCAP_REG_R13, STACKCAP_REG_R14,
	STACKCAP_REG_R15, STACKCAP_REG_RIP,
	STACKCAP_NREGS /* 17 */
};

/* ---- policies ----------------------------------------------------------- */

enum stackcap_policy {
	/* Keep code pointers only.  Measurably inexact (rbp/rbx-based CFAs). */
	STACKCAP_POLICY_F1 = 1,
	/* Keep code pointers and pointers into the copied stack range.  The
	 * default: exact on every sample measured (DESIGN.md). */
	STACKCAP_POLICY_F2 = 2,
	/* Keep every word: the unfiltered copy, only for fidelity measurement.
	 * It carries whatever secrets the stack holds. */
	STACKCAP_POLICY_ALL = 3,
};

/* How kept words are written. */
enum stackcap_word_encoding {
	/* Every kept word as 8 raw bytes. */
	STACKCAP_WORDS_RAW = 0,
	/* Code pointers as (range index, offset), stack pointers as a signed
	 * distance from the word's own address, whichever is shorter than raw
	 * per word.  Measured smaller on real stacks (docs/BENCHMARKS.md). */
	STACKCAP_WORDS_RELATIVE = 1,
};

/* ---- code ranges -------------------------------------------------------- */

struct stackcap_code_range {
	uint64_t start;   /* first byte of executable code */
	uint64_t end;     /* one past the last byte */
	uint32_t module;  /* index of the module (in the maps snapshot) */
};

/* An immutable, sorted, non-overlapping set of code ranges.  The capture
 * side publishes one per maps generation; the handler only reads it. */
#define STACKCAP_FILTER_SIZE 65536
#define STACKCAP_FILTER_SHIFT 16 /* 64 KiB granules */

struct stackcap_code_ranges {
	const struct stackcap_code_range *ranges; /* sorted by start */
	uint32_t count;
	uint64_t lo;  /* ranges[0].start, or UINT64_MAX when empty */
	uint64_t hi;  /* ranges[count-1].end, or 0 when empty */
	/* Direct lookup by 64 KiB granule, indexed modulo the table size:
	 * 0 when no code lies in such a granule, 1 + the range index when
	 * exactly one range does, STACKCAP_FILTER_MANY otherwise.  Most stack
	 * words (small integers, heap pointers, doubles) hit a 0 and cost one
	 * load; most code words need one range check instead of a search. */
	uint16_t filter[STACKCAP_FILTER_SIZE];
};

#define STACKCAP_FILTER_MANY 0xffffu

/* Filter index of the granule holding ADDR. */
static inline uint32_t stackcap_code_filter_index(uint64_t addr)
{
	return (uint32_t)(addr >> STACKCAP_FILTER_SHIFT) & (STACKCAP_FILTER_SIZE - 1);
}

/* Fill LO/HI and the filter of SET from its ranges and check the ranges are sorted,
 * non-empty and non-overlapping.  @return 0, or -1 when they are not. */
int stackcap_code_ranges_init(struct stackcap_code_ranges *set,
			      const struct stackcap_code_range *ranges,
			      uint32_t count);

/* Index of the range holding ADDR, or -1.  O(1) through the filter,
 * O(log count) where granules are shared; signal-safe. */
static inline int64_t stackcap_code_ranges_find(const struct stackcap_code_ranges *set,
						uint64_t addr)
{
	uint32_t const f = set->filter[stackcap_code_filter_index(addr)];
	if (f == 0)
		return -1;
	if (f != STACKCAP_FILTER_MANY) {
		const struct stackcap_code_range *r = &set->ranges[f - 1];
		return (addr >= r->start && addr < r->end) ? (int64_t)(f - 1) : -1;
	}
	if (addr < set->lo || addr >= set->hi)
		return -1;
	uint32_t lo = 0, hi = set->count;
	while (lo < hi) {
		uint32_t const mid = lo + (hi - lo) / 2;
		const struct stackcap_code_range *r = &set->ranges[mid];
		if (addr < r->start)
			hi = mid;
		else if (addr >= r->end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* ---- encoding ----------------------------------------------------------- */

/* What one capture gives the encoder. */
struct stackcap_codec_input {
	const uint64_t *words;   /* the stack copy, words[i] read at sp + 8*i */
	uint64_t nwords;
	uint64_t sp;             /* address of words[0] (the interrupted rsp) */
	const uint64_t *regs;    /* STACKCAP_NREGS values, or NULL (only rip, rsp=sp unknown) */
	const struct stackcap_code_ranges *ranges; /* may be NULL: no code */
	enum stackcap_policy policy;
	enum stackcap_word_encoding encoding;

	/* Second stage (writer thread): the outermost ELIDE_TOP words equal
	 * those of the reference image (the previous sample of the same
	 * thread, same stack top) and are not written; sp is written as a
	 * delta from REF_SP.  Zero/unused in the first stage. */
	uint64_t elide_top;
	uint64_t ref_sp;
	int has_ref;

	/* A second stack range [also_lo, also_hi) whose pointers F2 keeps as
	 * well: the thread stack that a handler running on the alternate
	 * signal stack interrupted (saved rbp values point there).  Changes
	 * only which words are kept, not the format.  0, 0: none. */
	uint64_t also_lo, also_hi;
};

/* Worst-case encoded size for NWORDS stack words (header and all 17
 * registers included).  Every kept word costs at most 9 bytes, every zero
 * word at most 1 byte, so the bound is linear: see docs/stack-codec.md. */
#define STACKCAP_CODEC_HEADER_BOUND 64u
#define STACKCAP_CODEC_BOUND(nwords) \
	(STACKCAP_CODEC_HEADER_BOUND + 9u * STACKCAP_NREGS + 9u * (size_t)(nwords))

/* Classify one word: nonzero when POLICY keeps it, with *CODE_IDX its code
 * range index (or -1).  Stack range is [STACK_LO, STACK_HI).  Signal-safe.
 * The encoder's own test, so callers agree with it exactly. */
static inline int stackcap_codec_classify_idx(uint64_t w, const struct stackcap_code_ranges *ranges,
					      uint64_t stack_lo, uint64_t stack_hi,
					      enum stackcap_policy policy, int64_t *code_idx)
{
	*code_idx = -1;
	if (w == 0)
		return 0;
	if (w >= stack_lo && w < stack_hi && policy != STACKCAP_POLICY_F1)
		return 1;
	if (ranges) {
		*code_idx = stackcap_code_ranges_find(ranges, w);
		if (*code_idx >= 0)
			return 1;
	}
	return policy == STACKCAP_POLICY_ALL;
}

/* Kept by POLICY for pointing into the second stack range [ALSO_LO,
 * ALSO_HI) of stackcap_codec_input (an alternate-stack handler's
 * interrupted stack).  The encoder's own test, for callers that filter. */
static inline int stackcap_codec_in_also(uint64_t w, uint64_t also_lo, uint64_t also_hi,
					 enum stackcap_policy policy)
{
	return policy != STACKCAP_POLICY_F1 && w - also_lo < also_hi - also_lo;
}

/* The same without the range index. */
static inline int stackcap_codec_classify(uint64_t w, const struct stackcap_code_ranges *ranges,
					  uint64_t stack_lo, uint64_t stack_hi,
					  enum stackcap_policy policy)
{
	int64_t idx;
	return stackcap_codec_classify_idx(w, ranges, stack_lo, stack_hi, policy, &idx);
}

/* Encode IN into DST.  @return the blob size, or an error code
 * (DST_TOO_SMALL when DST_CAPACITY < the encoded size; a capacity of
 * STACKCAP_CODEC_BOUND(in->nwords) never fails for that reason).
 * O(nwords * log(ranges)); no malloc, no locks, no syscalls. */
size_t stackcap_codec_encode(uint8_t *dst, size_t dst_capacity,
			     const struct stackcap_codec_input *in);

/* ---- decoding ----------------------------------------------------------- */

/* A decoded stack image: full layout, dropped words are zero. */
struct stackcap_image {
	uint64_t sp;
	uint64_t nwords;
	uint64_t regs[STACKCAP_NREGS];
	uint32_t regs_kept;        /* bit i set: regs[i] was recorded */
	enum stackcap_policy policy;
	enum stackcap_word_encoding encoding;
	uint64_t elided;           /* words taken from the reference image */
	/* Buffers owned by the caller: */
	uint64_t *words;           /* capacity words */
	uint8_t *kept;             /* bitmap, (capacity + 7) / 8 bytes, or NULL */
	uint64_t capacity;
};

/* What the fixed part of a blob says, read without decoding it. */
struct stackcap_codec_header {
	unsigned version;
	enum stackcap_policy policy;
	enum stackcap_word_encoding encoding;
	int sp_is_delta;           /* sp is relative to the reference's sp */
	uint64_t sp_or_delta;
	uint64_t nwords;
	uint64_t elided;
};

/* Parse the header of SRC.  @return its size in bytes, or an error. */
size_t stackcap_codec_peek(const uint8_t *src, size_t src_size,
			   struct stackcap_codec_header *hdr);

/* Decode SRC into DST (whose words/kept/capacity the caller set).  REF is
 * the previous decoded image of the same thread, needed when the blob
 * elides words or has a delta sp; NULL otherwise.  RANGES are the code
 * ranges of the blob's maps generation (needed for relative code words).
 * DST may share REF's buffer only with both aligned at its end (the
 * stack's top): the elided words then lie in place, and the words below
 * them in REF are overwritten.  @return SRC_SIZE on success (a blob is
 * exactly one sample: trailing bytes are an error), or an error code.
 * Never reads SRC past SRC_SIZE nor writes DST past its capacity. */
size_t stackcap_codec_decode(const uint8_t *src, size_t src_size,
			     const struct stackcap_code_ranges *ranges,
			     const struct stackcap_image *ref,
			     struct stackcap_image *dst);

/* The same with the code ranges as a sorted list of COUNT: decoding needs
 * no lookup filter, so a reader holding many maps generations keeps no
 * 128 KiB table per generation. */
size_t stackcap_codec_decode_list(const uint8_t *src, size_t src_size,
				  const struct stackcap_code_range *ranges, uint32_t count,
				  const struct stackcap_image *ref,
				  struct stackcap_image *dst);

/* stackcap_codec_decode_list after stackcap_codec_peek: HDR and HDR_SIZE
 * are what the peek of the same SRC gave (the header not parsed twice, a
 * few percent of a reader's time). */
size_t stackcap_codec_decode_peeked(const uint8_t *src, size_t src_size,
				    const struct stackcap_codec_header *hdr, size_t hdr_size,
				    const struct stackcap_code_range *ranges, uint32_t count,
				    const struct stackcap_image *ref, struct stackcap_image *dst);

/* Index of the range of the sorted list RANGES (COUNT) holding ADDR, or
 * -1: O(log count), no filter. */
static inline int64_t stackcap_code_list_find(const struct stackcap_code_range *ranges, uint32_t count,
					      uint64_t addr)
{
	uint32_t lo = 0, hi = count;
	while (lo < hi) {
		uint32_t const mid = lo + (hi - lo) / 2;
		if (addr < ranges[mid].start)
			hi = mid;
		else if (addr >= ranges[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* 0 when RANGES (COUNT) are non-empty, sorted and non-overlapping, -1
 * otherwise (what stackcap_code_ranges_init checks). */
int stackcap_code_list_check(const struct stackcap_code_range *ranges, uint32_t count);

/* Nonzero when word I of IMG was kept (not zeroed) by the encoder. */
static inline int stackcap_image_word_kept(const struct stackcap_image *img, uint64_t i)
{
	return img->kept && (img->kept[i >> 3] >> (i & 7)) & 1;
}

/* Number of outermost words that IMG and REF share, word for word, at the
 * same addresses (0 when their stack tops differ).  Writer-side helper for
 * the top-elided delta. */
uint64_t stackcap_image_common_top(const struct stackcap_image *img,
				   const struct stackcap_image *ref);

/* ---- errors ------------------------------------------------------------- */

#define STACKCAP_CODEC_ERRORS(X)                                              \
	X(OK,             "no error")                                         \
	X(DST_TOO_SMALL,  "destination buffer too small")                     \
	X(BAD_INPUT,      "invalid encoder input")                            \
	X(TRUNCATED,      "blob truncated")                                   \
	X(BAD_VERSION,    "unknown blob format version")                      \
	X(BAD_FLAGS,      "unknown flags or policy in blob header")           \
	X(BAD_VARINT,     "malformed or overlong varint")                     \
	X(SIZE_OVERFLOW,  "stack size overflows the address space")           \
	X(TOO_LARGE,      "stack larger than the destination image")          \
	X(OVERLONG_RUN,   "run or token goes past the end of the stack")      \
	X(BAD_TOKEN,      "malformed word token")                             \
	X(BAD_RANGE,      "code word names an unknown range or offset")       \
	X(BAD_REGS,       "malformed register section")                       \
	X(NEED_REF,       "blob needs the previous image of its thread")      \
	X(BAD_REF,        "blob does not fit the previous image of its thread") \
	X(TRAILING_BYTES, "trailing bytes after the blob")

enum stackcap_codec_error {
#define STACKCAP_X_ENUM(name, msg) STACKCAP_CODEC_E_##name,
	STACKCAP_CODEC_ERRORS(STACKCAP_X_ENUM)
#undef STACKCAP_X_ENUM
	STACKCAP_CODEC_E_MAX
};

#define STACKCAP_CODEC_ERROR(name) ((size_t) - (size_t)STACKCAP_CODEC_E_##name)

static inline int stackcap_codec_is_error(size_t code)
{
	return code > (size_t) - (size_t)STACKCAP_CODEC_E_MAX;
}

/* The error enum value of CODE (0 when CODE is not an error). */
static inline enum stackcap_codec_error stackcap_codec_error_code(size_t code)
{
	return stackcap_codec_is_error(code) ? (enum stackcap_codec_error)(0 - code)
					     : STACKCAP_CODEC_E_OK;
}

const char *stackcap_codec_error_name(size_t code);

#ifdef __cplusplus
}
#endif
#endif /* STACKCAP_STACK_CODEC_H */
