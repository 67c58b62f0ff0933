/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* Calls through PLT stubs in a loop (strlen, labs: -fno-builtin keeps the
 * calls), so samples land in the stubs. */
static volatile size_t sink;
int main(int argc, char **argv)
{
	double const secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	const char *s = "abc";
	do {
		for (int i = 0; i < 100000; i++)
			sink += strlen(s) + (size_t)labs(i);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	return 0;
}
