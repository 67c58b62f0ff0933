/* SPDX-License-Identifier: MIT */
/*
 * lifecycle.c: init and shutdown, options from the environment when
 * preloaded, and the interposed calls that keep the recording whole:
 * pthread_create (sample new threads), dlopen/dlclose (new code ranges
 * before the next sample), fork (the child gets its own streams).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/capture-internal.h"
#include "capture/runtime.h"

HIDDEN struct stackcap_global stackcap_g;

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_thread_exit(void *arg)
{
	(void)arg;
	if (syscall(SYS_gettid) == getpid())
		atomic_store(&stackcap_g.main_left, 1);
	capture_thread_unregister();
}

static void make_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* Register the calling thread and arrange for its exit to flush it. */
static int register_self(void)
{
	pthread_once(&key_once, make_key);
	int const rc = capture_thread_register();
	if (rc == 0)
		pthread_setspecific(exit_key, (void *)1);
	return rc;
}

/* ---- options ------------------------------------------------------------ */

static int opts_check(const struct stackcap_opts *o)
{
	if (!o)
		return 0;
	if (o->sz < offsetof(struct stackcap_opts, output_dir))
		return -EINVAL;
	/* A newer caller's fields beyond ours must be zero. */
	size_t const known = offsetof(struct stackcap_opts, stackcap_opts__last_field) +
			     sizeof(o->stackcap_opts__last_field);
	for (size_t i = known; i < o->sz; i++)
		if (((const char *)o)[i])
			return -EINVAL;
	return 0;
}

#define OPT(o, field, dflt) \
	((o) && (o)->sz >= offsetof(struct stackcap_opts, field) + sizeof((o)->field) && (o)->field ? (o)->field : (dflt))

static int config_from_opts(struct stackcap_config *c, const struct stackcap_opts *o)
{
	int rc = opts_check(o);
	if (rc)
		return rc;
	const char *dir = OPT(o, output_dir, "stackcap.trace");
	if (strlen(dir) >= sizeof(c->output_dir))
		return -ENAMETOOLONG;
	strcpy(c->output_dir, dir);
	c->frequency_hz = OPT(o, frequency_hz, STACKCAP_DEFAULT_FREQUENCY);
	if (c->frequency_hz > 100000)
		return -EINVAL;
	c->stack_cap = OPT(o, stack_cap, (size_t)STACKCAP_DEFAULT_STACK_CAP);
	if (c->stack_cap < 64 || c->stack_cap > (64u << 20))
		return -EINVAL;
	c->stack_cap &= ~(size_t)7;
	c->signo = OPT(o, signo, SIGPROF);
	int const pol = OPT(o, policy, STACKCAP_POLICY_F2);
	if (pol != STACKCAP_POLICY_F1 && pol != STACKCAP_POLICY_F2 && pol != STACKCAP_POLICY_ALL)
		return -EINVAL;
	c->policy = (enum stackcap_policy)pol;
	/* Removed: its CLOCK_MONOTONIC timer signals made sleeping calls
	 * (nanosleep, poll, epoll_wait) fail with EINTR in the program. */
	if (OPT(o, wall_clock, 0))
		return -ENOTSUP;
	c->zstd = OPT(o, zstd, 0);
	c->full_copy = OPT(o, full_copy, 0);
	c->no_sampling = OPT(o, no_sampling, 0);
	c->no_follow_fork = OPT(o, no_follow_fork, 0);
	c->lttng = OPT(o, lttng, 0);
	c->runtime_frames = OPT(o, runtime_frames, 0);
	if (c->lttng && !&capture_lttng_sink)
		return -ENOTSUP; /* this is libstackcap.so, not liblttng-stackcap.so */
	if (c->lttng && c->full_copy)
		return -EINVAL;
	c->ring_size = OPT(o, ring_size, (size_t)1 << 20);
	/* A ring must hold at least one worst-case record. */
	size_t const min_ring = 2 * (sizeof(struct ring_rec) + STACKCAP_CODEC_BOUND(c->stack_cap / 8));
	if (c->ring_size < min_ring)
		c->ring_size = min_ring;
	c->ring_size = (c->ring_size + 4095) & ~(size_t)4095;
	return 0;
}

/* Trace-wide identity: every process of one recording shares the metadata,
 * so `stackcap record` hands the UUID and clock offset down. */
static void config_identity(struct stackcap_config *c)
{
	const char *u = secure_getenv("STACKCAP_TRACE_UUID");
	int have_uuid = 0;
	if (u && strlen(u) == 32) {
		have_uuid = 1;
		for (int i = 0; i < 16; i++) {
			unsigned v;
			if (sscanf(u + 2 * i, "%2x", &v) != 1) {
				have_uuid = 0;
				break;
			}
			c->uuid[i] = (uint8_t)v;
		}
	}
	if (!have_uuid && getrandom(c->uuid, sizeof(c->uuid), 0) != (ssize_t)sizeof(c->uuid))
		memset(c->uuid, 0, sizeof(c->uuid)); /* the writer picks one */
	const char *off = secure_getenv("STACKCAP_CLOCK_OFFSET_NS");
	if (off && *off) {
		c->clock_offset_ns = strtoll(off, NULL, 10);
	} else {
		struct timespec rt, mono;
		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		c->clock_offset_ns = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000LL +
				     (rt.tv_nsec - mono.tv_nsec);
	}
}

/* ---- init / shutdown --------------------------------------------------- */

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

static int start_locked(void)
{
	stackcap_g.pid = getpid();
	/* A runtime unwinder, if asked and its interpreter is here (runtime.h):
	 * registered before the first signal. */
	if (stackcap_g.cfg.runtime_frames)
		capture_rt_init();
	int rc = snapshot_refresh(1);
	if (rc)
		return rc;
	rc = writer_start();
	if (rc)
		return rc;
	atomic_store(&stackcap_g.running, 1);
	if (!stackcap_g.cfg.no_sampling) {
		rc = capture_install_handler();
		if (rc)
			goto fail_writer;
	}
	register_self();
	return 0;
fail_writer:
	atomic_store(&stackcap_g.running, 0);
	writer_stop();
	return rc;
}

/* A secure-execution process (setuid, setgid, file capabilities): its
 * caller chose the environment and may read what the process writes. */
static int secure_process(void)
{
	return getauxval(AT_SECURE) != 0;
}

int stackcap_init(const struct stackcap_opts *opts)
{
	/* Never in a setuid program: the trace would reveal its address
	 * layout, written where the caller chose, with the owner's rights. */
	if (secure_process())
		return -EPERM;
	pthread_mutex_lock(&init_lock);
	int rc = -EALREADY;
	if (!atomic_load(&stackcap_g.running)) {
		rc = config_from_opts(&stackcap_g.cfg, opts);
		if (!rc) {
			config_identity(&stackcap_g.cfg);
			rc = start_locked();
		}
		static int atfork_done;
		if (!rc && !atfork_done) {
			pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
			atfork_done = 1;
		}
	}
	pthread_mutex_unlock(&init_lock);
	return rc;
}

/* No new samples: every timer off, our handler gone (init_lock held,
 * running already cleared).  (The writer may be freeing exited threads
 * meanwhile: the lock.) */
static void stop_sampling(void)
{
	pthread_mutex_lock(&capture_threads_lock);
	for (struct thread_state *t = atomic_load(&stackcap_g.threads); t; t = t->next)
		capture_thread_disarm(t);
	pthread_mutex_unlock(&capture_threads_lock);
	capture_remove_handler();
}

int stackcap_shutdown(void)
{
	pthread_mutex_lock(&init_lock);
	if (!atomic_load(&stackcap_g.running)) {
		pthread_mutex_unlock(&init_lock);
		return -ENODEV;
	}
	atomic_store(&stackcap_g.running, 0);
	/* Then a last drain of every ring. */
	stop_sampling();
	int const rc = writer_stop();
	pthread_mutex_unlock(&init_lock);
	return rc;
}

int capture_stop_from_writer(void)
{
	if (pthread_mutex_trylock(&init_lock) != 0)
		return 0;
	if (atomic_exchange(&stackcap_g.running, 0))
		stop_sampling();
	pthread_mutex_unlock(&init_lock);
	return 1;
}

int stackcap_thread_register(void)
{
	if (!atomic_load(&stackcap_g.running))
		return -ENODEV;
	return register_self();
}

void stackcap_get_stats(struct stackcap_stats *out)
{
	memset(out, 0, sizeof(*out));
	/* The totals and the list under the lock: a thread moves from one to
	 * the other under it. */
	pthread_mutex_lock(&capture_threads_lock);
	out->samples = atomic_load(&stackcap_g.samples_total);
	out->dropped_ring_full = 0;
	for (struct thread_state *t = atomic_load(&stackcap_g.threads); t; t = t->next) {
		out->samples += atomic_load(&t->samples);
		out->dropped_ring_full += atomic_load(&t->dropped_ring_full);
		out->dropped_nested += atomic_load(&t->dropped_nested);
	}
	out->dropped_no_stack = atomic_load(&stackcap_g.dropped_no_stack);
	out->drops = atomic_load(&stackcap_g.drops_total) + out->dropped_ring_full +
		     out->dropped_nested + out->dropped_no_stack;
	pthread_mutex_unlock(&capture_threads_lock);
	writer_get_stats(&out->trace_bytes, &out->write_error);
}

unsigned stackcap_version(void)
{
	return STACKCAP_VERSION_NUMBER;
}

/* ---- fork --------------------------------------------------------------- */

/* Whether atfork_prepare took init_lock and paused the writer. */
static int fork_paused;

static void atfork_prepare(void)
{
	/* trylock: a fork from a signal handler that interrupted
	 * stackcap_init or stackcap_shutdown must not wait for them; the
	 * writer then keeps running through the fork, as it would anyway. */
	fork_paused = 0;
	if (pthread_mutex_trylock(&init_lock) != 0)
		return;
	fork_paused = 1;
	if (atomic_load(&stackcap_g.running))
		writer_pause();
}

static void atfork_parent(void)
{
	if (!fork_paused)
		return;
	fork_paused = 0;
	writer_resume();
	pthread_mutex_unlock(&init_lock);
}

static void atfork_child(void)
{
	/* Held by atfork_prepare, or by a thread that does not exist here. */
	pthread_mutex_init(&init_lock, NULL);
	pthread_mutex_init(&capture_threads_lock, NULL);
	fork_paused = 0;
	if (!atomic_load(&stackcap_g.running))
		return;
	writer_reset_after_fork();
	snapshot_reset_after_fork();
	if (stackcap_g.cfg.no_follow_fork) {
		atomic_store(&stackcap_g.running, 0);
		capture_remove_handler();
		return;
	}
	/* The child records into its own streams of the same trace. */
	stackcap_g.pid = getpid();
	capture_forget_threads_after_fork();
	/* Not running while the writer thread starts: it must not register
	 * itself for sampling (its ring and timer would be wasted). */
	atomic_store(&stackcap_g.running, 0);
	if (writer_start() != 0) {
		capture_remove_handler();
		return;
	}
	atomic_store(&stackcap_g.running, 1);
}

/* ---- preloading --------------------------------------------------------- */

static int env_int(const char *name, int dflt)
{
	const char *v = secure_getenv(name);
	return v && *v ? atoi(v) : dflt;
}

/* One line appended to the file STACKCAP_SUMMARY_FILE names, if any: the
 * report path of a preloaded library, whose caller (stackcap record) reads
 * and prints it; the library itself never writes to the program's stderr
 * (a user preloading it by hand may name /dev/stderr). */
static void summary_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void summary_line(const char *fmt, ...)
{
	const char *sf = secure_getenv("STACKCAP_SUMMARY_FILE");
	if (!sf || !*sf)
		return;
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	int const fd = open(sf, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t const w = write(fd, line, (size_t)n); /* O_APPEND: one line, whole */
		(void)w;
		close(fd);
	}
}

__attribute__((constructor)) static void preload_start(void)
{
	if (secure_process())
		return; /* setuid: no recording (nor would secure_getenv answer) */
	const char *dir = secure_getenv("STACKCAP_OUTPUT");
	/* liblttng-stackcap.so preloaded (not linked: a linked program calls
	 * stackcap_init itself) without an output directory records into the
	 * LTTng session. */
	const char *pre = secure_getenv("LD_PRELOAD");
	int const lttng = (!dir || !*dir) && &capture_lttng_sink && pre && strstr(pre, "liblttng-stackcap");
	if ((!dir || !*dir) && !lttng)
		return; /* linked, not preloaded: the program calls stackcap_init */
	const char *pol = secure_getenv("STACKCAP_POLICY");
	struct stackcap_opts o = {
		.sz = sizeof(o),
		.output_dir = dir,
		.frequency_hz = (unsigned)env_int("STACKCAP_FREQ", 0),
		.stack_cap = (size_t)env_int("STACKCAP_STACK_CAP", 0),
		.policy = pol && !strcmp(pol, "f1") ? STACKCAP_POLICY_F1 : STACKCAP_POLICY_F2,
		.zstd = env_int("STACKCAP_ZSTD", 0),
		.full_copy = env_int("STACKCAP_FULL_COPY", 0),
		.no_follow_fork = env_int("STACKCAP_NO_FORK", 0),
		.runtime_frames = env_int("STACKCAP_RUNTIME_FRAMES", 0),
		.lttng = lttng,
	};
	int const rc = stackcap_init(&o);
	if (rc < 0)
		summary_line("stackcap: cannot start recording into %s: %s\n", lttng ? "the LTTng session" : dir,
			     strerror(-rc));
}

__attribute__((destructor)) static void preload_stop(void)
{
	if (!atomic_load(&stackcap_g.running))
		return;
	int const lttng = stackcap_g.cfg.lttng;
	int const rc = stackcap_shutdown();
	/* LTTng mode has no trace directory for `stackcap record --lttng` to
	 * read a summary from: one line per process into its file. */
	if (lttng) {
		struct stackcap_stats st;
		stackcap_get_stats(&st);
		summary_line("samples %llu drops %llu error %d\n", (unsigned long long)st.samples,
			     (unsigned long long)st.drops, rc);
	}
}

struct start_arg {
	void *(*fn)(void *);
	void *arg;
};

static void unregister_now(void *arg)
{
	(void)arg;
	capture_thread_unregister();
}

static void *thread_trampoline(void *p)
{
	struct start_arg a = *(struct start_arg *)p;
	free(p);
	if (atomic_load(&stackcap_g.running))
		register_self();
	/* Unregistered (its timer stopped, the handler ignoring it) as the
	 * thread function returns or calls pthread_exit, before glibc runs
	 * the thread-specific data destructors: lttng-ust's unregisters the
	 * thread from its RCU holding a lock, and a sample's tracepoint
	 * there (--lttng) registered it again, waiting on that very lock:
	 * the thread hung.  (on_thread_exit, later, then has nothing to do.) */
	void *ret;
	pthread_cleanup_push(unregister_now, NULL);
	ret = a.fn(a.arg);
	pthread_cleanup_pop(1);
	return ret;
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* Atomic: the writer's restart after fork may look it up while a
 * program thread does. */
static pthread_create_fn real_pthread_create_fn(void)
{
	static _Atomic(pthread_create_fn) real;
	pthread_create_fn fn = atomic_load_explicit(&real, memory_order_relaxed);
	if (!fn) {
		fn = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		atomic_store_explicit(&real, fn, memory_order_relaxed);
	}
	return fn;
}

/* Set while this thread creates one of the library's own threads. */
static __thread int creating_own __attribute__((tls_model("initial-exec")));

/* The library's own threads (the writer) are never registered for
 * sampling, whatever the state.  Through the global pthread_create, not
 * dlsym: a sanitizer runtime loaded before us must see the thread. */
int capture_own_pthread_create(pthread_t *th, void *(*fn)(void *), void *arg)
{
	/* Born with every signal blocked: a process-directed signal (the
	 * program's ITIMER_PROF) must never run a handler on our thread,
	 * not even before the thread's first instruction blocks them -- the
	 * writer would then wait for itself to finish the trace.  A CI run
	 * lost a trace that way (tests/stress itimer-default, 1 in 40 runs). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	creating_own = 1;
	int const rc = pthread_create(th, NULL, fn, arg);
	creating_own = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Interposed: every new thread is registered before user code runs. */
STACKCAP_API int pthread_create(pthread_t *th, const pthread_attr_t *attr,
				void *(*fn)(void *), void *arg)
{
	pthread_create_fn const real = real_pthread_create_fn();
	if (!real)
		return EAGAIN;
	if (!atomic_load(&stackcap_g.running) || creating_own)
		return real(th, attr, fn, arg);
	struct start_arg *a = malloc(sizeof(*a));
	if (!a)
		return real(th, attr, fn, arg); /* unsampled, but the program runs */
	a->fn = fn;
	a->arg = arg;
	int const rc = real(th, attr, thread_trampoline, a);
	if (rc)
		free(a);
	return rc;
}

/* Interposed: new code is known before the first sample lands in it. */
STACKCAP_API void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	void *h = real ? real(file, mode) : NULL;
	if (h && atomic_load(&stackcap_g.running))
		snapshot_refresh(0);
	return h;
}

STACKCAP_API int dlclose(void *h)
{
	static int (*real)(void *);
	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	int const rc = real ? real(h) : -1;
	if (atomic_load(&stackcap_g.running))
		snapshot_refresh(0);
	return rc;
}
