/* SPDX-License-Identifier: MIT */
/* fork-burn: fork() without exec.  The child burns CHILD_MS milliseconds of
 * CPU (default 250; CPU as the samplers count it: see clock_fd) in
 * child_burn() and exits; meanwhile the parent burns PARENT_MS (default
 * 500) in parent_burn(), then waits for the child.
 * Prints "parent PID child PID" on stdout.  Used by tests/record.sh. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* Not inlined, cloned or merged: the symbols are exactly these names. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define BURN_FN __attribute__((noipa))
#endif
#endif
#ifndef BURN_FN
#define BURN_FN __attribute__((noinline))
#endif

/* The burns are timed by the clock the samplers count: a perf task-clock
 * of this thread.  In a guest whose kernel accounts steal time apart
 * (CONFIG_PARAVIRT_TIME_ACCOUNTING) the thread's CPU time leaves out the
 * time the host took the vCPU away, and the task clock does not: a busy
 * host once made 500 ms of CPU time 672 samples at 999 Hz.  Without perf
 * events (the in-process sampler's POSIX timer then): the thread's CPU
 * time, which that timer counts. */
static int clock_fd = -1;

static void clock_open(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	clock_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static double cpu_now(void)
{
	uint64_t ns;
	if (clock_fd >= 0 && read(clock_fd, &ns, sizeof(ns)) == (ssize_t)sizeof(ns))
		return (double)ns * 1e-9;
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Two different bodies, so the functions are never merged.  The clock is
 * read every 2^16 iterations: almost every sample lands in the function. */
static BURN_FN void parent_burn(double secs)
{
	double const end = cpu_now() + secs;
	unsigned long x = 1;
	do {
		for (unsigned i = 0; i < 65536; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
		sink = x;
	} while (cpu_now() < end);
}

static BURN_FN void child_burn(double secs)
{
	double const end = cpu_now() + secs;
	unsigned long x = 7;
	do {
		for (unsigned i = 0; i < 65536; i++)
			x ^= (x << 13) ^ (x >> 7) ^ i;
		sink = x;
	} while (cpu_now() < end);
}

int main(int argc, char **argv)
{
	double const parent_s = (argc > 1 ? atoi(argv[1]) : 500) / 1000.0;
	double const child_s = (argc > 2 ? atoi(argv[2]) : 250) / 1000.0;
	fflush(stdout);
	pid_t const pid = fork();
	if (pid < 0) {
		perror("fork-burn: fork");
		return 1;
	}
	if (pid == 0) {
		clock_open(); /* the child's own thread */
		child_burn(child_s);
		exit(0); /* exit, not _exit: the child's atexit handlers run */
	}
	clock_open();
	parent_burn(parent_s);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "fork-burn: the child failed\n");
		return 1;
	}
	printf("parent %d child %d\n", (int)getpid(), (int)pid);
	return 0;
}
