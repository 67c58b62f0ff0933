/* Between the reader core (trace/stackcap-reader.c: process model, maps,
 * decoding, filters) and the event sources that read the stream files:
 * babeltrace2 (trace/source-babeltrace2.c) or our own parser of the format
 * we write (trace/source-native.c).  Both must deliver the same events. */
#ifndef STACKCAP_READER_INTERNAL_H
#define STACKCAP_READER_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <pthread.h>
#include "common/ctf-layout.h"
#include "trace/stackcap-reader.h"

enum raw_kind {
	RAW_PROCESS_START,
	RAW_MAPS,
	RAW_DROPS,
	RAW_PROCESS_END,
	RAW_SAMPLE,
	RAW_SAMPLE_FULL,
	RAW_SAMPLE_SEGMENT,
	RAW_DISCARDED,            /* events the writer lost (CTF events_discarded) */
	RAW_RUNTIME,              /* version 2: a runtime unwinder's registration */
	RAW_RUNTIME_CODE,         /* version 2: one code object */
	RAW_RUNTIME_FRAMES,       /* version 2: the runtime frames of the next sample */
	RAW_KERNEL_CHAIN,         /* the kernel call chain of the next sample */
	RAW_KERNEL_SYMBOLS,       /* the trace's kernel symbols */
	RAW_OFF_CPU,              /* version 5: the next sample is off-CPU time */
	RAW_THREAD_END,           /* pid/tid's samples are all delivered: its images may go */
};

/* One event, in time order.  Pointers are valid during the call only,
 * except what the comments say the core takes over. */
struct raw_event {
	enum raw_kind kind;
	uint64_t ts;              /* CLOCK_MONOTONIC ns */
	uint32_t pid, tid;        /* packet context */
	uint64_t stream_id;       /* unique per stream file */
	/* RAW_PROCESS_START: comm and exe malloc'ed; the core takes them. */
	struct su_process proc;
	/* RAW_MAPS: malloc'ed with entries, paths and range_list (ranges
	 * not yet initialised); the core takes it. */
	struct su_maps *maps;
	/* RAW_DROPS: cumulative totals of thread drop_tid. */
	uint32_t drop_tid;
	uint64_t drops_total;
	/* RAW_SAMPLE*: */
	uint32_t generation;
	/* In a packet another part reads (su_reader_opts.parts): a
	 * RAW_SAMPLE is not decoded nor delivered, its thread starts anew
	 * (no blob, when the packet was skipped whole). */
	int others;
	const uint8_t *blob;
	size_t blob_len;
	/* RAW_SAMPLE: the index of its event in the trace's event table
	 * (version 4's event_sample; 0 for a `sample`). */
	uint32_t event;
	/* RAW_DISCARDED: */
	uint64_t discarded;
	/* RAW_RUNTIME (name valid during the call), RAW_RUNTIME_CODE (the
	 * strings and table valid during the call); RAW_RUNTIME_FRAMES uses
	 * blob/blob_len. */
	struct su_runtime runtime;
	struct su_rt_code rt_code;
	/* RAW_KERNEL_CHAIN: blob holds blob_len / 8 little-endian u64s.
	 * RAW_KERNEL_SYMBOLS: malloc'ed (su_kernel_free); the core takes it. */
	struct su_kernel *kernel;
	/* RAW_OFF_CPU: the time the thread stayed blocked. */
	uint64_t off_cpu_ns;
	/* Read in parts with a plan: the figures of its file (processes,
	 * ends, drops, discarded events) are another part's to count. */
	int uncounted;
};

typedef int (*raw_emit_fn)(void *ctx, const struct raw_event *ev);

/* What a source says of the files it read. */
struct source_report {
	const struct su_warn_hook *warn; /* where warnings go (NULL: nowhere) */
	int truncated_files;      /* files cut short or corrupt (warned) */
	uint64_t *bytes_read;     /* stream bytes consumed so far, kept up to date
				   * (progress), or NULL */
	unsigned part, parts;     /* su_reader_opts.part, parts, claims, n_claims */
	_Atomic uint64_t *claims;
	size_t n_claims;
	/* su_trace_packets_whole: another part's packet is skipped whole. */
	int packets_whole;
	struct su_order_key *order; /* su_reader_opts.order */
	struct su_parts_plan *plan; /* su_reader_opts.plan */
};

/* ---- the parts' plan (trace/parts-plan.h) ---------------------------------- */

#define PLAN_EVERY (-1) /* plan_file.owner: every part reads it (part 0 counts it) */

struct plan_file {
	char *name;
	uint64_t size;            /* sample stream files: bytes on disk when planned */
	int owner;                /* the part that reads it, or PLAN_EVERY */
	int has_pid;              /* PID read from the name */
	uint32_t pid;
};

struct su_parts_plan {
	unsigned parts;
	struct plan_file *files;  /* every name of the directory but metadata and dot files, sorted */
	size_t n;
	size_t n_samples;
	uint64_t sample_bytes;
	_Atomic uint64_t *claims; /* one a sample stream file, in name order (su_reader_opts.claims) */
	/* The meeting after the process streams (su_parts_plan_meet). */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned arrived;
	unsigned char *met;       /* one a part: it came to the meeting */
	int cancelled;
	struct su_kernel *kernel; /* the kernel symbols a part read, the plan's to free */
	unsigned kernel_events;   /* kernel symbol events all parts met */
	size_t sections;          /* process sections all parts met */
};

/* Part of PLAN, its process streams read: gives the kernel symbols it
 * read (*K, with N_EVENTS such events met; the plan takes them over) and
 * the process sections it counts (*SECTIONS), waits for every part, then
 * *K is the symbols any part read (the plan's: not to be freed) and
 * *SECTIONS all parts' sections.  @return the kernel symbol events all
 * parts met (more than one: the part cannot know which a whole read
 * would keep). */
unsigned su_parts_plan_meet(struct su_parts_plan *plan, unsigned part, struct su_kernel **k, unsigned n_events,
			    size_t *sections);

enum source_pass { PASS_PROCESS = 1, PASS_SAMPLES = 2 };

struct event_source {
	const char *name;
	/* Prepare DIR (absolute) into *H.  @return 0, or -errno with a message
	 * in ERR. */
	int (*open)(const char *dir, struct source_report *rep, void **h, char *err, size_t errlen);
	/* Emit every event of the process streams (PASS_PROCESS) or sample
	 * streams (PASS_SAMPLES) in time order.  @return 0, EMIT's nonzero
	 * return, or -errno with a message in ERR. */
	int (*run)(void *h, enum source_pass pass, raw_emit_fn emit, void *ctx, char *err, size_t errlen);
	void (*close)(void *h);
	/* The format has no process_end event (LTTng: a process's end is
	 * the session's), so a missing one means nothing. */
	int no_process_end;
	/* RUN is called once, with PASS_PROCESS | PASS_SAMPLES: the source
	 * emits process and maps events among the samples, holding a sample
	 * until reader_can_decode() says its maps are in (LTTng: decoding
	 * the trace twice was half of reading it). */
	int one_pass;
};

/* For a one_pass source, CTX being the core's (what RUN was given):
 * nonzero when sample EV (a RAW_SAMPLE*) has its process section and
 * maps generation, so that emitted now it is decoded; when runtime frames
 * RT name only code objects already described. */
int reader_can_decode(void *ctx, const struct raw_event *ev);
int reader_can_name_runtime(void *ctx, const struct raw_event *rt);

extern const struct event_source su_source_babeltrace2;
extern const struct event_source su_source_native;
extern const struct event_source su_source_lttng;

/* The reader core over any event source: DIR is the trace directory
 * (checked by the caller), the contract is su_stackcap_trace_read()'s. */
int su_reader_run_source(const char *dir, const struct event_source *src, const struct su_reader_opts *opts,
			 const struct su_reader_callbacks *cb, struct su_reader_stats *stats, char *err,
			 size_t errlen);

/* Unaligned loads in host order.  Every format we read (our CTF streams,
 * perf.data) is little-endian, as is every host we build for (x86-64). */
static inline uint16_t su_ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t su_ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t su_ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Shared helpers. */
/* A warning to hook W (NULL or no fn: dropped): control characters (from
 * recorded paths and names) are written as \xNN, never raw. */
void su_reader_warn(const struct su_warn_hook *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Open PATH, named by a trace, read-only: never blocks on a FIFO or device,
 * never becomes a controlling tty, adds FLAGS (O_NOFOLLOW for the files of
 * a trace directory).  @return an fd of a regular file, or -1 with errno
 * (ELOOP: a symlink under O_NOFOLLOW; EINVAL: not a regular file). */
int su_open_regular(const char *path, int flags);

/* trace-dir.c: a stackcap trace directory's own description. */
/* DIR/metadata names tracer "stackcap" and a version we read: 0, or
 * -EINVAL with MSG. */
int su_trace_check_metadata(const char *dir, char *msg, size_t msglen);
/* The event table of DIR's metadata (version 4): *OUT holds *N names, or
 * none.  0 or -ENOMEM. */
int su_trace_event_table(const char *dir, char ***out, size_t *n);
/* DIR's metadata says stackcap_packets_whole = 1 (docs/trace-format.md:
 * a sample's packet holds the events it comes with): 1, else 0. */
int su_trace_packets_whole(const char *dir);
/* The bytes of DIR's files, subdirectories included. */
uint64_t su_trace_dir_bytes(const char *dir);
/* Errors as layers (babeltrace2's causes, innermost first): the layer
 * that fails sets the cause with su_set_err(), and each layer it returns
 * through may put its own context before it with su_err_context().
 * su_set_err: the cause into ERR (ERRLEN bytes), unless ERR is NULL or
 * already holds one (the first cause is the one to tell). */
void su_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "CONTEXT: " before the message in ERR; when ERR holds none yet, the
 * cause is strerror(-RC).  Cut at ERRLEN (the innermost end goes first). */
void su_err_context(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void su_maps_free(struct su_maps *m);
/* Bytes of the complete packets at the start of the plain stream file FD
 * of SIZE bytes (stops at the first cut or malformed packet). */
uint64_t su_ctf_complete_packets(int fd, uint64_t size);

#endif
