/* Unwinding one sample: registers + stack image -> frames.
 *
 * Two unwinders with one interface:
 *  - dwfl (reference): elfutils' own unwinder, fed the recorded registers
 *    and stack image through Dwfl_Thread_Callbacks;
 *  - fast (default): CFI read through libdw once per (module, pc), the
 *    resolved rule cached in the module, our own register transfer.
 * Both must give identical frames (pc, activation) on the whole test corpus.
 *
 * Only the stack image (then sample->segment, the stack a handler on the
 * alternate signal stack interrupted) is memory: a value the unwind needs
 * from elsewhere, or from a word the capture filter may have dropped (a zero
 * word of an F1/F2 image), ends the unwind.  One exception, exact by
 * construction: the signal frame's saved rsp, a pointer into the segment
 * that the filter dropped from the image, is the segment's start.  A frame
 * in a module without CFI for its pc (or whose file was not found) is
 * unwound through rbp, as elfutils does.
 *
 * Where the CFI says nothing of rbx the fast unwinder keeps it (the ABI
 * makes it callee-saved); elfutils 0.188's x86-64 defaults lose it.  The
 * dwfl unwinder's end reason is a best guess from the CFI and the failed
 * reads: elfutils itself only says "return address undefined" or "error".
 *
 * The fast unwinder keeps each thread's last walk (walk-reuse.c): where a
 * later sample of the thread reaches a register state that walk had, over
 * the same stack words, the rest of its frames are copied, exactly as they
 * would be unwound.  STACKCAP_UNWIND_REUSE=0 in the environment of
 * su_unwinder_new: every frame unwound (tests compare the two).
 *
 * An unwinder is not thread-safe (elfutils 0.188 is not): one per thread,
 * with its own module cache. */
#ifndef STACKCAP_UNWIND_H
#define STACKCAP_UNWIND_H

#include <stdint.h>
#include <stddef.h>
#include "trace/trace-model.h"
#include "debuginfo/module.h"

/* How a frame was reached. */
enum su_frame_how {
	SU_FRAME_INITIAL = 0,  /* frame 0: the recorded rip */
	SU_FRAME_CFI,          /* from the callee's CFI (.eh_frame/.debug_frame) */
	SU_FRAME_FP,           /* frame-pointer fallback: callee had no CFI (fast only) */
	SU_FRAME_SIGNAL,       /* caller of a signal trampoline (__restore_rt): pc is exact */
	SU_FRAME_CHAIN,        /* from the call chain the kernel walked (perf record -g) */
	SU_FRAME_RUNTIME,      /* an interpreter's frame (a runtime unwinder's, docs/trace-format.md):
				* pc is its code object's address, map -1, rt_fp and rt_pos say
				* which object and where in it; it replaced the native
				* interpreter-loop frame that ran it */
	SU_FRAME_KERNEL,       /* kernel code, from the sample's kernel call chain
				* (su_sample.kernel_chain): map -1; these come first,
				* innermost first, above the user frames */
	SU_FRAME_LEAF,         /* the interrupted frame had no CFI and no rbp chain: its
				* return address at rsp, which follows a call (fast only) */
};

struct su_frame {
	uint64_t pc;           /* as in the process; for CFI/FP frames a return address */
	int64_t map;           /* index in sample->maps->entries, or -1 */
	uint8_t how;           /* enum su_frame_how */
	/* Nonzero when PC is exact: look it up as is.  Zero for return
	 * addresses: look up PC - 1.  Set on frame 0, on the caller of a
	 * signal frame, and (as elfutils does) on the signal trampoline
	 * itself, whose return address the kernel set to its first byte. */
	uint8_t activation;
	/* SU_FRAME_RUNTIME only: the code object's fingerprint, the position
	 * in its code (CPython: instruction index, -1: not started). */
	uint32_t rt_fp;
	int32_t rt_pos;
};

/* The address to look PC up at (symbols, lines, maps). */
static inline uint64_t su_frame_lookup_pc(const struct su_frame *f)
{
	return f->activation ? f->pc : f->pc - 1;
}

/* Why the unwind stopped. */
enum su_unwind_end {
	SU_END_OUTERMOST = 0,  /* clean end: rip 0 / undefined return address (_start, clone) */
	SU_END_TRUNCATED,      /* needed stack beyond the image, which the cap cut, or
				* past a signal frame off a one-segment image (the
				* kernel copied a handler's alternate stack only) */
	SU_END_NO_MAP,         /* a pc outside every recorded code range (the last frame) */
	SU_END_NO_CFI,         /* no CFI and the frame-pointer fallback failed */
	SU_END_BAD_STACK,      /* read outside the image (not cut by the cap), a dropped word, or no progress */
	SU_END_MAX_FRAMES,     /* the frames array is full and the stack goes on */
	SU_END_ERROR,          /* anything else (malformed or unsupported CFI, libdw error) */
	SU_END_NO_USER,        /* no user registers at all: a kernel thread, or a task
				* sampled while exiting (perf.data); no frames */
	SU_END_EXEC,           /* in execve past its point of no return: the image the
				* user registers belong to is gone, its stack too; no
				* user frames (never the unwinder's: its caller tells,
				* by the kernel frames, cli/worker.c) */
};
#define SU_END_COUNT 9

const char *su_unwind_end_name(enum su_unwind_end end);

enum su_unwinder_kind { SU_UNWINDER_FAST = 0, SU_UNWINDER_DWFL };

struct su_unwinder;

/* An unwinder using MODULES (owned by the caller, same thread; free the
 * unwinder first).  NULL + errno on failure.  The fast unwinder registers
 * its cache finalizer with su_modcache_set_finalizers(). */
struct su_unwinder *su_unwinder_new(enum su_unwinder_kind kind, struct su_modcache *modules);
void su_unwinder_free(struct su_unwinder *u);

/* Unwind SAMPLE into FRAMES (at most MAX).  @return the number of frames
 * (>= 1 when the sample has a nonzero rip), *END why it stopped.  Any input
 * is safe: a bad image or bad CFI ends the unwind, never worse.  No malloc
 * per frame; only the first sight of a maps snapshot, module or pc
 * allocates. */
size_t su_unwind(struct su_unwinder *u, const struct su_sample *sample,
		 struct su_frame *frames, size_t max, enum su_unwind_end *end);

/* As su_unwind, but the frames may be left where the unwinder keeps them
 * rather than copied into FRAMES (whose MAX bounds them all the same):
 * *OUT points to them, FRAMES or the unwinder's own, until the unwinder's
 * next call or its end. */
size_t su_unwind_view(struct su_unwinder *u, const struct su_sample *sample, struct su_frame *frames, size_t max,
		      const struct su_frame **out, enum su_unwind_end *end);

/* Whether the last su_unwind's frames and end are exactly the previous
 * call's (the same thread and maps snapshot: a hot loop's samples): its
 * fast walk met the walk the previous call kept, with the same frames
 * below, and neither call had kernel, runtime or entry frames changed
 * after the walk.  A consumer that keyed something on the previous
 * frames may take it as is.  0 when not known to be so. */
int su_unwind_repeats(const struct su_unwinder *u);

/* State is kept per maps snapshot (the module of each entry; the dwfl
 * unwinder's Dwfl), found again by pointer, generation, count and entries.
 * Call this before freeing a snapshot whose memory could be reused for
 * another one. */
void su_unwinder_forget_maps(struct su_unwinder *u, const struct su_maps *maps);

struct su_unwind_stats {
	uint64_t samples;
	uint64_t frames;
	uint64_t ends[SU_END_COUNT];   /* samples by enum su_unwind_end */
	uint64_t fp_frames;            /* frames reached through rbp (fast) */
	uint64_t rule_misses;          /* CFI rows read through libdw (fast) */
	uint64_t maps_built;           /* per-maps states built */
	uint64_t reused_frames;        /* frames copied from the thread's kept walk (fast) */
	uint64_t kept_walks;           /* walks kept whole for the next sample (fast) */
	uint64_t trusted_words;        /* words a kept walk did not compare: the image's top, the same
					* as its thread's previous image's (su_sample.decode_no) */
};

void su_unwinder_get_stats(const struct su_unwinder *u, struct su_unwind_stats *stats);

#endif
