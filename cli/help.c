/* SPDX-License-Identifier: MIT */
/* stackunwind's --help, from one table: each option with the commands it
 * goes with, so that each command's synopsis names every option its list
 * has (tests/report.sh checks it) and `stackunwind COMMAND --help` shows
 * that command's alone. */
#include <stdio.h>
#include <string.h>

#include "cli/stackunwind.h"

enum {
	C_STACKS = 1, C_FOLDED = 2, C_FLAME = 4, C_REPORT = 8, C_STATS = 16, C_EXPORT = 32, C_ARCHIVE = 64,
	C_ALL = 127, C_READ = C_STACKS | C_FOLDED | C_FLAME | C_REPORT | C_EXPORT | C_ARCHIVE,
};

static const struct command_doc {
	const char *name;
	unsigned bit;
	const char *text;
} commands[] = {
	{ "stacks", C_STACKS, "every sample as a header (comm pid/tid time) and one frame per line\n"
			      "(address, symbol+offset, module, file:line), like perf script" },
	{ "folded", C_FOLDED, "one line per distinct stack, 'comm;outermost;...;leaf COUNT', sorted:\n"
			      "the input of flamegraph.pl and speedscope" },
	{ "flamegraph", C_FLAME, "the folded stacks as one interactive SVG (no network needed):\n"
				 "hover for details, click to zoom, Search/Ctrl-F, colour by module" },
	{ "report", C_REPORT, "perf report's table: per function (or module) Children, the share of\n"
			      "samples whose stack holds it, and Self, the share where it is the\n"
			      "innermost frame; or the call tree of the hottest paths (--tree)" },
	{ "stats", C_STATS, "samples, bytes on disk and per sample, bytes the codec saved, drops,\n"
			    "and fidelity when the trace carries full stack copies" },
	{ "export", C_EXPORT, "a profile file: speedscope JSON (one sampled profile per thread) or\n"
			      "pprof (gzipped profile.proto); docs/export.md says what goes where" },
	{ "archive", C_ARCHIVE, "copy into the trace (TRACE/debug) the binaries and debug files its\n"
				"samples' frames need, by build-id, as perf archive: the trace then\n"
				"reads the same on any machine" },
};

int stackunwind_is_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return 1;
	return 0;
}

static const struct option_doc {
	unsigned cmds;       /* the commands it goes with */
	unsigned required;   /* ... and those that need it */
	const char *syn;     /* in the synopsis */
	const char *list;    /* the list's left column */
	const char *text;    /* its lines */
} options[] = {
	{ C_ALL, 0, "-h", "-h, --help", "this text (after a command: that command's alone)" },
	{ C_ALL, 0, "-p PID", "-p, --pid PID", "only this process" },
	{ C_ALL, 0, "-t TID", "-t, --tid TID", "only this thread" },
	{ C_ALL, 0, "--time RANGE", "--time RANGE",
	  "only samples in a time range: START,END in seconds as\n"
	  "printed (either side may be empty); +START,+END: seconds\n"
	  "after the first sample (--time +1,+2.5); perf's\n"
	  "percentages of the trace's span: A%-B% (--time 10%-20%),\n"
	  "A%/N the N-th slice of A% (--time 10%/2), A% the first,\n"
	  "several separated by commas (stats: one)" },
	{ C_ALL, 0, "--event NAME", "--event NAME",
	  "only samples of this event (stackcap record -e NAME;\n"
	  "a trace recorded without -e: cpu-clock)" },
	{ C_ALL, 0, "--unwinder fast|dwfl", "--unwinder fast|dwfl", "the CFI unwinder (default fast; dwfl is elfutils' own)" },
	{ C_ALL, 0, "--reader native|babeltrace2", "--reader native|babeltrace2",
	  "what parses the stream files (default native;\n"
	  "babeltrace2's src.ctf.fs is the reference)" },
	{ C_ALL, 0, "--debug-dir DIR", "--debug-dir DIR", "look for binaries and debug info here first (repeatable)" },
	{ C_ALL, 0, "--symfs DIR", "--symfs DIR", "recorded paths are under DIR" },
	{ C_ALL, 0, "--no-debuginfod", "--no-debuginfod", "never ask debuginfod servers" },
	{ C_ALL, 0, "--no-cache", "--no-cache",
	  "keep nothing between runs: inflate compressed debug\n"
	  "files, read /proc/kallsyms and DWARF at each run\n"
	  "(default: inflated copies, the kernel's symbols and\n"
	  "each binary's answers kept under $STACKCAP_CACHE_DIR,\n"
	  "else ~/.cache/stackcap)" },
	{ C_ALL, 0, "--max-frames N", "--max-frames N", "frames per sample (default " MAX_FRAMES_S ")" },
	{ C_ALL, 0, "--user-only", "--user-only", "leave out kernel frames (a trace's or a perf.data's)" },
	{ C_READ, 0, "-j N", "-j, --jobs N", "unwind and symbolize on N threads (default: cores; the\nothers join after 256 samples, 2048 with --no-cache,\nif 4 times as many are left; $STACKCAP_JOBS_AFTER)" },
	{ C_STACKS | C_FOLDED | C_FLAME | C_REPORT, 0, "--off-cpu", "--off-cpu",
	  "only the stacks where threads blocked (stackcap record\n"
	  "--off-cpu), each counting its blocked time in\n"
	  "microseconds (stacks: just the filter)" },
	{ C_FOLDED | C_FLAME | C_REPORT, 0, "--with-off-cpu", "--with-off-cpu",
	  "CPU and off-CPU stacks together, both in microseconds\n"
	  "(a CPU sample counts its sampling period); each frame of\n"
	  "an off-CPU stack ends in " FOLDED_OFF_CPU_MARK " (drawn blue)\n"
	  "(default: CPU samples only, counted)" },
	{ C_FOLDED | C_FLAME, 0, "--per-process", "--per-process", "root each stack at 'comm-PID' (default: comm)" },
	{ C_FOLDED | C_FLAME, 0, "--per-thread", "--per-thread", "root each stack at 'comm-PID/TID'" },
	{ C_FOLDED | C_FLAME | C_REPORT | C_EXPORT, 0, "--no-inline", "--no-inline", "leave out inlined functions" },
	{ C_REPORT, 0, "--sort children|self", "--sort children|self",
	  "the table's order (default children, as perf report:\n"
	  "callers that hold the time come first, the other column\n"
	  "breaks ties)" },
	{ C_REPORT, 0, "--per-module", "--per-module", "a row per module (DSO) rather than per function" },
	{ C_REPORT, 0, "--tree", "--tree",
	  "the call tree instead, caller first (perf report -g\n"
	  "caller, a flamegraph's order): each line a path's share\n"
	  "of all samples, its callees indented below, hottest first" },
	{ C_REPORT, 0, "--min PCT", "--min PCT",
	  "leave out rows (tree: paths) under PCT% (default: the\n"
	  "table 0, the tree 0.5 as perf's call-graph threshold)" },
	{ C_REPORT, 0, "--limit N", "--limit N", "at most N rows (tree: callees per caller)" },
	{ C_FLAME | C_EXPORT, C_EXPORT, "-o FILE", "-o, --output FILE",
	  "where to write (flamegraph default: standard output;\n"
	  "export: required, '-' for standard output)" },
	{ C_FLAME, 0, "--title TEXT", "--title TEXT", "the title (default: Flame Graph: TRACE)" },
	{ C_FLAME, 0, "--width PX", "--width PX", "image width (default 1200)" },
	{ C_FLAME, 0, "--min-width PX", "--min-width PX", "leave out frames narrower than this (default 0.1)" },
	{ C_FLAME, 0, "--icicle", "--icicle", "the root at the top, stacks growing down" },
	{ C_FLAME, 0, "--reverse", "--reverse", "merge stacks from the leaf (callee-rooted)" },
	{ C_EXPORT, C_EXPORT, "--format speedscope|pprof", "--format speedscope|pprof", "the profile format" },
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* "usage: stackunwind CMD [OPT]... TRACE", wrapped under the command. */
static void synopsis(FILE *f, const char *lead, const struct command_doc *c)
{
	int const indent = fprintf(f, "%s" PROG " %s", lead, c->name);
	int col = indent;
	for (size_t i = 0; i < N_OF(options); i++) {
		const struct option_doc *o = &options[i];
		if (!(o->cmds & c->bit))
			continue;
		int const req = (o->required & c->bit) != 0;
		int const w = (int)strlen(o->syn) + (req ? 1 : 3);
		if (col + w > 79) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		}
		col += fprintf(f, req ? " %s" : " [%s]", o->syn);
	}
	if (col + 6 > 79)
		fprintf(f, "\n%*s", indent, "");
	fputs(" TRACE\n", f);
}

/* The list's line of option O: its left column, then its text. */
static void option_lines(FILE *f, const struct option_doc *o)
{
	/* The text at column 27; a long option alone 4 columns in. */
	int const pre = o->list[1] == '-' ? 4 : 0, width = 24 - pre;
	int const wide = (int)strlen(o->list) > width;
	fprintf(f, "  %*s%-*s", pre, "", wide ? 0 : width, o->list);
	if (wide)
		fprintf(f, "\n%27s", "");
	else
		fputc(' ', f);
	for (const char *p = o->text; *p;) {
		size_t const n = strcspn(p, "\n");
		fprintf(f, "%.*s\n", (int)n, p);
		p += n;
		if (*p) {
			p++;
			fprintf(f, "%27s", "");
		}
	}
}

/* "report only:", "folded, flamegraph and report:": the heading of MASK. */
static void heading(FILE *f, unsigned mask)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < N_OF(commands); i++)
		n += (mask & commands[i].bit) != 0;
	fputs("  ", f);
	for (size_t i = 0; i < N_OF(commands); i++) {
		if (!(mask & commands[i].bit))
			continue;
		k++;
		fprintf(f, "%s%s", k == 1 ? "" : k == n ? " and " : ", ", commands[i].name);
	}
	fputs(n == 1 ? " only:\n" : ":\n", f);
}

static void footer(FILE *f)
{
	fputs("\nTRACE: a stackcap trace directory, an LTTng trace with stackcap:* events or\n"
	      "a perf.data file or directory (perf record --call-graph dwarf [--threads]); - reads\n"
	      "a perf.data stream (perf record -o -) from standard input.\n"
	      "On a terminal, stderr shows the progress of long runs.\n"
	      "exit status: 0 all read; 1 error; 2 usage; 3 read in part (warnings say what\n"
	      "was skipped, the rest is printed)\n", f);
}

void stackunwind_usage(FILE *f, const char *command)
{
	for (size_t i = 0; command && i < N_OF(commands); i++) {
		const struct command_doc *c = &commands[i];
		if (strcmp(c->name, command))
			continue;
		synopsis(f, "usage: ", c);
		fputs("\n", f);
		for (const char *p = c->text; *p;) {
			size_t const n = strcspn(p, "\n");
			fprintf(f, "  %.*s\n", (int)n, p);
			p += n + (p[n] != 0);
		}
		fputs("\n", f);
		for (size_t k = 0; k < N_OF(options); k++)
			if (options[k].cmds & c->bit)
				option_lines(f, &options[k]);
		footer(f);
		return;
	}
	for (size_t i = 0; i < N_OF(commands); i++)
		synopsis(f, i ? "       " : "usage: ", &commands[i]);
	fputs("\n", f);
	for (size_t i = 0; i < N_OF(commands); i++) {
		const char *p = commands[i].text;
		fprintf(f, "  %-11s", commands[i].name);
		while (*p) {
			size_t const n = strcspn(p, "\n");
			fprintf(f, "%.*s\n", (int)n, p);
			p += n + (p[n] != 0);
			if (*p)
				fprintf(f, "%13s", "");
		}
	}
	fputs("  (" PROG " COMMAND --help: that command's synopsis and options alone; " PROG " --version)\n\n", f);
	unsigned prev = C_ALL;
	for (size_t k = 0; k < N_OF(options); k++) {
		if (options[k].cmds != prev && options[k].cmds != C_ALL)
			heading(f, options[k].cmds);
		prev = options[k].cmds;
		option_lines(f, &options[k]);
	}
	footer(f);
}
