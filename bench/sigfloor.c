/* SPDX-License-Identifier: MIT */
/*
 * bench/sigfloor: what the sampling signal costs before any stack is
 * captured.  The same fixed amount of CPU work runs with:
 *
 *   none     no sampler;
 *   refresh  a perf task-clock event at HZ that signals the thread on each
 *            overflow, with an EMPTY handler that re-arms the event with
 *            ioctl(PERF_EVENT_IOC_REFRESH, 1) (how libstackcap samples);
 *   enable   the same event enabled once (PERF_EVENT_IOC_ENABLE): it signals
 *            every overflow without being re-armed; the handler only counts.
 *
 * Then, for scale, the round trip of a signal the thread sends itself
 * (tgkill, handled by the same empty handler).
 *
 * Modes alternate for ROUNDS rounds; for each, the median CPU time of the
 * thread over the work and the cost per signal, (CPU - CPU of none) /
 * signals, in µs.  The signal is a real-time one, queued, so none is lost
 * while the handler keeps up.
 *
 * Usage: sigfloor [-F HZ] [-u UNITS] [-r ROUNDS]   (999, 3000, 5)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum mode { MODE_NONE, MODE_REFRESH, MODE_ENABLE, NMODES };
static const char *const mode_name[NMODES] = { "none", "refresh", "enable" };

static int perf_fd = -1;
static volatile sig_atomic_t rearm;
static volatile long nsignals;
static volatile uint64_t sink;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	nsignals++;
	if (rearm)
		ioctl(perf_fd, PERF_EVENT_IOC_REFRESH, 1);
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static __attribute__((noinline)) uint64_t work(long units)
{
	uint64_t x = 1;
	for (long u = 0; u < units; u++)
		for (unsigned i = 0; i < 100000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			x += i;
		}
	return x;
}

static int start(enum mode m, int hz, int signo)
{
	if (m == MODE_NONE)
		return 0;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 1000000000ull / (unsigned)hz;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.wakeup_events = 1;
	perf_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (perf_fd < 0)
		return -errno;
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid) };
	rearm = m == MODE_REFRESH;
	if (fcntl(perf_fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(perf_fd, F_SETSIG, signo) != 0 ||
	    fcntl(perf_fd, F_SETOWN_EX, &owner) != 0 ||
	    ioctl(perf_fd, m == MODE_REFRESH ? PERF_EVENT_IOC_REFRESH : PERF_EVENT_IOC_ENABLE,
		  m == MODE_REFRESH ? 1 : 0) != 0)
		return -errno;
	return 0;
}

static void stop(void)
{
	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
		rearm = 0;
		close(perf_fd);
		perf_fd = -1;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double const x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_ROUNDS 101

int main(int argc, char **argv)
{
	int hz = 999, rounds = 5, c;
	long units = 3000;
	while ((c = getopt(argc, argv, "F:u:r:")) != -1) {
		switch (c) {
		case 'F':
			hz = atoi(optarg);
			break;
		case 'u':
			units = atol(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc || hz < 1 || hz > 100000 || units < 1 || rounds < 1 || rounds > MAX_ROUNDS)
		goto usage;

	int const signo = SIGRTMIN + 4;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) != 0) {
		perror("sigfloor: sigaction");
		return 1;
	}

	static double cpu[NMODES][MAX_ROUNDS], sigs[NMODES][MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < NMODES; k++) {
			enum mode const m = (enum mode)((k + r) % NMODES); /* rotate the order */
			int const rc = start(m, hz, signo);
			if (rc) {
				fprintf(stderr, "sigfloor: perf task-clock event (%s): %s\n", mode_name[m],
					strerror(-rc));
				return 1;
			}
			nsignals = 0;
			double const c0 = thread_cpu_s();
			sink = work(units);
			double const c1 = thread_cpu_s();
			stop();
			cpu[m][r] = c1 - c0;
			sigs[m][r] = (double)nsignals;
		}
	}
	/* For scale: a signal sent to the thread itself and handled, no timer. */
	long const nself = 100000;
	pid_t const pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	nsignals = 0;
	double const s0 = thread_cpu_s();
	for (long i = 0; i < nself; i++)
		syscall(SYS_tgkill, pid, tid, signo);
	double const s1 = thread_cpu_s();
	if (nsignals != nself) {
		fprintf(stderr, "sigfloor: %ld of %ld self-sent signals handled\n", (long)nsignals, nself);
		return 1;
	}

	printf("# bench/sigfloor: -F %d, %ld units, %d rounds; thread CPU, empty handlers\n", hz, units, rounds);
	printf("%-8s %12s %10s %16s\n", "mode", "cpu_s", "signals", "us_per_signal");
	double const base = median(cpu[MODE_NONE], rounds);
	for (int m = 0; m < NMODES; m++) {
		double const t = median(cpu[m], rounds), s = median(sigs[m], rounds);
		if (m == MODE_NONE)
			printf("%-8s %12.3f %10s %16s\n", mode_name[m], t, "-", "-");
		else
			printf("%-8s %12.3f %10.0f %16.1f\n", mode_name[m], t, s, s > 0 ? (t - base) / s * 1e6 : 0.0);
	}
	printf("%-8s %12.3f %10ld %16.1f   (tgkill to itself, no timer)\n", "tgkill", s1 - s0, nself,
	       (s1 - s0) / (double)nself * 1e6);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-F HZ (1..100000)] [-u UNITS] [-r ROUNDS (1..%d)]\n", argv[0], MAX_ROUNDS);
	return 2;
}
