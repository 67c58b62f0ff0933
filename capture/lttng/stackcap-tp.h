/* SPDX-License-Identifier: MIT */
/*
 * stackcap-tp.h: the LTTng-UST tracepoint provider `stackcap`.  The event
 * layout is a contract with every reader: docs/lttng.md.  Change it only
 * together with that document and trace/source-lttng.c.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER stackcap

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "capture/lttng/stackcap-tp.h"

#if !defined(STACKCAP_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define STACKCAP_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

/* A stack-codec blob (self-contained) and the generation of its ranges.
 * A blob travels as little-endian 64-bit words (BLOB_WORDS, its last one
 * padded with zeros) and its length in bytes (BLOB_BYTES): CTF 1.8 has no
 * byte-string type, and babeltrace2 decodes each element of a sequence as
 * a field of its own, 8x faster 8 bytes at a time (docs/lttng.md). */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(stackcap, blob_class,
	LTTNG_UST_TP_ARGS(uint32_t, generation, const uint64_t *, words, uint32_t, nwords, uint32_t, len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, generation, generation)
		lttng_ust_field_integer(uint32_t, blob_bytes, len)
		lttng_ust_field_sequence(uint64_t, blob_words, words, uint32_t, nwords)
	)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(stackcap, blob_class, stackcap, sample,
	LTTNG_UST_TP_ARGS(uint32_t, generation, const uint64_t *, words, uint32_t, nwords, uint32_t, len))

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(stackcap, blob_class, stackcap, sample_segment,
	LTTNG_UST_TP_ARGS(uint32_t, generation, const uint64_t *, words, uint32_t, nwords, uint32_t, len))

/* The exact range list of one generation: start0, end0, start1, end1... */
LTTNG_UST_TRACEPOINT_EVENT(stackcap, code_ranges,
	LTTNG_UST_TP_ARGS(uint32_t, generation, uint8_t, codec_version, uint8_t, policy,
			  uint32_t, stack_cap, uint32_t, frequency_hz,
			  const uint64_t *, ranges, uint32_t, nvalues,
			  const uint8_t *, vdso_build_id, uint8_t, vdso_build_id_len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, generation, generation)
		lttng_ust_field_integer(uint8_t, codec_version, codec_version)
		lttng_ust_field_integer(uint8_t, policy, policy)
		lttng_ust_field_integer(uint32_t, stack_cap, stack_cap)
		lttng_ust_field_integer(uint32_t, frequency_hz, frequency_hz)
		lttng_ust_field_sequence_hex(uint64_t, ranges, ranges, uint32_t, nvalues)
		lttng_ust_field_sequence_hex(uint8_t, vdso_build_id, vdso_build_id, uint8_t, vdso_build_id_len)
	)
)

/* Runtime frames (record --python --lttng): the sampled thread's
 * interpreter frames (compress/rt-frames.h), right before its
 * stackcap:sample in the same thread. */
LTTNG_UST_TRACEPOINT_EVENT(stackcap, runtime_frames,
	LTTNG_UST_TP_ARGS(uint8_t, runtime, const uint64_t *, words, uint32_t, nwords, uint32_t, len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, runtime, runtime)
		lttng_ust_field_integer(uint32_t, blob_bytes, len)
		lttng_ust_field_sequence(uint64_t, blob_words, words, uint32_t, nwords)
	)
)

/* The runtime registered in the process (docs/trace-format.md `runtime`),
 * again about once a second with its counts. */
LTTNG_UST_TRACEPOINT_EVENT(stackcap, runtime,
	LTTNG_UST_TP_ARGS(uint8_t, runtime, uint32_t, version, uint64_t, eval_start, uint64_t, eval_end,
			  uint64_t, chains, uint64_t, dropped, const char *, name),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, runtime, runtime)
		lttng_ust_field_integer_hex(uint32_t, version, version)
		lttng_ust_field_integer_hex(uint64_t, eval_start, eval_start)
		lttng_ust_field_integer_hex(uint64_t, eval_end, eval_end)
		lttng_ust_field_integer(uint64_t, chains, chains)
		lttng_ust_field_integer(uint64_t, dropped, dropped)
		lttng_ust_field_string(name, name)
	)
)

/* One code object, described once (docs/trace-format.md `runtime_code`). */
LTTNG_UST_TRACEPOINT_EVENT(stackcap, runtime_code,
	LTTNG_UST_TP_ARGS(uint8_t, runtime, uint64_t, code, uint32_t, fingerprint, uint32_t, first_line,
			  const char *, name, const char *, file, const uint8_t *, line_table, uint32_t, line_table_len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, runtime, runtime)
		lttng_ust_field_integer_hex(uint64_t, code, code)
		lttng_ust_field_integer(uint32_t, fingerprint, fingerprint)
		lttng_ust_field_integer(uint32_t, first_line, first_line)
		lttng_ust_field_string(name, name)
		lttng_ust_field_string(file, file)
		lttng_ust_field_sequence(uint8_t, line_table, line_table, uint32_t, line_table_len)
	)
)

#endif /* STACKCAP_TP_H */

#include <lttng/tracepoint-event.h>
