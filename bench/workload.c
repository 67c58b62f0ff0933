/* SPDX-License-Identifier: MIT */
/*
 * bench/workload: a CPU-bound program that does a FIXED AMOUNT OF WORK (not
 * a fixed time, unlike testdata/), so a profiler that steals cycles from it
 * makes it take longer.  bench/slowdown.sh times it with and without
 * profilers.
 *
 * Usage: workload [-d DEPTH] [-u UNITS]
 *
 * UNITS times (default 8000): descend through a call chain of DEPTH/2 ..
 * DEPTH frames (default 24; the depth of each descent and which of three
 * frame functions each level uses come from a fixed LCG, so stacks vary from
 * sample to sample but every run does the same thing), then do LEAF_ITERS
 * rounds of integer mixing in the leaf.  Every unit does the same number of
 * leaf rounds, whatever its depth.  Frames hold a 64- or 96-byte local array
 * with integers, doubles and pointers, like ordinary code.
 *
 * Prints one line on stdout:
 *   workload units=U depth=D elapsed_s=WALL cpu_s=CPU proc_cpu_s=PCPU checksum=X
 * over the work only, from just before the first unit to just after the last
 * (profiler start-up and shutdown outside main are not counted): WALL is
 * CLOCK_MONOTONIC, CPU the working thread's CPU time (sampling handlers
 * included), PCPU the whole process's (a profiler's in-process threads
 * included).  X depends only on DEPTH and UNITS.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEAF_ITERS 100000u

#define NOINLINE __attribute__((noinline, noclone))
#define KEEP()	 __asm__ volatile("" ::: "memory")

static volatile uint64_t sink;

struct walk {
	uint64_t lcg;	/* decides the path */
	uint64_t acc;	/* the work's result */
	int left;	/* frames still to descend */
};

static uint64_t lcg_next(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

static NOINLINE uint64_t leaf(struct walk *w)
{
	uint64_t a = w->acc | 1;
	for (unsigned i = 0; i < LEAF_ITERS; i++) {
		a ^= a << 13;
		a ^= a >> 7;
		a ^= a << 17;
		a += i;
	}
	KEEP();
	return a;
}

static inline __attribute__((always_inline)) uint64_t step(struct walk *w);

static NOINLINE uint64_t frame_a(struct walk *w)
{
	volatile uint64_t local[8];
	for (int i = 0; i < 8; i++)
		local[i] = w->acc + (uint64_t)i;
	uint64_t const r = step(w);
	KEEP();
	return r ^ local[w->left & 7];
}

static NOINLINE uint64_t frame_b(struct walk *w)
{
	volatile double d[8];
	volatile struct walk *volatile self = w;
	for (int i = 0; i < 8; i++)
		d[i] = (double)w->left * 0.5 + i;
	uint64_t const r = step(w);
	KEEP();
	return r + (uint64_t)d[3] + (self == w);
}

static NOINLINE uint64_t frame_c(struct walk *w)
{
	volatile uint64_t local[12];
	volatile const char *volatile name = "frame_c";
	for (int i = 0; i < 12; i++)
		local[i] = (uint64_t)(uintptr_t)name + (uint64_t)i;
	uint64_t const r = step(w);
	KEEP();
	return r * 3 + (local[5] - (uint64_t)(uintptr_t)name);
}

/* One level down: a frame function chosen by the LCG, or the leaf. */
static inline __attribute__((always_inline)) uint64_t step(struct walk *w)
{
	if (w->left-- <= 0)
		return leaf(w);
	switch (lcg_next(&w->lcg) % 3) {
	case 0:
		return frame_a(w);
	case 1:
		return frame_b(w);
	default:
		return frame_c(w);
	}
}

static double now_s(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static NOINLINE uint64_t run(int depth, long units)
{
	struct walk w = { .lcg = 12345, .acc = 1 };
	for (long u = 0; u < units; u++) {
		w.left = depth / 2 + (int)(lcg_next(&w.lcg) % (uint64_t)(depth - depth / 2 + 1));
		w.acc = step(&w);
	}
	KEEP();
	return w.acc;
}

static long parse_long(const char *s, long lo, long hi)
{
	char *end;
	long const v = strtol(s, &end, 10);
	return (*s && !*end && v >= lo && v <= hi) ? v : -1;
}

int main(int argc, char **argv)
{
	int depth = 24;
	long units = 8000;
	int c;
	while ((c = getopt(argc, argv, "d:u:")) != -1) {
		switch (c) {
		case 'd':
			depth = (int)parse_long(optarg, 2, 10000);
			if (depth < 0)
				goto usage;
			break;
		case 'u':
			units = parse_long(optarg, 1, 100000000);
			if (units < 0)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;

	double const w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID),
		     p0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	sink = run(depth, units);
	double const w1 = now_s(CLOCK_MONOTONIC), c1 = now_s(CLOCK_THREAD_CPUTIME_ID),
		     p1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	printf("workload units=%ld depth=%d elapsed_s=%.6f cpu_s=%.6f proc_cpu_s=%.6f checksum=%016llx\n",
	       units, depth, w1 - w0, c1 - c0, p1 - p0, (unsigned long long)sink);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-d DEPTH (2..10000)] [-u UNITS]\n", argv[0]);
	return 2;
}
