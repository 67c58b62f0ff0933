/* Unwinding one sample: registers + stack image -> frames.
 *
 * Two unwinders with one interface:
 *  - dwfl (reference): elfutils' own unwinder, fed the recorded registers
 *    and stack image through Dwfl_Thread_Callbacks;
 *  - fast (default): CFI read through libdw once per (module, pc), the
 *    resolved rule cached in the module, our own register transfer.
 * Both must give identical frames on the whole test corpus. */
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
	SU_FRAME_FP,           /* frame-pointer fallback: callee had no CFI */
	SU_FRAME_SIGNAL,       /* caller of a signal trampoline (__restore_rt): pc is exact */
};

struct su_frame {
	uint64_t pc;           /* as in the process; for CFI/FP frames a return address */
	int64_t map;           /* index in sample->maps->entries, or -1 */
	uint8_t how;           /* enum su_frame_how */
	/* Nonzero when PC is exact (frame 0, frame after a signal frame): look
	 * it up as is.  Zero for return addresses: look up PC - 1. */
	uint8_t activation;
};

/* Why the unwind stopped. */
enum su_unwind_end {
	SU_END_OUTERMOST = 0,  /* clean end: rip 0 / undefined return address (_start, clone) */
	SU_END_TRUNCATED,      /* needed stack beyond the image, which the cap cut */
	SU_END_NO_MAP,         /* a pc outside every recorded code range */
	SU_END_NO_CFI,         /* no CFI and the frame-pointer fallback failed */
	SU_END_BAD_STACK,      /* read outside the image (not cut by the cap), or a dropped word */
	SU_END_MAX_FRAMES,     /* the frames array is full */
	SU_END_ERROR,          /* anything else (malformed CFI, libdw error) */
};

const char *su_unwind_end_name(enum su_unwind_end end);

enum su_unwinder_kind { SU_UNWINDER_FAST = 0, SU_UNWINDER_DWFL };

struct su_unwinder;

/* An unwinder using MODULES (owned by the caller, same thread). */
struct su_unwinder *su_unwinder_new(enum su_unwinder_kind kind, struct su_modcache *modules);
void su_unwinder_free(struct su_unwinder *u);

/* Unwind SAMPLE into FRAMES (at most MAX).  @return the number of frames
 * (>= 1 when the sample has a rip), *END why it stopped. */
size_t su_unwind(struct su_unwinder *u, const struct su_sample *sample,
		 struct su_frame *frames, size_t max, enum su_unwind_end *end);

#endif
