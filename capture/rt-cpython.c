/* SPDX-License-Identifier: MIT */
/*
 * rt-cpython.c: the CPython runtime unwinder (runtime.h).
 *
 * In the sampled thread: the thread's PyThreadState (the pthread key of
 * _PyRuntime.gilstate.autoTSSkey: every thread that ever ran Python has
 * it), then its current _PyInterpreterFrame chain, innermost first: for
 * each frame its code object, the last instruction started, and whether
 * the frame began a native _PyEval_EvalFrameDefault call (is_entry).
 * Every read of the interpreter's memory goes through capture_rt_read (a
 * frame popped and its data-stack chunk unmapped under us fails the read,
 * never faults); only _PyRuntime itself, static data of the executable,
 * is read in place.  The frames are walked in copies of the thread's data
 * stack (one read per chunk, see struct walk), the code objects'
 * fingerprints in three batched reads: about 6 system calls per sample
 * whatever the depth (was one per frame).
 *
 * Offsets: a row per minor version (capture/cpython-layout.h), derived
 * from the DWARF of Debian's python3.11-dbg and python3.13-dbg and checked
 * against it by tests/unit/test-cpython-layout (which fails, naming the
 * field, when a build disagrees).  From 3.13 on, what CPython publishes
 * in the _Py_DebugOffsets at the head of _PyRuntime replaces the row's
 * values at probe time (cpy_debug_offsets): a patch release that moves a
 * field is still read right.  A table rather than DWARF read at record
 * time because the capture library runs inside the traced program: it
 * must not open debug files, link libdw, nor need a -dbg package on the
 * machine recording.  A struct layout only changes between minor versions
 * (CPython's ABI rule for these internal structs in practice: 3.11.0-
 * 3.11.x share it), so the row is keyed by major.minor from Py_Version.
 * The walk reads every version through the row's fields: 3.11 finds the
 * current frame through tstate->cframe and marks a native call's first
 * frame with is_entry; 3.13 has tstate->current_frame, f_executable and
 * instr_ptr, and (like 3.12) pushes a shim frame owned by the C stack
 * under a native call's first frame.  3.12 has no row yet: Debian has no
 * python3.12 to derive and test it from.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture-internal.h"
#include "capture/runtime.h"
#include "compress/rt-frames.h"

#include "capture/cpython-layout.h"

/* What probe found (set once at init, read by the handler). */
static struct {
	const struct cpy_layout *L;    /* &py.layout */
	const uint8_t *runtime;        /* &_PyRuntime */
	struct cpy_layout layout;      /* the row, with what _Py_DebugOffsets publishes */
} py;

/* CPython 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h):
 * an 8-byte cookie, then 64-bit words; the words we read, by index.
 * Each group starts with the size of its struct. */
enum {
	DO_VERSION = 1, DO_FREE_THREADED = 2,
	DO_TS_SIZE = 19, DO_TS_CURRENT_FRAME = 23, DO_TS_DATASTACK = 26,
	DO_FR_SIZE = 28, DO_FR_PREVIOUS = 29, DO_FR_EXECUTABLE = 30, DO_FR_INSTR_PTR = 31, DO_FR_OWNER = 33,
	DO_CO_SIZE = 34, DO_CO_FILENAME = 35, DO_CO_QUALNAME = 37, DO_CO_LINETABLE = 38,
	DO_CO_FIRSTLINENO = 39, DO_CO_ADAPTIVE = 43,
	DO_OB_TYPE = 45,
	DO_BYTES_SIZE = 64, DO_BYTES_OB_SIZE = 65, DO_BYTES_SVAL = 66,
	DO_STR_SIZE = 67, DO_STR_STATE = 68, DO_STR_LENGTH = 69, DO_STR_ASCII_SIZE = 70,
	DO_WORDS = 73,                 /* sizeof(_Py_DebugOffsets) / 8 */
};

#define MAX_FRAME_READ 128             /* bytes of a frame header we read */

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

/* Fill L's published fields from the _Py_DebugOffsets at RUNTIME (static
 * data of the executable, initialized before main: read in place) for
 * the interpreter VERSION (PY_VERSION_HEX).  @return 0, or -ENOTSUP when
 * the cookie, version or an offset is not what this code reads. */
static int cpy_debug_offsets(struct cpy_layout *L, const uint8_t *runtime, unsigned long version)
{
	uint64_t w[DO_WORDS];
	memcpy(w, runtime, sizeof(w));
	if (memcmp(runtime, "xdebugpy", 8) || w[DO_VERSION] != version || w[DO_FREE_THREADED])
		return -ENOTSUP;
	/* Every offset inside its struct (the published size), and small. */
	static const uint8_t in[][2] = {
		{ DO_TS_CURRENT_FRAME, DO_TS_SIZE }, { DO_TS_DATASTACK, DO_TS_SIZE },
		{ DO_FR_PREVIOUS, DO_FR_SIZE }, { DO_FR_EXECUTABLE, DO_FR_SIZE }, { DO_FR_INSTR_PTR, DO_FR_SIZE },
		{ DO_FR_OWNER, DO_FR_SIZE }, { DO_CO_FILENAME, DO_CO_SIZE }, { DO_CO_QUALNAME, DO_CO_SIZE },
		{ DO_CO_LINETABLE, DO_CO_SIZE }, { DO_CO_FIRSTLINENO, DO_CO_SIZE }, { DO_CO_ADAPTIVE, DO_CO_SIZE },
		{ DO_BYTES_OB_SIZE, DO_BYTES_SIZE }, { DO_BYTES_SVAL, DO_BYTES_SIZE },
		{ DO_STR_STATE, DO_STR_SIZE }, { DO_STR_LENGTH, DO_STR_SIZE },
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		if (w[in[i][1]] > 4096 || w[in[i][0]] >= w[in[i][1]])
			return -ENOTSUP;
	if (w[DO_OB_TYPE] > 64 || w[DO_STR_ASCII_SIZE] > 256)
		return -ENOTSUP;
	L->ts_cframe = (uint32_t)w[DO_TS_CURRENT_FRAME];
	L->cf_current = CPY_NONE;
	/* datastack_top is not published: it follows datastack_chunk. */
	L->ts_chunk = (uint32_t)w[DO_TS_DATASTACK];
	L->ts_top = L->ts_chunk + 8;
	L->fr_code = (uint32_t)w[DO_FR_EXECUTABLE];
	L->fr_previous = (uint32_t)w[DO_FR_PREVIOUS];
	L->fr_instr = (uint32_t)w[DO_FR_INSTR_PTR];
	L->fr_owner = (uint32_t)w[DO_FR_OWNER];
	L->fr_entry = CPY_NONE;
	L->fr_lo = 0;
	L->fr_hi = max3(L->fr_code + 8, L->fr_previous + 8, max3(L->fr_instr + 8, L->fr_owner + 1, 0));
	L->co_adaptive = (uint32_t)w[DO_CO_ADAPTIVE];
	L->co_firstlineno = (uint32_t)w[DO_CO_FIRSTLINENO];
	L->co_filename = (uint32_t)w[DO_CO_FILENAME];
	L->co_qualname = (uint32_t)w[DO_CO_QUALNAME];
	L->co_linetable = (uint32_t)w[DO_CO_LINETABLE];
	/* The fingerprinted header: ob_type up to the last pointer we read. */
	L->co_lo = (uint32_t)w[DO_OB_TYPE];
	L->co_hi = max3(L->co_filename, L->co_qualname, L->co_linetable) + 8;
	L->co_skip_lo = L->co_skip_hi = L->co_hi;
	/* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8. */
	L->str_compact_data = (uint32_t)w[DO_STR_ASCII_SIZE] + 16;
	L->str_ascii_data = (uint32_t)w[DO_STR_ASCII_SIZE];
	L->str_length = (uint32_t)w[DO_STR_LENGTH];
	L->str_state = (uint32_t)w[DO_STR_STATE];
	L->bytes_size = (uint32_t)w[DO_BYTES_OB_SIZE];
	L->bytes_data = (uint32_t)w[DO_BYTES_SVAL];
	return 0;
}

/* Does L fit the unwinder's buffers and reads? */
static int cpy_fits(const struct cpy_layout *L)
{
	return L->fr_hi > L->fr_lo && L->fr_hi - L->fr_lo <= MAX_FRAME_READ && L->co_hi > L->co_lo &&
	       (!L->co_shim_flag || (L->co_flags >= L->co_lo && L->co_flags + 4 <= L->co_hi)) &&
	       L->co_hi - L->co_lo <= 160 && L->co_skip_lo <= L->co_skip_hi && L->co_skip_hi <= L->co_hi &&
	       L->str_state > L->str_length && L->str_state + 4 - L->str_length <= 24;
}

static int cpy_probe(struct capture_runtime *rt)
{
	const unsigned long *ver = dlsym(RTLD_DEFAULT, "Py_Version");
	void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	if (!ver || !runtime || !eval)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(cpy_layouts) / sizeof(cpy_layouts[0]); i++) {
		if (cpy_layouts[i].version != (uint32_t)(*ver >> 16))
			continue;
		Dl_info info;
		const ElfW(Sym) *sym = NULL;
		if (!dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
			return -ENOTSUP;
		py.layout = cpy_layouts[i];
		if (py.layout.debug_offsets && cpy_debug_offsets(&py.layout, runtime, *ver))
			return -ENOTSUP;
		if (!cpy_fits(&py.layout))
			return -ENOTSUP;
		py.L = &py.layout;
		py.runtime = runtime;
		rt->version = (uint32_t)*ver;
		rt->eval_lo = (uint64_t)(uintptr_t)eval;
		rt->eval_hi = rt->eval_lo + sym->st_size;
		return 0;
	}
	return -ENOTSUP;
}

/* ---- fingerprints: the handler and the writer compute them alike ---------- */

#define FP_TEXT 32   /* bytes of each string's text in the fingerprint */

struct fp_work {
	uint64_t code;
	uint32_t fp;
	uint8_t hdr[160];
	uint8_t sh[3][24];             /* qualname, filename, linetable headers */
	uint8_t text[3][FP_TEXT];
	size_t text_len[3];
};

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* A str's kind (1, 2, 4 bytes per character) and where its text is, from
 * its header SH (read at +str_length); 0 for a string we do not read
 * (legacy, not ready). */
static unsigned str_kind(const struct cpy_layout *L, const uint8_t *sh, uint32_t *data_off)
{
	uint32_t const state = ld32(sh + (L->str_state - L->str_length));
	unsigned const kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return 0;
	*data_off = ascii ? L->str_ascii_data : L->str_compact_data;
	return kind;
}

/* The fingerprints of W[0..N) (W[i].code set), in four batched reads:
 * headers, the three objects' headers, their first bytes.  A code whose
 * header cannot be read gets 0. */
struct fp_io {
	void *dst[64 * 3];
	uint64_t addr[64 * 3];
	size_t len[64 * 3];
	uint8_t ok[64 * 3], hok[64];
};

static void fingerprint(struct fp_work *w, size_t n, struct fp_io *io)
{
	const struct cpy_layout *L = py.L;
	void **dst = io->dst;
	uint64_t *addr = io->addr;
	size_t *len = io->len;
	uint8_t *ok = io->ok, *hok = io->hok;
	if (n > 64)
		n = 64;
	for (size_t i = 0; i < n; i++) {
		dst[i] = w[i].hdr;
		addr[i] = w[i].code + L->co_lo;
		len[i] = L->co_hi - L->co_lo;
	}
	capture_rt_readv(dst, addr, len, hok, n);
	uint32_t const objs[3] = { L->co_qualname, L->co_filename, L->co_linetable };
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			size_t const j = i * 3 + k;
			dst[j] = w[i].sh[k];
			addr[j] = hok[i] ? ld64(w[i].hdr + objs[k] - L->co_lo) : 0;
			if (addr[j])
				addr[j] += k < 2 ? L->str_length : L->bytes_size;
			len[j] = k < 2 ? L->str_state + 4 - L->str_length : 8;
		}
	capture_rt_readv(dst, addr, len, ok, 3 * n);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			size_t const j = i * 3 + k;
			uint64_t const obj = hok[i] ? ld64(w[i].hdr + objs[k] - L->co_lo) : 0;
			uint64_t const count = ld64(w[i].sh[k]);
			w[i].text_len[k] = 0;
			dst[j] = w[i].text[k];
			addr[j] = 0;
			if (!ok[j])
				continue;
			if (k < 2) {
				uint32_t off;
				unsigned const kind = str_kind(L, w[i].sh[k], &off);
				if (!kind)
					continue;
				addr[j] = obj + off;
				len[j] = count * kind < FP_TEXT ? count * kind : FP_TEXT;
			} else {
				addr[j] = obj + L->bytes_data;
				len[j] = count < FP_TEXT ? count : FP_TEXT;
			}
			if (!len[j])
				addr[j] = 0;
		}
	capture_rt_readv(dst, addr, len, ok, 3 * n);
	for (size_t i = 0; i < n; i++) {
		if (!hok[i]) {
			w[i].fp = 0;
			continue;
		}
		uint32_t h = CAPTURE_RT_FNV_SEED;
		h = capture_rt_fnv(h, w[i].hdr, L->co_skip_lo - L->co_lo);
		h = capture_rt_fnv(h, w[i].hdr + (L->co_skip_hi - L->co_lo), L->co_hi - L->co_skip_hi);
		for (int k = 0; k < 3; k++) {
			size_t const j = i * 3 + k;
			/* Length and, for str, kind/compact/ascii (not the
			 * interned bits, which change), then the text. */
			h = capture_rt_fnv(h, w[i].sh[k], 8);
			if (k < 2) {
				uint32_t const st = ld32(w[i].sh[k] + (L->str_state - L->str_length)) & 0x7c;
				h = capture_rt_fnv(h, &st, 4);
			}
			if (addr[j] && ok[j])
				h = capture_rt_fnv(h, w[i].text[k], len[j]);
			else if (addr[j])
				h = capture_rt_fnv(h, "?", 1); /* text unreadable */
		}
		w[i].fp = h ? h : 1;
	}
}

/* ---- the handler side ------------------------------------------------------ */

/* Bytes of the thread's data stack copied per sample (at most WIN_MAX
 * pieces): 200 frames of a small function take about 22 KiB, in two 16 KiB
 * chunks. */
#define WIN_BYTES (32 * 1024)
#define WIN_MAX 4

struct cpy_scratch {
	struct rt_frame frames[CAPTURE_RT_MAX_FRAMES];
	struct fp_work codes[64];
	struct fp_io io;
	/* Copies of the data stack (frame headers and their locals' object
	 * pointers: scratch, never written to the trace). */
	uint64_t win[WIN_BYTES / 8];
};
_Static_assert(sizeof(struct cpy_scratch) <= CAPTURE_RT_SCRATCH, "scratch too small");

/* The frames are read from copies of the data stack taken whole, one read
 * per chunk: the sampled thread is stopped in our handler and nothing else
 * writes its data stack, so a copy is the chain as it stands.  A frame
 * outside every copy (a generator's, or one past the budget) is read
 * alone. */
struct walk {
	struct { uint64_t lo, hi; const uint8_t *buf; } w[WIN_MAX];
	size_t nw, used;
	uint64_t below;                /* the chunk under the last one copied from its base; 0: unknown */
};

/* The copy of [A, A+LEN), or NULL when no window holds all of it. */
static const uint8_t *win_find(const struct walk *k, uint64_t a, size_t len)
{
	for (size_t i = 0; i < k->nw; i++)
		if (a >= k->w[i].lo && a <= k->w[i].hi && k->w[i].hi - a >= len)
			return k->w[i].buf + (a - k->w[i].lo);
	return NULL;
}

/* Room for a window of the copies [BASE, END) (its top part when too
 * big): fills W's next slot with the range, returns where to read, or
 * NULL (no room).  CHUNK: BASE is a chunk's start (its header says the
 * chunk below). */
static uint8_t *win_claim(struct walk *k, struct cpy_scratch *s, uint64_t base, uint64_t end)
{
	size_t const avail = WIN_BYTES - k->used;
	if (k->nw == WIN_MAX || end <= base || avail < 128)
		return NULL;
	if (end - base > avail)
		base = (end - avail + 7) & ~(uint64_t)7;
	uint8_t *buf = (uint8_t *)s->win + k->used;
	k->w[k->nw].lo = base;
	k->w[k->nw].hi = end;
	k->w[k->nw].buf = buf;
	return buf;
}

/* Keep (or drop, when it was not read) the window just claimed. */
static void win_keep(struct walk *k, int read, uint64_t chunk, const struct cpy_layout *L)
{
	if (!read)
		return;
	size_t const i = k->nw++;
	k->used += (size_t)((k->w[i].hi - k->w[i].lo + 7) & ~(uint64_t)7);
	k->below = k->w[i].lo == chunk && chunk ? ld64(k->w[i].buf + L->ck_previous) : 0;
}

static int cpy_unwind(const struct capture_runtime *rt, uint8_t *out, size_t cap, void *scratch)
{
	(void)rt;
	const struct cpy_layout *L = py.L;
	struct cpy_scratch *s = scratch;
	/* Py_tss_t { int _is_initialized; pthread_key_t _key; } in static data. */
	const volatile int *tss = (const volatile int *)(py.runtime + L->rt_tss);
	if (!tss[0])
		return 0;
	uint64_t const tstate = (uint64_t)(uintptr_t)pthread_getspecific((pthread_key_t)tss[1]);
	if (!tstate)
		return 0;
	/* Read 1: the cframe, the data stack's chunk and top.  Read 2: the
	 * current frame, and the used part of that chunk. */
	uint64_t cframe = 0, ds[2] = { 0, 0 }, frame = 0;
	void *dst[2] = { &cframe, ds };
	uint64_t addr[2] = { tstate + L->ts_cframe, tstate + L->ts_chunk };
	size_t len[2] = { 8, 16 };
	uint8_t ok[2];
	capture_rt_readv(dst, addr, len, ok, 2);
	/* No cframe (3.11, 3.12): not running Python; no current frame
	 * (3.13): none either, nothing to record. */
	if (!ok[0] || (!cframe && L->cf_current != CPY_NONE))
		return -1;
	struct walk k = { .nw = 0 };
	uint64_t const chunk = ok[1] ? ds[0] : 0, top = ok[1] ? ds[1] : 0;
	uint8_t *wbuf = chunk && top > chunk && top - chunk < (1u << 24) && !(top & 7)
				? win_claim(&k, s, chunk, top) : NULL;
	frame = cframe;
	dst[0] = &frame;
	addr[0] = L->cf_current == CPY_NONE ? 0 : cframe + L->cf_current;
	dst[1] = wbuf;
	addr[1] = wbuf ? k.w[0].lo : 0;
	len[1] = wbuf ? k.w[0].hi - k.w[0].lo : 0;
	capture_rt_readv(dst, addr, len, ok, 2);
	if (addr[0] && !ok[0])
		return -1;
	if (wbuf)
		win_keep(&k, ok[1], chunk, L);
	uint8_t flags = 0;
	size_t n = 0;
	size_t const flen = L->fr_hi - L->fr_lo;
	uint8_t one[MAX_FRAME_READ];
	while (frame) {
		if (n == CAPTURE_RT_MAX_FRAMES) {
			flags |= RT_FRAMES_TRUNCATED;
			break;
		}
		const uint8_t *fr = win_find(&k, frame + L->fr_lo, flen);
		/* Not copied: in the chunk under the last one?  (Frames go
		 * down the data stack, outermost lowest.) */
		if (!fr && k.below && frame > k.below && frame + L->fr_hi - k.below <= WIN_BYTES - k.used) {
			uint64_t const base = k.below;
			uint8_t *b = win_claim(&k, s, base, frame + L->fr_hi);
			if (b) {
				win_keep(&k, capture_rt_read(b, k.w[k.nw].lo, k.w[k.nw].hi - k.w[k.nw].lo) == 0,
					 base, L);
				fr = win_find(&k, frame + L->fr_lo, flen);
			}
		}
		if (!fr) {
			if (capture_rt_read(one, frame + L->fr_lo, flen)) {
				flags |= RT_FRAMES_UNREADABLE;
				break;
			}
			fr = one;
		}
		frame = ld64(fr + L->fr_previous - L->fr_lo);
		/* 3.12+: the shim a native _PyEval_EvalFrameDefault call
		 * pushed (on the C stack) under its first frame: that frame is
		 * the call's entry; the shim itself is no Python frame. */
		if (L->fr_owner != CPY_NONE && fr[L->fr_owner - L->fr_lo] == CPY_OWNER_CSTACK) {
			if (n)
				s->frames[n - 1].entry = 1;
			continue;
		}
		uint64_t const code = ld64(fr + L->fr_code - L->fr_lo);
		uint64_t const instr = ld64(fr + L->fr_instr - L->fr_lo);
		uint64_t const first = code + L->co_adaptive;
		/* The instruction executing (prev_instr: one unit before the
		 * first instruction in a frame not started); anything far off
		 * is not trusted. */
		int32_t pos = -1;
		if (instr >= first && instr - first < (1u << 26))
			pos = (int32_t)((instr - first) / 2);
		s->frames[n++] = (struct rt_frame){ .code = code, .pos = pos,
						    .entry = L->fr_entry != CPY_NONE && fr[L->fr_entry - L->fr_lo] != 0 };
	}
	if (!n)
		return flags ? -1 : 0;
	/* Each distinct code object once (up to 64; more get no fingerprint,
	 * and are shown unnamed). */
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		size_t c = 0;
		while (c < nc && s->codes[c].code != s->frames[i].code)
			c++;
		if (c == nc && nc < 64)
			s->codes[nc++].code = s->frames[i].code;
	}
	fingerprint(s->codes, nc, &s->io);
	/* Each frame's fingerprint; the interpreter's own shim code objects
	 * (3.13: the one CALL_ALLOC_AND_ENTER_INIT pushes under __init__,
	 * co_flags with CO_NO_MONITORING_EVENTS) are no function of the
	 * program and are left out, unless one marks a native call's start
	 * that no other frame of its group can carry. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		struct rt_frame f = s->frames[i];
		int shim = 0;
		f.fp = 0;
		for (size_t c = 0; c < nc; c++)
			if (s->codes[c].code == f.code) {
				f.fp = s->codes[c].fp;
				shim = f.fp && L->co_shim_flag &&
				       (ld32(s->codes[c].hdr + L->co_flags - L->co_lo) & L->co_shim_flag);
				break;
			}
		if (shim && (!f.entry || (m && !s->frames[m - 1].entry))) {
			if (f.entry)
				s->frames[m - 1].entry = 1;
			continue;
		}
		s->frames[m++] = f;
	}
	n = m;
	struct rt_frames_enc e;
	if (rt_frames_begin(&e, out, cap))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (rt_frames_add(&e, &s->frames[i])) {
			flags |= RT_FRAMES_TRUNCATED;
			break;
		}
	}
	return (int)rt_frames_end(&e, flags);
}

/* ---- the writer side ------------------------------------------------------- */

/* The str at OBJ as UTF-8 (malloc'ed, at most MAX characters), or NULL. */
static char *read_str(uint64_t obj, size_t max)
{
	const struct cpy_layout *L = py.L;
	uint8_t sh[24];
	if (!obj || capture_rt_read(sh, obj + L->str_length, L->str_state + 4 - L->str_length))
		return NULL;
	uint32_t off;
	unsigned const kind = str_kind(L, sh, &off);
	uint64_t count = ld64(sh);
	if (!kind || count > (1u << 20))
		return NULL;
	if (count > max)
		count = max;
	uint8_t *raw = malloc(count * kind + 1);
	char *out = malloc(count * 4 + 1);
	if (!raw || !out || capture_rt_read(raw, obj + off, count * kind)) {
		free(raw);
		free(out);
		return NULL;
	}
	size_t o = 0;
	for (uint64_t i = 0; i < count; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
							     : ld32(raw + 4 * i);
		if (c < 0x80) {
			out[o++] = (char)c;
		} else if (c < 0x800) {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			out[o++] = (char)(0xe0 | c >> 12);
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			out[o++] = (char)(0xf0 | (c >> 18 & 7));
			out[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[o] = 0;
	free(raw);
	return out;
}

static struct {
	char *name, *file;
	uint8_t *lines;
} desc;

static int cpy_describe(const struct capture_runtime *rt, uint64_t code, uint32_t fp, struct capture_rt_code *out)
{
	(void)rt;
	const struct cpy_layout *L = py.L;
	free(desc.name);
	free(desc.file);
	free(desc.lines);
	memset(&desc, 0, sizeof(desc));
	struct fp_work *w = calloc(1, sizeof(*w));
	struct fp_io *io = malloc(sizeof(*io));
	if (!w || !io) {
		free(w);
		free(io);
		return -ENOMEM;
	}
	w->code = code;
	fingerprint(w, 1, io);
	if (!w->fp || w->fp != fp) {
		free(w);
		free(io);
		return -ESTALE;
	}
	uint64_t const qual = ld64(w->hdr + L->co_qualname - L->co_lo);
	uint64_t const file = ld64(w->hdr + L->co_filename - L->co_lo);
	uint64_t const lt = ld64(w->hdr + L->co_linetable - L->co_lo);
	uint32_t const first_line = ld32(w->hdr + L->co_firstlineno - L->co_lo);
	uint8_t bh[8];
	uint64_t lt_len = 0;
	if (lt && capture_rt_read(bh, lt + L->bytes_size, 8) == 0)
		lt_len = ld64(bh);
	if (lt_len > (1u << 20))
		lt_len = 0;
	desc.name = read_str(qual, 1024);
	desc.file = read_str(file, 4096);
	desc.lines = malloc(lt_len ? lt_len : 1);
	int same = 0;
	if (desc.name && desc.file && desc.lines) {
		if (lt_len && capture_rt_read(desc.lines, lt + L->bytes_data, lt_len))
			lt_len = 0;
		/* Again: an object freed while we read it shows here. */
		memset(w, 0, sizeof(*w));
		w->code = code;
		fingerprint(w, 1, io);
		same = w->fp == fp;
	}
	free(w);
	free(io);
	if (!same)
		return -ESTALE;
	*out = (struct capture_rt_code){ .code = code, .fp = fp, .first_line = first_line, .name = desc.name,
					 .file = desc.file, .line_table = desc.lines, .line_table_len = lt_len };
	return 0;
}

const struct capture_runtime capture_rt_cpython = {
	.name = "cpython",
	.kind = CAPTURE_RT_CPYTHON,
	.probe = cpy_probe,
	.unwind = cpy_unwind,
	.describe = cpy_describe,
};
