/* SPDX-License-Identifier: MIT */
/*
 * bench/capture: ns per stackcap_capture() in the calling thread, at stack
 * depths of 10, 100 and 1000 frames (80-byte frames, like
 * testdata/tdata-recurse), median and p99.  libstackcap is linked, sampling
 * off; the writer thread runs as in a real recording.  Each row also prints
 * the bytes from the capturing sp to the top of the thread's stack, which is
 * what is scanned (up to the 64 KiB cap), so a change of frame size by the
 * compiler shows.
 *
 * Then the same at depths 10 and 100 on a coroutine's stack (makecontext,
 * 256 KiB malloc'ed): a stack libstackcap knows no bounds of, read through
 * process_vm_readv page by page up to its first unreadable one (or the
 * cap); stack_B is what lies up to that stack's top.
 *
 * bench/capture --lttng (the same source linked with liblttng-stackcap, as
 * bench/capture-lttng): each capture is a `stackcap:sample` LTTng-UST event
 * recorded in the calling thread (docs/lttng.md) into whatever session is
 * active; with none (or stackcap:sample not enabled) only the encoding
 * runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "capture/stackcap.h"

#define ITERS 2000

static uint64_t ns[ITERS];
static volatile uint64_t sink;
static uintptr_t measured_sp;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The top of the calling thread's stack, as libstackcap finds it. */
static uintptr_t stack_top(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return 0;
	int const rc = pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	return rc ? 0 : (uintptr_t)addr + size;
}

static int cmp(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static __attribute__((noinline)) void measure(void)
{
	measured_sp = (uintptr_t)__builtin_frame_address(0);
	for (int i = 0; i < ITERS; i++) {
		uint64_t const t0 = now_ns();
		stackcap_capture();
		ns[i] = now_ns() - t0;
		if (i % 64 == 63)
			usleep(2000); /* let the writer drain, as between real samples */
	}
}

static __attribute__((noinline)) void descend(int d)
{
	volatile uint64_t local[8];
	for (int i = 0; i < 8; i++)
		local[i] = (uint64_t)d * 31 + (uint64_t)i;
	if (d > 0)
		descend(d - 1);
	else
		measure();
	sink += local[d % 8];
}

static ucontext_t main_ctx, co_ctx;
static int co_depth;
static uintptr_t co_top;

static void co_main(void)
{
	descend(co_depth);
}

/* descend(DEPTH) on a coroutine's stack.  @return 0, -1 on failure. */
static int on_coroutine(int depth)
{
	size_t const size = 256 * 1024;
	void *stack = malloc(size);
	if (!stack || getcontext(&co_ctx) != 0) {
		free(stack);
		return -1;
	}
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = size;
	co_ctx.uc_link = &main_ctx;
	co_depth = depth;
	co_top = (uintptr_t)stack + size;
	makecontext(&co_ctx, co_main, 0);
	int const rc = swapcontext(&main_ctx, &co_ctx);
	free(stack);
	return rc;
}

int main(int argc, char **argv)
{
	int const lttng = argc > 1 && !strcmp(argv[1], "--lttng");
	const char *dir = argc > 1 && !lttng ? argv[1] : "/tmp/bench-capture.trace";
	struct stackcap_opts o = { .sz = sizeof(o), .output_dir = dir, .no_sampling = 1,
				   .ring_size = 8u << 20, .lttng = lttng };
	int const rc = stackcap_init(&o);
	if (rc) {
		fprintf(stderr, "bench/capture: stackcap_init(%s): %s\n", lttng ? "--lttng" : dir, strerror(-rc));
		return 1;
	}
	printf("# bench/capture%s: %d captures per depth, ns in the calling thread\n", lttng ? " --lttng" : "", ITERS);
	printf("%-7s %10s %10s %8s %10s\n", "depth", "median", "p99", "drops", "stack_B");
	uintptr_t const top = stack_top();
	const int depths[] = { 10, 100, 1000 };
	for (int k = 0; k < 3; k++) {
		struct stackcap_stats a, b;
		stackcap_get_stats(&a);
		descend(depths[k]);
		stackcap_get_stats(&b);
		qsort(ns, ITERS, sizeof(ns[0]), cmp);
		printf("%-7d %10lu %10lu %8lu %10lu\n", depths[k], (unsigned long)ns[ITERS / 2],
		       (unsigned long)ns[ITERS * 99 / 100], (unsigned long)(b.drops - a.drops),
		       top ? (unsigned long)(top - measured_sp) : 0ul);
	}
	const int co_depths[] = { 10, 100 };
	for (int k = 0; k < 2; k++) {
		struct stackcap_stats a, b;
		stackcap_get_stats(&a);
		if (on_coroutine(co_depths[k]) != 0) {
			fprintf(stderr, "bench/capture: makecontext failed\n");
			break;
		}
		stackcap_get_stats(&b);
		qsort(ns, ITERS, sizeof(ns[0]), cmp);
		printf("%-3d co  %10lu %10lu %8lu %10lu\n", co_depths[k], (unsigned long)ns[ITERS / 2],
		       (unsigned long)ns[ITERS * 99 / 100], (unsigned long)(b.drops - a.drops),
		       (unsigned long)(co_top - measured_sp));
	}
	stackcap_shutdown();
	return 0;
}
