/* Shared helpers for the testdata programs (see testdata/README.md).
 *
 * Everything here is either a macro or an always-inline function, so that
 * nothing from this header ever shows up as a frame of its own in a chain.
 */
#ifndef STACKCAP_TDATA_H
#define STACKCAP_TDATA_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A frame of a known chain: never inlined, cloned (foo.constprop.0), merged
 * with an identical function (ICF) or otherwise changed by IPA, so its symbol
 * name and its DWARF name are both exactly the function's name. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define TD_FRAME __attribute__((noipa))
#endif
#endif
#ifndef TD_FRAME
#define TD_FRAME __attribute__((noinline))
#endif

#define TD_INLINE static inline __attribute__((always_inline))

/* Compiler barrier.  Placed after every call of a chain so the call is never
 * in tail position (no sibling call even without -fno-optimize-sibling-calls)
 * and bodies never become identical. */
#define TD_KEEP() __asm__ volatile("" ::: "memory")

/* The helpers used inside chain functions are macros, not functions: an
 * inline function would show up as an inlined frame (td_mix inlined into
 * hot_leaf) in a symbolizer that expands inline chains, and the chains are
 * meant to be exactly the functions listed. */

/* How often the hot loops look at the clock: reading a CPU-time clock is a
 * system call (no vDSO fast path), so a few samples will show libc's
 * clock_gettime above the hot function; doing it every 2^16 iterations keeps
 * that well under 1%. */
#define TD_CLOCK_EVERY 65536u

/* CPU time used by the calling thread, in seconds (a double). */
#define TD_THREAD_CPU()                                                      \
	__extension__({                                                      \
		struct timespec td_ts_;                                      \
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &td_ts_) != 0 ? 0.0   \
			: (double)td_ts_.tv_sec + (double)td_ts_.tv_nsec * 1e-9; \
	})

/* One step of the integer work done by the hot loops (an LCG step). */
#define TD_MIX(x) ((uint64_t)(x) * 6364136223846793005u + 1442695040888963407u)

/* Parse a duration in seconds ("1", "0.2"); 0 on success. */
TD_INLINE int td_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0) || v > 1e6)
		return -1;
	*out = v;
	return 0;
}

/* Parse a positive count within [1, max]; 0 on success. */
TD_INLINE int td_parse_count(const char *s, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Print a chain, leaf first, one name per line (the --chain output). */
TD_INLINE void td_print_chain(const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s\n", names[i]);
}

#endif /* STACKCAP_TDATA_H */
