/* SPDX-License-Identifier: MIT */
/*
 * stackcap.h: the public API of libstackcap, the whole installed ABI.
 *
 * libstackcap records the user-space stacks of the process it runs in:
 * sampled by per-thread CPU-time timers, or on demand with
 * stackcap_capture().  The capture path only copies and filters stack words
 * (see docs/stack-codec.md); a writer thread turns them into a CTF trace
 * (docs/trace-format.md) that `stackunwind` unwinds offline.
 *
 * Preloaded (LD_PRELOAD=libstackcap.so, as `stackcap record` does) the
 * library starts itself from the environment (STACKCAP_OUTPUT, ...) and
 * samples every thread created with pthread_create.  Linked, a program calls
 * stackcap_init() itself.
 *
 * Async-signal-safety of each entry point is stated on it.  Every function
 * returns 0 or a negative errno value; none prints, none exits.
 */
#ifndef STACKCAP_H
#define STACKCAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STACKCAP_VERSION_MAJOR 0
#define STACKCAP_VERSION_MINOR 1
#define STACKCAP_VERSION_PATCH 0
#define STACKCAP_VERSION_NUMBER \
	(STACKCAP_VERSION_MAJOR * 10000 + STACKCAP_VERSION_MINOR * 100 + STACKCAP_VERSION_PATCH)

#if defined(__GNUC__)
#define STACKCAP_API __attribute__((visibility("default")))
#else
#define STACKCAP_API
#endif

/* Default sampling frequency, in samples per second of thread CPU time. */
#define STACKCAP_DEFAULT_FREQUENCY 999
/* Default bound of one stack copy, in bytes: deep enough for 1000-frame
 * recursion in ordinary code; compression makes it affordable. */
#define STACKCAP_DEFAULT_STACK_CAP (64 * 1024)

/*
 * Options for stackcap_init().  Zero-initialise, set `sz = sizeof(struct
 * stackcap_opts)`, then the fields you need (zero means the default), e.g.
 *     struct stackcap_opts o = { .sz = sizeof(o), .output_dir = "t.trace" };
 * A library older than the caller rejects unknown nonzero fields (-EINVAL);
 * a newer one reads only the fields `sz` covers.
 */
struct stackcap_opts {
	size_t sz;
	const char *output_dir;   /* trace directory; default "stackcap.trace" */
	unsigned frequency_hz;    /* 0: STACKCAP_DEFAULT_FREQUENCY; sampling off if no_sampling */
	size_t stack_cap;         /* bytes; 0: STACKCAP_DEFAULT_STACK_CAP */
	int signo;                /* 0: SIGPROF */
	int policy;               /* 0: F2; 1: F1 (see stack-codec.h) */
	int wall_clock;           /* must be 0: wall-clock sampling was removed
				   * (its signals made sleeping calls fail with
				   * EINTR); nonzero: -ENOTSUP */
	int zstd;                 /* nonzero: zstd-compressed stream files */
	int no_sampling;          /* nonzero: only explicit stackcap_capture() calls */
	int no_follow_fork;       /* nonzero: a fork child records nothing */
	size_t ring_size;         /* per-thread ring bytes; 0: 1 MiB */
	/* Nonzero: also store the unfiltered stack copy of every sample (a
	 * `sample_full` event), so `stackunwind stats` can measure fidelity.
	 * For measurement only: the trace then holds every stack word (its
	 * registers are filtered by the policy, as in any recording). */
	int full_copy;
	/* Nonzero: record into the active LTTng-UST session as `stackcap:*`
	 * events instead of a trace directory (docs/lttng.md); output_dir,
	 * zstd are ignored, full_copy is refused.  Only liblttng-stackcap.so
	 * has it: libstackcap.so returns -ENOTSUP.  (0.1) */
	int lttng;
	/* Nonzero: also record the frames of an interpreter running in the
	 * process (CPython 3.11: Python functions and lines, see
	 * docs/trace-format.md, runtime events), read in the sampled thread
	 * at the sample.  The trace is then format version 2.  Ignored in
	 * LTTng mode.  (0.1) */
	int runtime_frames;
};
#define stackcap_opts__last_field runtime_frames

/* Start recording.  Not async-signal-safe (allocates, creates a thread).
 * @return 0; -EALREADY when already started; -EINVAL for bad options;
 * -EPERM in a secure-execution process (setuid, setgid, file capabilities:
 * AT_SECURE), which never records; another -errno when the trace directory
 * or the writer cannot be set up.  The preloaded library's STACKCAP_*
 * variables are read with secure_getenv. */
STACKCAP_API int stackcap_init(const struct stackcap_opts *opts);

/* Stop sampling, flush every ring, finish the trace.  Not async-signal-safe.
 * @return 0, or the first write error met while recording (-ENOSPC, ...). */
STACKCAP_API int stackcap_shutdown(void);

/* Capture the calling thread's registers and stack right here: the stack
 * shows the caller of stackcap_capture() as its innermost frame.
 * Async-signal-safe and reentrant: callable from a signal handler or a
 * tracer's probe; never blocks, never allocates.  A capture that cannot be
 * taken (ring full, nested capture, thread not registered) is dropped and
 * counted.  @return 0 when recorded, -EAGAIN when dropped, -ENODEV when the
 * library is not started. */
STACKCAP_API int stackcap_capture(void);

/* Register the calling thread (stack bounds, ring, sampling timer).  Done
 * automatically for the thread calling stackcap_init() and, when the library
 * is preloaded, for every thread started with pthread_create().  Not
 * async-signal-safe.  @return 0 (also when already registered), or -errno. */
STACKCAP_API int stackcap_thread_register(void);

struct stackcap_stats {
	uint64_t samples;          /* captures written to the rings */
	uint64_t drops;            /* captures dropped, all reasons */
	uint64_t dropped_ring_full;
	uint64_t dropped_nested;
	uint64_t dropped_no_stack; /* thread not registered, stack unknown, or (LTTng)
	                            * the thread's LTTng-UST state already gone */
	uint64_t trace_bytes;      /* bytes written by this process so far */
	int write_error;           /* first -errno of the writer, or 0 */
};

/* Counters so far.  Async-signal-safe (plain reads). */
STACKCAP_API void stackcap_get_stats(struct stackcap_stats *out);

/* STACKCAP_VERSION_NUMBER of the library at run time. */
STACKCAP_API unsigned stackcap_version(void);

#ifdef __cplusplus
}
#endif
#endif /* STACKCAP_H */
