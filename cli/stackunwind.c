/* SPDX-License-Identifier: MIT */
/*
 * stackunwind: offline unwinding and symbolization of recorded traces.
 *
 *   stackunwind stacks [OPTIONS] TRACE   one block per sample, like perf script
 *   stackunwind stats  [OPTIONS] TRACE   sizes, savings, drops, fidelity
 *   stackunwind export --format speedscope|pprof -o FILE [OPTIONS] TRACE
 *   stackunwind folded / flamegraph      stacks aggregated (export/folded.h, export/flamegraph.h)
 *
 * This file holds the options and the commands.  The main thread reads
 * and decodes; workers unwind, resolve and format (cli/pipeline.h,
 * cli/format.h), each with its own context (cli/worker.h); `stats` is
 * cli/stats.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/stackunwind.h"
#include "cli/export.h"
#include "cli/format.h"
#include "cli/pipeline.h"
#include "cli/progress.h"
#include "cli/warn.h"
#include "cli/worker.h"
#include "debuginfo/inflate-cache.h"

#define MAX_FRAMES 1024

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " stacks [OPTIONS] TRACE\n"
		"       " PROG " folded [OPTIONS] TRACE\n"
		"       " PROG " flamegraph [OPTIONS] TRACE [-o FILE.svg]\n"
		"       " PROG " stats  [OPTIONS] TRACE\n"
		"       " PROG " export --format speedscope|pprof -o FILE [OPTIONS] TRACE\n"
		"\n"
		"  stacks: every sample as a header (comm pid/tid time) and one frame per line\n"
		"          (address, symbol+offset, module, file:line), like perf script\n"
		"  folded: one line per distinct stack, 'comm;outermost;...;leaf COUNT', sorted:\n"
		"          the input of flamegraph.pl and speedscope\n"
		"  flamegraph: the folded stacks as one interactive SVG (no network needed):\n"
		"          hover for details, click to zoom, Search/Ctrl-F, colour by module\n"
		"  stats:  samples, bytes on disk and per sample, bytes the codec saved, drops,\n"
		"          and fidelity when the trace carries full stack copies\n"
		"  export: a profile file: speedscope JSON (one sampled profile per thread) or\n"
		"          pprof (gzipped profile.proto); docs/export.md says what goes where\n"
		"\n"
		"  -p, --pid PID            only this process\n"
		"  -t, --tid TID            only this thread\n"
		"      --time START,END     only samples in [START, END] (seconds, as printed;\n"
		"                           either side may be empty); +START,+END: seconds\n"
		"                           after the first sample (e.g. --time +1,+2.5)\n"
		"      --event NAME         only samples of this event (stackcap record -e NAME;\n"
		"                           a trace recorded without -e: cpu-clock)\n"
		"  -j, --jobs N             unwind and symbolize on N threads (default: cores)\n"
		"      --unwinder fast|dwfl the CFI unwinder (default fast; dwfl is elfutils' own)\n"
		"      --reader native|babeltrace2\n"
		"                           what parses the stream files (default native;\n"
		"                           babeltrace2's src.ctf.fs is the reference)\n"
		"      --debug-dir DIR      look for binaries and debug info here first (repeatable)\n"
		"      --symfs DIR          recorded paths are under DIR\n"
		"      --no-debuginfod      never ask debuginfod servers\n"
		"      --no-cache           inflate compressed debug files at each run rather\n"
		"                           than keep inflated copies (default: kept under\n"
		"                           $STACKCAP_CACHE_DIR, else ~/.cache/stackcap)\n"
		"      --max-frames N       frames per sample (default %d)\n"
		"      --user-only          leave out kernel frames (a trace's or a perf.data's)\n"
		"  stacks, folded and flamegraph:\n"
		"      --off-cpu            only the stacks where threads blocked (stackcap record\n"
		"                           --off-cpu), each counting its blocked time in\n"
		"                           microseconds (stacks: just the filter)\n"
		"  folded and flamegraph:\n"
		"      --with-off-cpu       CPU and off-CPU stacks together, both in microseconds\n"
		"                           (a CPU sample counts its sampling period); each frame of\n"
		"                           an off-CPU stack ends in " FOLDED_OFF_CPU_MARK " (drawn blue)\n"
		"                           (default: CPU samples only, counted)\n"
		"      --per-process        root each stack at 'comm-PID' (default: comm)\n"
		"      --per-thread         root each stack at 'comm-PID/TID'\n"
		"      --no-inline          leave out inlined functions (flamegraph, export too)\n"
		"  flamegraph and export:\n"
		"  -o, --output FILE        where to write (flamegraph default: standard output;\n"
		"                           export: required, '-' for standard output)\n"
		"  flamegraph only:\n"
		"      --title TEXT         the title (default: Flame Graph: TRACE)\n"
		"      --width PX           image width (default 1200)\n"
		"      --min-width PX       leave out frames narrower than this (default 0.1)\n"
		"      --icicle             the root at the top, stacks growing down\n"
		"      --reverse            merge stacks from the leaf (callee-rooted)\n"
		"  export only:\n"
		"      --format speedscope|pprof\n"
		"\n"
		"On a terminal, stderr shows the progress of long runs.\n"
		"exit status: 0 all read; 1 error; 2 usage; 3 read in part (warnings say what\n"
		"was skipped, the rest is printed)\n",
		MAX_FRAMES);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\n", stderr);
	va_end(ap);
	fputs("Try '" PROG " --help'.\n", stderr);
	exit(EXIT_USAGE);
}

/* ---- options --------------------------------------------------------------- */

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		die_usage("%s: not a number: '%s'", what, s);
	return v;
}

/* The number S of option WHAT, between LO and HI. */
static uint64_t parse_range(const char *s, const char *what, uint64_t lo, uint64_t hi)
{
	uint64_t const v = parse_u64(s, what);
	if (v < lo || v > hi)
		die_usage("%s: between %" PRIu64 " and %" PRIu64, what, lo, hi);
	return v;
}

/* The value of the name S of option WHAT: A (VA) or B (VB). */
static int one_of(const char *s, const char *what, const char *a, int va, const char *b, int vb)
{
	if (!strcmp(s, a))
		return va;
	if (!strcmp(s, b))
		return vb;
	die_usage("%s: %s or %s, not '%s'", what, a, b, s);
}

/* "SEC[.FRACTION]" in seconds -> ns; empty -> DFLT. */
static uint64_t parse_time(const char *s, size_t len, uint64_t dflt)
{
	if (len == 0)
		return dflt;
	uint64_t sec = 0, frac = 0;
	size_t i = 0;
	int digits = 0;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++)
		sec = sec * 10 + (uint64_t)(s[i] - '0');
	if (i < len && s[i] == '.') {
		int fd = 0;
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, fd++)
			if (fd < 9)
				frac = frac * 10 + (uint64_t)(s[i] - '0');
		for (; fd < 9; fd++)
			frac *= 10;
		digits++;
	}
	if (i != len || !digits || sec > UINT64_MAX / 1000000000u)
		die_usage("--time: not a time in seconds: '%.*s'", (int)len, s);
	return sec * 1000000000u + frac;
}

static unsigned cores(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_TITLE = 180, OPT_WIDTH, OPT_MIN_WIDTH, OPT_ICICLE, OPT_REVERSE,
	       OPT_PER_PROCESS = 200, OPT_PER_THREAD, OPT_NO_INLINE, OPT_TIME = 256, OPT_UNWINDER, OPT_READER, OPT_DEBUG_DIR, OPT_SYMFS, OPT_NO_DEBUGINFOD, OPT_MAX_FRAMES, OPT_FORMAT, OPT_NO_CACHE, OPT_EVENT,
	       OPT_OFF_CPU = 300, OPT_WITH_OFF_CPU, OPT_USER_ONLY };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "event", required_argument, NULL, OPT_EVENT },
		{ "jobs", required_argument, NULL, 'j' },
		{ "unwinder", required_argument, NULL, OPT_UNWINDER },
		{ "reader", required_argument, NULL, OPT_READER },
		{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "symfs", required_argument, NULL, OPT_SYMFS },
		{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
		{ "no-cache", no_argument, NULL, OPT_NO_CACHE },
		{ "max-frames", required_argument, NULL, OPT_MAX_FRAMES },
		{ "user-only", no_argument, NULL, OPT_USER_ONLY },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "icicle", no_argument, NULL, OPT_ICICLE },
		{ "reverse", no_argument, NULL, OPT_REVERSE },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "with-off-cpu", no_argument, NULL, OPT_WITH_OFF_CPU },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	memset(o, 0, sizeof(*o));
	o->filter.warn = cli_warn_hook(PROG);
	o->jobs = cores();
	o->max_frames = MAX_FRAMES;
	o->unwinder = SU_UNWINDER_FAST;
	o->debug_dirs = calloc((size_t)argc + 1, sizeof(*o->debug_dirs));
	if (!o->debug_dirs) {
		perror(PROG);
		exit(EXIT_ERROR);
	}
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		exit(EXIT_OK);
	}
	if (argc < 2)
		die_usage("missing command (stacks, folded, flamegraph, stats or export)");
	o->command = argv[1];
	if (strcmp(o->command, "stacks") && strcmp(o->command, "folded") && strcmp(o->command, "stats") &&
	    strcmp(o->command, "flamegraph") && strcmp(o->command, "export"))
		die_usage("unknown command '%s' (stacks, folded, flamegraph, stats or export)", o->command);
	o->flamegraph = !strcmp(o->command, "flamegraph");
	o->folded = !strcmp(o->command, "folded") || o->flamegraph;
	o->flame.min_width = -1;
	int flame_opt = 0, no_cache = 0;
	argc--;
	argv++;
	int c;
	while ((c = getopt_long(argc, argv, "p:t:j:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case OPT_TITLE:
			o->flame.title = optarg;
			flame_opt = 1;
			break;
		case OPT_WIDTH:
			o->flame.width = (unsigned)parse_range(optarg, "--width", 100, 100000);
			flame_opt = 1;
			break;
		case OPT_MIN_WIDTH: {
			char *end;
			o->flame.min_width = strtod(optarg, &end);
			if (end == optarg || *end || !(o->flame.min_width >= 0 && o->flame.min_width <= 1000))
				die_usage("--min-width: a number of px between 0 and 1000, not '%s'", optarg);
			flame_opt = 1;
			break;
		}
		case OPT_ICICLE:
			o->flame.icicle = 1;
			flame_opt = 1;
			break;
		case OPT_REVERSE:
			o->flame.reverse = 1;
			flame_opt = 1;
			break;
		case 'p':
			o->filter.pid = (uint32_t)parse_u64(optarg, "--pid");
			break;
		case OPT_EVENT:
			o->event = optarg;
			break;
		case 't':
			o->filter.tid = (uint32_t)parse_u64(optarg, "--tid");
			break;
		case OPT_TIME: {
			const char *comma = strchr(optarg, ',');
			if (!comma)
				die_usage("--time wants START,END (either may be empty)");
			/* "+S": S seconds after the first sample. */
			int const rb = optarg[0] == '+', re = comma[1] == '+';
			if (rb != re && comma > optarg && comma[1])
				die_usage("--time: START and END both absolute or both +offsets");
			uint64_t const b = parse_time(optarg + rb, (size_t)(comma - optarg - rb), 0);
			uint64_t const e = parse_time(comma + 1 + re, strlen(comma + 1 + re), 0);
			if (e && e < b)
				die_usage("--time: END is before START");
			o->time_rel = (unsigned)rb | (unsigned)re << 1;
			if (rb)
				o->rel_begin = b;
			else
				o->filter.time_begin = b;
			if (re)
				o->rel_end = e;
			else
				o->filter.time_end = e;
			break;
		}
		case 'j':
			o->jobs = (unsigned)parse_range(optarg, "--jobs", 1, 1024);
			break;
		case OPT_UNWINDER:
			o->unwinder = one_of(optarg, "--unwinder", "fast", SU_UNWINDER_FAST, "dwfl", SU_UNWINDER_DWFL);
			break;
		case OPT_PER_PROCESS:
			o->roots = o->roots > 1 ? o->roots : 1;
			break;
		case OPT_PER_THREAD:
			o->roots = 2;
			break;
		case OPT_NO_INLINE:
			o->no_inline = 1;
			break;
		case OPT_READER:
			o->filter.source = one_of(optarg, "--reader", "native", SU_READER_NATIVE, "babeltrace2",
						  SU_READER_BABELTRACE2);
			break;
		case OPT_DEBUG_DIR:
			o->debug_dirs[o->n_debug_dirs++] = optarg;
			break;
		case OPT_SYMFS:
			o->di.symfs = optarg;
			break;
		case OPT_NO_DEBUGINFOD:
			o->di.no_debuginfod = 1;
			break;
		case OPT_NO_CACHE:
			no_cache = 1;
			break;
		case OPT_USER_ONLY:
			o->filter.user_only = 1;
			break;
		case OPT_MAX_FRAMES:
			o->max_frames = (size_t)parse_range(optarg, "--max-frames", 1, 65536);
			break;
		case OPT_FORMAT:
			o->export_format = one_of(optarg, "--format", "speedscope", EXPORT_SPEEDSCOPE, "pprof", EXPORT_PPROF);
			break;
		case OPT_OFF_CPU:
		case OPT_WITH_OFF_CPU:
			if (o->off_cpu)
				die_usage("--off-cpu or --with-off-cpu, once");
			o->off_cpu = c == OPT_OFF_CPU ? OFF_CPU_ONLY : OFF_CPU_WITH;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			fputs("Try '" PROG " --help'.\n", stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc - 1)
		die_usage(optind >= argc ? "missing TRACE directory" : "one TRACE directory only");
	int const is_export = !strcmp(o->command, "export");
	if (!o->folded && o->roots)
		die_usage("--per-process and --per-thread go with folded and flamegraph only");
	if (!o->folded && !is_export && o->no_inline)
		die_usage("--no-inline goes with folded, flamegraph and export only");
	if (!is_export && o->export_format)
		die_usage("--format goes with export only");
	if (!is_export && !o->flamegraph && o->output)
		die_usage("-o goes with flamegraph and export only");
	if (!o->flamegraph && flame_opt)
		die_usage("--title, --width, --min-width, --icicle and --reverse go with flamegraph only");
	if (o->off_cpu == OFF_CPU_ONLY && !o->folded && strcmp(o->command, "stacks"))
		die_usage("--off-cpu goes with stacks, folded and flamegraph only");
	if (o->off_cpu == OFF_CPU_WITH && !o->folded)
		die_usage("--with-off-cpu goes with folded and flamegraph only");
	o->weigh = o->folded && o->off_cpu;
	if (o->weigh)
		o->flame.unit = "us";
	if (is_export && !o->export_format)
		die_usage("export: missing --format speedscope|pprof");
	if (is_export && !o->output)
		die_usage("export: missing -o FILE");
	o->trace = argv[optind];
	o->fold = (struct folded_opts){ .root = (enum folded_root)o->roots, .no_inline = o->no_inline,
					.modules = o->flamegraph };
	o->di.debug_dirs = o->n_debug_dirs ? o->debug_dirs : NULL;
	o->di.inflate_cache_dir = no_cache ? NULL : su_inflate_default_dir();
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* The SVG of the counts, to -o FILE or stdout.  @return 0 or -1 (said). */
static int fold_flamegraph(struct folded_counts *f, const struct options *o)
{
	size_t const n = folded_counts_sort(f);
	struct flame_stack *st = malloc((n ? n : 1) * sizeof(*st));
	if (!st) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		st[i] = (struct flame_stack){ f->tab[i].stack, f->tab[i].count };
	int const to_file = o->output && strcmp(o->output, "-");
	FILE *out = to_file ? fopen(o->output, "w") : stdout;
	if (!out) {
		fprintf(stderr, PROG ": %s: %s\n", o->output, strerror(errno));
		free(st);
		return -1;
	}
	struct flame_opts fo = o->flame;
	char title[512];
	if (!fo.title) {
		snprintf(title, sizeof(title), "Flame Graph: %s", base_name(o->trace));
		fo.title = title;
	}
	struct flame_result res;
	int rc = flame_write(out, st, n, &fo, &res);
	free(st);
	if (rc) {
		fprintf(stderr, PROG ": out of memory\n");
	} else if (fflush(out) || ferror(out)) {
		fprintf(stderr, PROG ": write error on %s\n", to_file ? o->output : "standard output");
		rc = -1;
	}
	if (to_file && fclose(out) && !rc) {
		fprintf(stderr, PROG ": write error on %s: %s\n", o->output, strerror(errno));
		rc = -1;
	}
	if (rc && to_file)
		remove(o->output);
	if (!rc && res.omitted)
		fprintf(stderr, PROG ": %" PRIu64 " frames drawn, %" PRIu64 " narrower than %g px left out\n",
			res.frames, res.omitted, fo.min_width < 0 ? 0.1 : fo.min_width);
	return rc ? -1 : 0;
}

/* ---- stacks, folded, flamegraph, export ---------------------------------------- */

struct run {
	const struct options *o;
	struct pipeline *pipeline;
	struct worker *reader;       /* the reader thread's context (-j 1: it does everything) */
	struct folded_counts *fold;  /* `folded`: the counts, in the main thread */
	struct export_model *exp;    /* `export`: the profile, in the main thread */
	struct progress progress;
	uint64_t t0;                 /* --time +...: the first sample's time (0: none yet) */
	uint64_t skipped;            /* samples outside --time +... */
	uint64_t other_events;       /* samples not of --event */
	uint64_t other_kind;         /* off-CPU (or CPU) samples the command leaves out */
};

/* Text of finished samples: to the output, into the folded counts or into
 * the export model. */
static int emit(void *arg, const char *buf, size_t len)
{
	struct run *r = arg;
	if (r->exp)
		return export_model_add(r->exp, buf, len);
	if (r->fold)
		return r->o->weigh ? folded_counts_add_weighted_lines(r->fold, buf, len)
				   : folded_counts_add_lines(r->fold, buf, len);
	fwrite(buf, 1, len, stdout);
	return 0;
}

static int on_sample(void *arg, const struct su_sample *s)
{
	struct run *r = arg;
	progress_sample(&r->progress);
	if (r->o->event && strcmp(su_sample_event(s), r->o->event)) {
		r->other_events++;
		return 0;
	}
	/* CPU samples, off-CPU ones or both, as the command shows them. */
	int const off_cpu = s->off_cpu_ns != 0;
	if ((r->o->off_cpu == OFF_CPU_ONLY && !off_cpu) ||
	    (r->o->off_cpu == OFF_CPU_CPU && off_cpu && (r->o->folded || r->o->export_format == EXPORT_SPEEDSCOPE))) {
		r->other_kind++;
		return 0;
	}
	if (r->o->time_rel) {
		/* Offsets from the first sample: samples come in time order. */
		if (!r->t0)
			r->t0 = s->time_ns ? s->time_ns : 1;
		uint64_t const off = s->time_ns - r->t0;
		if (((r->o->time_rel & 1) && off < r->o->rel_begin) ||
		    ((r->o->time_rel & 2) && r->o->rel_end && off > r->o->rel_end)) {
			r->skipped++;
			return 0;
		}
	}
	return pipeline_add(r->pipeline, s);
}

/* The pipeline's unwinding, in whichever thread works the sample. */
static size_t unwind_sample(void *ctx, const struct su_sample *s, const struct su_frame **frames,
			    enum su_unwind_end *end)
{
	struct worker *w = ctx;
	*frames = w->frames;
	return worker_unwind(w, s, end);
}

static int on_end(void *arg)
{
	struct run *r = arg;
	return pipeline_finish(r->pipeline);
}

static int cmd_stacks(const struct options *o)
{
	struct folded_counts fold = { 0 };
	struct run r = { .o = o, .fold = o->folded ? &fold : NULL };
	/* -j N: the reader thread parses and decodes; N - 1 workers unwind,
	 * symbolize and format, and so does the reader when they lag behind.
	 * -j 1 does it all in the reader thread.  ctx[0] is the reader's
	 * context, ctx[1..] the workers'. */
	unsigned const nw = o->jobs > 1 ? o->jobs - 1 : 0;
	unsigned const nctx = nw + 1;
	struct worker *ctx = calloc(nctx, sizeof(*ctx));
	void **wctx = calloc(nctx, sizeof(*wctx));
	int rc = EXIT_ERROR;
	struct export_out xo = { 0 };
	char xerr[1024];

	if (!ctx || !wctx) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	/* export: an output that cannot be written fails before the long read. */
	if (o->export_format && export_out_open(&xo, o->output, xerr, sizeof(xerr))) {
		fprintf(stderr, PROG ": %s\n", xerr);
		goto out;
	}
	if (o->export_format && !(r.exp = export_model_new(o->no_inline))) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	for (unsigned i = 0; i < nctx; i++) {
		if (worker_init(&ctx[i], o)) {
			fprintf(stderr, PROG ": out of memory\n");
			goto out;
		}
		wctx[i] = &ctx[i];
	}
	r.reader = &ctx[0];
	if (!(r.pipeline = pipeline_new(nw, wctx + 1, r.reader, unwind_sample, format_sample_of, emit, &r))) {
		fprintf(stderr, PROG ": cannot start worker threads: %s\n", strerror(errno));
		goto out;
	}
	struct su_reader_callbacks cb = { .arg = &r, .sample = on_sample, .end = on_end };
	struct su_reader_stats st;
	char err[1024];
	/* No progress line among samples printed to the same terminal. */
	int const to_stdout = !(o->flamegraph || o->export_format) || !o->output || !strcmp(o->output, "-");
	progress_init(&r.progress, to_stdout && isatty(STDOUT_FILENO), &st.bytes_read, &st.bytes_on_disk);
	int const rrc = su_trace_read(o->trace, &o->filter, &cb, &st, err, sizeof(err));
	progress_end(&r.progress);
	pipeline_free(r.pipeline); /* the reader stopped early: stop the workers */
	r.pipeline = NULL;
	if (rrc < 0) {
		fflush(stdout);
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rrc));
		goto out;
	}
	if (o->flamegraph) {
		if (fold_flamegraph(&fold, o))
			goto out;
	} else if (r.fold) {
		folded_counts_print(&fold, stdout);
	}
	struct export_info const xinfo = { .name = o->trace, .exporter = PROG " " PACKAGE_VERSION };
	if (r.exp && export_out_finish(&xo, r.exp, o->export_format == EXPORT_PPROF, &xinfo, xerr, sizeof(xerr))) {
		fprintf(stderr, PROG ": %s\n", xerr);
		goto out;
	}
	fflush(stdout);
	struct counts c = { 0 };
	struct su_modcache_stats ms = { 0 };
	worker_totals(ctx, nctx, &c, &ms);
	worker_warn_modules(ctx, nctx);
	fprintf(stderr,
		PROG ": %" PRIu64 " samples, %" PRIu64 " fully unwound, %" PRIu64 " truncated, %" PRIu64
		" stopped early, %" PRIu64 " unknown frames of %" PRIu64 ", %" PRIu64 " build-id mismatches, %"
		PRIu64 " binaries not found",
		c.samples, c.complete, c.truncated, c.incomplete, c.unknown_frames, c.frames,
		ms.build_id_mismatch, ms.not_found);
	if (st.bad_blobs || st.no_maps)
		fprintf(stderr, ", %" PRIu64 " samples not decodable", st.bad_blobs + st.no_maps);
	if (c.no_user)
		fprintf(stderr, ", %" PRIu64 " without user state (kernel threads, exiting tasks)", c.no_user);
	if (st.drops || st.discarded)
		fprintf(stderr, ", %" PRIu64 " dropped at capture", st.drops + st.discarded);
	fputc('\n', stderr);
	if (!c.samples && o->event)
		fprintf(stderr, PROG ": no sample of event %s (%" PRIu64 " of other events; stackunwind stats lists "
			"them)\n", o->event, r.other_events);
	else if (!c.samples && (o->filter.pid || o->filter.tid || o->filter.time_begin || o->filter.time_end || o->time_rel))
		fprintf(stderr,
			PROG ": no sample matched --pid/--tid/--time (%" PRIu64 " read outside --time +...; times "
			"are seconds as stacks prints them, or +seconds after the first sample)\n",
			r.skipped);
	if (r.other_kind && o->off_cpu == OFF_CPU_CPU)
		fprintf(stderr, PROG ": %" PRIu64 " off-CPU stacks left out (%s)\n", r.other_kind,
			o->folded ? "--off-cpu shows them, --with-off-cpu both kinds" : "speedscope shows CPU samples only");
	if (!c.samples && r.other_kind && o->off_cpu == OFF_CPU_ONLY)
		fprintf(stderr, PROG ": no off-CPU stack in %s (stackcap record --off-cpu records them)\n", o->trace);
	if (ferror(stdout)) {
		fprintf(stderr, PROG ": write error on standard output\n");
		goto out;
	}
	rc = rrc > 0 || ms.build_id_mismatch || ms.not_found ? EXIT_PARTIAL : EXIT_OK;
out:
	pipeline_free(r.pipeline);
	for (unsigned i = 0; ctx && i < nctx; i++)
		worker_fini(&ctx[i]);
	export_out_abort(&xo);
	export_model_free(r.exp);
	folded_counts_free(&fold);
	free(ctx);
	free(wctx);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);
	int rc = !strcmp(o.command, "stats") ? cmd_stats(&o) : cmd_stacks(&o);
	free(o.debug_dirs);
	return rc;
}
