/* tdata-sigalt: a hot signal handler running on an alternate signal stack.
 *
 *   main -> trigger_loop ==SIGUSR1==> handler_entry -> handler_hot
 *
 * trigger_loop does a little work, then sends itself SIGUSR1 with a raw
 * tgkill system call written inline (no libc raise() frames in between), so
 * the signal interrupts trigger_loop itself, right after its syscall
 * instruction.  The handler, installed with SA_ONSTACK, runs on a 256 KiB
 * sigaltstack mapped with mmap: handler_entry calls handler_hot, which burns
 * a 5 ms slice of CPU time.  Together the handlers use nearly all of the
 * SECONDS of thread CPU time (default 1).
 *
 * Chain seen in the handler, leaf first:
 *   handler_hot, handler_entry, __restore_rt, trigger_loop, main
 * __restore_rt is glibc's sigreturn trampoline, which the kernel made the
 * handler's return address; its CFI (augmentation "S") describes the signal
 * frame, so a DWARF unwinder steps from it to trigger_loop at the exact
 * interrupted pc (not pc - 1).  The first three frames are on the alternate
 * stack, the last two on the main thread stack: a capture must copy both.
 *
 * Self-checks (exit 1 with a message on stderr): every handler invocation
 * ran on the alternate stack (a local's address is inside it and
 * sigaltstack() reports SS_ONSTACK); every signal sent was handled; the
 * handler used at least half of the CPU time.
 *
 * Usage: tdata-sigalt [--chain] [SECONDS]
 */
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tdata.h"

#define ALT_SIZE (256 * 1024)
#define SLICE    0.005 /* CPU seconds per handler invocation */

static const char *const chain[] = {
	"handler_hot", "handler_entry", "__restore_rt", "trigger_loop", "main",
};

static unsigned char *alt_base;
static double end_cpu;                /* set before the first signal */
static volatile double handler_cpu;   /* written by the handler only */
static volatile long raised, handled;
static volatile sig_atomic_t off_altstack;

/* tgkill(pid, tid, sig) as one inline syscall instruction (a macro, so it
 * is no inlined frame either); evaluates to the syscall's return value. */
#define TD_TGKILL(pid, tid, sig)                                              \
	__extension__({                                                       \
		long td_ret_;                                                 \
		__asm__ volatile("syscall"                                    \
				 : "=a"(td_ret_)                              \
				 : "0"((long)SYS_tgkill), "D"((long)(pid)),   \
				   "S"((long)(tid)), "d"((long)(sig))         \
				 : "rcx", "r11", "memory");                   \
		td_ret_;                                                      \
	})

TD_FRAME static uint64_t handler_hot(void)
{
	volatile uint64_t acc = 5;
	double start = TD_THREAD_CPU();
	double stop = start + SLICE < end_cpu ? start + SLICE : end_cpu;
	double now;

	do {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			acc = TD_MIX(acc) + (acc >> 31);
		now = TD_THREAD_CPU();
	} while (now < stop);
	handler_cpu += now - start;
	return acc;
}

/* The sa_sigaction handler. */
TD_FRAME static void handler_entry(int sig, siginfo_t *si, void *uc)
{
	volatile unsigned char here = 0;
	uintptr_t p = (uintptr_t)&here;
	stack_t cur;

	if (p < (uintptr_t)alt_base || p >= (uintptr_t)alt_base + ALT_SIZE)
		off_altstack = 1;
	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_ONSTACK))
		off_altstack = 1;
	handler_hot();
	TD_KEEP();
	handled = handled + 1;
}

TD_FRAME static uint64_t trigger_loop(void)
{
	volatile uint64_t acc = 6;
	long pid = getpid(), tid = syscall(SYS_gettid);

	do {
		for (unsigned i = 0; i < 1024; i++)
			acc = TD_MIX(acc) ^ i;
		raised = raised + 1;
		if (TD_TGKILL(pid, tid, SIGUSR1) != 0)
			return 0;
		/* SIGUSR1 was delivered on return from the syscall: here. */
		TD_KEEP();
	} while (TD_THREAD_CPU() < end_cpu);
	return acc;
}

/* Results land here so no computation is dead. */
static volatile uint64_t sink;

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chain", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa;
	stack_t ss;
	double seconds = 1.0, start, total;
	int want_chain = 0, c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			want_chain = 1;
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

	alt_base = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (alt_base == MAP_FAILED) {
		perror("tdata-sigalt: mmap");
		return 1;
	}
	memset(&ss, 0, sizeof ss);
	ss.ss_sp = alt_base;
	ss.ss_size = ALT_SIZE;
	if (sigaltstack(&ss, NULL) != 0) {
		perror("tdata-sigalt: sigaltstack");
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler_entry;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0) {
		perror("tdata-sigalt: sigaction");
		return 1;
	}

	start = TD_THREAD_CPU();
	end_cpu = start + seconds;
	sink = trigger_loop();
	TD_KEEP();
	total = TD_THREAD_CPU() - start;

	if (raised == 0 || handled != raised) {
		fprintf(stderr, "tdata-sigalt: %ld signals sent, %ld handled\n", raised, handled);
		return 1;
	}
	if (off_altstack) {
		fprintf(stderr, "tdata-sigalt: the handler did not run on the alternate stack\n");
		return 1;
	}
	if (handler_cpu < 0.5 * total) {
		fprintf(stderr, "tdata-sigalt: handler used %.3f s of %.3f s CPU time\n",
			handler_cpu, total);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [SECONDS]\n", argv[0]);
	return 2;
}
