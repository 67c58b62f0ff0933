/* SPDX-License-Identifier: MIT */
/*
 * capture.c: the hot path.  The sampling signal handler and
 * stackcap_capture() both end in capture_regs(): bounded stack copy (read
 * in place, encoded straight into the thread's ring), no malloc, no locks,
 * no syscall except clock_gettime (vDSO) and, off the common path,
 * sigaltstack.  Anything unexpected drops the sample and counts it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "capture/capture-internal.h"
#include "common/io.h"
#include "common/asan.h"
#include "capture/runtime.h"

/* The calling thread's state; initial-exec TLS so that reading it in a
 * signal handler never allocates. */
static __thread struct thread_state *tls_thread __attribute__((tls_model("initial-exec")));
/* The fd of this thread's perf sampler, as its overflow signals name it
 * (si_fd): set before the event is enabled and kept after it is closed,
 * so a signal still pending then is known as ours.  -1: none yet. */
static __thread int tls_perf_sig_fd __attribute__((tls_model("initial-exec"))) = -1;

/* ---- the capture ------------------------------------------------------- */

/* Zeros after LEN bytes at P up to the next multiple of 8 (in the signal
 * handler: no libc). */
static void pad8(uint8_t *p, size_t len)
{
	for (size_t i = len; i & 7; i++)
		p[i] = 0;
}

/* A handler running on the alternate signal stack interrupted code on the
 * thread's own stack: find that stack pointer in the signal frame (its
 * first word is the return trampoline, the ucontext follows) so the
 * interrupted stack can be copied too.  Only words inside the copied
 * range are read.  @return the interrupted rsp, or 0. */
/* Reads the live stack, redzones included: not checked by ASan. */
#if SU_ASAN
__attribute__((no_sanitize("address")))
#endif
static uint64_t interrupted_sp(const struct thread_state *t, uint64_t sp, uint64_t nwords)
{
	uint64_t const restorer = atomic_load_explicit(&stackcap_g.restorer, memory_order_relaxed);
	size_t const rsp_at = (8 + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP])) / 8;
	const uint64_t *w = (const uint64_t *)(uintptr_t)sp;
	if (!restorer)
		return 0;
	for (uint64_t i = 0; i + rsp_at < nwords; i++)
		if (w[i] == restorer && w[i + rsp_at] >= t->stack_lo && w[i + rsp_at] < t->stack_hi)
			return w[i + rsp_at];
	return 0;
}

/* A stack we know no bounds of (a coroutine's or a goroutine's, neither
 * the thread's nor its alternate signal stack) is read through
 * process_vm_readv, which stops at the first page that is not readable
 * instead of faulting, as the kernel's own copy for perf does.  In pages:
 * the call stops at an iovec it cannot read whole.  At most this many. */
#define FOREIGN_PAGES 64
#define FOREIGN_PAGE 4096u
/* Bytes read at most: whatever SP's offset in its page, in FOREIGN_PAGES
 * iovecs (and never more than the stack cap). */
#define FOREIGN_MAX ((FOREIGN_PAGES - 1) * (uint64_t)FOREIGN_PAGE)

/* Whether process_vm_readv is ours to call here: not under a seccomp
 * filter, which may kill the process for it (a sandbox's). */
static int foreign_read_allowed(void)
{
	return syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0) == 0;
}

/* Up to LEN bytes from SP into BUF, up to the first unreadable page.
 * @return the bytes read (0: none). */
static size_t foreign_read(uint8_t *buf, uint64_t sp, size_t len)
{
	struct iovec remote[FOREIGN_PAGES];
	int n = 0;
	for (uint64_t at = sp, end = sp + len; at < end && n < FOREIGN_PAGES; n++) {
		uint64_t const next = (at / FOREIGN_PAGE + 1) * FOREIGN_PAGE;
		remote[n].iov_base = (void *)(uintptr_t)at;
		remote[n].iov_len = (size_t)((next < end ? next : end) - at);
		at += remote[n].iov_len;
	}
	struct iovec local = { buf, len };
	long const got = syscall(SYS_process_vm_readv, (long)stackcap_g.pid, &local, 1L, remote, (long)n, 0L);
	return got > 0 ? (size_t)got : 0;
}

/* Record one stack.  REGS in DWARF order; rsp is where the copy starts. */
static int capture_regs(struct thread_state *t, const uint64_t *regs)
{
	uint64_t const sp = regs[STACKCAP_REG_RSP];
	uint64_t lo = t->stack_lo, hi = t->stack_hi;
	int on_alt = 0, foreign = 0;
	if (sp < lo || sp >= hi) {
		/* Interrupted on another stack: the alternate signal stack,
		 * bounded; else one we know no bounds of (a coroutine's, a
		 * goroutine's), read up to its first unreadable page. */
		stack_t ss;
		if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) &&
		    sp >= (uint64_t)(uintptr_t)ss.ss_sp && sp < (uint64_t)(uintptr_t)ss.ss_sp + ss.ss_size) {
			lo = (uint64_t)(uintptr_t)ss.ss_sp;
			hi = lo + ss.ss_size;
			on_alt = 1;
		} else if (!(sp & 7) && sp <= UINT64_MAX - FOREIGN_MAX && foreign_read_allowed()) {
			foreign = 1;
			hi = sp + FOREIGN_MAX; /* cut to the stack cap below */
		} else {
			atomic_fetch_add_explicit(&stackcap_g.dropped_no_stack, 1, memory_order_relaxed);
			return -EAGAIN;
		}
	}
	uint64_t nbytes = hi - sp;
	if (nbytes > stackcap_g.cfg.stack_cap)
		nbytes = stackcap_g.cfg.stack_cap;
	uint64_t nwords = nbytes / 8;
	/* Second segment: the stack the alternate-stack handler interrupted,
	 * within what is left of the cap. */
	uint64_t const seg_sp = on_alt ? interrupted_sp(t, sp, nwords) : 0;
	uint64_t seg_nwords = 0;
	if (seg_sp) {
		seg_nwords = (t->stack_hi - seg_sp) / 8;
		if (seg_nwords > (stackcap_g.cfg.stack_cap - nbytes) / 8)
			seg_nwords = (stackcap_g.cfg.stack_cap - nbytes) / 8;
	}

	const struct snapshot *snap = snapshot_enter();
	/* The pc in no known code: code mapped since the last read of the
	 * maps (a JIT's new page).  The writer is told at once, not after
	 * its next scan (up to 240 ms): until then every sample there has
	 * no map.  Only the first such capture wakes it. */
	if (snap && stackcap_code_ranges_find(&snap->set, regs[STACKCAP_REG_RIP]) < 0 &&
	    !atomic_exchange_explicit(&stackcap_g.pc_unmapped, 1, memory_order_relaxed))
		writer_wake();
	/* (+ 24: LTTng mode puts the segment and the runtime frames at the
	 * next multiple of 8 and pads each piece with zeros up to one,
	 * capture_sink.sample: 7 bytes each at most) */
	size_t const bound = (STACKCAP_CODEC_BOUND(nwords) + 7) & ~(size_t)7;
	/* A stack read by process_vm_readv is copied after the room for
	 * its blob (the reservation is only committed as long as what it
	 * keeps). */
	size_t const need = sizeof(struct ring_rec) + bound + (seg_nwords ? STACKCAP_CODEC_BOUND(seg_nwords) : 0) +
			    capture_rt_room() + 24 + (foreign ? 8 * nwords : 0);
	struct ring_rec *rec = ring_reserve(&t->ring, need);
	if (!rec) {
		snapshot_leave();
		atomic_fetch_add_explicit(&t->dropped_ring_full, 1, memory_order_relaxed);
		return -EAGAIN;
	}
	const uint64_t *words = (const uint64_t *)(uintptr_t)sp;
	if (foreign) {
		uint64_t *const copy = (uint64_t *)(void *)((uint8_t *)(rec + 1) + bound);
		nwords = foreign_read((uint8_t *)copy, sp, 8 * nwords) / 8;
		if (!nwords) {
			snapshot_leave();
			atomic_fetch_add_explicit(&stackcap_g.dropped_no_stack, 1, memory_order_relaxed);
			return -EAGAIN;
		}
		words = copy;
	}
	/* A fidelity recording keeps every stack word, but registers are
	 * filtered as always: the copy is for measuring what the stack
	 * filter costs, and a register holds whatever the code put there
	 * (secrets, keys).  A register zeroed here is not recorded. */
	uint64_t kept_regs[STACKCAP_NREGS];
	if (stackcap_g.cfg.full_copy) {
		uint64_t const copy_hi = sp + 8 * nwords;
		uint64_t const alo = seg_nwords ? seg_sp : 0, ahi = seg_nwords ? seg_sp + 8 * seg_nwords : 0;
		for (int r = 0; r < STACKCAP_NREGS; r++) {
			uint64_t const v = regs[r];
			int const keep = r == STACKCAP_REG_RSP || r == STACKCAP_REG_RIP ||
					 stackcap_codec_classify(v, snap ? &snap->set : NULL, sp, copy_hi,
								 stackcap_g.cfg.policy) ||
					 stackcap_codec_in_also(v, alo, ahi, stackcap_g.cfg.policy);
			kept_regs[r] = keep ? v : 0;
		}
		regs = kept_regs;
	}
	struct stackcap_codec_input in = {
		.words = words,
		.nwords = nwords,
		.sp = sp,
		.regs = regs,
		.ranges = snap ? &snap->set : NULL,
		/* Fidelity recordings keep everything here; the writer filters. */
		.policy = stackcap_g.cfg.full_copy ? STACKCAP_POLICY_ALL : stackcap_g.cfg.policy,
		.encoding = STACKCAP_WORDS_RELATIVE,
		/* Pointers into the interrupted stack (saved rbp...) matter too. */
		.also_lo = seg_nwords ? seg_sp : 0,
		.also_hi = seg_nwords ? seg_sp + 8 * seg_nwords : 0,
	};
	size_t const len = stackcap_codec_encode((uint8_t *)(rec + 1), need - sizeof(*rec), &in);
	/* The segment's blob right after (the writer's record), or at the
	 * next multiple of 8 (LTTng: 64-bit words, capture_sink.sample). */
	size_t const seg_at = stackcap_g.cfg.lttng && !stackcap_codec_is_error(len) ? (len + 7) & ~(size_t)7 : len;
	size_t seg_len = 0;
	if (seg_nwords && !stackcap_codec_is_error(len)) {
		struct stackcap_codec_input seg = {
			.words = (const uint64_t *)(uintptr_t)seg_sp,
			.nwords = seg_nwords,
			.sp = seg_sp,
			.ranges = in.ranges,
			/* Filtered even in fidelity recordings: the segment is
			 * shared by the sample and its full copy. */
			.policy = stackcap_g.cfg.policy,
			.encoding = STACKCAP_WORDS_RELATIVE,
		};
		seg_len = stackcap_codec_encode((uint8_t *)(rec + 1) + seg_at, need - sizeof(*rec) - seg_at, &seg);
		if (stackcap_codec_is_error(seg_len))
			seg_len = 0;
	}
	rec->generation = snap ? snap->generation : 0;
	if (snap && stackcap_g.cfg.lttng) /* its code_ranges must reach the trace */
		atomic_fetch_add_explicit(&((struct snapshot *)snap)->sampled, 1, memory_order_relaxed);
	snapshot_leave();
	if (stackcap_codec_is_error(len)) {
		atomic_fetch_add_explicit(&t->dropped_ring_full, 1, memory_order_relaxed);
		return -EAGAIN;
	}
	if (stackcap_g.cfg.lttng) {
		/* LTTng mode: the record becomes tracepoints right here, in
		 * this thread; the ring was only scratch space (never
		 * committed).  The blob is self-contained: no writer stage. */
		uint8_t *const blob = (uint8_t *)(rec + 1);
		size_t const rt_at = (seg_at + seg_len + 7) & ~(size_t)7;
		/* Runtime frames (--python): their code objects are described
		 * by the writer, which gets the frames as a record of their
		 * own (moved to the record's start; nothing else committed). */
		size_t const rt_len = capture_rt_sample(blob + rt_at, need - sizeof(*rec) - rt_at - 7);
		/* Zeros up to each piece's next multiple of 8: its last word. */
		pad8(blob, len);
		if (seg_len)
			pad8(blob + seg_at, seg_len);
		if (rt_len)
			pad8(blob + rt_at, rt_len);
		const struct capture_runtime *const rt = capture_rt_active();
		capture_lttng_sink.sample(rec->generation, blob, len, seg_len ? blob + seg_at : NULL, seg_len,
					  rt ? (uint8_t)rt->kind : 0, rt_len ? blob + rt_at : NULL, rt_len);
		if (rt_len) {
			memmove(blob, blob + rt_at, rt_len);
			rec->ts = capture_now_ns();
			rec->seg_len = 0;
			rec->rt_len = (uint32_t)rt_len;
			ring_commit(&t->ring, rec, sizeof(*rec) + rt_len);
		}
		atomic_fetch_add_explicit(&t->samples, 1, memory_order_relaxed);
		return 0;
	}
	rec->ts = capture_now_ns();
	rec->seg_len = (uint32_t)seg_len;
	rec->rt_len = (uint32_t)capture_rt_sample((uint8_t *)(rec + 1) + len + seg_len,
						  need - sizeof(*rec) - len - seg_len);
	ring_commit(&t->ring, rec, sizeof(*rec) + len + seg_len + rec->rt_len);
	atomic_fetch_add_explicit(&t->samples, 1, memory_order_relaxed);
	/* Past half full: wake the writer early (write(2) is signal-safe). */
	if (ring_used(&t->ring) > t->ring.size / 2)
		writer_wake();
	return 0;
}

/* Called with the registers saved by the stackcap_capture trampoline. */
__attribute__((used)) HIDDEN int stackcap_capture_regs(const uint64_t *regs);
int stackcap_capture_regs(const uint64_t *regs)
{
	if (!atomic_load_explicit(&stackcap_g.running, memory_order_acquire))
		return -ENODEV;
	int const saved_errno = errno;
	struct thread_state *t = tls_thread;
	int rc;
	if (!t || (stackcap_g.cfg.lttng && !capture_lttng_sink.thread_ready())) {
		atomic_fetch_add_explicit(&stackcap_g.dropped_no_stack, 1, memory_order_relaxed);
		rc = -EAGAIN;
	} else if (t->busy) {
		atomic_fetch_add_explicit(&t->dropped_nested, 1, memory_order_relaxed);
		rc = -EAGAIN;
	} else {
		t->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		rc = capture_regs(t, regs);
		atomic_signal_fence(memory_order_seq_cst);
		t->busy = 0;
	}
	errno = saved_errno;
	return rc;
}

/*
 * stackcap_capture(): save every general-purpose register as it is at the
 * call, with rip = the return address and rsp = the caller's sp after the
 * return, so the caller is the innermost frame.  Written in assembly
 * because C cannot promise the callee-saved registers are untouched.
 * Layout: 17 slots in DWARF order (rax rdx rcx rbx rsi rdi rbp rsp r8..r15
 * rip), 136 bytes; entry rsp is 8 mod 16, so after the sub it is aligned.
 */
__asm__(
	".text\n"
	".globl stackcap_capture\n"
	".type stackcap_capture, @function\n"
	"stackcap_capture:\n"
	".cfi_startproc\n"
	"	sub $136, %rsp\n"
	".cfi_adjust_cfa_offset 136\n"
	"	mov %rax, 0(%rsp)\n"
	"	mov %rdx, 8(%rsp)\n"
	"	mov %rcx, 16(%rsp)\n"
	"	mov %rbx, 24(%rsp)\n"
	"	mov %rsi, 32(%rsp)\n"
	"	mov %rdi, 40(%rsp)\n"
	"	mov %rbp, 48(%rsp)\n"
	"	lea 144(%rsp), %rax\n"
	"	mov %rax, 56(%rsp)\n"
	"	mov %r8, 64(%rsp)\n"
	"	mov %r9, 72(%rsp)\n"
	"	mov %r10, 80(%rsp)\n"
	"	mov %r11, 88(%rsp)\n"
	"	mov %r12, 96(%rsp)\n"
	"	mov %r13, 104(%rsp)\n"
	"	mov %r14, 112(%rsp)\n"
	"	mov %r15, 120(%rsp)\n"
	"	mov 136(%rsp), %rax\n"
	"	mov %rax, 128(%rsp)\n"
	"	mov %rsp, %rdi\n"
	"	call stackcap_capture_regs\n"
	"	add $136, %rsp\n"
	".cfi_adjust_cfa_offset -136\n"
	"	ret\n"
	".cfi_endproc\n"
	".size stackcap_capture, .-stackcap_capture\n");

/* ---- the sampling signal ----------------------------------------------- */

static int handler_installed;
/* Two of our samples' signals or one of ours and one of the program's,
 * generated while the other is pending, merge: a classic signal is
 * pending once.  When the program handles the sampling signal itself (its
 * own profiler: an ITIMER_PROF or perf event handler), its signals are
 * lost that way as soon as both timers fire in one interrupt (a loaded
 * machine: 80% of them, docs/RELIABILITY.md).  Our samples then move to a
 * real-time signal of our own, ALT_SIGNO (queued, never merged; the event
 * is re-armed at each sample, ~14 us at 10 kHz here), each thread at its
 * next sample. */
static int alt_signo;
static _Atomic int use_alt;

static int program_handles(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	/* The program's own use of the signal goes to its action (sigchain.c). */
	if (!sigchain_is_ours(si, tls_perf_sig_fd)) {
		int const saved_errno = errno;
		sigchain_forward(sig, si, ucv);
		errno = saved_errno;
		return;
	}
	const ucontext_t *uc = ucv;
	/* We were "called" by the kernel with the return trampoline as our
	 * return address: remember it, it marks signal frames on stacks. */
	atomic_store_explicit(&stackcap_g.restorer, (uint64_t)(uintptr_t)__builtin_return_address(0),
			      memory_order_relaxed);
	const greg_t *g = uc->uc_mcontext.gregs;
	uint64_t regs[STACKCAP_NREGS] = {
		[STACKCAP_REG_RAX] = (uint64_t)g[REG_RAX], [STACKCAP_REG_RDX] = (uint64_t)g[REG_RDX],
		[STACKCAP_REG_RCX] = (uint64_t)g[REG_RCX], [STACKCAP_REG_RBX] = (uint64_t)g[REG_RBX],
		[STACKCAP_REG_RSI] = (uint64_t)g[REG_RSI], [STACKCAP_REG_RDI] = (uint64_t)g[REG_RDI],
		[STACKCAP_REG_RBP] = (uint64_t)g[REG_RBP], [STACKCAP_REG_RSP] = (uint64_t)g[REG_RSP],
		[STACKCAP_REG_R8] = (uint64_t)g[REG_R8], [STACKCAP_REG_R9] = (uint64_t)g[REG_R9],
		[STACKCAP_REG_R10] = (uint64_t)g[REG_R10], [STACKCAP_REG_R11] = (uint64_t)g[REG_R11],
		[STACKCAP_REG_R12] = (uint64_t)g[REG_R12], [STACKCAP_REG_R13] = (uint64_t)g[REG_R13],
		[STACKCAP_REG_R14] = (uint64_t)g[REG_R14], [STACKCAP_REG_R15] = (uint64_t)g[REG_R15],
		[STACKCAP_REG_RIP] = (uint64_t)g[REG_RIP],
	};
	stackcap_capture_regs(regs);
	struct thread_state *t = tls_thread;
	if (!t || t->perf_fd < 0 || !atomic_load_explicit(&stackcap_g.running, memory_order_relaxed))
		return;
	int const saved_errno = errno;
	if (sig >= SIGRTMIN) {
		/* A real-time signal queues: the event then stops at each
		 * overflow and is re-armed here, so the queue never fills (see
		 * arm_perf). */
		ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
	} else if (alt_signo && t->perf_sig != alt_signo && atomic_load_explicit(&use_alt, memory_order_relaxed) &&
		   fcntl(t->perf_fd, F_SETSIG, alt_signo) == 0) {
		/* The program handles this signal itself: this thread's samples
		 * move to the real-time one (capture_install_handler). */
		t->perf_sig = alt_signo;
		ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
	}
	errno = saved_errno;
}

/* Our action, given the program's.  SA_RESTART: the traced program's
 * syscalls must not see EINTR because of us -- unless the program's own
 * handler asked for none, which the kernel decides from the installed
 * action when it interrupts a call: then the program's own signals must
 * still interrupt (a read() timed out by its SIGPROF), and it handles
 * EINTR from this signal anyway.  SA_ONSTACK: a thread on its alternate
 * stack stays there. */
static void our_action(struct sigaction *sa, const struct sigaction *program)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = on_signal;
	sa->sa_flags = SA_SIGINFO | SA_ONSTACK;
	if (program->sa_handler == SIG_DFL || program->sa_handler == SIG_IGN || (program->sa_flags & SA_RESTART))
		sa->sa_flags |= SA_RESTART;
	sigfillset(&sa->sa_mask);
}

int capture_install_handler(void)
{
	struct sigaction sa, old;
	if (sigchain_real_sigaction(stackcap_g.cfg.signo, NULL, &old) != 0)
		return -errno;
	our_action(&sa, &old);
	if (sigchain_real_sigaction(stackcap_g.cfg.signo, &sa, &old) != 0)
		return -errno;
	sigchain_start(stackcap_g.cfg.signo, &old);
	/* The real-time signal our samples move to: the highest but one the
	 * program has no action on yet (SIGRTMAX itself is the one programs
	 * most often take). */
	alt_signo = 0;
	atomic_store(&use_alt, 0);
	for (int s = SIGRTMAX - 1; stackcap_g.cfg.signo < SIGRTMIN && s >= SIGRTMIN + 4; s--) {
		struct sigaction o, ours;
		if (sigchain_real_sigaction(s, NULL, &o) != 0 || o.sa_handler != SIG_DFL)
			continue;
		our_action(&ours, &o);
		if (sigchain_real_sigaction(s, &ours, NULL) == 0) {
			sigchain_start(s, &o);
			alt_signo = s;
		}
		break;
	}
	if (alt_signo && program_handles(&old))
		atomic_store(&use_alt, 1);
	handler_installed = 1;
	return 0;
}

void capture_follow_program_action(int sig, const struct sigaction *program)
{
	if (!handler_installed)
		return;
	struct sigaction sa;
	our_action(&sa, program);
	sigchain_real_sigaction(sig, &sa, NULL);
	if (sig == stackcap_g.cfg.signo && alt_signo && program_handles(program))
		atomic_store(&use_alt, 1); /* for good: its signals may come any time */
}

/* Our handler off SIG: the program's own action back; ignore rather than
 * restore the default: a signal of ours still in flight must not kill the
 * process. */
static void handler_remove(int sig)
{
	struct sigaction sa;
	sigchain_stop(sig, &sa);
	if (sa.sa_handler == SIG_DFL) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_IGN;
	}
	sigchain_real_sigaction(sig, &sa, NULL);
}

void capture_remove_handler(void)
{
	if (handler_installed) {
		handler_remove(stackcap_g.cfg.signo);
		if (alt_signo)
			handler_remove(alt_signo);
		alt_signo = 0;
		handler_installed = 0;
	}
}

/* ---- threads ------------------------------------------------------------ */

HIDDEN pthread_mutex_t capture_threads_lock = PTHREAD_MUTEX_INITIALIZER;

/* The stack pointer the kernel gave the program (ld.so exports it). */
extern void *__libc_stack_end;

/* The thread's stack.  For the main thread glibc derives the top from the
 * [stack] mapping and the bottom from RLIMIT_STACK; only [sp, top) is ever
 * read, and that part is mapped. */
static int thread_stack_bounds(uint64_t *lo, uint64_t *hi)
{
	pthread_attr_t attr;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return -EINVAL;
	void *addr;
	size_t size;
	int const rc = pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return -EINVAL;
	*lo = (uint64_t)(uintptr_t)addr;
	*hi = *lo + size;
	/* Nothing above the outermost frame matters for unwinding, and the
	 * copy is scanned word by word: end it there (bench/capture measured
	 * 2-4 KB of argv, environment and auxv above main, and 2.4 KB of
	 * thread descriptor above a thread's start routine). */
	uint64_t top = 0;
	if (getpid() == (pid_t)syscall(SYS_gettid)) {
		/* The initial sp, at argc: _start's frame lies below it (+16
		 * keeps argc's slot and argv[0], which _start may rewrite). */
		top = (uint64_t)(uintptr_t)__libc_stack_end + 16;
	} else {
		/* glibc puts static TLS and the thread descriptor at the top of
		 * a thread's stack; the thread pointer is the descriptor. */
		uint64_t tp;
		__asm__("mov %%fs:0, %0" : "=r"(tp));
		top = tp;
	}
	if (top > *lo && top < *hi)
		*hi = top & ~(uint64_t)7;
	return 0;
}

/* CPU-time sampling through a perf task-clock event: an hrtimer, so the
 * requested rate holds (POSIX CPU-time timers only fire at the kernel
 * tick, 250 Hz here).  The event signals its owner thread on overflow.
 * @return 0, or -errno when perf events are unavailable. */
static int arm_perf(struct thread_state *t)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 1000000000ull / stackcap_g.cfg.frequency_hz;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.wakeup_events = 1;
	int const fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Before the first overflow can signal: this thread's own. */
	tls_perf_sig_fd = fd;
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = t->tid };
	int const sig = alt_signo && atomic_load(&use_alt) ? alt_signo : stackcap_g.cfg.signo;
	t->perf_sig = sig;
	if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETSIG, sig) != 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
	    /* A classic signal is enabled once: every overflow signals with
	     * no ioctl per sample (bench/sigfloor: re-arming cost 6-11 us a
	     * sample here), and an overflow while one is pending merges with
	     * it.  A real-time one would queue, and a full queue raises SIGIO,
	     * which kills: that one stops after each overflow and the handler
	     * re-arms it. */
	    ioctl(fd, PERF_EVENT_IOC_ID, &t->perf_id) != 0 ||
	    (sig >= SIGRTMIN ? ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) : ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) != 0) {
		int const e = errno;
		close(fd);
		return -e;
	}
	t->perf_fd = fd;
	return 0;
}

static int arm_timer(struct thread_state *t)
{
	t->perf_fd = -1;
	if (stackcap_g.cfg.no_sampling || !stackcap_g.cfg.frequency_hz)
		return 0;
	if (arm_perf(t) == 0)
		return 0;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = stackcap_g.cfg.signo;
	sev.sigev_value.sival_ptr = &stackcap_g; /* marks the signal as ours */
	sev._sigev_un._tid = t->tid;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) != 0)
		return -errno;
	t->has_timer = 1;
	long const ns = 1000000000L / (long)stackcap_g.cfg.frequency_hz;
	struct itimerspec its = { .it_interval = { ns / 1000000000L, ns % 1000000000L },
				  .it_value = { ns / 1000000000L, ns % 1000000000L } };
	if (timer_settime(t->timer, 0, &its, NULL) != 0)
		return -errno;
	return 0;
}

int capture_thread_register(void)
{
	if (tls_thread)
		return 0;
	struct thread_state *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->tid = (pid_t)syscall(SYS_gettid);
	int rc = thread_stack_bounds(&t->stack_lo, &t->stack_hi);
	if (rc != 0) {
		free(t);
		return rc;
	}
	t->ring.size = stackcap_g.cfg.ring_size;
	/* mmap: pages are only touched as the ring fills. */
	t->ring.buf = mmap(NULL, t->ring.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->ring.buf == MAP_FAILED) {
		free(t);
		return -ENOMEM;
	}
	/* Publish to the writer, then to the handler. */
	struct thread_state *head = atomic_load(&stackcap_g.threads);
	do {
		t->next = head;
	} while (!atomic_compare_exchange_weak(&stackcap_g.threads, &head, t));
	tls_thread = t;
	if (stackcap_g.cfg.lttng)
		capture_lttng_sink.thread_init(); /* before the first signal */
	rc = arm_timer(t);
	return rc;
}

/* Close T's perf event fd if it is still that event: the program may
 * have closed it (close_range) and reused the number; then it is not ours
 * to close.  Only a perf event fd (by its /proc/thread-self/fd link, the fd
 * untouched) is asked for its event id. */
static void perf_fd_close(struct thread_state *t)
{
	char path[48], link[64];
	uint64_t id;
	/* By hand: also called in a fork child, where only async-signal-safe
	 * calls are allowed. */
	char digits[12];
	int nd = 0;
	for (unsigned v = (unsigned)t->perf_fd; nd == 0 || v; v /= 10)
		digits[nd++] = (char)('0' + v % 10);
	size_t p = strlen(su_proc_self_path(path, sizeof(path) - sizeof(digits), "fd/"));
	while (nd)
		path[p++] = digits[--nd];
	path[p] = '\0';
	ssize_t const n = t->perf_fd >= 0 ? readlink(path, link, sizeof(link) - 1) : -1;
	if (n > 0) {
		link[n] = '\0';
		if (!strcmp(link, "anon_inode:[perf_event]") && ioctl(t->perf_fd, PERF_EVENT_IOC_ID, &id) == 0 &&
		    id == t->perf_id)
			close(t->perf_fd);
	}
	t->perf_fd = -1;
}

void capture_thread_disarm(struct thread_state *t)
{
	if (t->has_timer) {
		timer_delete(t->timer);
		t->has_timer = 0;
	}
	perf_fd_close(t);
}

void capture_thread_unregister(void)
{
	struct thread_state *t = tls_thread;
	if (!t)
		return;
	capture_thread_disarm(t);
	/* From here the handler ignores this thread; the writer drains its
	 * ring, then frees it. */
	t->busy = 1;
	tls_thread = NULL;
	atomic_store(&t->exited, 1);
	writer_wake();
}

void capture_forget_threads_after_fork(void)
{
	/* Only the forking thread lives on in the child; the other states are
	 * leaked on purpose (their rings may be mid-write). */
	struct thread_state *self = tls_thread;
	if (self) {
		self->has_timer = 0; /* timers are not inherited */
		perf_fd_close(self); /* it follows the parent's thread */
		self->tid = (pid_t)syscall(SYS_gettid);
		self->next = NULL;
		atomic_store(&self->ring.head, 0);
		atomic_store(&self->ring.tail, 0);
		atomic_store(&self->samples, 0);
		atomic_store(&self->dropped_ring_full, 0);
		atomic_store(&self->dropped_nested, 0);
		self->writer_priv = NULL;
		self->busy = 0;
	}
	atomic_store(&stackcap_g.threads, self);
	if (self)
		arm_timer(self);
}
