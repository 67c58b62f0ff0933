/* SPDX-License-Identifier: MIT */
/*
 * encode.h: samples of the trace model written as a stackcap trace.
 *
 * The one path from a sample with its raw stack words (perf's ring
 * buffers live, or a perf.data file) to the trace the capture library
 * writes: each stack classified against its maps generation with policy
 * F2 (code pointers and pointers into the copied stack survive, every
 * other word is 0), encoded with the codec against the previous sample of
 * its thread (top-elided delta), written by the CTF writer.  Per process
 * section one process stream (process_start, each maps generation when
 * the first sample needing it comes, drops, process_end) and one sample
 * stream per thread.  Used by `stackcap record` (record/recorder.c) and
 * `stackcap convert` (cli/convert.c).
 */
#ifndef STACKCAP_RECORD_ENCODE_H
#define STACKCAP_RECORD_ENCODE_H

#include <stdint.h>
#include "capture/ctf-writer.h"
#include "trace/stackcap-reader.h" /* su_warn_hook */
#include "trace/trace-model.h"

struct rec_encoder;

struct rec_encoder_opts {
	/* Also write each stack unfiltered (ctf_stream_sample_full): for
	 * measuring fidelity only, it keeps every stack word. */
	int full_copy;
	/* End every section at rec_encoder_finish (a recording that stopped
	 * cleanly); 0: only those whose process was seen ending. */
	int end_all;
	/* The processes are live on this machine (stackcap record, not
	 * convert): their files are opened as they see them
	 * (record/proc-files.h), through /proc/PID. */
	int live;
	/* Recording live, a file a process maps that is not at its path
	 * here (a container's, a deleted one): open at FD (its build-id
	 * ID), for a copy the reader finds (record/keep-binaries.h); FD -1:
	 * it could not be opened (its process gone), counted as not kept.
	 * NULL: none kept. */
	void (*keep)(void *arg, int fd, const uint8_t *id, size_t len);
	void *keep_arg;
	/* Process PID has JIT code (an anonymous executable mapping in maps
	 * written), OTHER_VIEW rec_proc_other_view's (not live: -1): its
	 * perf map for the trace (record/keep-jit-maps.h).  Told again at
	 * its next maps written with such code until it returns 1.  NULL:
	 * none kept. */
	int (*jit)(void *arg, uint32_t pid, int other_view);
	void *jit_arg;
	/* Words kept (enum stackcap_policy): 0 is F2. */
	int policy;
	/* Keep each sample's kernel call chain (the writer declares the
	 * kernel events: ctf_writer_opts.kernel_frames), and at the end the
	 * kernel symbols covering them (this machine's /proc/kallsyms). */
	int kernel_frames;
	/* The trace's event table (the writer's ctf_writer_opts.events):
	 * each sample is written with the index of its su_sample.event
	 * (compared as strings; a name not in the table: the first).  0: no
	 * table. */
	const char *const *events;
	size_t n_events;
	/* Warnings (kernel symbols not recorded); zeroed: none. */
	struct su_warn_hook warn;
	/* Called when a section has ended, with its process: nothing of P
	 * (its maps) is used again (a live stream frees them:
	 * su_perf_stream_release).  NULL: none. */
	void (*released)(void *arg, const struct su_process *p);
	void *released_arg;
};

/* What was written, per process (pid; the sections of one pid summed). */
struct rec_proc_stats {
	uint32_t pid;
	char comm[32];
	uint64_t samples, capped; /* capped: the copy filled the window */
	uint64_t lost, throttled;
};

struct rec_encoder_stats {
	uint64_t samples, blob_bytes, raw_stack_bytes;
	uint64_t no_user;    /* samples without user state: not written */
	uint64_t chain_only; /* a call chain but no stack (perf -g): not written */
	uint64_t lost, throttled;
	uint64_t kernel_samples;  /* samples with a kernel call chain */
	uint64_t kernel_symbols, kernel_symbol_bytes; /* what the trace holds */
	uint64_t off_cpu_samples;    /* off-CPU stacks written (counted in samples too) */
	uint64_t off_cpu_ns;         /* their blocked time */
	uint64_t off_cpu_preempted;  /* switched out while runnable: not off-CPU, left out */
	uint64_t off_cpu_unfinished; /* still blocked at the end: counted until then */
	uint64_t off_cpu_unpaired;   /* a switch record lost (ring full): the stack left out */
	uint64_t off_cpu_unwritable; /* held over its thread's previous sample, which its packet no longer holds: left out */
	uint64_t after_end;          /* samples of a process section already ended (its process exited): left out */
	size_t n_procs;
	const struct rec_proc_stats *procs; /* valid until rec_encoder_free */
	const uint64_t *event_samples;      /* per event of the table (n_events), or NULL */
};

/* W stays the caller's (closed after rec_encoder_free). */
int rec_encoder_new(struct ctf_writer *w, const struct rec_encoder_opts *o, struct rec_encoder **out);

/* One sample: 0 or -errno. */
int rec_encoder_sample(struct rec_encoder *e, const struct su_sample *s);

/* N samples of PID lost (ring full), or one throttling of PID's event
 * (THROTTLED): counted, written as the section's drops at the end.
 * PID UINT32_MAX: unknown (counted on the first process).  0 or -errno. */
int rec_encoder_lost(struct rec_encoder *e, uint32_t pid, uint64_t n, int throttled);

/* A process section began at TS (exec, fork, first seen): its process
 * stream is written now (a recording of one command tree writes every
 * process, as the in-process hook does; -a only those sampled). */
int rec_encoder_process(struct rec_encoder *e, const struct su_process *p, uint64_t ts);

/* Off-CPU time (stackcap record --off-cpu).  S is a stack taken as its
 * thread was switched out (the context-switch event, named in the event
 * table like any other when the trace has one): encoded now, held until
 * rec_encoder_switch says what the switch was.  0 or -errno. */
int rec_encoder_hold(struct rec_encoder *e, const struct su_sample *s);

/* A context switch of PID/TID at TIME (OUT, else in; PREEMPTED: out while
 * runnable).  A held stack is dropped when its thread was preempted, and
 * written when the thread runs again, with the time it stayed blocked
 * (an off_cpu event before the sample; docs/trace-format.md "Version 5").
 * A thread still blocked at rec_encoder_finish counts until then. */
int rec_encoder_switch(struct rec_encoder *e, uint32_t pid, uint32_t tid, uint64_t time, int out, int preempted);

/* Thread TID of PID ended at TS: its sample stream takes the next new
 * thread of the process.  PID == TID: the process ended; its section
 * ends at the second rec_encoder_flush after (process_end written, its
 * streams closed: a recording of a whole machine would otherwise hold two
 * files open per process it ever sampled).  0 or -errno. */
int rec_encoder_thread_exit(struct rec_encoder *e, uint32_t pid, uint32_t tid, uint64_t ts);

/* Put every packet in flight on disk (the recorder, every 250 ms: what is
 * recorded reaches the disk while the program runs); the sample streams'
 * stay open (ctf_stream_sync).  0 or -errno. */
int rec_encoder_flush(struct rec_encoder *e);

/* Drops, ends; TS the last time of the recording (0: the last sample's). */
int rec_encoder_finish(struct rec_encoder *e, uint64_t ts);

void rec_encoder_get_stats(const struct rec_encoder *e, struct rec_encoder_stats *st);

/* Close every stream (0 or the first error) and free. */
int rec_encoder_free(struct rec_encoder *e);

#endif
