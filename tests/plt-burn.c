/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <time.h>
/* Calls through a PLT stub in a loop (labs: -fno-builtin keeps the calls),
 * so samples land in the stub: labs is a few instructions, and the stub
 * got ~9% of the samples on an AMD EPYC.  (With strlen, whose
 * evex version took 81% of the time, the stubs got 0.05% on an EPYC.) */
static volatile long sink;
int main(int argc, char **argv)
{
	double const secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += labs(i) + labs(-i) + labs(i + 1) + labs(i - 7);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	return 0;
}
