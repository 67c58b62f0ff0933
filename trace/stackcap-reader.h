/* Reading a stackcap trace (docs/trace-format.md), plain or --zstd, into the
 * trace model, through our own parser of the stream files (default) or
 * babeltrace2's src.ctf.fs (the reference, su_reader_opts.source).
 * Events are streamed in time order (a k-way merge): memory stays
 * bounded by the number of threads and maps generations, never by the
 * trace length. */
#ifndef STACKCAP_STACKCAP_READER_H
#define STACKCAP_STACKCAP_READER_H

#include <stdatomic.h>
#include <stdint.h>
#include "trace/trace-model.h"

struct su_reader_callbacks {
	void *arg;
	/* Each may be NULL.  A nonzero return stops reading and is returned. */
	int (*process_start)(void *arg, const struct su_process *proc);
	int (*maps)(void *arg, const struct su_process *proc, const struct su_maps *maps);
	int (*sample)(void *arg, const struct su_sample *sample);
	/* After the last sample, while every process and maps is still valid
	 * (a consumer holding samples finishes them here). */
	int (*end)(void *arg);
	/* The read stops before its end (an error, or a nonzero return of a
	 * callback): called before what samples point to (processes, maps,
	 * words) is freed, so that a consumer holding samples lets go of
	 * them (the -j pipeline stops its workers).  Never after END. */
	void (*stop)(void *arg);
	/* Before the first sample, when the trace names the files its
	 * samples hit (a perf.data file's build-id table): their N
	 * build-ids (IDS[i]'s first LENS[i] bytes), for a consumer to
	 * prepare (their debug files).  Called at most once. */
	int (*hit_files)(void *arg, const uint8_t (*ids)[SU_BUILD_ID_MAX], const uint8_t *lens, size_t n);
	/* Thread TID of PID (TID == PID: the process) ended at TIME, after
	 * its last sample: a perf.data file's EXIT records (our traces say
	 * it with process_end).  NULL: not told. */
	int (*thread_exit)(void *arg, uint32_t pid, uint32_t tid, uint64_t time);
};

struct su_reader_stats {
	uint64_t samples;           /* delivered */
	uint64_t bad_blobs;         /* samples whose blob did not decode (skipped) */
	uint64_t no_maps;           /* samples naming an unknown generation (delivered, maps NULL) */
	uint64_t no_process;        /* samples of a pid with no process_start (delivered) */
	uint64_t drops;             /* capture-side drops (latest drops events, all threads) */
	uint64_t discarded;         /* events the writer lost (CTF events_discarded) */
	uint64_t processes;
	uint64_t ended;             /* processes with a process_end event */
	uint64_t unended;           /* killed: no process_end and no later image (exec) */
	uint64_t bytes_on_disk;     /* all files of the trace directory */
	uint64_t bytes_read;        /* stream-file bytes read so far, growing during the
				     * read (a progress meter against bytes_on_disk;
				     * the native source only, 0 with babeltrace2) */
	uint64_t blob_bytes;        /* sum of sample blob sizes */
	uint64_t raw_stack_bytes;   /* sum of 8 * nwords over samples (what raw copies would take) */
	uint64_t full_samples;      /* samples carrying an unfiltered copy */
	uint64_t no_user_regs;      /* perf.data: samples without user state (unwound to no-user) */
	uint64_t chain_only;        /* perf.data: samples with a user call chain, no stack (perf record -g) */
	int truncated_files;        /* stream files cut short or corrupt (zstd frames, partial packets) */
};

/* Where a reader's warnings go (libbpf's print hook, but per reader, set
 * in the options a read is opened with): something of the trace is
 * damaged or unreadable and reading goes on.  MSG is one line without a
 * newline, its control characters written as \xNN (recorded paths and
 * names may hold terminal escapes); ARG is the hook's.  FN NULL: warnings
 * are dropped.  The tools install one: cli/ prints "PROG: warning: MSG"
 * (cli_warn_stderr), the babeltrace2 plugin logs it as its component's
 * warning. */
struct su_warn_hook {
	void (*fn)(void *arg, const char *msg);
	void *arg;
};

/* Where a sample of our traces stands in the order of a whole read: the
 * merge of the sample stream files by time, then by stream (instance id,
 * then file name: FILE), then where in its file (PACKET, AT).  Each
 * file's events never go back in time (the reader checks), so a read in
 * parts delivers each part's samples in this order too, and the whole
 * read's order is theirs merged (stackunwind stacks -j N,
 * cli/ordered.h). */
struct su_order_key {
	uint64_t time, instance, file, packet, at;
};

static inline int su_order_before(const struct su_order_key *a, const struct su_order_key *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	if (a->instance != b->instance)
		return a->instance < b->instance;
	if (a->file != b->file)
		return a->file < b->file;
	if (a->packet != b->packet)
		return a->packet < b->packet;
	return a->at < b->at;
}

struct su_reader_opts {
	/* Only deliver samples of this pid/tid (0: all). */
	uint32_t pid, tid;
	/* Only samples with begin <= time <= end (end 0: no limit). */
	uint64_t time_begin, time_end;
	/* No kernel frames: samples are delivered without their kernel call
	 * chains (stackunwind --user-only). */
	int user_only;
	/* Which parser reads the stream files. */
	enum su_reader_source {
		SU_READER_DEFAULT = 0,
		SU_READER_NATIVE,      /* ours: the format we write, fast */
		SU_READER_BABELTRACE2, /* babeltrace2's src.ctf.fs: the reference */
	} source;
	/* Warnings (zeroed: none). */
	struct su_warn_hook warn;
	/* Where this machine's kernel symbols are kept between runs, for
	 * perf.data files (su_kallsyms_read_cached), or NULL: read
	 * /proc/kallsyms each time. */
	const char *kernel_cache_dir;
	/* The consumer keeps pointers to the words of images delivered with
	 * su_sample.words_stay a while (the -j pipeline, until a worker
	 * unwinds them): a perf.data reader gives the pages it has read back
	 * only 64 MiB behind, not at once. */
	int holds_words;
	/* With HOLDING, the consumer holds words only while *HOLDING is
	 * nonzero (it sets it in its callbacks, on the reader's thread: the
	 * -j pipeline once its workers start); the pages of samples delivered
	 * before then may be given back at once. */
	const int *holding;
	/* Our traces (the native source) read as one of PARTS parts at once
	 * (PARTS 0 or 1: whole): of each sample stream file only the samples
	 * of some packets are decoded and delivered (a packet's samples
	 * decode alone: docs/trace-format.md).  Of another part's packet
	 * only the events after its last sample are delivered (they may go
	 * with the next packet's first sample): what comes before a sample
	 * goes with it.
	 * With CLAIMS (N_CLAIMS counters, zeroed, shared by the parts: one a
	 * sample stream file, in name order), a part takes each packet no
	 * other part took before it got there: the faster takes more; a
	 * file of 16 KB or less is taken whole, by the part its index in
	 * the name order gives (modulo PARTS).
	 * Without, those whose index in the file is PART modulo PARTS. */
	unsigned part, parts;
	_Atomic uint64_t *claims;
	size_t n_claims;
	/* Or with PLAN (trace/parts-plan.h, made for PARTS parts; it holds
	 * the claims): a small process's files are one part's, never opened
	 * by the others, and the figures of su_reader_stats from the process
	 * streams (processes, ended, unended, drops, discarded) are each
	 * counted by one part: the parts' sum is the trace's.  Without a
	 * plan they are every part's (part 0's are the trace's). */
	struct su_parts_plan *plan;
	/* su_reader_stats.bytes_on_disk not wanted (no progress line to
	 * show it): left 0, a stat of every file of the trace saved (430 of
	 * them on a 214-process trace, ~1 ms). */
	int no_dir_bytes;
	/* A perf.data reader may map the file's pages ahead of it on a thread
	 * of its own (trace/perf-ahead.h): the consumer has a core to spare
	 * (stackunwind -j N > 1). */
	int map_ahead;
	/* Our traces (the native source): each sample's place in the whole
	 * read's order, written here before it is delivered (NULL: not). */
	struct su_order_key *order;
};

/* Nonzero when DIR looks like a stackcap trace (metadata naming tracer stackcap). */
int su_stackcap_trace_probe(const char *dir);

/* Which sampler recorded the trace in DIR: its metadata's
 * env.stackcap_sampler ("kernel": stackcap record's kernel copy), or
 * "in-process" when it names none (the capture library).  @return 1 when
 * named, 0 when not. */
int su_stackcap_trace_sampler(const char *dir, char *buf, size_t len);

/* Read the trace in DIR, calling CB in time order.  @return 0 when the
 * whole trace was read, a positive value when some of it could not be
 * (warnings through opts->warn; what was readable was delivered), a
 * callback's nonzero return, or -errno on a fatal error with a message in
 * ERR: its cause, each layer's context before it ("DIR: FILE: cause"). */
int su_stackcap_trace_read(const char *dir, const struct su_reader_opts *opts,
			   const struct su_reader_callbacks *cb,
			   struct su_reader_stats *stats,
			   char *err, size_t errlen);


#endif
