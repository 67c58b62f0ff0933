/* SPDX-License-Identifier: MIT */
/* The ordered parallel pipeline of `stackunwind`: the reader thread decodes
 * and unwinds each sample (in time order: a blob may refer to the previous
 * sample of its thread; unwinding is cheap with the cached CFI rules) and
 * adds its frames; N workers format batches of samples (symbolizing is the
 * costly part), each with its own context (elfutils 0.188 is not
 * thread-safe); the batches' texts are emitted in sample order, so the
 * output of any -j is byte-identical to -j 1.  A batch carries frames, not
 * stack images, so nothing big is copied.  With no worker, the reader
 * thread formats each sample itself, into one buffer. */
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
	size_t frame_off;        /* in the batch's frame arena */
	const char *event;       /* su_sample.event: valid until the read ends */
};

/* Format sample S (its FRAMES, innermost first) with context CTX, appending
 * to OUT (out of memory: OUT->oom). */
typedef void pipeline_format_fn(void *ctx, const struct pipeline_sample *s, const struct su_frame *frames,
				struct text *out);
/* Take the text of finished samples, in sample order (the reader thread).
 * @return 0 or -errno. */
typedef int pipeline_emit_fn(void *arg, const char *buf, size_t len);

struct pipeline;

/* A pipeline with N_WORKERS threads, worker I formatting with WORKER_CTX[I];
 * with none, the caller's thread formats with DIRECT_CTX.  NULL with errno
 * set when out of memory or a thread cannot start. */
struct pipeline *pipeline_new(unsigned n_workers, void *const *worker_ctx, void *direct_ctx,
			      pipeline_format_fn *format, pipeline_emit_fn *emit, void *emit_arg);

/* Add the N FRAMES of sample S, which ended with END.  @return 0 or -errno
 * (formatting or emitting failed). */
int pipeline_add(struct pipeline *p, const struct su_sample *s, const struct su_frame *frames, size_t n,
		 enum su_unwind_end end);

/* Emit every sample added, stop the workers.  @return 0 or -errno. */
int pipeline_finish(struct pipeline *p);

/* Stop the workers (if still running) and free P. */
void pipeline_free(struct pipeline *p);

#endif
