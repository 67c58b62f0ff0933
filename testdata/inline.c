/* tdata-inline: the hot loop sits in functions inlined into their caller.
 *
 *   main -> inline_outer -> inline_hot => inl_middle => inl_leaf
 *
 * "=>" is an inlined call: inl_middle and inl_leaf are always_inline, so
 * they have no symbol and no frame of their own, only DWARF inline entries
 * (DW_TAG_inlined_subroutine with call-site file:line).  A symbolizer that
 * expands inline chains (gdb's bt, addr2line -i, perf's "(inlined)") shows
 * all five; an unwinder sees three frames.  Built -O2 (testdata/local.mk).
 * inl_leaf burns SECONDS of thread CPU time (default 1).
 *
 * Usage: tdata-inline [--chain] [SECONDS]
 */
#include <getopt.h>

#include "tdata.h"

static const char *const chain[] = {
	"inl_leaf", "inl_middle", "inline_hot", "inline_outer", "main",
};

/* Results land here so no computation is dead. */
static volatile uint64_t sink;

TD_INLINE uint64_t inl_leaf(volatile uint64_t *acc, double end)
{
	for (;;) {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			*acc = TD_MIX(*acc) ^ (*acc >> 31); /* tdata: inline hot loop */
		if (TD_THREAD_CPU() >= end)
			break;
	}
	return *acc;
}

TD_INLINE uint64_t inl_middle(volatile uint64_t *acc, double seconds)
{
	double end = TD_THREAD_CPU() + seconds;
	uint64_t r = inl_leaf(acc, end); /* tdata: inl_leaf call site */

	return r * 5 + 1;
}

TD_FRAME static uint64_t inline_hot(double seconds)
{
	volatile uint64_t acc = 6;
	uint64_t r = inl_middle(&acc, seconds); /* tdata: inl_middle call site */

	TD_KEEP();
	return r ^ 0x77u;
}

TD_FRAME static uint64_t inline_outer(double seconds)
{
	uint64_t r = inline_hot(seconds);

	TD_KEEP();
	return r + 9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chain", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	double seconds = 1.0;
	int want_chain = 0, c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			want_chain = 1;
			break;
		default:
			goto usage;
		}
	}
	if (optind + 1 < argc || (optind < argc && td_parse_seconds(argv[optind], &seconds) != 0))
		goto usage;
	if (want_chain) {
		td_print_chain(chain, sizeof chain / sizeof chain[0]);
		return 0;
	}

	sink = inline_outer(seconds);
	TD_KEEP();
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [SECONDS]\n", argv[0]);
	return 2;
}
