/* SPDX-License-Identifier: MIT */
/*
 * stress: the programs of tests/stress.sh, one scenario per mode.  Each
 * does a fixed amount of work (iteration counts, never time) and prints a
 * deterministic result, so a run under `stackcap record` must print
 * exactly what a plain run prints and exit with the same status.
 *
 *   stress MODE [N]    modes: see main()
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define NOINLINE __attribute__((noinline, noclone))

/* One unit of CPU work: 2^16 steps of an LCG (~0.1 ms), then one call
 * into libc (clock_gettime, vDSO: ~20 ns).  Under ThreadSanitizer a
 * signal reaches its handler only at the next libc call TSan intercepts;
 * a loop that never calls libc never sees one (docs/RELIABILITY.md,
 * tests/stress/tsan-signals.c).  With the call, tests/stress-tsan.sh
 * gets its samples, the program its own SIGPROF, on time. */
static NOINLINE uint64_t work(uint64_t seed, unsigned units)
{
	uint64_t x = seed | 1;
	for (unsigned u = 0; u < units; u++) {
		for (unsigned i = 0; i < 65536; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	}
	__asm__ volatile("" : "+r"(x));
	return x;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- threads: rounds of 64 threads created and joined together --------- */

static void *thread_fn(void *arg)
{
	uintptr_t const i = (uintptr_t)arg;
	return (void *)(uintptr_t)(work(i, 2) & 0xffff);
}

static int mode_threads(int rounds)
{
	uint64_t sum = 0;
	for (int r = 0; r < rounds; r++) {
		pthread_t th[64];
		for (uintptr_t i = 0; i < 64; i++)
			if (pthread_create(&th[i], NULL, thread_fn, (void *)(i + 64 * (uintptr_t)r)) != 0) {
				fprintf(stderr, "stress: pthread_create failed\n");
				return 1;
			}
		for (int i = 0; i < 64; i++) {
			void *ret;
			pthread_join(th[i], &ret);
			sum += (uintptr_t)ret;
		}
	}
	printf("threads: %d x 64, sum %llu\n", rounds, (unsigned long long)sum);
	return 0;
}

/* ---- fork storms --------------------------------------------------------- */

/* N children at once; each works, then leaves with exit() or _exit() (or
 * execs this program again); the parent adds up their statuses. */
static int mode_forks(int n, const char *how, const char *self)
{
	uint64_t sum = 0;
	fflush(stdout);
	for (int batch = 0; batch < n; batch += 16) {
		pid_t pids[16];
		int k = 0;
		for (; k < 16 && batch + k < n; k++) {
			int const i = batch + k;
			pid_t const pid = fork();
			if (pid < 0) {
				perror("stress: fork");
				return 1;
			}
			if (pid == 0) {
				int const code = (int)(work((uint64_t)i, 3) % 100);
				if (!strcmp(how, "exec")) {
					char arg[16];
					snprintf(arg, sizeof(arg), "%d", code);
					execl(self, self, "leaf", arg, (char *)NULL);
					_exit(127);
				}
				if (!strcmp(how, "_exit"))
					_exit(code);
				exit(code);
			}
			pids[k] = pid;
		}
		for (int j = 0; j < k; j++) {
			int st;
			if (waitpid(pids[j], &st, 0) != pids[j] || !WIFEXITED(st)) {
				fprintf(stderr, "stress: child did not exit normally\n");
				return 1;
			}
			sum += (uint64_t)WEXITSTATUS(st);
		}
	}
	printf("forks(%s): %d children, status sum %llu\n", how, n, (unsigned long long)sum);
	return 0;
}

/* ---- dlopen/dlclose churn of several libraries --------------------------- */

static int mode_dlopen(int rounds)
{
	static const char *const libs[] = { "libz.so.1", "libzstd.so.1", "liblzma.so.5", "libelf.so.1" };
	static const char *const fns[] = { "zlibVersion", "ZSTD_versionNumber", "lzma_version_number",
					   "elf_version" };
	uint64_t sum = 0;
	for (int r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < 4; i++) {
			void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
			if (!h) {
				fprintf(stderr, "stress: dlopen %s: %s\n", libs[i], dlerror());
				return 1;
			}
			sum += dlsym(h, fns[i]) != NULL;
			sum += work((uint64_t)r, 1) & 1;
			dlclose(h);
		}
	}
	printf("dlopen: %d rounds x 4 libraries, sum %llu\n", rounds, (unsigned long long)sum);
	return 0;
}

/* ---- recursion down to the stack limit ----------------------------------- */

static uintptr_t stack_top;
static uintptr_t stack_floor;   /* recursion stops below this much stack */

static NOINLINE uint64_t recurse(uint64_t depth)
{
	volatile char pad[200];
	pad[0] = (char)depth;
	uintptr_t const sp = (uintptr_t)&pad[0];
	uint64_t r;
	if (stack_top - sp >= stack_floor)
		r = work(depth, 2) & 1;
	else
		r = recurse(depth + 1) + (pad[0] & 1);
	__asm__ volatile("" : "+r"(r));
	return r;
}

static int mode_recurse(int reps)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (64u << 20)) {
		printf("recurse: stack limit not finite, skipped\n");
		return 0;
	}
	volatile char here;
	stack_top = (uintptr_t)&here;
	/* Within 128 KiB of the limit (argv and environment sit above main). */
	stack_floor = rl.rlim_cur - (128u << 10);
	uint64_t sum = 0;
	for (int r = 0; r < reps; r++)
		sum += recurse(0) > 0;
	printf("recurse: %d times to within 128 KiB of the stack limit, %llu\n", reps, (unsigned long long)sum);
	return 0;
}

/* Past the limit: the overflow is caught on an alternate stack. */
static void on_overflow(int sig)
{
	(void)sig;
	static const char msg[] = "overflow: caught on the alternate stack\n";
	ssize_t const w = write(1, msg, sizeof(msg) - 1);
	_exit(w < 0 ? 2 : 0);
}

static volatile uint64_t depth_limit = UINT64_MAX;

static NOINLINE uint64_t recurse_forever(uint64_t depth)
{
	volatile char pad[512];
	pad[depth % 512] = (char)depth;
	if (depth >= depth_limit)
		return 0;
	return recurse_forever(depth + 1) + pad[depth % 512];
}

static int mode_overflow(void)
{
	static char alt[1 << 16];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa = { .sa_handler = on_overflow, .sa_flags = SA_ONSTACK };
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0)
		return 1;
	fflush(stdout);
	return (int)recurse_forever(0);
}

/* ---- code on the alternate signal stack ---------------------------------- */

static volatile uint64_t alt_sum;

static void on_usr1_work(int sig)
{
	(void)sig;
	alt_sum += work(alt_sum, 5) & 0xff;
}

static int mode_sigalt(int n)
{
	static char alt[1 << 16];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa = { .sa_handler = on_usr1_work, .sa_flags = SA_ONSTACK };
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;
	for (int i = 0; i < n; i++)
		raise(SIGUSR1);
	printf("sigalt: %d handlers on the alternate stack, sum %llu\n", n, (unsigned long long)alt_sum);
	return 0;
}

/* ---- programs that use SIGPROF themselves -------------------------------- */

static int mode_blockprof(int units)
{
	sigset_t prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	sigprocmask(SIG_BLOCK, &prof, NULL);
	uint64_t sum = work(1, (unsigned)units);
	sigprocmask(SIG_UNBLOCK, &prof, NULL);
	sum += work(2, (unsigned)units);
	/* Blocked in a thread too. */
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	sum += work(3, (unsigned)units);
	pthread_sigmask(SIG_UNBLOCK, &prof, NULL);
	printf("blockprof: sum %llu\n", (unsigned long long)(sum & 0xffffffff));
	return 0;
}

static volatile sig_atomic_t ticks, foreign;

static void on_prof_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* setitimer's signal comes from the kernel; anything else is not ours. */
	if (si->si_code == SI_KERNEL)
		ticks++;
	else
		foreign++;
}

static void on_prof_plain(int sig)
{
	(void)sig;
	ticks++;
}

/* SIG's action: H, given the siginfo, SA_RESTART (a program's own
 * handler).  @return sigaction's. */
static int handle_info(int sig, void (*h)(int, siginfo_t *, void *))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	return sigaction(sig, &sa, NULL);
}

/* Its own SIGPROF handler and ITIMER_PROF at 2 ms: it must see its own
 * ticks only, and only as many as 2 ms of CPU time allow. */
static int mode_ownprof(const char *how, int units)
{
	struct sigaction old;
	if (!strcmp(how, "signal") ? signal(SIGPROF, on_prof_plain) == SIG_ERR
				   : handle_info(SIGPROF, on_prof_info) != 0)
		return 1;
	sigaction(SIGPROF, NULL, &old);
	int const kept = !strcmp(how, "signal") ? old.sa_handler == on_prof_plain
						: old.sa_sigaction == on_prof_info && (old.sa_flags & SA_SIGINFO);
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	double const t0 = cpu_ms();
	setitimer(ITIMER_PROF, &it, NULL);
	uint64_t sum = 0;
	for (int i = 0; i < units; i++)
		sum += work((uint64_t)i, 1) & 1;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	double const ms = cpu_ms() - t0;
	/* At least one tick, unless STRESS_TICKS_MIN says otherwise: under TSan
	 * a second CPU-time SIGPROF source (our sampler) makes TSan lose the
	 * program's ticks, with or without stackcap (tsan-limits shared). */
	char const *min_env = getenv("STRESS_TICKS_MIN");
	int const min_ticks = min_env ? atoi(min_env) : 1;
	int const rate_ok = ticks >= min_ticks && ticks <= ms / 2 + 10;
	printf("ownprof(%s): handler %s, ticks %s, foreign signals %d, sum %llu\n", how,
	       kept ? "kept" : "REPLACED", rate_ok ? "at the timer's rate" : "WRONG", (int)foreign,
	       (unsigned long long)sum);
	if (!rate_ok)
		fprintf(stderr, "ownprof: %d ticks in %.0f ms of CPU\n", (int)ticks, ms);
	return 0;
}

/* ---- a self-profiling program: its own perf event signals SIGPROF ------ */

static volatile sig_atomic_t self_fd = -1, self_ticks, self_other;

static void on_self_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == POLL_IN && si->si_fd == self_fd)
		self_ticks++;
	else
		self_other++;
}

/* Its own task-clock event every 2 ms of CPU, F_SETSIG SIGPROF to this
 * thread (what a self-profiler does): its overflows must reach its
 * handler, and nothing else.  The overflows are counted from the event's
 * own ring (one sample record each), not guessed from CPU time: the
 * kernel skips a task-clock overflow whose timer fires in kernel mode
 * (exclude_kernel) or late (a stolen vCPU), which a loaded CI machine
 * does often enough to fail a CPU-time bound. */
static int mode_selfprof(int units)
{
	if (handle_info(SIGPROF, on_self_prof) != 0)
		return 1;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 2000000;
	a.sample_type = PERF_SAMPLE_IP;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.wakeup_events = 1;
	int const fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		printf("selfprof: perf_event_open: %s\n", strerror(errno));
		return 1;
	}
	/* 1 + 8 pages: ~150 records of 16 bytes fit many times over. */
	size_t const page = (size_t)sysconf(_SC_PAGESIZE), ring_len = 9 * page;
	void *const ring = mmap(NULL, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		printf("selfprof: cannot map its event's ring: %s\n", strerror(errno));
		return 1;
	}
	self_fd = fd;
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid) };
	if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		printf("selfprof: cannot arm its event: %s\n", strerror(errno));
		return 1;
	}
	double const t0 = cpu_ms();
	uint64_t sum = 0;
	for (int i = 0; i < units; i++)
		sum += work((uint64_t)i, 1) & 1;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	double const ms = cpu_ms() - t0;
	struct perf_event_mmap_page *const meta = ring;
	uint64_t const head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	unsigned char const *const data = (unsigned char const *)ring + page;
	size_t const data_len = ring_len - page;
	int overflows = 0, lost = 0;
	for (uint64_t off = 0; off + sizeof(struct perf_event_header) <= head;) {
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++) /* may wrap around the ring's end */
			((unsigned char *)&h)[i] = data[(off + i) % data_len];
		if (h.size < sizeof(h))
			break;
		overflows += h.type == PERF_RECORD_SAMPLE;
		lost += h.type == PERF_RECORD_LOST;
		off += h.size;
	}
	munmap(ring, ring_len);
	/* Every overflow signals (wakeup_events 1), and every one must reach
	 * the handler, and nothing else: two SIGPROF pending at once merge,
	 * so an in-process recorder's samples must not be SIGPROF too once
	 * the program handles it (capture.c moves them to a real-time signal;
	 * before, 80% of these were lost under a full make check).  The
	 * counts, with STRESS_SELFPROF_COUNTS=FILE, written there. */
	/* STRESS_TICKS_MIN set (under TSan, stress.sh): its emulation of
	 * signals holds one pending per number and re-raises what it held,
	 * which loses some of the program's whatever the recorder does; then
	 * at least that many, and never more than the overflows. */
	char const *const min_env = getenv("STRESS_TICKS_MIN");
	int const exact = !min_env;
	int const rate_ok = lost == 0 && overflows >= 10 &&
			    (exact ? self_ticks == overflows : self_ticks >= atoi(min_env) && self_ticks <= overflows);
	printf("selfprof: ticks %s, other signals %d, sum %llu\n",
	       !rate_ok ? "WRONG" : exact ? "every one of its event's" : "of its event only",
	       (int)self_other, (unsigned long long)sum);
	if (!rate_ok)
		fprintf(stderr, "selfprof: %d ticks of its event's %d overflows (%d records lost) in %.0f ms of CPU\n",
			(int)self_ticks, overflows, lost, ms);
	const char *const counts = getenv("STRESS_SELFPROF_COUNTS");
	FILE *const cf = counts ? fopen(counts, "w") : NULL;
	if (cf) {
		fprintf(cf, "%d of %d\n", (int)self_ticks, overflows);
		fclose(cf);
	}
	/* An in-process recorder's samples, once the program handles SIGPROF,
	 * are not SIGPROF (they would merge with its own): its event off and
	 * SIGPROF blocked for 3 ms of CPU, none is pending (a recorder
	 * sampling at 10 kHz on SIGPROF would have ~30 pending as one). */
	if (exact) {
		sigset_t prof, pend;
		sigemptyset(&prof);
		sigaddset(&prof, SIGPROF);
		sigprocmask(SIG_BLOCK, &prof, NULL);
		double const b0 = cpu_ms();
		for (uint64_t i = 0; cpu_ms() - b0 < 3; i++)
			sum += work(i, 1) & 1;
		int const on_prof = sigpending(&pend) == 0 && sigismember(&pend, SIGPROF) == 1;
		sigprocmask(SIG_UNBLOCK, &prof, NULL);
		printf("selfprof: a recorder's samples %s\n", on_prof ? "ON SIGPROF too" : "not on SIGPROF");
	}
	close(fd);
	return 0;
}

/* ---- the real-time signals, every one of them the program's ----------- */

static volatile sig_atomic_t rt_got[8], rt_bad;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int const k = sig - (SIGRTMAX - 4);
	if (k >= 0 && k < 8 && si->si_code == SI_QUEUE && si->si_value.sival_int == 1000 + k)
		rt_got[k]++;
	else
		rt_bad++;
}

static void on_prof_count(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

/* A program with its own SIGPROF handler (so an in-process recorder's
 * samples leave SIGPROF for a real-time signal of its own) and handlers on
 * the four highest real-time signals, installed after the recorder took
 * one of them: each gets every one of UNITS signals queued to it, with
 * its value, while the program works; nothing else reaches them. */
static int mode_rtshare(int units)
{
	if (handle_info(SIGPROF, on_prof_count) != 0)
		return 1;
	for (int k = 0; k < 4; k++)
		if (handle_info(SIGRTMAX - 4 + k + 1, on_rt) != 0)
			return 1;
	uint64_t sum = 0;
	for (int i = 0; i < units; i++) {
		sum += work((uint64_t)i, 1) & 1;
		int const k = 1 + i % 4;
		sigqueue(getpid(), SIGRTMAX - 4 + k, (union sigval){ .sival_int = 1000 + k });
	}
	/* Delivered before sigqueue returns, but under TSan at its next libc
	 * call: waited for, a bounded while. */
	int all = 0;
	for (int tries = 0; tries < 200 && !all; tries++) {
		all = 1;
		for (int k = 1; k <= 4; k++)
			all &= rt_got[k] == units / 4 + (k <= units % 4);
		if (!all)
			usleep(1000);
	}
	printf("rtshare: real-time signals %s, others %d, sum %llu\n", all ? "every one delivered" : "LOST",
	       (int)rt_bad, (unsigned long long)sum);
	if (!all)
		fprintf(stderr, "rtshare: %d %d %d %d of %d\n", (int)rt_got[1], (int)rt_got[2], (int)rt_got[3],
			(int)rt_got[4], units);
	return 0;
}

/* ---- a read() that the program's own SIGPROF must interrupt ------------ */

static volatile sig_atomic_t eintr_prof, eintr_done;

static void on_eintr_prof(int sig)
{
	(void)sig;
	eintr_prof++;
}

static int eintr_pipe[2];

/* Burns CPU with SIGPROF blocked (the process's ITIMER_PROF then goes to
 * the main thread, blocked in read), and writes to the pipe when done or
 * after ~UNITS x 0.1 ms of CPU: the read never waits for ever. */
static void *eintr_burner(void *arg)
{
	int const units = (int)(intptr_t)arg;
	sigset_t prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	for (int i = 0; i < units && !eintr_done; i++)
		work((uint64_t)i, 1);
	ssize_t const w = write(eintr_pipe[1], "x", 1);
	(void)w;
	return NULL;
}

/* A program relying on EINTR as a timeout: SIGPROF handler without
 * SA_RESTART, ITIMER_PROF at 10 ms of process CPU, read() on a pipe
 * nobody writes to in time.  The read must fail with EINTR. */
static int mode_eintr_read(int units)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_eintr_prof; /* no SA_RESTART: EINTR wanted */
	if (sigaction(SIGPROF, &sa, NULL) != 0 || pipe(eintr_pipe) != 0)
		return 1;
	pthread_t th;
	if (pthread_create(&th, NULL, eintr_burner, (void *)(intptr_t)units) != 0)
		return 1;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	char c;
	ssize_t const r = read(eintr_pipe[0], &c, 1);
	int const e = errno;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	eintr_done = 1;
	pthread_join(th, NULL);
	if (r < 0)
		printf("eintr-read: read failed: %s\n", strerror(e));
	else
		printf("eintr-read: read returned %zd byte: NOT interrupted\n", r);
	return 0;
}

/* ---- sleeping calls never fail because of a recorder ------------------- */

static volatile int sleepers_stop;

static void *sleepers_burner(void *arg)
{
	(void)arg;
	uint64_t x = 0;
	while (!sleepers_stop)
		x += work(x, 1);
	return NULL;
}

/* Writes a byte to the pipe every 1 ms until told to stop. */
static void *sleepers_ticker(void *arg)
{
	int const fd = *(int *)arg;
	while (!sleepers_stop) {
		struct timespec ts = { 0, 1000000 };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		if (write(fd, "t", 1) != 1)
			break;
	}
	return NULL;
}

/* N rounds of nanosleep, poll and epoll_wait of 1 ms each and a read of a
 * pipe another thread feeds every 1 ms, between units of work, with a
 * thread working meanwhile: none may fail (EINTR). */
static int mode_sleepers(int n)
{
	int const ep = epoll_create1(EPOLL_CLOEXEC);
	int p[2];
	if (ep < 0 || pipe2(p, O_CLOEXEC))
		return 1;
	pthread_t th, tick;
	if (pthread_create(&th, NULL, sleepers_burner, NULL) != 0 ||
	    pthread_create(&tick, NULL, sleepers_ticker, &p[1]) != 0)
		return 1;
	int fail_nanosleep = 0, fail_poll = 0, fail_epoll = 0, fail_read = 0;
	for (int i = 0; i < n; i++) {
		work((uint64_t)i, 2);
		struct timespec ts = { 0, 1000000 };
		fail_nanosleep += nanosleep(&ts, NULL) != 0;
		fail_poll += poll(NULL, 0, 1) != 0;
		struct epoll_event ev;
		fail_epoll += epoll_wait(ep, &ev, 1, 1) != 0;
		char c;
		fail_read += read(p[0], &c, 1) != 1;
	}
	sleepers_stop = 1;
	pthread_join(th, NULL);
	pthread_join(tick, NULL);
	close(ep);
	close(p[0]);
	close(p[1]);
	printf("sleepers: %d rounds; failed: nanosleep %d, poll %d, epoll_wait %d, read %d\n", n, fail_nanosleep,
	       fail_poll, fail_epoll, fail_read);
	return 0;
}

/* ---- a program that closes every fd it did not open -------------------- */

static void *closefds_thread(void *arg)
{
	uint64_t *sum = arg;
	*sum += work(7, 3000) & 1;
	return NULL;
}

/* close_range(3, ~0): the recorder's fds go; the program opens a file and
 * a pipe (the lowest numbers: ours of before), works in a new thread,
 * and checks that nothing but its own bytes reached them. */
static int mode_closefds(const char *dir)
{
	work(1, 500);
	if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
		printf("closefds: close_range: %s\n", strerror(errno));
		return 1;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/own-file", dir);
	int const fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int p[2];
	if (fd < 0 || pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
		return 1;
	uint64_t sum = 0;
	pthread_t th;
	if (pthread_create(&th, NULL, closefds_thread, &sum) != 0)
		return 1;
	sum += work(3, 2000) & 1;
	pthread_join(th, NULL);
	ssize_t const w = write(fd, "mine\n", 5);
	char buf[64];
	ssize_t const fr = pread(fd, buf, sizeof(buf), 0);
	ssize_t const pr = read(p[0], buf + 32, 16);
	printf("closefds: own file %s, own pipe %s, sum %llu\n",
	       w == 5 && fr == 5 && !memcmp(buf, "mine\n", 5) ? "intact" : "CHANGED",
	       pr < 0 && errno == EAGAIN ? "empty" : "WRITTEN TO", (unsigned long long)sum);
	close(fd);
	unlink(path);
	return 0;
}

/* Works, then leaves through the raw system call: no exit(), no _exit(). */
static int mode_rawexit(int units)
{
	uint64_t sum = 0;
	for (int i = 0; i < units; i++)
		sum += work((uint64_t)i, 1) & 1;
	printf("rawexit: sum %llu\n", (unsigned long long)sum);
	syscall(SYS_exit_group, 0);
	return 1;
}

/* ITIMER_PROF and no handler: SIGPROF's default action ends the program. */
static int mode_itimer_default(void)
{
	printf("itimer-default: armed\n");
	fflush(stdout);
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	/* Bounded, in case the signal never comes (about 100 s). */
	for (int i = 0; i < 1000000; i++)
		work(1, 1);
	printf("itimer-default: no SIGPROF\n");
	return 1;
}

/* ---- vfork and posix_spawn ----------------------------------------------- */

/* Runs in a vfork child, on the parent's stack and memory. */
static NOINLINE int vfork_child_work(int i)
{
	return (int)(work((uint64_t)i, 10) % 50);
}

static int mode_vfork(int n)
{
	static uint64_t sum;
	for (int i = 0; i < n; i++) {
		pid_t pid = vfork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(vfork_child_work(i));
		int st;
		waitpid(pid, &st, 0);
		sum += WIFEXITED(st) ? (uint64_t)WEXITSTATUS(st) : 1000;
		pid = vfork();
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", "exit 3", (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &st, 0);
		sum += WIFEXITED(st) ? (uint64_t)WEXITSTATUS(st) : 1000;
		char *argv[] = { "sh", "-c", "exit 5", NULL };
		if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
			return 1;
		waitpid(pid, &st, 0);
		sum += WIFEXITED(st) ? (uint64_t)WEXITSTATUS(st) : 1000;
		sum += work((uint64_t)i, 2) & 1;
	}
	printf("vfork: %d x (vfork+_exit, vfork+exec, posix_spawn), sum %llu\n", n, (unsigned long long)sum);
	return 0;
}

/* ---- longjmp out of signal handlers -------------------------------------- */

static sigjmp_buf jb;
static volatile char *guard;

static void on_jump(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

static int mode_longjmp(int n)
{
	struct sigaction sa = { .sa_handler = on_jump };
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		return 1;
	volatile uint64_t sum = 0;
	volatile int i, jumps = 0;
	for (i = 0; i < n; i++) {
		if (sigsetjmp(jb, 1)) {
			jumps++;
			continue;
		}
		sum += work((uint64_t)i, 1) & 1;
		if (i & 1)
			raise(SIGUSR1);
		else
			guard[i % 4096] = 1; /* SIGSEGV */
	}
	printf("longjmp: %d jumps out of handlers, sum %llu\n", (int)jumps, (unsigned long long)sum);
	return 0;
}

/* ---- the end of a process ------------------------------------------------ */

/* Work, then SIGKILL ourselves: nothing of the tracer runs after. */
static int mode_killself(int units)
{
	uint64_t const sum = work(1, (unsigned)units);
	printf("killself: sum %llu\n", (unsigned long long)(sum & 0xffff));
	fflush(stdout);
	kill(getpid(), SIGKILL);
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int const n = argc > 2 ? atoi(argv[2]) : 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "threads"))
		return mode_threads(n ? n : 8);
	if (!strcmp(mode, "forks"))
		return mode_forks(n ? n : 64, argc > 3 ? argv[3] : "exit", argv[0]);
	if (!strcmp(mode, "leaf"))
		return n;
	if (!strcmp(mode, "dlopen"))
		return mode_dlopen(n ? n : 200);
	if (!strcmp(mode, "recurse"))
		return mode_recurse(n ? n : 20);
	if (!strcmp(mode, "overflow"))
		return mode_overflow();
	if (!strcmp(mode, "sigalt"))
		return mode_sigalt(n ? n : 2000);
	if (!strcmp(mode, "blockprof"))
		return mode_blockprof(n ? n : 1000);
	if (!strcmp(mode, "ownprof"))
		return mode_ownprof(argc > 3 ? argv[3] : "sigaction", n ? n : 2000);
	if (!strcmp(mode, "itimer-default"))
		return mode_itimer_default();
	if (!strcmp(mode, "selfprof"))
		return mode_selfprof(n ? n : 3000);
	if (!strcmp(mode, "rtshare"))
		return mode_rtshare(n ? n : 2000);
	if (!strcmp(mode, "eintr-read"))
		return mode_eintr_read(n ? n : 20000);
	if (!strcmp(mode, "closefds"))
		return mode_closefds(argc > 2 ? argv[2] : ".");
	if (!strcmp(mode, "rawexit"))
		return mode_rawexit(n ? n : 5000);
	if (!strcmp(mode, "sleepers"))
		return mode_sleepers(n ? n : 300);
	if (!strcmp(mode, "vfork"))
		return mode_vfork(n ? n : 50);
	if (!strcmp(mode, "longjmp"))
		return mode_longjmp(n ? n : 5000);
	if (!strcmp(mode, "killself"))
		return mode_killself(n ? n : 3000);
	fprintf(stderr, "usage: stress threads|forks|dlopen|recurse|overflow|sigalt|blockprof|ownprof|"
			"itimer-default|selfprof|rtshare|eintr-read|sleepers|closefds|rawexit|vfork|longjmp|killself [N] [how]\n");
	return 2;
}
