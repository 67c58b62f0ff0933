/* SPDX-License-Identifier: MIT */
/*
 * recorder.h: `stackcap record`'s kernel sampler.  The recorder is a
 * process beside the traced ones: the kernel copies registers and a stack
 * window into per-CPU ring buffers at each sample (perf events), the
 * recorder drains them, classifies and encodes each stack (record/encode.h)
 * and writes the same trace as the in-process hook.  Raw stack bytes stay
 * in its memory, never on disk.
 */
#ifndef STACKCAP_RECORD_RECORDER_H
#define STACKCAP_RECORD_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* rec_record's return when perf events are refused before anything ran
 * (perf_event_paranoid): the caller may use the in-process sampler. */
#define REC_REFUSED (-1000)
/* rec_record's return when it failed before anything was recorded (the
 * reason said): the caller exits 1 and keeps no trace. */
#define REC_FAILED (-1001)

struct rec_options {
	const char *out;          /* trace directory: exists, empty */
	uint32_t freq;            /* Hz of CPU time */
	uint32_t stack_size;      /* bytes copied from sp, 8..REC_STACK_MAX */
	int policy;               /* enum stackcap_policy */
	int zstd, full_copy;
	int user_only;            /* no kernel frames (else kept where kernel addresses are readable) */
	int off_cpu;              /* also where threads block and for how long (record/offcpu.h) */
	const pid_t *pids;        /* -p: processes to attach to */
	size_t n_pids;
	const pid_t *tids;        /* -t: threads to attach to */
	size_t n_tids;
	int all;                  /* -a: every process */
	char **argv;              /* command to run (and record unless -p/-t/-a), or NULL */
	const char *const *events; /* -e: what to sample on (record/events.h); none: cpu-clock */
	size_t n_events;
	uint64_t period;          /* -c: events per sample (0: software events at FREQ Hz,
				   * tracepoints and probes at every hit) */
	uint8_t uuid[16];         /* trace identity and clock offset */
	int64_t clock_offset_ns;
	/* Where the recorder's messages go (errors, notes, warnings, the
	 * summary): each one line, without a newline, that the caller prints
	 * after its "PROG: " (cli_print_stderr).  NULL: none.  Called from
	 * the forked command too (its exec failed). */
	void (*say)(void *arg, const char *line);
	void *say_arg;
};

/* Record as O says; says errors and a summary through o->say.  @return
 * the command's exit status (or 0 with no command), 1 on an error while
 * recording (said; the trace holds what came before), REC_FAILED, or
 * REC_REFUSED (nothing said, nothing run) when perf events are not
 * permitted here and O asks for a command only. */
int rec_record(const struct rec_options *o);

#endif
