/* tdata-recurse: a deep stack of one recursive function.
 *
 *   main -> recurse(N) -> recurse(N-1) -> ... -> recurse(1) -> recurse_leaf
 *
 * N is -d N (default 1000, at most 20000).  Each recurse frame holds a 64-byte
 * local array, so frames are realistic in size (about 100 bytes each, some
 * 100 KB of stack at the default depth: far beyond perf's 8 KiB copy).
 * recurse_leaf burns SECONDS of thread CPU time (default 1).
 *
 * --chain prints recurse_leaf, then "recurse" N times, then main.
 *
 * Usage: tdata-recurse [--chain] [-d N] [SECONDS]
 */
#include <getopt.h>

#include "tdata.h"

#define MAX_DEPTH 20000

TD_FRAME static uint64_t recurse_leaf(double seconds)
{
	volatile uint64_t acc = 3;
	double end = TD_THREAD_CPU() + seconds;

	for (;;) {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			acc = TD_MIX(acc) - i;
		if (TD_THREAD_CPU() >= end)
			break;
	}
	return acc;
}

TD_FRAME static uint64_t recurse(long n, double seconds)
{
	volatile uint8_t pad[64]; /* makes every frame 64+ bytes */
	uint64_t r;

	for (unsigned i = 0; i < sizeof pad; i++)
		pad[i] = (uint8_t)(n + i);
	if (n > 1)
		r = recurse(n - 1, seconds);
	else
		r = recurse_leaf(seconds);
	TD_KEEP();
	return r + pad[n & 63];
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
	long depth = 1000;
	int want_chain = 0, c;

	while ((c = getopt_long(argc, argv, "d:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			want_chain = 1;
			break;
		case 'd':
			if (td_parse_count(optarg, MAX_DEPTH, &depth) != 0)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind + 1 < argc || (optind < argc && td_parse_seconds(argv[optind], &seconds) != 0))
		goto usage;
	if (want_chain) {
		printf("recurse_leaf\n");
		for (long i = 0; i < depth; i++)
			printf("recurse\n");
		printf("main\n");
		return 0;
	}

	sink = recurse(depth, seconds);
	TD_KEEP();
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [-d N (1..%d)] [SECONDS]\n", argv[0], MAX_DEPTH);
	return 2;
}
