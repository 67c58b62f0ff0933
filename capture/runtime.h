/* SPDX-License-Identifier: MIT */
/*
 * runtime.h: runtime unwinders, the interface between the capture hook and
 * an interpreter that keeps its own frames (seeds/001: "instead of
 * unwinding through Python interpreter frames, the unwinder could traverse
 * and log Python stack frames").  CPython's is rt-cpython.c; Ruby, Perl or
 * Lua would follow with the same five answers:
 *
 * 1. What it registers (struct capture_runtime, from probe(), at
 *    stackcap_init, never in a handler): whether its interpreter is in this
 *    process (found by its exported symbols), its version, and the memory
 *    range of its interpreter loop [eval_lo, eval_hi): a native frame whose
 *    pc lies there ran the runtime's frames.  The range goes into the trace
 *    (`runtime` event); offline, each such native frame is replaced by the
 *    runtime frames it ran (docs/trace-format.md says how they are matched).
 *
 * 2. When it is called: unwind() runs for every sample of a registered
 *    runtime (signal handler or stackcap_capture()), in the sampled thread,
 *    after the native stack copy, inside the same busy section.  It must be
 *    async-signal-safe: no malloc, no lock, no GIL, nothing the interrupted
 *    code may hold; it reads the interpreter's memory only through
 *    capture_rt_read()/capture_rt_readv() (process_vm_readv on ourselves: an
 *    address unmapped under us, e.g. a frame being torn down, fails the read
 *    instead of faulting), except data it has proved static at probe time.
 *
 * 3. Its budget per sample: at most CAPTURE_RT_MAX_BYTES bytes of frames
 *    (the record's room), CAPTURE_RT_MAX_FRAMES frames, and in time at most
 *    CAPTURE_RT_MAX_FRAMES + CAPTURE_RT_FIXED_READS read calls (each one
 *    system call, about 0.3-1 us here: docs/BENCHMARKS.md has the measured
 *    cost per depth); an unwinder should batch (capture_rt_readv) and copy
 *    contiguous frame storage whole (CPython: one read per data-stack
 *    chunk, about 6 calls per sample at any depth).  Scratch memory is
 *    handed to it (SCRATCH, at least CAPTURE_RT_SCRATCH bytes, 8-aligned,
 *    never written to the trace).
 *    What does not fit is cut and flagged RT_FRAMES_TRUNCATED.
 *
 * 4. How its frames are stored: unwind() writes one rt-frames blob
 *    (compress/rt-frames.h: code object, fingerprint, position, entry
 *    mark per frame, innermost first) and returns its length; 0 when the
 *    thread runs no code of the runtime (nothing is stored); -1 when the
 *    chain could not be read at all (the sample keeps its native stack,
 *    the runtime frames are dropped and counted: dropped_runtime).  The
 *    writer stores the blob as a `runtime_frames` event just before its
 *    `sample`; in LTTng mode the sampled thread records it as
 *    `stackcap:runtime_frames` right before its `stackcap:sample`, and
 *    commits it to its ring only for the writer's descriptions (5).
 *
 * 5. How they are decoded: the writer thread calls describe() once for
 *    each (code, fingerprint) it has not met; describe() reads the object
 *    (the writer may block, allocate; it still reads through
 *    capture_rt_read, the object may be gone), recomputes the fingerprint
 *    and, only when it matches, fills a capture_rt_code (name, file, first
 *    line, line table) which becomes one `runtime_code` event.  Offline,
 *    symbolize/resolve.c names a runtime frame from that event and its
 *    position (the line), through the one resolver.
 */
#ifndef STACKCAP_CAPTURE_RUNTIME_H
#define STACKCAP_CAPTURE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CAPTURE_RT_MAX_FRAMES 256
#define CAPTURE_RT_MAX_BYTES 4096
#define CAPTURE_RT_FIXED_READS 8
#define CAPTURE_RT_SCRATCH (72 * 1024)

/* Runtime ids in the trace (`runtime` field of the runtime events). */
enum capture_rt_kind {
	CAPTURE_RT_NONE = 0,
	CAPTURE_RT_CPYTHON = 1,
};

/* One code object, as the writer read it (pointers valid until the next
 * describe call). */
struct capture_rt_code {
	uint64_t code;
	uint32_t fp;
	uint32_t first_line;
	const char *name;            /* qualified name, UTF-8 */
	const char *file;
	const uint8_t *line_table;   /* the runtime's own format (CPython: co_linetable) */
	size_t line_table_len;
};

struct capture_runtime {
	const char *name;            /* "cpython" */
	enum capture_rt_kind kind;
	/* Filled by probe(): */
	uint32_t version;            /* the runtime's own number (CPython: PY_VERSION_HEX) */
	uint64_t eval_lo, eval_hi;   /* the interpreter loop's code */
	/* Is the runtime in this process?  @return 0 and fills the fields
	 * above, or -ENOENT (absent), -ENOTSUP (a version it cannot read). */
	int (*probe)(struct capture_runtime *rt);
	/* In the sampled thread (see 2-4 above).  OUT holds CAP bytes. */
	int (*unwind)(const struct capture_runtime *rt, uint8_t *out, size_t cap, void *scratch);
	/* Writer thread (see 5).  @return 0 and *OUT filled, -ESTALE when the
	 * object is no longer the one fingerprinted, -errno. */
	int (*describe)(const struct capture_runtime *rt, uint64_t code, uint32_t fp,
			struct capture_rt_code *out);
};

/* The runtime unwinders we know, probed in order at stackcap_init when the
 * recording asks for runtime frames; the first found is used. */
extern const struct capture_runtime capture_rt_cpython __attribute__((visibility("hidden")));

/* The registered runtime, or NULL (set once at init, before the handler). */
__attribute__((visibility("hidden"))) const struct capture_runtime *capture_rt_active(void);
__attribute__((visibility("hidden"))) int capture_rt_init(void);

/* The capture path's two calls (capture.c): bytes a record must reserve
 * for runtime frames (0 with no runtime registered), and the frames of
 * this sample written at OUT (ROOM bytes: the frames, then the scratch).
 * @return the blob length, 0 for none (a chain that could not be read is
 * counted in capture_rt_counts' dropped). */
__attribute__((visibility("hidden"))) size_t capture_rt_room(void);
__attribute__((visibility("hidden"))) size_t capture_rt_sample(uint8_t *out, size_t room);
/* Samples with runtime frames, chains dropped unreadable (since start). */
__attribute__((visibility("hidden"))) void capture_rt_counts(uint64_t *chains, uint64_t *dropped);

/* Writer thread.  The `runtime` event (registration and counters) into
 * the process stream PROC, when a runtime is registered; at the start of
 * a process section it also forgets which code objects were described. */
struct ctf_stream;
__attribute__((visibility("hidden"))) int capture_rt_write_info(struct ctf_stream *proc, uint64_t proc_ts, int start);
/* The frames BLOB of a sample (time TS, thread TID) into SAMPLES, after a
 * `runtime_code` event into PROC for each code object not described yet.
 * @return 0 or -errno (a write error). */
__attribute__((visibility("hidden"))) int capture_rt_write(struct ctf_stream *proc, uint64_t proc_ts,
							    struct ctf_stream *samples, uint64_t ts, uint32_t tid,
							    const uint8_t *blob, size_t len);

/* LTTng mode, writer thread: the `stackcap:runtime` event (registration
 * and counts; repeated for sessions started later; 1 when recorded), and a
 * `stackcap:runtime_code` event for each code object of the frames BLOB
 * not described yet (the capture path commits each sample's frames to
 * the ring for this, and nothing else). */
__attribute__((visibility("hidden"))) int capture_rt_lttng_info(void);
__attribute__((visibility("hidden"))) void capture_rt_lttng_codes(const uint8_t *blob, size_t len);

/* Read LEN bytes at ADDR of our own memory into DST without ever faulting.
 * Async-signal-safe.  @return 0, -1 when any byte was not readable. */
__attribute__((visibility("hidden"))) int capture_rt_read(void *dst, uint64_t addr, size_t len);

/* N reads at once (one system call per 1024): DST[i] <- LEN[i] bytes at
 * ADDR[i].  OK[i] says which were read whole.  A zero ADDR is skipped.
 * @return the number read whole. */
__attribute__((visibility("hidden"))) size_t capture_rt_readv(void *const *dst, const uint64_t *addr,
							       const size_t *len, uint8_t *ok, size_t n);

/* FNV-1a over bytes, 32 bits: the fingerprint of code objects. */
static inline uint32_t capture_rt_fnv(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}
#define CAPTURE_RT_FNV_SEED 2166136261u

#endif /* STACKCAP_CAPTURE_RUNTIME_H */
