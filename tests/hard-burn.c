/* hard-burn: what the in-process hook cannot reach, with a known chain.
 *
 *   (thread start) burner -> hard_compute -> hard_leaf
 *
 * hard-burn [--block-signals] [--close-fds] [--exit-group] [-t N]
 *           [--stagger S] SECONDS
 *
 * N threads (default 2) each burn SECONDS of their own CPU time in
 * hard_leaf; thread i starts S*i seconds of wall time after the first
 * (threads created after an attach).  --block-signals: every signal
 * blocked in the workers (as liblzma's); --close-fds: every fd above 2
 * closed first (as os.closerange(3, ...)); --exit-group: leaves through a
 * raw exit_group (as Go).  Prints "hard-burn N threads" on stdout, exit 0.
 * For tests/kernel-record.sh. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds = 1;

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static uint64_t hard_leaf(double s)
{
	volatile uint64_t acc = 3;
	double const end = thread_cpu() + s;
	while (thread_cpu() < end)
		for (unsigned i = 0; i < 20000; i++)
			acc = acc * 6364136223846793005ull + i;
	return acc;
}

__attribute__((noinline)) static uint64_t hard_compute(double s)
{
	uint64_t const r = hard_leaf(s);
	__asm__ volatile("" ::: "memory");
	return r ^ 5;
}

__attribute__((noinline)) static void *burner(void *arg)
{
	uint64_t *out = arg;
	*out = hard_compute(seconds);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "block-signals", no_argument, NULL, 'b' }, { "close-fds", no_argument, NULL, 'c' },
		{ "exit-group", no_argument, NULL, 'e' }, { "stagger", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int block = 0, closefds = 0, exitgroup = 0, n = 2, c;
	double stagger = 0;
	while ((c = getopt_long(argc, argv, "t:", lo, NULL)) != -1) {
		switch (c) {
		case 'b': block = 1; break;
		case 'c': closefds = 1; break;
		case 'e': exitgroup = 1; break;
		case 's': stagger = atof(optarg); break;
		case 't': n = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind < argc)
		seconds = atof(argv[optind]);
	if (n < 1 || n > 64 || seconds <= 0)
		return 2;
	if (closefds)
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	sigset_t all, old;
	sigfillset(&all);
	if (block)
		pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t[64];
	uint64_t res[64];
	for (int i = 0; i < n; i++) {
		if (i && stagger > 0) {
			struct timespec d = { (time_t)stagger, (long)((stagger - (double)(time_t)stagger) * 1e9) };
			while (nanosleep(&d, &d))
				;
		}
		if (pthread_create(&t[i], NULL, burner, &res[i])) {
			perror("hard-burn: pthread_create");
			return 1;
		}
	}
	if (block)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("hard-burn %d threads\n", n);
	fflush(stdout);
	if (exitgroup)
		syscall(SYS_exit_group, 0);
	return 0;
}
