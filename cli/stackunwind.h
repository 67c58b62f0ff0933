/* SPDX-License-Identifier: MIT */
/* stackunwind's options, shared by its parts: stackunwind.c (options,
 * commands), worker.c (each thread's modules and counts), format.c (the
 * per-sample formatters), stats.c (`stats`), over pipeline.c. */
#ifndef STACKCAP_CLI_STACKUNWIND_H
#define STACKCAP_CLI_STACKUNWIND_H

#include <stddef.h>
#include <stdio.h>
#include "trace/trace-read.h"
#include "debuginfo/module.h"
#include "unwind/unwind.h"
#include "export/flamegraph.h"
#include "export/folded.h"
#include "cli/report.h"

#define PROG "stackunwind"
#define MAX_FRAMES 1024         /* --max-frames's default */
#define MAX_FRAMES_S "1024"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3 };
enum { EXPORT_SPEEDSCOPE = 1, EXPORT_PPROF };

struct options {
	const char *command;
	const char *trace;
	const char *name;        /* TRACE as messages and titles name it ("-": standard input) */
	struct su_reader_opts filter;
	unsigned jobs;
	enum su_unwinder_kind unwinder;
	const char **debug_dirs;
	size_t n_debug_dirs;
	struct su_debuginfo_opts di;
	const char *jit_dir;     /* TRACE/jit: the JIT maps the recording kept (record/keep-jit-maps.h), or NULL */
	size_t max_frames;
	int folded;              /* `folded`: aggregate stacks instead of listing samples */
	int roots;               /* folded root: 0 comm, 1 comm-pid, 2 comm-pid/tid */
	int no_inline;           /* folded, flamegraph, export: real functions only */
	int flamegraph;          /* `flamegraph`: folded, each frame with its module, drawn */
	int report;              /* `report`: folded, each frame with its module, tabulated */
	int archive;             /* `archive`: folded's reading, the modules it opened copied into the trace */
	struct report_opts rep;
	struct folded_opts fold; /* folded, flamegraph: the line (from the three above) */
	struct flame_opts flame;
	int export_format;       /* export: EXPORT_SPEEDSCOPE or EXPORT_PPROF */
	const char *output;      /* flamegraph, export: -o FILE */
	/* --time +START,+END: seconds after the first sample read (ns); a
	 * side given so is not in FILTER.  REL: bit 0 START, bit 1 END. */
	unsigned time_rel;
	uint64_t rel_begin, rel_end;
	/* --time A%-B%,... or A%/N,...: perf's slices of the trace's span (first
	 * to last sample), as fractions; WINDOWS are their times (ns, both
	 * ends in), known after a first read of the sample times. */
	struct time_slice { double a, b; uint64_t begin, end; } *slices;
	size_t n_slices;
	/* --event NAME: only samples of that event (su_sample_event), or NULL. */
	const char *event;
	/* Off-CPU stacks (stackcap record --off-cpu): OFF_CPU_CPU: folded and
	 * flamegraph count CPU samples only, stacks and export show both;
	 * OFF_CPU_ONLY (--off-cpu): only them, weighed by their blocked time;
	 * OFF_CPU_WITH (--with-off-cpu): both, weighed by time (a CPU sample:
	 * its sampling period), off-CPU frames marked (FOLDED_OFF_CPU_MARK). */
	enum { OFF_CPU_CPU = 0, OFF_CPU_ONLY, OFF_CPU_WITH } off_cpu;
	int weigh;               /* folded, flamegraph: counts are microseconds */
};

/* Is NAME one of the commands (cli/help.c's table)? */
int stackunwind_is_command(const char *name);

/* --help: every command, or COMMAND's alone (cli/help.c). */
void stackunwind_usage(FILE *f, const char *command);

/* `stackunwind stats`: sizes, savings, drops, fidelity.  @return the exit status. */
int cmd_stats(const struct options *o);

#endif
