/* SPDX-License-Identifier: MIT */
/*
 * tsan-limits: two limits of ThreadSanitizer itself, shown without
 * stackcap (docs/RELIABILITY.md).  Built without -fsanitize; run plain and
 * with libtsan preloaded (tests/stress.sh does, under STRESS_SAN=tsan, and
 * prints the results as TAP comments).
 *
 *   tsan-limits ticks [libc]   a SIGPROF handler and a 1 ms ITIMER_PROF,
 *                              ~0.3 s of CPU in a loop that never calls libc
 *                              (or, with "libc", calls clock_gettime every
 *                              0.1 ms): how many ticks the handler saw.
 *                              TSan defers an asynchronous signal to the next
 *                              libc call it intercepts: a pure loop sees 0.
 *   tsan-limits shared         the program's 2 ms ITIMER_PROF and a 0.1 ms
 *                              thread CPU-time timer (timer_create, SIGPROF,
 *                              what a sampler adds), clock_gettime every
 *                              0.1 ms: the ticks of each the handler saw.
 *                              Both are CPU-time timers the kernel fires in
 *                              the same tick; TSan keeps one pending signal
 *                              per signal number, and the ITIMER_PROF tick
 *                              is lost (0 under TSan, all of them plain).
 *   tsan-limits fork           a second thread alive at fork(); the child
 *                              starts and joins a thread of its own.  TSan
 *                              kills such a child ("starting new threads
 *                              after multi-threaded fork is not supported",
 *                              or with die_after_fork=0 "dup thread": glibc
 *                              gives the new thread the dead one's stack).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t ticks;

static void on_prof(int sig)
{
	(void)sig;
	ticks++;
}

static int mode_ticks(int call_libc)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return 1;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	unsigned long long x = 1;
	for (int u = 0; u < 3000; u++) {
		for (int i = 0; i < 65536; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
		__asm__ volatile("" : "+r"(x));
		if (call_libc) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
		}
	}
	int const seen = ticks; /* before any other libc call */
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	printf("ticks %d (%s)\n", seen, call_libc ? "clock_gettime every 0.1 ms" : "pure loop");
	return 0;
}

static volatile sig_atomic_t kernel_ticks, timer_ticks;

static void on_prof_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == SI_KERNEL)
		kernel_ticks++;
	else
		timer_ticks++;
}

static int mode_shared(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof_info;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return 1;
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &tm) != 0)
		return 1;
	struct itimerspec const fast = { { 0, 100000 }, { 0, 100000 } };
	timer_settime(tm, 0, &fast, NULL);
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	unsigned long long x = 1;
	for (int u = 0; u < 3000; u++) {
		for (int i = 0; i < 65536; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
		__asm__ volatile("" : "+r"(x));
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	}
	int const k = kernel_ticks, t = timer_ticks; /* before any other libc call */
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	timer_delete(tm);
	printf("ITIMER_PROF ticks %d, timer ticks %d\n", k, t);
	return 0;
}

static int fds[2];

static void *idle(void *a)
{
	char c;
	ssize_t const r = read(fds[0], &c, 1);
	(void)r;
	return a;
}

static void *noop(void *a)
{
	return a;
}

static int mode_fork(void)
{
	pthread_t t, c;
	if (pipe(fds) != 0 || pthread_create(&t, NULL, idle, NULL) != 0)
		return 1;
	fflush(stdout);
	pid_t const pid = fork();
	if (pid == 0) {
		if (pthread_create(&c, NULL, noop, NULL) != 0)
			_exit(1);
		pthread_join(c, NULL);
		_exit(7);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child %s %d (7: it ran)\n", WIFEXITED(st) ? "exit" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	ssize_t const w = write(fds[1], "x", 1);
	(void)w;
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "ticks"))
		return mode_ticks(argc > 2 && !strcmp(argv[2], "libc"));
	if (argc > 1 && !strcmp(argv[1], "shared"))
		return mode_shared();
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return mode_fork();
	fprintf(stderr, "usage: tsan-limits ticks [libc] | shared | fork\n");
	return 2;
}
