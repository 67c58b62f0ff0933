/* tdata-nofp: the chain of tdata-single, built without frame pointers.
 *
 *   main -> nofp_outer -> nofp_middle -> nofp_hot
 *
 * Built with -O2 -fomit-frame-pointer (see testdata/local.mk): no function
 * here sets up rbp as a frame pointer, every CFA is rsp-based, so only DWARF
 * CFI can walk these frames.  nofp_outer keeps values live across its call
 * (callee-saved registers pushed at different CFA offsets) and nofp_middle
 * has a local buffer (a larger rsp adjustment), so the CFI is not trivial.
 * nofp_hot burns SECONDS of thread CPU time (default 1).
 *
 * Usage: tdata-nofp [--chain] [SECONDS]
 */
#include <getopt.h>

#include "tdata.h"

static const char *const chain[] = {
	"nofp_hot", "nofp_middle", "nofp_outer", "main",
};

TD_FRAME static uint64_t nofp_hot(double seconds)
{
	volatile uint64_t acc = 4;
	double end = TD_THREAD_CPU() + seconds;

	for (;;) {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			acc = TD_MIX(acc) ^ (acc >> 29);
		if (TD_THREAD_CPU() >= end)
			break;
	}
	return acc;
}

TD_FRAME static uint64_t nofp_middle(double seconds)
{
	volatile uint64_t buf[12]; /* 96 bytes: sub $N,%rsp in the prologue */
	uint64_t r;

	for (unsigned i = 0; i < 12; i++)
		buf[i] = i * 0x9e3779b97f4a7c15u;
	r = nofp_hot(seconds);
	TD_KEEP();
	return r + buf[(unsigned)r % 12];
}

TD_FRAME static uint64_t nofp_outer(double seconds, uint64_t a, uint64_t b, uint64_t c)
{
	/* a, b, c and the products live across the call: callee-saved pushes. */
	uint64_t x = a * b, y = b * c, z = a ^ c;
	uint64_t r = nofp_middle(seconds);

	TD_KEEP();
	return r + x + y + z + a + b + c;
}

/* Results land here so no computation is dead. */
static volatile uint64_t sink;

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

	sink = nofp_outer(seconds, (uint64_t)argc, (uint64_t)argc * 3, (uint64_t)optind + 5);
	TD_KEEP();
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [SECONDS]\n", argv[0]);
	return 2;
}
