/* SPDX-License-Identifier: MIT */
/* fiber-burn [ROUNDS]: a coroutine on a stack of its own (makecontext,
 * malloc'ed: neither the thread's stack nor a signal stack), switched to
 * ROUNDS times (default 10), burning 50 ms of CPU in
 * fiber_main -> fiber_mid -> fiber_leaf each time.  Used by
 * tests/record.sh: the in-process hook reads such a stack (it dropped
 * every sample there), and the unwinding ends cleanly at the context's
 * start (__start_context, whose return address makecontext wrote). */
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

static ucontext_t main_ctx, fiber_ctx;
static int rounds = 10;

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* (noipa: kept apart; the empty asm after each call: not a tail call.) */
__attribute__((noipa)) static void fiber_leaf(double secs)
{
	double const t0 = cpu_now();
	volatile unsigned long x = 0;
	while (cpu_now() - t0 < secs)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
}

__attribute__((noipa)) static void fiber_mid(double secs)
{
	fiber_leaf(secs);
	__asm__ volatile("" ::: "memory");
}

static void fiber_main(void)
{
	for (int i = 0; i < rounds; i++) {
		fiber_mid(0.05);
		swapcontext(&fiber_ctx, &main_ctx);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	size_t const size = 256 * 1024;
	void *stack = malloc(size);
	if (!stack || getcontext(&fiber_ctx) != 0)
		return 1;
	fiber_ctx.uc_stack.ss_sp = stack;
	fiber_ctx.uc_stack.ss_size = size;
	fiber_ctx.uc_link = &main_ctx;
	makecontext(&fiber_ctx, fiber_main, 0);
	for (int i = 0; i < rounds; i++)
		if (swapcontext(&main_ctx, &fiber_ctx) != 0)
			return 1;
	free(stack);
	return 0;
}
