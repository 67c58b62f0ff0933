/* SPDX-License-Identifier: MIT */
/* The ordered parallel pipeline of `stackunwind`: the reader thread decodes
 * each sample (in time order: a blob may refer to the previous sample of
 * its thread) and puts what unwinding it needs (registers, chains, the
 * stack: whole, or the words below the top it shares with the thread's
 * image before it in the batch) into a batch; batches are rebuilt,
 * unwound and formatted (symbolizing is the costly part) by
 * N workers, each with its own context (elfutils 0.188 is not
 * thread-safe), and by the reader thread itself whenever the ring of
 * batches is full; their texts are emitted in sample order, so the output
 * of any -j is byte-identical to -j 1.  With no worker, the reader thread
 * unwinds and formats each sample itself, into one buffer. */
#ifndef STACKCAP_CLI_PIPELINE_H
#define STACKCAP_CLI_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "export/text.h"
#include "trace/trace-model.h"
#include "unwind/unwind.h"

/* What a worker needs to format one unwound sample. */
struct pipeline_sample {
	const struct su_process *process;
	const struct su_maps *maps;
	uint32_t pid, tid;
	uint64_t time_ns;
	uint64_t off_cpu_ns;     /* su_sample.off_cpu_ns */
	uint32_t nframes;
	uint8_t end;             /* enum su_unwind_end */
	const char *event;       /* su_sample.event: valid until the read ends */
};

/* Unwind sample S with context CTX: *FRAMES (owned by CTX, valid until
 * its next call) and how the unwind ended.  @return the frames. */
typedef size_t pipeline_unwind_fn(void *ctx, const struct su_sample *s, const struct su_frame **frames,
				  enum su_unwind_end *end);
/* Format sample S (its FRAMES, innermost first) with context CTX, appending
 * to OUT (out of memory: OUT->oom). */
typedef void pipeline_format_fn(void *ctx, const struct pipeline_sample *s, const struct su_frame *frames,
				struct text *out);
/* Take the text of finished samples, in sample order (the reader thread):
 * T's bytes, and with pipeline_emit_by_ref() the bytes it refers to (its
 * references are let go after).  @return 0 or -errno. */
typedef int pipeline_emit_fn(void *arg, const struct text *t);

struct pipeline;

/* A pipeline for N_WORKERS threads, worker I working with WORKER_CTX[I]
 * and the caller's thread with DIRECT_CTX.  The caller's thread works the
 * samples alone until pipeline_start() (on a short trace, starting
 * threads and warming their caches costs more than they give).  NULL with
 * errno set when out of memory. */
struct pipeline *pipeline_new(unsigned n_workers, void *const *worker_ctx, void *direct_ctx,
			      pipeline_unwind_fn *unwind, pipeline_format_fn *format, pipeline_emit_fn *emit,
			      void *emit_arg);

/* Start the workers (the samples worked so far emitted first): 0, or
 * -errno when none could start (the caller's thread then goes on alone;
 * with N_WORKERS 0: 0, nothing to start). */
int pipeline_start(struct pipeline *p);

/* The emit function writes texts out with their references (text_write):
 * the formats may put shared text into them by reference.  Before the
 * first sample. */
void pipeline_emit_by_ref(struct pipeline *p);

/* Nonzero while batches hold samples (the workers started): what the
 * samples point to must then last until the pipeline lets go of them
 * (su_reader_opts.holding points here). */
const int *pipeline_holding(const struct pipeline *p);

/* Add sample S (what it points to need only last this call).  @return 0
 * or -errno (out of memory, or formatting or emitting failed). */
int pipeline_add(struct pipeline *p, const struct su_sample *s);

/* The same, its text dropped when MUTE (still unwound and formatted:
 * what the formats count counts it). */
int pipeline_add_muted(struct pipeline *p, const struct su_sample *s, int mute);

/* Unwind and format S with the caller's context into OUT, now (stacks
 * read in parts, cli/ordered.h: a pipeline without workers). */
void pipeline_work_into(struct pipeline *p, const struct su_sample *s, struct text *out);

/* Emit every sample added, stop the workers.  @return 0 or -errno. */
int pipeline_finish(struct pipeline *p);

/* The samples added will not be finished (the read stopped early): the
 * workers stop once their batch in work is done, before what the samples
 * point to is freed (su_reader_callbacks.stop); the rest are dropped, no
 * more text is emitted, and no sample may be added after. */
void pipeline_abort(struct pipeline *p);

/* Stop the workers (if still running) and free P. */
void pipeline_free(struct pipeline *p);

#endif
