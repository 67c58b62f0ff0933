/* tdata-evlib: N calls into a shared library's function and SDT marker
 * (libtdata-evlib.so, evlib.c), under
 *
 *   main -> run_lib -> evlib_run -> evlib_hit
 *
 * Usage: tdata-evlib [-n N] [--wait FILE] [--chain]
 *   --wait FILE: first wait until FILE exists (a tracer attached with -p
 *   creates it when ready), looking every 10 ms.
 *   --chain prints the chain, leaf first.
 */
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "tdata.h"
#include "tdata-evlib.h"

TD_FRAME static void run_lib(unsigned n)
{
	evlib_run(n);
	TD_KEEP();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chain", no_argument, NULL, 'c' },
		{ "wait", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	const char *wait_for = NULL;
	unsigned long n = 1000;
	int c;
	char *end;

	while ((c = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': {
			const char *const chain[] = { "evlib_hit", "evlib_run", "run_lib", "main" };
			td_print_chain(chain, sizeof chain / sizeof chain[0]);
			return 0;
		}
		case 'w': wait_for = optarg; break;
		case 'n':
			n = strtoul(optarg, &end, 10);
			if (*end || !*optarg || n > 100000000)
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	while (wait_for && access(wait_for, F_OK) != 0) {
		struct timespec const ms10 = { 0, 10 * 1000 * 1000 };
		nanosleep(&ms10, NULL);
	}
	run_lib((unsigned)n);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-n N] [--wait FILE] [--chain]\n", argv[0]);
	return 2;
}
