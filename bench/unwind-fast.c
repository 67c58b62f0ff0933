/* SPDX-License-Identifier: MIT */
/*
 * bench/unwind-fast: frames per second of the fast and the dwfl unwinder on
 * samples of this process (tests/unit/uw-sample.c: getcontext registers, the
 * live stack, maps from dl_iterate_phdr, through the codec with policy F2).
 * A recursion of D frames (D = 8, 32, 128, 512) under main; each sample is
 * unwound again and again for about 0.3 s per unwinder, after one warm-up
 * unwind (the first one reads the CFI through libdw and fills the caches):
 * this is the steady state of a long trace, where the same pcs come back.
 * The cold first unwind is printed too.  Walks are not kept between
 * samples (STACKCAP_UNWIND_REUSE=0): this measures the unwinding.  A
 * benchmark, not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "unwind/unwind.h"
#include "tests/unit/uw-sample.h"

#define MAXF 4096

static struct uw_capture cap;
static uint64_t top;
static volatile int sink;

int bench_rec(int depth);
int bench_leaf(void);

__attribute__((noipa)) int bench_leaf(void)
{
	ucontext_t uc;
	getcontext(&uc);
	uw_capture(&cap, &uc, top);
	return sink;
}

/* A frame of the usual shape: locals, a call, work after it. */
__attribute__((noipa)) int bench_rec(int depth)
{
	volatile uint64_t local[4] = { (uint64_t)depth, 1, 2, 3 };
	int const r = depth == 0 ? bench_leaf() : bench_rec(depth - 1);
	__asm__ volatile("" ::: "memory");
	return r + (int)local[1] + sink;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct result {
	size_t frames;          /* per sample */
	double cold_us;         /* first unwind, empty caches */
	double ns_per_sample;   /* steady state */
	enum su_unwind_end end;
};

static struct su_frame frames[MAXF];

static struct result measure(enum su_unwinder_kind kind, const struct su_sample *s)
{
	struct su_debuginfo_opts o = { .no_debuginfod = 1, .no_system_dirs = 1 };
	struct su_modcache *mc = su_modcache_new(&o);
	struct su_unwinder *u = su_unwinder_new(kind, mc);
	struct result r;
	if (!mc || !u) {
		fprintf(stderr, "bench/unwind-fast: cannot make an unwinder\n");
		exit(1);
	}
	double t0 = now();
	r.frames = su_unwind(u, s, frames, MAXF, &r.end);
	r.cold_us = (now() - t0) * 1e6;
	uint64_t n = 0;
	t0 = now();
	double t1 = t0;
	while (t1 - t0 < 0.3) {
		for (int i = 0; i < 64; i++) {
			enum su_unwind_end end;
			if (su_unwind(u, s, frames, MAXF, &end) != r.frames || end != r.end) {
				fprintf(stderr, "bench/unwind-fast: unwinds differ\n");
				exit(1);
			}
		}
		n += 64;
		t1 = now();
	}
	r.ns_per_sample = (t1 - t0) * 1e9 / (double)n;
	su_unwinder_free(u);
	su_modcache_free(mc);
	return r;
}

int main(void)
{
	/* The walk itself: the same sample again would otherwise be copied
	 * from the walk kept for its thread (unwind/walk-reuse.c). */
	setenv("STACKCAP_UNWIND_REUSE", "0", 1);
	struct su_maps *maps = uw_self_maps();
	top = uw_stack_top();
	if (!maps || !top) {
		fprintf(stderr, "bench/unwind-fast: no maps or stack top\n");
		return 1;
	}
	printf("%6s %7s  %-28s  %-28s  %7s\n", "depth", "frames",
	       "fast: cold us, ns/sample", "dwfl: cold us, ns/sample", "speedup");
	printf("%6s %7s  %-28s  %-28s  %7s\n", "", "", "  (Mframes/s)", "  (Mframes/s)", "");
	static const int depths[] = { 8, 32, 128, 512 };
	for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
		sink = bench_rec(depths[d]);
		struct uw_sample s;
		if (uw_sample_make(&s, &cap, maps, STACKCAP_POLICY_F2) != 0) {
			fprintf(stderr, "bench/unwind-fast: codec failed\n");
			return 1;
		}
		struct result f = measure(SU_UNWINDER_FAST, &s.s);
		struct result w = measure(SU_UNWINDER_DWFL, &s.s);
		if (f.frames != w.frames || f.end != w.end) {
			fprintf(stderr, "bench/unwind-fast: fast and dwfl differ (%zu/%s, %zu/%s)\n",
				f.frames, su_unwind_end_name(f.end), w.frames, su_unwind_end_name(w.end));
			return 1;
		}
		char fs[64], ws[64];
		snprintf(fs, sizeof(fs), "%7.0f %9.0f (%5.1f)", f.cold_us, f.ns_per_sample,
			 (double)f.frames / f.ns_per_sample * 1e3);
		snprintf(ws, sizeof(ws), "%7.0f %9.0f (%5.2f)", w.cold_us, w.ns_per_sample,
			 (double)w.frames / w.ns_per_sample * 1e3);
		printf("%6d %7zu  %-28s  %-28s  %6.1fx   %s%s\n", depths[d], f.frames, fs, ws,
		       w.ns_per_sample / f.ns_per_sample, su_unwind_end_name(f.end),
		       cap.capped ? " (stack capped)" : "");
		uw_sample_free(&s);
	}
	uw_maps_free(maps);
	return 0;
}
