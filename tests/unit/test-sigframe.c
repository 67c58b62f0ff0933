/* SPDX-License-Identifier: MIT */
/* record/sigframe.c: the kernel's signal frame found in a copied
 * alternate stack, wherever the sample caught the thread: in the handler
 * (the frame above its return address) or in __restore_rt after the
 * handler returned (the return address taken: the ucontext at sp). */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "record/sigframe.h"
#include "tests/unit/check-main.h"

static const struct stackcap_code_range code[] = {
	{ 0x0000555555554000ull, 0x0000555555580000ull, 0 }, /* the program */
	{ 0x00007f0000100000ull, 0x00007f0000300000ull, 1 }, /* libc: __restore_rt */
};
#define ALT 0x00007f0000800000ull  /* the alternate stack */
#define ALT_SIZE 0x40000ull
#define THREAD_SP 0x00007ffc9f3fead0ull /* the interrupted rsp, on the thread's own stack */
#define RESTORE_RT 0x00007f0000100057ull
#define INTERRUPTED 0x0000555555560439ull

static struct stackcap_code_ranges ranges;
static uint64_t words[1024];

/* A signal frame with its ucontext at WORDS[AT] (the return address into
 * __restore_rt at WORDS[AT - 1] when AT > 0), interrupted at RSP. */
static void frame_at(size_t at, uint64_t rsp)
{
	memset(words, 0, sizeof(words));
	for (size_t i = 0; i < 1024; i++)
		words[i] = 0x1111 * i; /* not code, not the frame */
	ucontext_t uc;
	memset(&uc, 0, sizeof(uc));
	uc.uc_stack.ss_sp = (void *)ALT;
	uc.uc_stack.ss_size = ALT_SIZE;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)rsp;
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)INTERRUPTED;
	memcpy(&words[at], &uc, sizeof(uc));
	if (at)
		words[at - 1] = RESTORE_RT;
}

START_TEST(in_the_handler)
{
	ck_assert_int_eq(stackcap_code_ranges_init(&ranges, code, 2), 0);
	uint64_t const sp = ALT + ALT_SIZE - 0x2000;
	frame_at(40, THREAD_SP);
	/* The sample's rip in the handler (the program's code): found above. */
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, sp, 0x0000555555560000ull, &ranges), THREAD_SP);
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, sp, 0x1234, &ranges), THREAD_SP);
	/* Cut before the frame's rip: not found. */
	ck_assert_uint_eq(rec_sigframe_rsp(words, 45, sp, 0x1234, &ranges), 0);
}
END_TEST

/* Sampled on __restore_rt's two instructions (mov $15, %rax; syscall):
 * the copy begins at the ucontext; the sample's rip is the trampoline's.
 * (stackunwind stats' fidelity missed such a sample: the interrupted
 * rsp was dropped from the filtered copy, its unwind ended there.) */
START_TEST(in_restore_rt)
{
	ck_assert_int_eq(stackcap_code_ranges_init(&ranges, code, 2), 0);
	uint64_t const sp = ALT + ALT_SIZE - 0x2000;
	frame_at(0, THREAD_SP);
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, sp, RESTORE_RT, &ranges), THREAD_SP);
	/* A rip that is not code is no return address: nothing found. */
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, sp, 0x1234, &ranges), 0);
}
END_TEST

START_TEST(not_a_frame)
{
	ck_assert_int_eq(stackcap_code_ranges_init(&ranges, code, 2), 0);
	uint64_t const sp = ALT + ALT_SIZE - 0x2000;
	/* Interrupted on the alternate stack itself: nothing to keep. */
	frame_at(40, ALT + 0x100);
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, sp, RESTORE_RT, &ranges), 0);
	/* The copy is not on the stack the frame names. */
	frame_at(40, THREAD_SP);
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, ALT + ALT_SIZE + 0x1000, RESTORE_RT, &ranges), 0);
	/* No frame at all. */
	memset(words, 0, sizeof(words));
	ck_assert_uint_eq(rec_sigframe_rsp(words, 1024, sp, RESTORE_RT, &ranges), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sigframe");
	TCase *tc = tcase_create("alternate stack");
	tcase_add_test(tc, in_the_handler);
	tcase_add_test(tc, in_restore_rt);
	tcase_add_test(tc, not_a_frame);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(suite)
