/* SPDX-License-Identifier: MIT */
/*
 * ctf-writer.h: the standalone CTF 1.8 trace writer (docs/trace-format.md;
 * the binary layout it writes: common/ctf-layout.h).
 *
 * Used by the capture library's writer thread, never by a signal handler:
 * it allocates and does file I/O.  A writer and its streams belong to one
 * thread at a time (no internal locking).
 *
 * Return convention: every int-returning function returns 0 on success or
 * a negative errno (-ENOSPC, -EINVAL, ...).  Nothing is ever printed and
 * nothing aborts: the traced program must survive any tracing failure.
 *
 * Consistency: a stream file only ever grows by whole packets.  When a
 * packet cannot be written (full disk, I/O error) the file is cut back to
 * the last complete packet, the packet's events are counted as discarded
 * in the next packet written, and the error is returned; the stream stays
 * usable.  Only if that cut itself fails is the stream left broken: every
 * later call on it returns the same error.
 */
#ifndef STACKCAP_CTF_WRITER_H
#define STACKCAP_CTF_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ctf-layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format versions, stream kinds, map flags: common/ctf-layout.h. */

#define CTF_PACKET_SIZE_DEFAULT (64u * 1024u)
#define CTF_PACKET_SIZE_MIN 256u

struct ctf_writer;
struct ctf_stream;

/* Is FD (still) the file of device DEV and inode INO?  The program may have
 * closed an fd of ours and reused its number; the fd itself is not
 * touched (asked through /proc/self/fd). */
int ctf_fd_is_file(int fd, dev_t dev, ino_t ino);

struct ctf_writer_opts {
	size_t sz;              /* must be sizeof(struct ctf_writer_opts) */
	int zstd;               /* nonzero: one zstd frame per packet, ".zst" */
	int zstd_level;         /* 0: zstd's default level */
	size_t packet_size;     /* max bytes per packet; 0: the default */
	/* CLOCK_REALTIME minus CLOCK_MONOTONIC, becomes the clock offset. */
	int64_t clock_offset_ns;
	/* Trace UUID.  All-zero: a random one.  Every process of a recording
	 * must pass the same UUID and clock offset, since they share one
	 * metadata file (see ctf_writer_uuid()). */
	uint8_t uuid[16];
	/* Nonzero: format version 2, with the runtime events.  Every process
	 * of a recording must pass the same value (shared metadata). */
	int runtime_frames;
	/* Which sampler recorded the trace, as the metadata's
	 * env.stackcap_sampler ("kernel"); NULL: none named (the capture
	 * library's own, in process). */
	const char *sampler;
	/* Nonzero: the kernel events (kernel_chain, kernel_symbols) are
	 * declared (docs/trace-format.md "Kernel frames").  Every process of
	 * a recording must pass the same value (shared metadata). */
	int kernel_frames;
	/* The events the samples were taken on (names, printable ASCII), the
	 * trace's event table: N_EVENTS > 0 makes a version-4 trace (5 with
	 * off_cpu), whose samples name their event (ctf_stream_event_sample;
	 * 0 is the first).
	 * 0: no table (every sample is the default event, cpu-clock). */
	const char *const *events;
	size_t n_events;
	/* Nonzero: format version 5, the off_cpu event declared
	 * (docs/trace-format.md "Version 5").  Same rule as kernel_frames. */
	int off_cpu;
	/* Nonzero: no program shares this process's fds (the recorder, the
	 * converter), so the writer's are used without checking first that
	 * they are still its files (in a traced program they are checked
	 * before each use: a stat of /proc/self/fd/N, a quarter of the
	 * recorder's time on a busy machine). */
	int own_fds;
};

/* Open (creating it and missing parents if needed) the trace directory and
 * make sure it holds our metadata.  An existing metadata file must be
 * byte-identical to ours, else -EEXIST.  opts may be NULL (defaults). */
int ctf_writer_open(const char *dir, const struct ctf_writer_opts *opts,
		    struct ctf_writer **out);

/* Stream files from FN(ARG, dirfd, name): the file created and opened
 * for writing (as O_CREAT | O_EXCL would), or -EAGAIN (the writer creates
 * it itself), or the stream's -errno.  The recorder's are made ahead on a
 * thread of its own (record/files-ahead.h).  FN NULL: the writer's own. */
void ctf_writer_set_create(struct ctf_writer *w, int (*fn)(void *arg, int dirfd, const char *name), void *arg);

/* Close every stream still open (flushing it), free the writer.  Returns
 * the first error met; the writer is freed regardless.  NULL is a no-op. */
int ctf_writer_close(struct ctf_writer *w);

/* The trace UUID actually used (to hand to a forked child's writer). */
void ctf_writer_uuid(const struct ctf_writer *w, uint8_t uuid[16]);

struct ctf_writer_stats {
	uint64_t metadata_bytes; /* metadata written by this writer (0 if shared) */
	uint64_t stream_bytes;   /* bytes appended to stream files (compressed) */
	uint64_t packet_bytes;   /* the same packets before compression */
	uint64_t packets;
	uint64_t events;         /* events in packets written */
	uint64_t samples;        /* `sample` events in packets written */
};
void ctf_writer_get_stats(const struct ctf_writer *w, struct ctf_writer_stats *st);

/* Total bytes this writer put on disk (metadata + streams). */
uint64_t ctf_writer_bytes_written(const struct ctf_writer *w);

/* Create stream file `name` in the trace directory (".zst" appended in
 * zstd mode).  The name must be a plain file name, not "metadata" nor
 * starting with '.'; the file must not exist yet (-EEXIST), so that
 * processes sharing a directory never clobber each other.  Callers name
 * them proc-<pid>-<seq> and samples-<pid>-<slot>. */
int ctf_writer_open_stream(struct ctf_writer *w, enum ctf_stream_kind kind,
			   const char *name, uint32_t pid, struct ctf_stream **out);

/* ---- events --------------------------------------------------------------
 * ts is CLOCK_MONOTONIC in ns.  Within a stream, ts must never decrease:
 * an earlier ts is rejected with -EINVAL and nothing is written.  Values
 * that do not fit their field (generation or blob length >= 2^24) and
 * events of the wrong stream kind give -EINVAL.  On any error the event is
 * not recorded (count it as discarded if it matters); a packet that could
 * not be written is counted by the writer itself.  Strings are written as
 * the bytes given (normally UTF-8), NUL-terminated. */

struct ctf_process_info {
	uint32_t pid, ppid;
	const char *comm;        /* NULL is written as "" */
	const char *exe;
	int64_t clock_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
	uint32_t frequency_hz;
	uint32_t stack_cap;      /* bytes */
	uint8_t policy;          /* enum stackcap_policy */
	uint8_t codec_version;   /* STACKCAP_CODEC_VERSION */
};
int ctf_stream_process_start(struct ctf_stream *s, uint64_t ts,
			     const struct ctf_process_info *info);

struct ctf_map_entry {
	uint64_t start, end;
	uint64_t offset;         /* file offset of start */
	uint64_t bias;           /* load bias */
	uint8_t flags;           /* CTF_MAP_* */
	uint8_t build_id_len;
	const uint8_t *build_id; /* build_id_len bytes (NULL if 0) */
	const char *path;        /* NULL is written as "" */
};
/* One snapshot: the code ranges the codec used, sorted by start (entry
 * index = range index in the blobs).  Unsorted input gives -EINVAL. */
int ctf_stream_maps(struct ctf_stream *s, uint64_t ts, uint32_t generation,
		    const struct ctf_map_entry *e, size_t n);

struct ctf_drops {
	uint32_t tid;
	uint64_t ring_full, nested, no_stack_bounds, other; /* cumulative */
};
int ctf_stream_drops(struct ctf_stream *s, uint64_t ts, const struct ctf_drops *d);

int ctf_stream_process_end(struct ctf_stream *s, uint64_t ts,
			   uint64_t samples, uint64_t drops);

/* A sample of thread tid: an opaque stack-codec blob (docs/stack-codec.md).
 * A tid different from the current packet's closes that packet first. */
int ctf_stream_sample(struct ctf_stream *s, uint64_t ts, uint32_t tid,
		      uint32_t generation, const uint8_t *blob, size_t len);

/* A sample of event EVENT of the trace's table (versions 4, 5): event 0 is
 * written as an ordinary `sample`, the others as `event_sample`. */
int ctf_stream_event_sample(struct ctf_stream *s, uint64_t ts, uint32_t tid, uint32_t event,
			    uint32_t generation, const uint8_t *blob, size_t len);

/* The unfiltered copy of the next sample's stack (policy ALL, never
 * elided), written just before that sample, with the same timestamp. */
int ctf_stream_sample_full(struct ctf_stream *s, uint64_t ts, uint32_t tid,
			   uint32_t generation, const uint8_t *blob, size_t len);

/* A second stack segment of the next sample (the stack interrupted by a
 * handler on the alternate signal stack), written just before it. */
int ctf_stream_sample_segment(struct ctf_stream *s, uint64_t ts, uint32_t tid,
			      uint32_t generation, const uint8_t *blob, size_t len);

/* Version-2 traces (runtime_frames writers) only; -EINVAL otherwise. */
struct ctf_runtime_info {
	uint8_t runtime;             /* capture_rt_kind */
	uint32_t version;
	uint64_t eval_start, eval_end;
	uint64_t chains, dropped, stale; /* cumulative, the latest event holds them */
	const char *name;
};
int ctf_stream_runtime(struct ctf_stream *s, uint64_t ts, const struct ctf_runtime_info *info);
int ctf_stream_runtime_code(struct ctf_stream *s, uint64_t ts, uint8_t runtime, uint64_t code,
			    uint32_t fingerprint, uint32_t first_line, const char *name, const char *file,
			    const uint8_t *line_table, size_t line_table_len);
/* The runtime frames (compress/rt-frames.h) of the next sample, written
 * just before it. */
int ctf_stream_runtime_frames(struct ctf_stream *s, uint64_t ts, uint32_t tid, uint8_t runtime,
			      const uint8_t *blob, size_t len);

/* Kernel frames (ctf_writer_opts.kernel_frames writers only; -EINVAL
 * otherwise): the kernel part of the next sample's call chain, innermost
 * first (at most 65535 addresses), written just before it; and the kernel
 * symbols covering the recorded addresses, with the kernel's build-id,
 * once per recording in a process stream. */
int ctf_stream_kernel_chain(struct ctf_stream *s, uint64_t ts, uint32_t tid, const uint64_t *ips, size_t n);
struct ctf_kernel_symbol {
	uint64_t start, end;   /* [start, end) */
	const char *name;
	const char *module;    /* "" for the kernel image, else the module's name */
};
int ctf_stream_kernel_symbols(struct ctf_stream *s, uint64_t ts, const uint8_t *build_id, size_t build_id_len,
			      const struct ctf_kernel_symbol *syms, size_t n);

/* Off-CPU time (ctf_writer_opts.off_cpu writers only; -EINVAL
 * otherwise): the next sample of TID is a stack where the thread blocked
 * (switched out while not runnable), DURATION_NS the time until it ran
 * again; written just before that sample, with its timestamp. */
int ctf_stream_off_cpu(struct ctf_stream *s, uint64_t ts, uint32_t tid, uint64_t duration_ns);

/* Count n events lost since the last call; the next packet written carries
 * the running total in its events_discarded field (CTF's convention), and
 * close writes an empty packet if needed so the count is never lost. */
int ctf_stream_discarded(struct ctf_stream *s, uint64_t n);

/* Write the packet in flight, if any. */
int ctf_stream_flush(struct ctf_stream *s);

/* At most the bytes an event takes (its header and payload): a sample or
 * event_sample of a LEN-byte blob, a kernel chain of N addresses, an
 * off_cpu. */
#define CTF_SAMPLE_EVENT_MAX(len) (CTF_EV_EXTENDED_SIZE + 8 + (size_t)(len))
#define CTF_KERNEL_CHAIN_EVENT_MAX(n) (CTF_EV_EXTENDED_SIZE + 4 + 8 * (size_t)(n))
#define CTF_OFF_CPU_EVENT_MAX (CTF_EV_EXTENDED_SIZE + 8)

/* The events of thread TID written next, up to and with its sample
 * (sample or event_sample), go in one packet (docs/trace-format.md
 * "Packets"): the side events a sample comes with (sample_full,
 * sample_segment, runtime_frames, kernel_chain, off_cpu) are never in the
 * packet before its own.  When they do not all fit in the packet in
 * flight, that packet is written without them and they begin the next;
 * a group bigger than a packet grows its packet.  The first such event
 * opens a group itself when none is open: begun here, the group also
 * covers a cancel before any event.  Another thread's event, or a flush,
 * ends it.  0 or -errno (writing the packet in flight when it held
 * another thread). */
int ctf_stream_group_begin(struct ctf_stream *s, uint32_t tid);

/* The group begun is dropped, its events taken out of the packet in
 * flight (its sample could not be written: no side event stays without
 * it). */
void ctf_stream_group_cancel(struct ctf_stream *s);

/* Would events of thread TID, BYTES in all (the ..._EVENT_MAX above), the
 * last one a sample, go in the packet in flight after a sample of TID?
 * Only then may that sample take words from TID's sample before: each
 * packet decodes alone (docs/trace-format.md), and a packet also ends when
 * full, before its writer's count of samples. */
int ctf_stream_joins(const struct ctf_stream *s, uint32_t tid, size_t bytes);

/* Put the packet in flight on disk and keep it open: written where the
 * next packet goes, it is a complete last packet of the file until more
 * events come, and is then rewritten in its place, grown, by the next
 * sync or flush.  So what is recorded reaches the disk as often as wanted
 * without cutting packets (each costs a zstd frame compressed alone, and
 * its first sample is whole).  A failed write leaves the file at its
 * last complete packet.  0 or -errno. */
int ctf_stream_sync(struct ctf_stream *s);

/* Flush, close and free the stream (freed even on error).  NULL: no-op. */
int ctf_stream_close(struct ctf_stream *s);

#ifdef __cplusplus
}
#endif

#endif
