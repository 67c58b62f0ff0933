/* SPDX-License-Identifier: MIT */
/* fork-burn: fork() without exec.  The child burns CHILD_MS milliseconds of
 * CPU (default 250) in child_burn() and exits; meanwhile the parent burns
 * PARENT_MS (default 500) in parent_burn(), then waits for the child.
 * Prints "parent PID child PID" on stdout.  Used by tests/record.sh. */
#include <stdio.h>
#include <stdlib.h>
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

static double cpu_now(void)
{
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
		child_burn(child_s);
		exit(0); /* exit, not _exit: the child's atexit handlers run */
	}
	parent_burn(parent_s);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "fork-burn: the child failed\n");
		return 1;
	}
	printf("parent %d child %d\n", (int)getpid(), (int)pid);
	return 0;
}
