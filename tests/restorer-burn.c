/* SPDX-License-Identifier: MIT */
/* restorer-burn [MS]: a signal handler installed with a restorer of its
 * own that has no CFI (as Go's runtime.sigreturn__sigaction: the kernel
 * makes its first byte the handler's return address, and nothing says
 * the kernel's signal frame is under it), burning MS (default 300) of CPU
 * in handler_burn.  Used by tests/record.sh: the walk goes through the
 * signal frame to the interrupted code (main -> interrupted -> raise). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* No .cfi directives: no FDE.  The int3 before it: the byte before the
 * restorer is in no function's CFI either, as in Go's binaries. */
__asm__(".text\n"
	".p2align 4\n"
	"\tint3\n"
	".globl restorer_nocfi\n"
	".type restorer_nocfi, @function\n"
	"restorer_nocfi:\n"
	"\tmovl $15, %eax\n" /* rt_sigreturn */
	"\tsyscall\n"
	"\thlt\n"
	".size restorer_nocfi, .-restorer_nocfi\n");
void restorer_nocfi(void);

static double secs = 0.3;

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noipa)) static void handler_burn(void)
{
	double const t0 = cpu_now();
	volatile unsigned long x = 0;
	while (cpu_now() - t0 < secs)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
}

__attribute__((noipa)) static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	handler_burn();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noipa)) static void interrupted(void)
{
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

/* The kernel's struct sigaction (x86-64), with SA_RESTORER. */
struct kernel_sigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

int main(int argc, char **argv)
{
	if (argc > 1)
		secs = atoi(argv[1]) / 1000.0;
	struct kernel_sigaction ka;
	memset(&ka, 0, sizeof(ka));
	ka.handler = handler;
	ka.flags = SA_SIGINFO | 0x04000000 /* SA_RESTORER */;
	ka.restorer = restorer_nocfi;
	if (syscall(SYS_rt_sigaction, SIGUSR1, &ka, NULL, sizeof(ka.mask)) != 0)
		return 1;
	interrupted();
	return 0;
}
