/* SPDX-License-Identifier: MIT */
/*
 * cpython-layout.h: where CPython keeps what the runtime unwinder reads
 * (rt-cpython.c), per minor version, x86-64.  Derived from the DWARF of
 * Debian's python3.11-dbg and checked against it, field by field, by
 * tests/unit/test-cpython-layout (which names the field a build
 * disagrees on).  Header-only so the test reads the very table the
 * library uses.
 */
#ifndef STACKCAP_CPYTHON_LAYOUT_H
#define STACKCAP_CPYTHON_LAYOUT_H

#include <stdint.h>

struct cpy_layout {
	uint32_t version;              /* PY_VERSION_HEX >> 16: 0x030b = 3.11 */
	uint32_t rt_tss;               /* _PyRuntime.gilstate.autoTSSkey (Py_tss_t: int, pthread_key_t) */
	uint32_t ts_cframe;            /* PyThreadState.cframe */
	uint32_t cf_current;           /* _PyCFrame.current_frame */
	/* The thread's data stack, where every frame not owned by a
	 * generator lives, contiguously: PyThreadState.datastack_chunk and
	 * .datastack_top (adjacent), _PyStackChunk.previous and .data. */
	uint32_t ts_chunk, ts_top, ck_previous, ck_data;
	/* _PyInterpreterFrame; the read covers [fr_lo, fr_hi). */
	uint32_t fr_code, fr_previous, fr_instr, fr_entry, fr_lo, fr_hi;
	/* PyCodeObject */
	uint32_t co_adaptive, co_firstlineno, co_filename, co_qualname, co_linetable;
	/* The code header fingerprinted: [co_lo, co_hi) less the fields the
	 * interpreter changes in a live object, [skip_lo, skip_hi) (warm-up
	 * counter, lazily built line array). */
	uint32_t co_lo, co_hi, co_skip_lo, co_skip_hi;
	/* str (PyASCIIObject / PyCompactUnicodeObject) and bytes */
	uint32_t str_length, str_state, str_ascii_data, str_compact_data;
	uint32_t bytes_size, bytes_data;
};

/* CPython 3.11 (Debian bookworm's 3.11.2), x86-64. */
static const struct cpy_layout cpy_layouts[] = {
	{
		.version = 0x030b,
		.rt_tss = 0x250,
		.ts_cframe = 56,
		.cf_current = 8,
		.ts_chunk = 296, .ts_top = 304, .ck_previous = 0, .ck_data = 24,
		.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_entry = 68, .fr_lo = 32, .fr_hi = 69,
		.co_adaptive = 184, .co_firstlineno = 72, .co_filename = 112, .co_qualname = 128,
		.co_linetable = 136,
		/* ob_type .. co_linetable, without co_warmup and
		 * _co_linearray_entry_size. */
		.co_lo = 8, .co_hi = 144, .co_skip_lo = 52, .co_skip_hi = 56,
		.str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72,
		.bytes_size = 16, .bytes_data = 32,
	},
};

#endif /* STACKCAP_CPYTHON_LAYOUT_H */
