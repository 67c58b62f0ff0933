/* SPDX-License-Identifier: MIT */
/*
 * sigchain.c: sharing the sampling signal (SIGPROF) with a program that
 * uses it too (its own profiler, setitimer(ITIMER_PROF)), and the
 * real-time signal our samples move to once the program handles SIGPROF
 * itself (capture.c: two SIGPROF pending at once merge into one, and the
 * program's was lost).
 *
 * Our handler stays installed on both; the program's sigaction()/signal()
 * on them are interposed and recorded as the program's action, which they
 * also report back.  Our handler keeps the signals that are ours (perf
 * overflow: POLL_* codes naming this thread's event fd; our timers:
 * SI_TIMER with our cookie) and hands
 * every other one to the program's action exactly as the kernel would
 * have: its handler with its mask, SIG_IGN, or the default action (which
 * for SIGPROF ends the process).  So the program sees its own signals,
 * never ours, and still dies of an unhandled SIGPROF.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/capture-internal.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction_fn;

/* Per signal chained (0: the sampling signal, 1: the real-time one): the
 * program's action in two slots, the handler reads the published one;
 * the signal's number while our handler is installed on it, else 0. */
#define CHAINS 2
static struct sigaction user_slots[CHAINS][2];
static _Atomic int user_slot[CHAINS];
static _Atomic int chained[CHAINS];

int sigchain_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction_fn)
		real_sigaction_fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction_fn) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction_fn(sig, act, old);
}

/* The chain that is SIG's when chained. */
static int chain_for(int sig)
{
	return sig == stackcap_g.cfg.signo ? 0 : 1;
}

/* Which chain SIG is, or -1. */
static int chain_of(int sig)
{
	for (int c = 0; c < CHAINS; c++)
		if (sig > 0 && atomic_load(&chained[c]) == sig)
			return c;
	return -1;
}

static void user_set(int c, const struct sigaction *act)
{
	int const next = !atomic_load(&user_slot[c]);
	user_slots[c][next] = *act;
	atomic_store(&user_slot[c], next);
	int const sig = atomic_load(&chained[c]);
	if (sig)
		capture_follow_program_action(sig, act);
}

void sigchain_start(int sig, const struct sigaction *previous)
{
	int const c = chain_for(sig);
	user_set(c, previous);
	atomic_store(&chained[c], sig);
}

void sigchain_stop(int sig, struct sigaction *program_action)
{
	int const c = chain_of(sig);
	if (c < 0) {
		memset(program_action, 0, sizeof(*program_action));
		program_action->sa_handler = SIG_DFL;
		return;
	}
	atomic_store(&chained[c], 0);
	*program_action = user_slots[c][atomic_load(&user_slot[c])];
}

int sigchain_is_ours(const siginfo_t *si, int perf_fd)
{
	/* perf overflow signals carry a POLL_* band code (F_SETSIG) and the
	 * event's fd: ours is this thread's own event.  A program's own
	 * perf event (a self-profiler) signals with another fd. */
	if (si->si_code >= POLL_IN && si->si_code <= POLL_HUP)
		return perf_fd >= 0 && si->si_fd == perf_fd;
	return si->si_code == SI_TIMER && si->si_value.sival_ptr == (void *)&stackcap_g;
}

/* A signal that is not ours, in our handler: what the kernel would have
 * done with the program's action. */
void sigchain_forward(int sig, siginfo_t *si, void *uc)
{
	int c = chain_of(sig);
	if (c < 0) /* being removed: the program's action as last known */
		c = chain_for(sig);
	struct sigaction const act = user_slots[c][atomic_load(&user_slot[c])];
	if (act.sa_handler == SIG_IGN)
		return;
	if (act.sa_handler == SIG_DFL) {
		/* SIGPROF and the real-time signals terminate: the program
		 * would have died here, so it does.  Our handler blocks every
		 * signal: the re-raised one is delivered at its return. */
		stackcap_exit_flush();
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigchain_real_sigaction(sig, &dfl, NULL);
		syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
		return;
	}
	if (act.sa_flags & SA_RESETHAND) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		user_set(c, &dfl);
	}
	/* The program's handler runs with the mask it asked for (what it
	 * interrupted, its sa_mask, the signal unless SA_NODEFER), so a
	 * longjmp out of it leaves the mask it would have left. */
	sigset_t mask = ((ucontext_t *)uc)->uc_sigmask;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&act.sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (!(act.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, uc);
	else
		act.sa_handler(sig);
}

/* ---- interposed ---------------------------------------------------------- */

STACKCAP_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int const c = chain_of(sig);
	if (c < 0)
		return sigchain_real_sigaction(sig, act, old);
	if (old)
		*old = user_slots[c][atomic_load(&user_slot[c])];
	if (act)
		user_set(c, act);
	return 0;
}

STACKCAP_API sighandler_t signal(int sig, sighandler_t handler)
{
	if (chain_of(sig) >= 0) {
		/* glibc's signal(): BSD semantics. */
		struct sigaction act, old;
		memset(&act, 0, sizeof(act));
		act.sa_handler = handler;
		act.sa_flags = SA_RESTART;
		sigemptyset(&act.sa_mask);
		sigaddset(&act.sa_mask, sig);
		sigaction(sig, &act, &old);
		return old.sa_handler;
	}
	static sighandler_t (*real)(int, sighandler_t);
	if (!real)
		real = (sighandler_t (*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
	if (!real) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	return real(sig, handler);
}
