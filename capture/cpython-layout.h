/* SPDX-License-Identifier: MIT */
/*
 * cpython-layout.h: where CPython keeps what the runtime unwinder reads
 * (rt-cpython.c), per minor version, x86-64.  Derived from the DWARF of
 * Debian's python3.11-dbg (bookworm) and python3.13-dbg (trixie) and
 * checked against it, field by field, by tests/unit/test-cpython-layout
 * (which names the field a build disagrees on; tests/python-new.sh runs
 * it on trixie's python3.13).  Header-only so the test reads the very
 * table the library uses.
 *
 * From 3.13 on, CPython publishes most of these offsets itself, in the
 * _Py_DebugOffsets at the start of _PyRuntime: the unwinder reads them
 * there at probe time (cpy_debug_offsets in rt-cpython.c) and keeps from
 * the row only what is not published (the TSS key's place in _PyRuntime,
 * the data-stack chunk's header, the compact str's data offset).
 */
#ifndef STACKCAP_CPYTHON_LAYOUT_H
#define STACKCAP_CPYTHON_LAYOUT_H

#include <stdint.h>

/* A field this version does not have. */
#define CPY_NONE 0xffffffffu
/* _PyInterpreterFrame.owner of the shim frame _PyEval_EvalFrameDefault
 * pushes on entry (3.12+: FRAME_OWNED_BY_CSTACK). */
#define CPY_OWNER_CSTACK 3

struct cpy_layout {
	uint32_t version;              /* PY_VERSION_HEX >> 16: 0x030b = 3.11 */
	uint32_t rt_tss;               /* _PyRuntime's autoTSSkey (Py_tss_t: int, pthread_key_t) */
	/* The thread's current frame: the pointer at PyThreadState +
	 * ts_cframe, then the one at cf_current in what it points to (3.11,
	 * 3.12: tstate->cframe->current_frame); cf_current CPY_NONE: the
	 * first pointer is the frame (3.13: tstate->current_frame). */
	uint32_t ts_cframe;
	uint32_t cf_current;
	uint32_t debug_offsets;        /* 1: _PyRuntime starts with _Py_DebugOffsets (3.13) */
	/* The thread's data stack, where every frame not owned by a
	 * generator lives, contiguously: PyThreadState.datastack_chunk and
	 * .datastack_top (adjacent), _PyStackChunk.previous and .data. */
	uint32_t ts_chunk, ts_top, ck_previous, ck_data;
	/* _PyInterpreterFrame; the read covers [fr_lo, fr_hi).  fr_code:
	 * f_code (3.11, 3.12), f_executable (3.13); fr_instr: prev_instr
	 * (3.11, 3.12: the last instruction started), instr_ptr (3.13: the
	 * one executing).  Where a native _PyEval_EvalFrameDefault call
	 * began: fr_entry, the is_entry byte (3.11), or (CPY_NONE) the shim
	 * frame the call pushed under its first frame, owner at fr_owner
	 * CPY_OWNER_CSTACK (3.12+). */
	uint32_t fr_code, fr_previous, fr_instr, fr_entry, fr_owner, fr_lo, fr_hi;
	/* PyCodeObject */
	uint32_t co_adaptive, co_firstlineno, co_filename, co_qualname, co_linetable;
	/* co_flags, and the flag of the interpreter's own shim code objects
	 * (3.13: CO_NO_MONITORING_EVENTS, _Py_InitCleanup), or 0. */
	uint32_t co_flags, co_shim_flag;
	/* The code header fingerprinted: [co_lo, co_hi) less the fields the
	 * interpreter changes in a live object, [skip_lo, skip_hi) (warm-up
	 * counter, lazily built line array). */
	uint32_t co_lo, co_hi, co_skip_lo, co_skip_hi;
	/* str (PyASCIIObject / PyCompactUnicodeObject) and bytes */
	uint32_t str_length, str_state, str_ascii_data, str_compact_data;
	uint32_t bytes_size, bytes_data;
};

/* CPython 3.11 (Debian bookworm's 3.11.2) and 3.13 (trixie's 3.13.5),
 * x86-64. */
static const struct cpy_layout cpy_layouts[] = {
	{
		.version = 0x030b,
		.rt_tss = 0x250,
		.ts_cframe = 56,
		.cf_current = 8,
		.ts_chunk = 296, .ts_top = 304, .ck_previous = 0, .ck_data = 24,
		.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_entry = 68, .fr_owner = CPY_NONE,
		.fr_lo = 32, .fr_hi = 69,
		.co_adaptive = 184, .co_firstlineno = 72, .co_filename = 112, .co_qualname = 128,
		.co_linetable = 136,
		/* ob_type .. co_linetable, without co_warmup and
		 * _co_linearray_entry_size. */
		.co_lo = 8, .co_hi = 144, .co_skip_lo = 52, .co_skip_hi = 56,
		.str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72,
		.bytes_size = 16, .bytes_data = 32,
	},
	{
		/* All but rt_tss, ck_* and str_compact_data are replaced at
		 * probe time by what _Py_DebugOffsets publishes. */
		.version = 0x030d,
		.debug_offsets = 1,
		.rt_tss = 0x870,
		.ts_cframe = 72,               /* current_frame */
		.cf_current = CPY_NONE,
		.ts_chunk = 232, .ts_top = 240, .ck_previous = 0, .ck_data = 24,
		.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_entry = CPY_NONE, .fr_owner = 70,
		.fr_lo = 0, .fr_hi = 71,
		.co_adaptive = 200, .co_firstlineno = 68, .co_filename = 112, .co_qualname = 128,
		.co_linetable = 136,
		.co_flags = 48, .co_shim_flag = 0x2000000,
		/* ob_type .. co_linetable: nothing there changes in a live
		 * object (no skip). */
		.co_lo = 8, .co_hi = 144, .co_skip_lo = 144, .co_skip_hi = 144,
		.str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_compact_data = 56,
		.bytes_size = 16, .bytes_data = 32,
	},
};

#endif /* STACKCAP_CPYTHON_LAYOUT_H */
