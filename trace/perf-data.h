/* Reading perf.data files (`perf record --call-graph dwarf`) into the same
 * sample model as a stackcap trace: processes from COMM/FORK/EXIT, maps
 * generations from MMAP/MMAP2, samples from REGS_USER + STACK_USER
 * (docs/perf-data.md).  A file (mapped), pipe mode (`perf record -o -`,
 * read front to back, from standard input as "-") or a directory
 * (`perf record --threads`); samples are delivered in perf's order (time,
 * FINISHED_ROUND flushing), with memory bounded by one round of events,
 * never the file length (a directory's events are all sorted at the end,
 * as perf does: its files stay mapped until then). */
#ifndef STACKCAP_PERF_DATA_H
#define STACKCAP_PERF_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "trace/stackcap-reader.h"

/* Nonzero when PATH is a regular file starting with perf's magic, or a
 * directory whose `data` is one (perf record --threads). */
int su_perf_data_probe(const char *path);

/* Read the perf.data file PATH with su_stackcap_trace_read()'s contract:
 * callbacks in time order; 0 when all was read, >0 when some of it could
 * not be (warnings through opts->warn, the readable part delivered), a callback's
 * nonzero return, or <0 with a message in ERR when nothing can be read
 * (not a perf.data file, pipe mode, other byte order, damaged header or
 * attributes).  opts->source is ignored. */
int su_perf_data_read(const char *path, const struct su_reader_opts *opts,
		      const struct su_reader_callbacks *cb,
		      struct su_reader_stats *stats, char *err, size_t errlen);

/* The same on an open file descriptor (the fuzz target's entry). */
int su_perf_data_read_fd(int fd, const char *name, const struct su_reader_opts *opts,
			 const struct su_reader_callbacks *cb,
			 struct su_reader_stats *stats, char *err, size_t errlen);

/* ---- a live stream: records straight from perf's ring buffers ------------
 * The same record handling on whole records fed in memory (stackcap
 * record's kernel sampler, record/): one event attribute, records fed
 * ring after ring, each pass over the rings closed by a round (perf's
 * FINISHED_ROUND: events delivered in time order up to what every ring
 * has passed).  Records are copied: the caller's buffer is free at once;
 * memory holds one round. */
struct su_perf_stream;

/* What a live stream tells besides the model (cb->arg is their ARG).
 * Each may be NULL; a nonzero return stops the stream. */
struct su_perf_stream_callbacks {
	/* LOST (N samples lost, THROTTLED 0) or THROTTLE (N 0, THROTTLED 1)
	 * records, with the pid and tid of their sample_id (UINT32_MAX when
	 * it has none). */
	int (*lost)(void *arg, uint32_t pid, uint32_t tid, uint64_t n, int throttled);
	/* A thread (or, TID == PID, a process) ended, after its last sample. */
	int (*exit)(void *arg, uint32_t pid, uint32_t tid);
	/* Where the stream's warnings go (zeroed: none). */
	struct su_warn_hook warn;
	/* A context switch of PID/TID at TIME (PERF_RECORD_SWITCH: events
	 * opened with context_switch): switched in, or OUT; PREEMPTED: out
	 * while still runnable (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT). */
	int (*context_switch)(void *arg, uint32_t pid, uint32_t tid, uint64_t time, int out, int preempted);
	/* Whether process PID still runs a thread now.  Asked at its main
	 * thread's EXIT when threads it started have not ended in the stream
	 * and records were lost (LOST): 0 ends it then (their EXIT records
	 * may be among them), where a process whose main thread left by
	 * pthread_exit goes on.  NULL: trust the stream. */
	int (*process_alive)(void *arg, uint32_t pid);
};

/* ATTR: the struct perf_event_attr the events were opened with (ATTR_LEN
 * bytes).  CB as for su_perf_data_read; LIVE may be NULL.  @return 0 or
 * -errno. */
int su_perf_stream_new(const void *attr, size_t attr_len, const struct su_reader_callbacks *cb,
		       const struct su_perf_stream_callbacks *live, struct su_reader_stats *stats,
		       struct su_perf_stream **out);
/* Several events in one stream (stackcap record -e): each event's ATTR
 * and NAME (kept by the caller while the stream lives; the first call
 * names the attr of su_perf_stream_new and returns 0, the next ones add
 * an attr and return its index), then every event id (PERF_EVENT_IOC_ID)
 * with the index of its attr: a sample is told by its id (the attrs carry
 * PERF_SAMPLE_IDENTIFIER when there are several) and delivered with its
 * attr's name as su_sample.event.  @return the index or -errno. */
int su_perf_stream_add_event(struct su_perf_stream *s, const void *attr, size_t attr_len, const char *name);
int su_perf_stream_add_id(struct su_perf_stream *s, uint64_t id, size_t index);
/* Whole records (LEN bytes).  @return 0, a callback's nonzero return, or
 * -EINVAL when a record is damaged or cut (the rest of BUF is ignored). */
int su_perf_stream_feed(struct su_perf_stream *s, const uint8_t *buf, size_t len);
/* The same without a copy: LEN bytes to fill (NULL: out of memory), then
 * committed (the first LEN2 <= LEN of them). */
uint8_t *su_perf_stream_reserve(struct su_perf_stream *s, size_t len);
int su_perf_stream_commit(struct su_perf_stream *s, size_t len2);
int su_perf_stream_round(struct su_perf_stream *s);
/* The stack bytes a sample holds at most: the attr's window, or less when
 * the kernel cuts it to fit a record (65,320 with every user register). */
uint32_t su_perf_stream_stack_cap(const struct su_perf_stream *s);
/* The time of the record being delivered (in a callback). */
uint64_t su_perf_stream_time(const struct su_perf_stream *s);
/* The consumer is done with P, a process of this stream (its process
 * ended and nothing more of it is wanted): its maps generations and
 * mappings are freed (a recording of a whole machine would otherwise keep
 * those of every process it met); P itself stays valid until
 * su_perf_stream_free.  A later sample of it would come with maps built
 * anew, empty. */
void su_perf_stream_release(struct su_perf_stream *s, const struct su_process *p);
/* Every queued record delivered, then cb->end. */
int su_perf_stream_end(struct su_perf_stream *s);
void su_perf_stream_free(struct su_perf_stream *s);

#endif
