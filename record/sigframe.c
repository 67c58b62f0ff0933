/* SPDX-License-Identifier: MIT */
/* The signal frame on an alternate stack (sigframe.h). */
#include <stddef.h>
#include <ucontext.h>

#include "record/sigframe.h"

/* Words of the kernel's signal frame (x86-64 struct rt_sigframe: the
 * return address into the trampoline, then the ucontext). */
#define SIGF_WORD(field) (1 + offsetof(ucontext_t, field) / 8)
#define SIGF_SS_SP SIGF_WORD(uc_stack.ss_sp)
#define SIGF_SS_SIZE SIGF_WORD(uc_stack.ss_size)
#define SIGF_RSP SIGF_WORD(uc_mcontext.gregs[REG_RSP])
#define SIGF_RIP SIGF_WORD(uc_mcontext.gregs[REG_RIP])

uint64_t rec_sigframe_rsp(const uint64_t *words, uint64_t n, uint64_t sp, uint64_t rip,
			  const struct stackcap_code_ranges *ranges)
{
	uint64_t found = 0;
	/* I: the frame's return address at WORDS[I - 1] (I = 0: RIP's). */
	for (uint64_t i = 0; i + SIGF_RIP <= n; i++) {
		uint64_t const ret = i ? words[i - 1] : rip;
		uint64_t const at = sp + 8 * i - 8, ss = words[i - 1 + SIGF_SS_SP], size = words[i - 1 + SIGF_SS_SIZE];
		uint64_t const rsp = words[i - 1 + SIGF_RSP];
		if (at < ss || at - ss >= size || size > (1ull << 30) || !rsp || rsp >= (1ull << 47) ||
		    (rsp >= ss && rsp - ss < size))
			continue; /* not on an alternate stack, or interrupted there */
		if (stackcap_codec_classify(ret, ranges, 0, 0, STACKCAP_POLICY_F1) &&
		    stackcap_codec_classify(words[i - 1 + SIGF_RIP], ranges, 0, 0, STACKCAP_POLICY_F1))
			found = rsp;
	}
	return found;
}
