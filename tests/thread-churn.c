/* SPDX-License-Identifier: MIT */
/* thread-churn: N threads (default 64), one after the other, each burning
 * MS milliseconds (default 10) of CPU.  Used by tests/record.sh. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *burn(void *arg)
{
	double const secs = *(const double *)arg;
	double const t0 = cpu_now();
	volatile unsigned long x = 0;
	while (cpu_now() - t0 < secs)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
	return NULL;
}

int main(int argc, char **argv)
{
	int const n = argc > 1 ? atoi(argv[1]) : 64;
	double const secs = (argc > 2 ? atoi(argv[2]) : 10) / 1000.0;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, burn, (void *)&secs) != 0 || pthread_join(t, NULL) != 0) {
			fprintf(stderr, "thread-churn: thread %d failed\n", i);
			return 1;
		}
	}
	return 0;
}
