/* tdata-single: one thread, one fixed call chain, a secret on the stack.
 *
 *   main -> run_workload -> level_a -> level_b -> level_c -> hot_leaf
 *
 * hot_leaf burns SECONDS of thread CPU time (default 1) doing integer math on
 * a volatile, with a 256-byte buffer of its own stack frame filled with the
 * secret pattern 0x5EC2E75EC2E75EC2 and its byte-reversed form.  The hot loop
 * keeps reading the buffer, so the secret is live on the stack (and passes
 * through registers) whenever a sample is taken.  A stack tracer must never
 * let it into a trace.
 *
 * Usage: tdata-single [--chain] [SECONDS]
 */
#include <getopt.h>

#include "tdata.h"

#define SECRET     UINT64_C(0x5EC2E75EC2E75EC2)
#define SECRET_REV UINT64_C(0xC25EE7C25EE7C25E) /* __builtin_bswap64(SECRET) */

static const char *const chain[] = {
	"hot_leaf", "level_c", "level_b", "level_a", "run_workload", "main",
};

/* Results land here so no computation is dead. */
static volatile uint64_t sink;

TD_FRAME static uint64_t hot_leaf(double seconds)
{
	volatile uint64_t secret[32]; /* 256 bytes of this frame */
	volatile uint64_t acc = 1;
	double end = TD_THREAD_CPU() + seconds;

	for (unsigned i = 0; i < 32; i++)
		secret[i] = (i & 1) ? SECRET_REV : SECRET;
	for (;;) {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			acc = TD_MIX(acc) ^ secret[i & 31]; /* tdata: secret on stack */
		if (TD_THREAD_CPU() >= end)
			break;
	}
	return acc;
}

/* Three intermediate frames with different bodies (so none can be folded). */
TD_FRAME static uint64_t level_c(double seconds)
{
	uint64_t r = hot_leaf(seconds);
	TD_KEEP();
	return r + 3;
}

TD_FRAME static uint64_t level_b(double seconds)
{
	uint64_t r = level_c(seconds);
	TD_KEEP();
	return r ^ 0x5bu;
}

TD_FRAME static uint64_t level_a(double seconds)
{
	uint64_t r = level_b(seconds);
	TD_KEEP();
	return r * 7;
}

TD_FRAME static uint64_t run_workload(double seconds)
{
	uint64_t r = level_a(seconds);
	TD_KEEP();
	return r - 11;
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

	sink = run_workload(seconds);
	TD_KEEP();
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [SECONDS]\n", argv[0]);
	return 2;
}
