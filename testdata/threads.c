/* tdata-threads: N worker threads with one known chain each.
 *
 *   (thread start) worker_main -> worker_compute -> worker_hot
 *
 * main starts N threads (-t N, default 4) and then sits in pthread_join.
 * Each thread burns SECONDS of its own CPU time (default 1) in worker_hot.
 *
 * The expected chain ends at the thread's start routine, worker_main: the
 * libc frames that call it (start_thread, clone3 in glibc >= 2.34) are not
 * part of it, whatever an unwinder shows below worker_main.  main's own stack
 * (blocked in pthread_join, inside libc) has no expected chain.
 *
 * Usage: tdata-threads [--chain] [-t N] [SECONDS]
 */
#include <getopt.h>
#include <pthread.h>
#include <string.h>

#include "tdata.h"

#define MAX_THREADS 256

static const char *const chain[] = {
	"worker_hot", "worker_compute", "worker_main",
};

struct worker {
	pthread_t tid;
	double seconds;
	uint64_t result;
};

TD_FRAME static uint64_t worker_hot(double seconds)
{
	volatile uint64_t acc = 2;
	double end = TD_THREAD_CPU() + seconds;

	for (;;) {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			acc = TD_MIX(acc) + i;
		if (TD_THREAD_CPU() >= end)
			break;
	}
	return acc;
}

TD_FRAME static uint64_t worker_compute(double seconds)
{
	uint64_t r = worker_hot(seconds);
	TD_KEEP();
	return r ^ 0x77u;
}

/* The thread's start routine: the outermost frame of the expected chain. */
TD_FRAME static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->result = worker_compute(w->seconds);
	TD_KEEP();
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chain", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	static struct worker workers[MAX_THREADS];
	double seconds = 1.0;
	long nthreads = 4;
	int want_chain = 0, c, err;

	while ((c = getopt_long(argc, argv, "t:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			want_chain = 1;
			break;
		case 't':
			if (td_parse_count(optarg, MAX_THREADS, &nthreads) != 0)
				goto usage;
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

	for (long i = 0; i < nthreads; i++) {
		workers[i].seconds = seconds;
		err = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
		if (err != 0) {
			fprintf(stderr, "tdata-threads: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (long i = 0; i < nthreads; i++) {
		err = pthread_join(workers[i].tid, NULL);
		if (err != 0) {
			fprintf(stderr, "tdata-threads: pthread_join: %s\n", strerror(err));
			return 1;
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [-t N (1..%d)] [SECONDS]\n", argv[0], MAX_THREADS);
	return 2;
}
