/* SPDX-License-Identifier: MIT */
/* Samples of this very process, built without a trace: registers from
 * getcontext(), the stack copied from rsp to the thread's stack top, maps
 * from dl_iterate_phdr, then encoded and decoded by the codec so the image
 * holds exactly what a recorded one would.  For the unwinder's tests and
 * benchmark. */
#ifndef STACKCAP_TESTS_UW_SAMPLE_H
#define STACKCAP_TESTS_UW_SAMPLE_H

#include <stdint.h>
#include <ucontext.h>
#include "trace/trace-model.h"

#define UW_CAP_BYTES 65536u  /* the stack cap of these captures */

struct uw_capture {
	uint64_t regs[STACKCAP_NREGS];
	uint64_t sp;
	uint64_t nwords;
	int capped;              /* the stack went on past UW_CAP_BYTES */
	uint64_t words[UW_CAP_BYTES / 8];
};

/* The top of the calling thread's stack (not async-signal-safe: call it
 * before capturing from a signal handler). */
uint64_t uw_stack_top(void);

/* Fill C from UC (as getcontext() left it) and the stack [rsp, TOP), at
 * most UW_CAP_BYTES.  Async-signal-safe. */
void uw_capture(struct uw_capture *c, const ucontext_t *uc, uint64_t top);

/* Only the stack [SP, TOP), at most MAX_BYTES (the interrupted stack of a
 * handler running on the alternate signal stack).  Async-signal-safe. */
void uw_capture_stack(struct uw_capture *c, uint64_t sp, uint64_t top, uint64_t max_bytes);

/* The executable segments of every loaded object, sorted, with build-ids
 * and paths.  NULL on failure. */
struct su_maps *uw_self_maps(void);
void uw_maps_free(struct su_maps *maps);

/* A decoded sample and the buffers behind it. */
struct uw_sample {
	struct su_sample s;
	struct stackcap_image img;
	struct stackcap_image seg;  /* when s.segment */
	size_t blob_size;
};

/* Encode C under POLICY with MAPS' ranges and decode it into S.
 * @return 0, or -1 (codec error). */
int uw_sample_make(struct uw_sample *s, const struct uw_capture *c, const struct su_maps *maps,
		   enum stackcap_policy policy);

/* The same with a second stack segment SEG (no registers; its own blob, as
 * the sample_segment event): the sample is capped when SEG is. */
int uw_sample_make_seg(struct uw_sample *s, const struct uw_capture *c, const struct uw_capture *seg,
		       const struct su_maps *maps, enum stackcap_policy policy);
void uw_sample_free(struct uw_sample *s);

#endif
