/* tdata-offcpu: threads that block in known functions (stackcap record
 * --off-cpu, tests/off-cpu.sh, bench/offcpu.sh).
 *
 *   sleep [SECONDS]   two threads each sleep SECONDS (default 0.8) once:
 *                     (thread start) sleeper_main -> sleeper_wait -> nanosleep
 *   pipe [N] [MS]     a writer thread writes one byte N times (default 10),
 *                     MS ms apart (default 100); main reads them:
 *                     main -> pipe_reader -> pipe_read_one -> read
 *   switch [SECONDS] [RATE]  two threads hand a byte back and forth over
 *                     two pipes RATE times a second in all (default 10000)
 *                     for SECONDS (default 2): a program that switches
 *                     RATE times a second; prints the round trips made
 *                     and its CPU time (user + system, every thread)
 *
 * --chain prints the sleep mode's expected chain, leaf first.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tdata.h"

static const char *const chain[] = {
	"sleeper_wait", "sleeper_main",
};

TD_FRAME static int sleeper_wait(double seconds)
{
	struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
	int rc;
	while ((rc = nanosleep(&ts, &ts)) != 0 && errno == EINTR)
		;
	TD_KEEP();
	return rc;
}

TD_FRAME static void *sleeper_main(void *arg)
{
	double const *seconds = arg;
	sleeper_wait(*seconds);
	TD_KEEP();
	return NULL;
}

static int mode_sleep(double seconds)
{
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, sleeper_main, &seconds) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("sleep: 2 threads slept %.3f s each\n", seconds);
	return 0;
}

/* ---- a reader waiting for a slow writer ---------------------------------- */

struct feeder {
	int fd;
	long n, ms;
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *feeder_main(void *arg)
{
	struct feeder *f = arg;
	for (long i = 0; i < f->n; i++) {
		sleep_ms(f->ms);
		if (write(f->fd, "x", 1) != 1)
			break;
	}
	close(f->fd);
	return NULL;
}

TD_FRAME static ssize_t pipe_read_one(int fd, char *c)
{
	ssize_t n = read(fd, c, 1);
	TD_KEEP();
	return n;
}

TD_FRAME static long pipe_reader(int fd)
{
	long got = 0;
	char c;
	while (pipe_read_one(fd, &c) == 1)
		got++;
	TD_KEEP();
	return got;
}

static int mode_pipe(long n, long ms)
{
	int p[2];
	if (pipe(p))
		return 1;
	struct feeder f = { p[1], n, ms };
	pthread_t th;
	if (pthread_create(&th, NULL, feeder_main, &f) != 0)
		return 1;
	long const got = pipe_reader(p[0]); /* until the writer closes its end */
	pthread_join(th, NULL);
	close(p[0]);
	printf("pipe: read %ld bytes, %ld ms apart\n", got, ms);
	return got == n ? 0 : 1;
}

/* ---- a program that switches RATE times a second -------------------------- */

struct pingpong {
	int in, out;
	double end;
	long trips;
	long pause_ns;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *pong_main(void *arg)
{
	struct pingpong *pp = arg;
	char c;
	while (read(pp->in, &c, 1) == 1 && c == 'p')
		if (write(pp->out, "q", 1) != 1)
			break;
	return NULL;
}

static int mode_switch(double seconds, long rate)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		return 1;
	struct pingpong pp = { b[0], a[1], now_s() + seconds, 0, 0 };
	pthread_t th;
	struct pingpong back = { a[0], b[1], 0, 0, 0 };
	if (pthread_create(&th, NULL, pong_main, &back) != 0)
		return 1;
	/* Each round trip is three switches out: this thread blocks in read,
	 * the other in its next read, this one in nanosleep; paced to RATE
	 * switches a second (both threads') by that sleep. */
	double const period = 3.0 / (double)rate;
	double next = now_s();
	char c;
	while (now_s() < pp.end) {
		if (write(pp.out, "p", 1) != 1 || read(pp.in, &c, 1) != 1)
			break;
		pp.trips++;
		next += period;
		double const left = next - now_s();
		if (left > 0) {
			struct timespec ts = { 0, (long)(left * 1e9) };
			nanosleep(&ts, NULL);
		}
	}
	if (write(pp.out, "e", 1) != 1)
		return 1;
	pthread_join(th, NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double const cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
			   ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
	printf("switch: %ld round trips in %.3f s, %.3f s CPU\n", pp.trips, seconds, cpu);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--chain")) {
		td_print_chain(chain, sizeof chain / sizeof chain[0]);
		return 0;
	}
	double seconds;
	long n, ms;
	if (argc >= 2 && !strcmp(argv[1], "sleep") && argc <= 3) {
		seconds = 0.8;
		if (argc == 3 && td_parse_seconds(argv[2], &seconds))
			goto usage;
		return mode_sleep(seconds);
	}
	if (argc >= 2 && !strcmp(argv[1], "pipe") && argc <= 4) {
		n = 10;
		ms = 100;
		if ((argc >= 3 && td_parse_count(argv[2], 1000000, &n)) ||
		    (argc >= 4 && td_parse_count(argv[3], 100000, &ms)))
			goto usage;
		return mode_pipe(n, ms);
	}
	if (argc >= 2 && !strcmp(argv[1], "switch") && argc <= 4) {
		seconds = 2;
		n = 10000;
		if ((argc >= 3 && td_parse_seconds(argv[2], &seconds)) ||
		    (argc >= 4 && td_parse_count(argv[3], 10000000, &n)))
			goto usage;
		return mode_switch(seconds, n);
	}
usage:
	fprintf(stderr, "usage: %s --chain | sleep [SECONDS] | pipe [N] [MS] | switch [SECONDS] [RATE]\n",
		argv[0]);
	return 2;
}
