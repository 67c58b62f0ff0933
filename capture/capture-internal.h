/* SPDX-License-Identifier: MIT */
/*
 * capture-internal.h: what the parts of libstackcap share.  Nothing here is
 * installed.
 */
#ifndef STACKCAP_CAPTURE_INTERNAL_H
#define STACKCAP_CAPTURE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "capture/ring.h"
#include "compress/stack-codec.h"
#include "capture/stackcap.h"

#define HIDDEN __attribute__((visibility("hidden")))

/* ---- code-range snapshots (snapshot.c) ---------------------------------- */

struct snapshot_module {
	uint64_t start, end, offset, bias;
	uint8_t flags;               /* CTF_MAP_* */
	uint8_t build_id_len;
	uint8_t build_id[32];
	char *path;
};

/* One maps generation: immutable once published. */
struct snapshot {
	uint32_t generation;
	struct stackcap_code_ranges set;   /* ranges point into `ranges` */
	struct stackcap_code_range *ranges;
	struct snapshot_module *modules;   /* one per range, same order */
	uint32_t count;
	unsigned long long adds, subs;     /* dl_iterate_phdr counters it saw */
	uint64_t exec_hash;                /* fingerprint of the executable mappings it saw */
	struct snapshot *older;            /* retired list (writer side) */
	int written;                       /* maps event written to the trace */
	int reclaimable;                   /* freed at the next snapshot_reclaim() */
	/* LTTng mode: samples recorded against it (handlers add), and the
	 * writer's attempts to record its code_ranges while disabled. */
	_Atomic uint64_t sampled;
	unsigned attempts;
};

/* Build a snapshot of the current code ranges (malloc, dl_iterate_phdr,
 * /proc/self/maps: never from a signal handler).  NULL on ENOMEM. */
HIDDEN struct snapshot *snapshot_build(uint32_t generation);
HIDDEN void snapshot_free(struct snapshot *s);
/* Have dlopen/dlclose changed the loaded set since S was built? */
HIDDEN int snapshot_stale(const struct snapshot *s);

/* Publication: the handler reads the current snapshot between
 * snapshot_enter() and snapshot_leave() (async-signal-safe: two atomic
 * operations); a replaced snapshot is freed only after no reader was seen
 * and every ring was drained (snapshot_reclaim). */
HIDDEN const struct snapshot *snapshot_enter(void);
HIDDEN void snapshot_leave(void);
/* Rebuild and publish if stale (or FORCE).  Not signal-safe; serialised by
 * a mutex.  @return 0, or -ENOMEM. */
HIDDEN int snapshot_refresh(int force);
/* The snapshot of GENERATION if still held (writer thread only). */
HIDDEN const struct snapshot *snapshot_lookup(uint32_t generation);
/* Free replaced snapshots that no handler and no pending record can still
 * use.  Writer thread only, before each full drain of the rings. */
HIDDEN void snapshot_reclaim(void);
/* Call FN for each held snapshot not yet written to the trace, oldest
 * first, and mark it written unless FN returns nonzero (try again next
 * time) (writer thread only). */
HIDDEN void snapshot_for_each_unwritten(int (*fn)(struct snapshot *, void *), void *arg);
HIDDEN void snapshot_reset_after_fork(void);

/* ---- threads (capture.c) ------------------------------------------------ */

struct thread_state {
	pid_t tid;
	uint64_t stack_lo, stack_hi;  /* [lo, hi): the thread's stack */
	struct ring ring;
	timer_t timer;
	int has_timer;
	int perf_fd;                  /* perf task-clock sampler, or -1 */
	int perf_sig;                 /* the signal it raises now */
	uint64_t perf_id;             /* its PERF_EVENT_IOC_ID: is the fd still it? */
	volatile sig_atomic_t busy;   /* a capture is running on this thread */
	_Atomic int exited;           /* set at thread exit; writer retires it */
	/* Counters written by the owning thread only. */
	_Atomic uint64_t samples, dropped_ring_full, dropped_nested;
	/* Writer-side state. */
	struct thread_state *next;     /* registry list */
	void *writer_priv;
};

/* ---- an event sink other than the CTF writer (capture/lttng/) ---------- */

/* liblttng-stackcap.so defines `capture_lttng_sink`; in libstackcap.so the
 * weak reference stays NULL and only the standalone trace exists.  In
 * LTTng mode samples leave the process as tracepoints, recorded in the
 * sampled thread; nothing goes through the rings to the writer. */
struct stackcap_config;
struct capture_sink {
	/* Per thread, before its sampling timer is armed (not from a handler). */
	void (*thread_init)(void);
	/* In the sampled thread, from the handler: whether SAMPLE may run
	 * here now (0: the thread's tracer state is gone, as in its
	 * thread-specific data destructors, and recording would take the
	 * tracer's locks: the sample is dropped and counted). */
	int (*thread_ready)(void);
	/* In the sampled thread, from the signal handler or stackcap_capture:
	 * async-signal-safe, no malloc.  SEG: a second segment or NULL; RT:
	 * the runtime frames of RUNTIME (capture/runtime.h) or NULL.  Each
	 * 8-byte aligned, zeros after it up to its next multiple of 8 (the
	 * LTTng sink records them as 64-bit words). */
	void (*sample)(uint32_t generation, const uint8_t *blob, size_t len,
		       const uint8_t *seg, size_t seg_len, uint8_t runtime, const uint8_t *rt, size_t rt_len);
	/* The range list of a generation, and the vDSO's build-id (LTTng's
	 * state dump has none for it) (writer thread). */
	int (*code_ranges)(uint32_t generation, const struct stackcap_code_range *ranges,
			   uint32_t count, const uint8_t *vdso_build_id, uint8_t vdso_build_id_len,
			   const struct stackcap_config *cfg); /* 1: recorded (enabled), 0: not */
	/* The registered runtime and one code object's description (writer
	 * thread; capture/runtime.c).  RUNTIME: 1 recorded (enabled), 0 not. */
	int (*runtime)(uint8_t runtime, uint32_t version, uint64_t eval_start, uint64_t eval_end,
		       uint64_t chains, uint64_t dropped, const char *name);
	void (*runtime_code)(uint8_t runtime, uint64_t code, uint32_t fp, uint32_t first_line, const char *name,
			     const char *file, const uint8_t *line_table, uint32_t line_table_len);
};
extern const struct capture_sink capture_lttng_sink __attribute__((weak, visibility("hidden")));

struct stackcap_config {
	char output_dir[4096];
	unsigned frequency_hz;
	size_t stack_cap;
	int signo;
	enum stackcap_policy policy;
	int zstd;
	int full_copy;            /* capture unfiltered, writer filters (fidelity) */
	int no_sampling;
	int no_follow_fork;
	size_t ring_size;
	int lttng;                /* samples go to capture_lttng_sink, no trace directory */
	int runtime_frames;       /* runtime unwinders on (runtime.h): trace version 2 */
	uint8_t uuid[16];
	int64_t clock_offset_ns;
};

struct stackcap_global {
	_Atomic int running;
	struct stackcap_config cfg;
	_Atomic(struct thread_state *) threads;  /* registry, push-only list */
	_Atomic uint64_t dropped_no_stack;       /* captures on unknown threads, or
	                                          * threads the sink cannot record now */
	_Atomic uint64_t samples_total, drops_total;
	/* The signal return trampoline (glibc's __restore_rt), learnt from
	 * our own handler's return address: it marks signal frames. */
	_Atomic uint64_t restorer;
	/* A capture's pc was in no range of the current snapshot (new JIT
	 * code): the writer reads the maps again soon (snapshot_stale). */
	_Atomic int pc_unmapped;
	/* The main thread has left by pthread_exit (its thread-specific data
	 * destructors ran): the writer then looks whether it is the last
	 * thread (writer.c program_gone). */
	_Atomic int main_left;
	pid_t pid;                               /* the process recording (not a vfork child) */
};

extern HIDDEN struct stackcap_global stackcap_g;

HIDDEN int capture_install_handler(void);
HIDDEN void capture_remove_handler(void);
/* The program set PROGRAM as its action on our signal: our handler takes
 * its SA_RESTART choice (async-signal-safe). */
HIDDEN void capture_follow_program_action(int sig, const struct sigaction *program);
HIDDEN int capture_thread_register(void);
HIDDEN void capture_thread_unregister(void);
/* Stop T's sampling timer or perf event (not after fork: the child has
 * neither). */
HIDDEN void capture_thread_disarm(struct thread_state *t);
HIDDEN void capture_forget_threads_after_fork(void);
/* Held by the writer while it unlinks and frees an exited thread's state,
 * and by whoever else walks stackcap_g.threads (shutdown, stats): a state
 * must not be freed under them.  Never taken in a signal handler. */
extern HIDDEN pthread_mutex_t capture_threads_lock;
/* pthread_create for the library's own threads: never sampled. */
HIDDEN int capture_own_pthread_create(pthread_t *th, void *(*fn)(void *), void *arg);
/* From the writer thread, once the program's threads are all gone (its
 * main thread left by pthread_exit): sampling stops as in
 * stackcap_shutdown, without waiting for the writer.  @return 1, or 0
 * when the recording is being started or stopped now (look again later). */
HIDDEN int capture_stop_from_writer(void);

/* ---- writer thread (writer.c) ------------------------------------------ */

HIDDEN int writer_start(void);
/* Stop the writer after a last drain of every ring.  @return its first
 * write error, or 0. */
HIDDEN int writer_stop(void);
HIDDEN void writer_wake(void);
HIDDEN void writer_get_stats(uint64_t *bytes, int *error);
HIDDEN void writer_reset_after_fork(void);
/* End the trace now (process_end, files closed, summary) from any thread,
 * even a signal handler: the writer thread does it; wait at most
 * TIMEOUT_MS for it.  Sampling stops.  @return 0, or -ETIMEDOUT. */
HIDDEN int writer_finish_bounded(int timeout_ms);
/* Around fork(): the writer thread stops (nothing lost: the rings wait;
 * bounded: if it does not leave within 200 ms it goes on through the fork;
 * not in LTTng mode) and starts again in the parent, so that a single-threaded program
 * forks single-threaded: the child inherits no lock or half-done work of
 * ours (dl_iterate_phdr's loader lock, a packet being written), and
 * thread sanitizers support it. */
HIDDEN void writer_pause(void);
HIDDEN void writer_resume(void);

/* ---- the sampling signal shared with the program (sigchain.c) ---------- */

HIDDEN int sigchain_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Our handler is installed on SIG (the sampling signal, or the real-time
 * one of capture.c); PREVIOUS becomes the program's action. */
HIDDEN void sigchain_start(int sig, const struct sigaction *previous);
/* Our handler goes from SIG; the program's action, to put back. */
HIDDEN void sigchain_stop(int sig, struct sigaction *program_action);
/* PERF_FD: the calling thread's own perf sampler fd (or -1). */
HIDDEN int sigchain_is_ours(const siginfo_t *si, int perf_fd);
HIDDEN void sigchain_forward(int sig, siginfo_t *si, void *uc);

/* ---- a process ending without exit() (exit.c) --------------------------- */

/* Finish this process's trace before it ends without running destructors
 * (_exit, a fatal signal); nothing in a vfork child.  Bounded in time. */
HIDDEN void stackcap_exit_flush(void);

static inline uint64_t capture_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* STACKCAP_CAPTURE_INTERNAL_H */
