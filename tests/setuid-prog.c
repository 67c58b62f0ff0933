/* SPDX-License-Identifier: MIT */
/*
 * setuid-prog: a program linked with libstackcap, for tests/setuid.sh to
 * install setuid-root and run as an unprivileged user.  It works ~0.2 s of
 * CPU and prints its effective uid; with "init DIR" it also calls
 * stackcap_init itself and prints the result.
 *
 * Usage: setuid-prog [init DIR]
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stackcap.h"

static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "init")) {
		struct stackcap_opts o = { .sz = sizeof(o), .output_dir = argv[2] };
		int const rc = stackcap_init(&o);
		printf("stackcap_init: %s\n", rc == 0 ? "0" : strerror(-rc));
	}
	double const end = cpu() + 0.2;
	volatile unsigned long n = 0;
	while (cpu() < end)
		for (int i = 0; i < 100000; i++)
			n++;
	printf("euid %d\n", (int)geteuid());
	return 0;
}
