/* SPDX-License-Identifier: MIT */
/* The kernel's signal frame on an alternate signal stack, found in a
 * copied stack (record/encode.c: what F2 keeps of a kernel-copied
 * sample). */
#ifndef STACKCAP_RECORD_SIGFRAME_H
#define STACKCAP_RECORD_SIGFRAME_H

#include <stdint.h>
#include "compress/stack-codec.h"

/* A handler on the alternate signal stack: the kernel copied the
 * alternate stack only, where the signal frame holds the interrupted
 * context, whose rsp and rbp point into the thread's own stack: not into
 * the copy, so F2 would drop them and the unwind would end at the
 * trampoline.  The codec's second stack range (also_lo, also_hi: what the
 * in-process hook sets to the interrupted stack it copies) keeps them: the
 * unwind goes on to the interrupted function, where the copy ends.  A
 * signal frame is known by its own uc_stack, the alternate stack it lies
 * in, and code pointers where the return address and rip are.  A sample
 * in __restore_rt, the handler returned (its `ret` took the return
 * address: SP is at the ucontext), has that frame one word below the
 * copy: the sample's RIP stands for its return address.  @return the
 * interrupted rsp of the outermost such frame in the N words WORDS from
 * SP, or 0. */
uint64_t rec_sigframe_rsp(const uint64_t *words, uint64_t n, uint64_t sp, uint64_t rip,
			  const struct stackcap_code_ranges *ranges);

#endif
