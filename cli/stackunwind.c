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
#include <malloc.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cli/stackunwind.h"
#include "cli/archive.h"
#include "cli/export.h"
#include "cli/misplaced.h"
#include "cli/format.h"
#include "cli/ordered.h"
#include "cli/pipeline.h"
#include "cli/progress.h"
#include "cli/spread.h"
#include "cli/warn.h"
#include "cli/worker.h"
#include "common/ctf-layout.h"
#include "common/io.h"
#include "debuginfo/inflate-ahead.h"
#include "debuginfo/inflate-cache.h"
#include "trace/parts-plan.h"

/* The command whose --help a usage error points to (NULL: none yet). */
static const char *help_command;

static void try_help(void)
{
	fprintf(stderr, "Try '" PROG "%s%s --help'.\n", help_command ? " " : "", help_command ? help_command : "");
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
	try_help();
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

/* One percentage "P%" of --time (S, LEN bytes) as a fraction. */
static double parse_pct(const char *s, size_t len, const char *item)
{
	char buf[64];
	if (len == 0 || len >= sizeof(buf) || s[len - 1] != '%')
		die_usage("--time: '%s': a percentage ends in %% (10%%-20%%, 10%%/2)", item);
	memcpy(buf, s, len - 1);
	buf[len - 1] = 0;
	char *end;
	double const v = strtod(buf, &end);
	if (end == buf || *end || !(v >= 0 && v <= 100) || buf[0] == '-' || buf[0] == '+' || buf[0] == ' ')
		die_usage("--time: '%s': percentages from 0%% to 100%%", item);
	return v / 100;
}

/* --time as perf's percentages: comma-separated "A%-B%" (from A% to B% of
 * the trace's span), "A%/N" (the N-th slice of A%) or "A%" (the first). */
static void parse_time_pct(const char *arg, struct options *o)
{
	size_t n = 1;
	for (const char *p = arg; *p; p++)
		n += *p == ',';
	free(o->slices);
	o->slices = calloc(n, sizeof(*o->slices));
	if (!o->slices) {
		perror(PROG);
		exit(EXIT_ERROR);
	}
	o->n_slices = 0;
	for (const char *p = arg;;) {
		size_t const len = strcspn(p, ",");
		char item[128];
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		const char *dash = memchr(p, '-', len), *slash = memchr(p, '/', len);
		struct time_slice *t = &o->slices[o->n_slices++];
		if (dash && !slash) {
			t->a = parse_pct(p, (size_t)(dash - p), item);
			t->b = parse_pct(dash + 1, len - (size_t)(dash + 1 - p), item);
			if (t->b < t->a)
				die_usage("--time: '%s': the end is before the start", item);
		} else if (!dash) {
			uint64_t k = 1;
			if (slash) {
				char num[32];
				snprintf(num, sizeof(num), "%.*s", (int)(len - (size_t)(slash + 1 - p)), slash + 1);
				k = parse_range(num, "--time A%/N: N", 1, 1000000);
			}
			double const w = parse_pct(p, slash ? (size_t)(slash - p) : len, item);
			if (w <= 0)
				die_usage("--time: '%s': a slice wider than 0%%", item);
			t->a = w * (double)(k - 1);
			t->b = w * (double)k;
			if (t->b > 1 + 1e-9)
				die_usage("--time: '%s': past 100%% of the trace", item);
			t->b = t->b > 1 ? 1 : t->b;
		} else {
			die_usage("--time: '%s': A%%-B%% or A%%/N", item);
		}
		if (!p[len])
			break;
		p += len + 1;
	}
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
	       OPT_OFF_CPU = 300, OPT_WITH_OFF_CPU, OPT_USER_ONLY,
	       OPT_SORT = 320, OPT_PER_MODULE, OPT_TREE, OPT_MIN, OPT_LIMIT };
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
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "per-module", no_argument, NULL, OPT_PER_MODULE },
		{ "tree", no_argument, NULL, OPT_TREE },
		{ "min", required_argument, NULL, OPT_MIN },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	memset(o, 0, sizeof(*o));
	o->filter.warn = cli_warn_hook(PROG);
	o->jobs = cores();
	o->max_frames = MAX_FRAMES;
	o->unwinder = SU_UNWINDER_FAST;
	o->debug_dirs = calloc((size_t)argc + 2, sizeof(*o->debug_dirs)); /* + the trace's own */
	if (!o->debug_dirs) {
		perror(PROG);
		exit(EXIT_ERROR);
	}
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		stackunwind_usage(stdout, NULL);
		exit(EXIT_OK);
	}
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf(PROG " (" PACKAGE_NAME ") " PACKAGE_VERSION "\n");
		exit(EXIT_OK);
	}
	if (argc < 2)
		die_usage("missing command (stacks, folded, flamegraph, report, stats, export or archive)");
	o->command = argv[1];
	if (!stackunwind_is_command(o->command)) {
		struct stat sb;
		if (cli_misplaced_command(stderr, PROG, argc, argv, stackunwind_is_command)) {
			try_help();
			exit(EXIT_USAGE);
		}
		if (o->command[0] != '-' && stat(o->command, &sb) == 0) { /* a trace, without a command */
			fputs(PROG ": a command comes first, then the trace: " PROG
			      " stacks|folded|flamegraph|report|stats|export|archive ", stderr);
			cli_shell_word(stderr, o->command);
			fputc('\n', stderr);
			try_help();
			exit(EXIT_USAGE);
		}
		die_usage("unknown command '%s' (stacks, folded, flamegraph, report, stats, export or archive)", o->command);
	}
	o->flamegraph = !strcmp(o->command, "flamegraph");
	o->report = !strcmp(o->command, "report");
	help_command = o->command;
	o->archive = !strcmp(o->command, "archive");
	o->folded = !strcmp(o->command, "folded") || o->flamegraph || o->report || o->archive;
	o->flame.min_width = -1;
	o->rep.min_pct = -1;
	int flame_opt = 0, report_opt = 0, no_cache = 0;
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
		case OPT_SORT:
			o->rep.sort = one_of(optarg, "--sort", "children", REPORT_SORT_CHILDREN, "self", REPORT_SORT_SELF);
			report_opt = 1;
			break;
		case OPT_PER_MODULE:
			o->rep.per_module = 1;
			report_opt = 1;
			break;
		case OPT_TREE:
			o->rep.tree = 1;
			report_opt = 1;
			break;
		case OPT_MIN: {
			char *end;
			o->rep.min_pct = strtod(optarg, &end);
			if (end == optarg || *end || !(o->rep.min_pct >= 0 && o->rep.min_pct <= 100))
				die_usage("--min: a percentage between 0 and 100, not '%s'", optarg);
			report_opt = 1;
			break;
		}
		case OPT_LIMIT:
			o->rep.limit = (size_t)parse_range(optarg, "--limit", 1, 1000000000);
			report_opt = 1;
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
			o->time_rel = 0;
			o->filter.time_begin = o->filter.time_end = 0;
			if (strchr(optarg, '%')) {
				parse_time_pct(optarg, o);
				break;
			}
			free(o->slices);
			o->slices = NULL;
			o->n_slices = 0;
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
			stackunwind_usage(stdout, o->command);
			exit(EXIT_OK);
		default:
			try_help();
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc - 1)
		die_usage(optind >= argc ? "missing TRACE directory" : "one TRACE directory only");
	int const is_export = !strcmp(o->command, "export");
	if (!strcmp(o->command, "stats") && (o->time_rel || o->n_slices > 1))
		die_usage("stats: --time START,END in seconds as printed, or one percentage slice");
	if ((!o->folded || o->report) && o->roots)
		die_usage("--per-process and --per-thread go with folded and flamegraph only");
	if (!o->report && report_opt)
		die_usage("--sort, --per-module, --tree, --min and --limit go with report only");
	if (o->rep.tree && o->rep.sort == REPORT_SORT_SELF)
		die_usage("--tree: the tree is sorted by the share of each path; --sort goes with the table");
	if (o->rep.min_pct < 0) /* perf report's call-graph threshold; its table shows all */
		o->rep.min_pct = o->rep.tree ? 0.5 : 0;
	if (!o->folded && !is_export && o->no_inline)
		die_usage("--no-inline goes with folded, flamegraph, report and export only");
	if (!is_export && o->export_format)
		die_usage("--format goes with export only");
	if (!is_export && !o->flamegraph && o->output)
		die_usage("-o goes with flamegraph and export only");
	if (!o->flamegraph && flame_opt)
		die_usage("--title, --width, --min-width, --icicle and --reverse go with flamegraph only");
	if (o->off_cpu == OFF_CPU_ONLY && !o->folded && strcmp(o->command, "stacks"))
		die_usage("--off-cpu goes with stacks, folded, flamegraph and report only");
	if (o->off_cpu == OFF_CPU_WITH && !o->folded)
		die_usage("--with-off-cpu goes with folded, flamegraph and report only");
	o->weigh = o->folded && o->off_cpu;
	if (o->weigh)
		o->flame.unit = "us";
	if (is_export && !o->export_format)
		die_usage("export: missing --format speedscope|pprof");
	if (is_export && !o->output)
		die_usage("export: missing -o FILE");
	o->trace = argv[optind];
	o->name = strcmp(o->trace, "-") ? o->trace : "standard input";
	o->fold = (struct folded_opts){ .root = (enum folded_root)o->roots, .no_inline = o->no_inline,
					.modules = o->flamegraph || o->report };
	o->rep.unit = o->weigh ? "us" : NULL;
	o->rep.title = o->name;
	if (o->archive && su_trace_probe(o->trace) != SU_TRACE_STACKCAP)
		die_usage("archive: %s is not a stackcap trace directory (the files go into it); a perf.data: "
			  "stackcap convert it first, or use perf archive", o->trace);
	/* The files `stackunwind archive` copied into the trace: read after
	 * the --debug-dir given, before anything of this machine's. */
	static char archived[4200];
	struct stat as;
	if ((size_t)snprintf(archived, sizeof(archived), "%s/%s", o->trace, CTF_DEBUG_DIR) < sizeof(archived) &&
	    lstat(archived, &as) == 0 && S_ISDIR(as.st_mode))
		o->debug_dirs[o->n_debug_dirs++] = archived;
	o->di.debug_dirs = o->n_debug_dirs ? o->debug_dirs : NULL;
	o->di.inflate_cache_dir = no_cache ? NULL : su_inflate_default_dir();
	o->di.kept_dir = su_inflate_default_dir(); /* binaries, not answers: even with --no-cache */
	o->filter.kernel_cache_dir = o->di.inflate_cache_dir;
	/* The JIT maps a recording kept in its trace (stackcap record). */
	static char jit[4200];
	struct stat js;
	if ((size_t)snprintf(jit, sizeof(jit), "%s/%s", o->trace, CTF_JIT_DIR) < sizeof(jit) && lstat(jit, &js) == 0 &&
	    S_ISDIR(js.st_mode))
		o->jit_dir = jit;
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
		snprintf(title, sizeof(title), "Flame Graph: %s", base_name(o->name));
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
	uint64_t jobs_after;         /* -j N: samples before the workers may join (UINT64_MAX: joined) */
	uint64_t added;              /* samples given to the pipeline */
	uint64_t mute;               /* the first MUTE of them already written (stacks read in parts) */
	int out_errno;               /* writing the output failed (emit) */
	struct ordered *ordered;     /* stacks read in parts: this part's texts go there */
	unsigned part;
	struct su_order_key key;     /* the sample delivered (su_reader_opts.order) */
	struct su_inflate_ahead *inflate_ahead; /* the hit files' debug files, inflated ahead */
	unsigned ahead_threads;      /* for that (0: none) */
};

/* Text of finished samples: to the output, into the folded counts or into
 * the export model. */
static int emit(void *arg, const struct text *t)
{
	struct run *r = arg;
	if (r->exp)
		return export_model_add(r->exp, t->buf, t->len);
	if (r->fold) /* each line ends with its count (cli/format.c) */
		return folded_counts_add_weighted_lines(r->fold, t->buf, t->len);
	if (!t->by_ref) {
		fwrite(t->buf, 1, t->len, stdout);
		return 0;
	}
	/* The text and the chains' lines it refers to, straight to the
	 * output; a write error is said at the end, as for stdout's. */
	if (!r->out_errno)
		r->out_errno = fflush(stdout) ? EIO : -text_write(t, fileno(stdout));
	return 0;
}

/* export in parts: the parts' records into the model, in order. */
static int export_sink(void *arg, const char *buf, size_t len)
{
	return export_model_add(arg, buf, len);
}

/* Is time T in one of --time's percentage slices? */
static int in_slices(const struct options *o, uint64_t t)
{
	for (size_t i = 0; i < o->n_slices; i++)
		if (t >= o->slices[i].begin && t <= o->slices[i].end)
			return 1;
	return 0;
}

struct span {
	uint64_t first, last;
	uint64_t samples;
};

static int span_sample(void *arg, const struct su_sample *s)
{
	struct span *sp = arg;
	if (!sp->samples++ || s->time_ns < sp->first)
		sp->first = s->time_ns;
	if (s->time_ns > sp->last)
		sp->last = s->time_ns;
	return 0;
}

/* --time's percentages as times: a first read finds the trace's first and
 * last sample (perf has them in its header; our traces do not), each
 * slice [first + A * span, first + B * span], its end 1 ns earlier unless
 * it is the last sample's (as perf: slices 10%/1 and 10%/2 share no
 * sample).  @return 0 or -1 (said). */
static int time_slices(struct options *o)
{
	if (!strcmp(o->trace, "-")) {
		fprintf(stderr, PROG ": --time in percentages reads the trace twice (its span first): not from standard "
			"input; write the stream to a file, or give times in seconds\n");
		return -1;
	}
	struct su_reader_opts f = { .source = o->filter.source, .user_only = 1 };
	struct su_reader_callbacks cb = { 0 };
	struct span sp = { 0 };
	struct su_reader_stats st;
	char err[1024];
	cb.arg = &sp;
	cb.sample = span_sample;
	int const rc = su_trace_read(o->trace, &f, &cb, &st, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rc));
		return -1;
	}
	uint64_t const span = sp.last - sp.first;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < o->n_slices; i++) {
		struct time_slice *t = &o->slices[i];
		t->begin = sp.first + (uint64_t)llround(t->a * (double)span);
		t->end = sp.first + (uint64_t)llround(t->b * (double)span);
		if (t->end > t->begin && t->end != sp.last)
			t->end--;
		lo = t->begin < lo ? t->begin : lo;
		hi = t->end > hi ? t->end : hi;
	}
	/* The reader skips what is outside them all; on_sample the gaps. */
	if (sp.samples) {
		o->filter.time_begin = lo;
		o->filter.time_end = hi ? hi : 1;
	}
	return 0;
}

/* How many samples the reader thread works alone before the workers may
 * start: a short trace is done sooner without them (a thread to start and
 * a context of its own to warm).  Warm is cheap with the caches on disk
 * (debuginfo/inflate-cache.h): a worker maps the debug files the reader
 * inflated, the answers it kept.  Without them (--no-cache, or no place
 * for them) every worker inflates and reads all again: the chain's
 * perf.data at -j 2, workers after 256 samples: 1.38x -j 1's wall
 * (docs/BENCHMARKS.md).  STACKCAP_JOBS_AFTER=N sets it (the tests: 0, so
 * that short traces exercise the workers). */
#define JOBS_AFTER_WARM 256
#define JOBS_AFTER_COLD 2048

static int jobs_after_env(uint64_t *n)
{
	const char *e = getenv("STACKCAP_JOBS_AFTER");
	char *end;
	if (!e || !*e)
		return 0;
	unsigned long long const v = strtoull(e, &end, 10);
	if (*end)
		return 0;
	*n = (uint64_t)v;
	return 1;
}

static uint64_t jobs_after(const struct options *o)
{
	uint64_t n;
	if (jobs_after_env(&n))
		return n;
	return o->di.inflate_cache_dir ? JOBS_AFTER_WARM : JOBS_AFTER_COLD;
}

/* After jobs_after() samples: do the workers join?  When the part of the
 * trace read so far says at least 4 times as many samples are left (or
 * the reader does not say: they join). */
static int workers_worth_it(const struct run *r)
{
	uint64_t const read = r->progress.bytes_read ? *r->progress.bytes_read : 0;
	uint64_t const total = r->progress.bytes_total ? *r->progress.bytes_total : 0;
	if (!r->jobs_after || !read || !total || read >= total)
		return 1;
	long double const left = (long double)r->added * (long double)(total - read) / (long double)read;
	return left >= 4.0L * (long double)r->jobs_after;
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
	if (r->o->n_slices > 1 && !in_slices(r->o, s->time_ns)) {
		r->skipped++;
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
	if (r->ordered) { /* stacks read in parts: worked here, written in order */
		struct text *const t = ordered_text(r->ordered, r->part, &r->key);
		if (!t)
			return -ECANCELED;
		pipeline_work_into(r->pipeline, s, t);
		ordered_mark(r->ordered, r->part);
		return 0;
	}
	if (++r->added >= r->jobs_after && workers_worth_it(r)) {
		(void)pipeline_start(r->pipeline); /* none started: this thread goes on alone */
		r->jobs_after = UINT64_MAX;
	}
	return pipeline_add_muted(r->pipeline, s, r->added <= r->mute);
}

/* The pipeline's unwinding, in whichever thread works the sample. */
static size_t unwind_sample(void *ctx, const struct su_sample *s, const struct su_frame **frames,
			    enum su_unwind_end *end)
{
	struct worker *w = ctx;
	return worker_unwind(w, s, frames, end);
}

/* The read stops early: the workers let go of the samples they hold. */
static void on_stop(void *arg)
{
	struct run *r = arg;
	pipeline_abort(r->pipeline);
	if (r->ordered && r->o->export_format) { /* the records point into this part's reader */
		ordered_cancel(r->ordered);
		ordered_drain(r->ordered);
	}
}

/* Does O leave samples out (a pid, tid, time range or event)?  Then the
 * files a perf.data's build-id table names are more than its samples
 * need: on a system-wide recording read for one process, most of them. */
static int samples_filtered(const struct options *o)
{
	return o->filter.pid || o->filter.tid || o->filter.time_begin || o->filter.time_end || o->time_rel ||
	       o->n_slices > 1 || o->event;
}

/* A first run's debug files inflated on the cores the workers do not use
 * yet (debuginfo/inflate-ahead.h), unless the samples are filtered. */
static int on_hit_files(void *arg, const uint8_t (*ids)[SU_BUILD_ID_MAX], const uint8_t *lens, size_t n)
{
	struct run *r = arg;
	if (r->ahead_threads && !r->inflate_ahead)
		r->inflate_ahead = su_inflate_ahead_start(&r->o->di, ids, lens, n, r->ahead_threads);
	return 0;
}

static int on_end(void *arg)
{
	struct run *r = arg;
	int const rc = pipeline_finish(r->pipeline);
	if (r->ordered && r->o->export_format) {
		/* export in parts: the records name this part's processes and
		 * maps, which its reader frees after this; every part waits
		 * until all parts' records are in the model. */
		ordered_done(r->ordered, r->part);
		ordered_drain(r->ordered);
	}
	return rc;
}

/* ---- our own traces in parts ---------------------------------------------------- */

/* -j N over our own trace: the trace is read N times at once, each
 * thread decoding, unwinding and formatting only its part of the sample
 * packets (a packet decodes alone; su_reader_opts.parts), with its own
 * context.  For the commands that count folded stacks (folded,
 * flamegraph, report) the counts are added up at the end; `stacks`
 * writes the parts' texts in the whole read's order as they come
 * (cli/ordered.h), and `export` gives the parts' records to its model in
 * that order.  The pipeline instead hands every sample from the one
 * thread that decodes to the others: on a one-thread trace that decode
 * and handoff were as large as the unwinding itself, and -j 2 was
 * 1.1-1.2x -j 1 on folded, 1.6-1.75x on stacks. */
struct part {
	/* Each part on cache lines of its own: its thread writes its run
	 * and stats at every sample (stacks -j 2: 3% less CPU). */
	_Alignas(64) struct run r;
	struct folded_counts fold;
	struct su_reader_opts filter;
	struct su_reader_stats st;
	char err[256];
	int rrc;
	int warned;                  /* the reader warned: something is not as it should be */
	int started;
	pthread_t th;
	char apart[128];             /* each part's counters written by its own thread (cli/worker.h) */
};

static void part_warned(void *arg, const char *msg)
{
	struct part *p = arg;
	p->warned = 1;
	if (p->r.ordered) /* read again the usual way: stop the parts now */
		ordered_cancel(p->r.ordered);
	/* STACKUNWIND_PARTS_WARNINGS=1 (tests): what sent a part's read back
	 * to the usual way, said (the usual way says what is wrong with the
	 * trace; this says why the parts were not enough). */
	const char *e = getenv("STACKUNWIND_PARTS_WARNINGS");
	if (e && *e == '1')
		fprintf(stderr, PROG ": in part %u: %s\n", p->filter.part, msg);
}

static void *part_read(void *arg)
{
	struct part *p = arg;
	struct su_reader_callbacks cb = { .arg = &p->r, .sample = on_sample, .end = on_end, .stop = on_stop };
	p->rrc = su_trace_read(p->r.o->trace, &p->filter, &cb, &p->st, p->err, sizeof(p->err));
	/* One that failed before it met the others: they wait no more. */
	su_parts_plan_part_done(p->filter.plan, p->filter.part);
	if (p->r.ordered) /* every sample of this part handed over, even after a failure */
		ordered_done(p->r.ordered, p->filter.part);
	if (p->r.fold) /* sorted here, on each part's thread: the parts' counts are then merged in one pass */
		folded_counts_sort(p->r.fold);
	return NULL;
}

#define PARTS_AFTER 2048 /* samples (STACKCAP_JOBS_AFTER sets it too) */

/* Is O's trace one of ours, to count in parts with -j, and long enough
 * for threads of their own: ten times PARTS_AFTER samples at ~32 bytes a
 * sample (each part warms a context of its own, 2-3 ms of CPU: on the
 * chain's trace -j 2 in parts was slower than -j 1 at 9,000 samples, about
 * even at 21,000)?  Then the plan of which part reads which files
 * (trace/parts-plan.h), else NULL. */
static struct su_parts_plan *parts_worth_it(const struct options *o)
{
	if (o->jobs < 2 || o->time_rel ||
	    o->filter.source == SU_READER_BABELTRACE2 || su_trace_probe(o->trace) != SU_TRACE_STACKCAP)
		return NULL;
	struct su_parts_plan *plan = su_parts_plan_new(o->trace, o->jobs);
	if (!plan)
		return NULL; /* the usual way says what is wrong */
	uint64_t n = PARTS_AFTER;
	(void)jobs_after_env(&n);
	/* Many sample files: many processes (a system-wide trace), whose
	 * samples cost several times a single process's (each process's
	 * maps, modules, first unwinds: 7.5 us a sample on a 214-process
	 * trace, 0.9 on the chain's), so a quarter of the bytes is enough
	 * (a 104-process trace of 196 KB: -j 2 in parts 6-12% faster). */
	if (su_parts_plan_sample_bytes(plan) >= 10 * 32 * n / (su_parts_plan_sample_files(plan) >= 32 ? 4 : 1))
		return plan;
	su_parts_plan_free(plan);
	return NULL;
}

/* Read O's trace in N parts by PLAN, part K with context CTX[K] (K > 0 on
 * a thread of its own).  @return 1 when every part was read whole without
 * a warning: the counts added into FOLD, R's counters and *ST (each
 * figure counted by one part: su_reader_opts.plan); 0 when not
 * (a damaged trace, a thread that did not start...): nothing of it is
 * kept but what the contexts counted, and the caller reads the trace
 * again the usual way, which says what is wrong. */
static int read_in_parts(const struct options *o, struct worker *ctx, unsigned n, struct su_parts_plan *plan,
			 struct folded_counts *fold, struct ordered *ord, struct run *r, struct su_reader_stats *st,
			 int quiet)
{
	struct part *p = aligned_alloc(_Alignof(struct part), n * sizeof(*p));
	struct progress_sum psum = { 0 };
	if (!p)
		return 0;
	memset(p, 0, n * sizeof(*p));
	int ok = 1;
	for (unsigned k = 0; k < n; k++) {
		p[k].r = (struct run){ .o = o, .fold = ord ? NULL : &p[k].fold, .reader = &ctx[k],
				       .jobs_after = UINT64_MAX, .ordered = ord, .part = k };
		p[k].filter = o->filter;
		if (ord)
			p[k].filter.order = &p[k].r.key;
		p[k].filter.part = k;
		p[k].filter.parts = n;
		p[k].filter.plan = plan;
		p[k].filter.warn = (struct su_warn_hook){ part_warned, &p[k] };
		progress_init(&p[k].r.progress, quiet || k, &p[k].st.bytes_read, &p[k].st.bytes_on_disk);
		if (p[0].r.progress.on) /* the first part's line: all parts' counts */
			progress_parts(&p[k].r.progress, &psum);
		/* The trace's bytes for part 0's progress line alone, when shown. */
		p[k].filter.no_dir_bytes = !p[k].r.progress.on;
		ok &= (p[k].r.pipeline = pipeline_new(0, NULL, &ctx[k], unwind_sample, format_sample_of, emit,
						      &p[k].r)) != NULL;
	}
	struct su_spread spread; /* part 0 is read here: the others elsewhere */
	su_spread_init(&spread);
	for (unsigned k = 1; ok && k < n; k++)
		ok = p[k].started = su_spread_create(&spread, &p[k].th, part_read, &p[k]) == 0;
	if (ok) {
		part_read(&p[0]);
	} else {
		/* The parts started would wait for those that did not. */
		su_parts_plan_cancel(plan);
		if (ord)
			ordered_cancel(ord);
	}
	progress_end(&p[0].r.progress);
	for (unsigned k = 1; k < n; k++)
		if (p[k].started)
			pthread_join(p[k].th, NULL);
	for (unsigned k = 0; ok && k < n; k++)
		ok = !p[k].rrc && !p[k].warned;
	if (ok) {
		*st = p[0].st;
		st->samples = st->bad_blobs = st->no_maps = st->no_process = st->blob_bytes = st->raw_stack_bytes = 0;
		st->drops = st->discarded = st->processes = st->ended = st->unended = st->full_samples = 0;
	}
	if (ok && !ord) {
		/* FOLD empty until now: the parts' sorted counts merged. */
		struct folded_counts **in = malloc(n * sizeof(*in));
		for (unsigned k = 0; in && k < n; k++)
			in[k] = &p[k].fold;
		ok = in && !folded_counts_merge_sorted(fold, in, n);
		free(in);
	}
	for (unsigned k = 0; k < n; k++) {
		if (ok) {
			r->skipped += p[k].r.skipped;
			r->other_events += p[k].r.other_events;
			r->other_kind += p[k].r.other_kind;
			st->samples += p[k].st.samples;
			st->bad_blobs += p[k].st.bad_blobs;
			st->no_maps += p[k].st.no_maps;
			st->no_process += p[k].st.no_process;
			st->blob_bytes += p[k].st.blob_bytes;
			st->raw_stack_bytes += p[k].st.raw_stack_bytes;
			st->full_samples += p[k].st.full_samples;
			st->drops += p[k].st.drops;
			st->discarded += p[k].st.discarded;
			st->processes += p[k].st.processes;
			st->ended += p[k].st.ended;
			st->unended += p[k].st.unended;
		}
		pipeline_free(p[k].r.pipeline);
		folded_counts_free(&p[k].fold);
	}
	free(p);
	return ok;
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
	struct su_parts_plan *plan = NULL; /* -j N over our trace: which part reads which files */
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
	struct su_reader_stats st = { 0 };
	char err[1024];
	/* No progress line among samples printed to the same terminal. */
	int const to_stdout = !(o->flamegraph || o->export_format) || !o->output || !strcmp(o->output, "-");
	int const quiet = to_stdout && isatty(STDOUT_FILENO);
	int rrc = 0;
	int read = 0;
	if ((plan = parts_worth_it(o)) != NULL) {
		/* stacks: the parts' texts straight to the output, in order;
		 * export: their records into the model, in order. */
		struct ordered *ord = NULL;
		if (r.exp) {
			r.exp->process_by_id = 1;
			if (!(ord = ordered_new_sink(nctx, export_sink, r.exp))) {
				fprintf(stderr, PROG ": out of memory\n");
				goto out;
			}
		} else if (!r.fold) {
			(void)fflush(stdout); /* a write error shows in ferror(stdout) at the end */
			if (!(ord = ordered_new(nctx, fileno(stdout)))) {
				fprintf(stderr, PROG ": out of memory\n");
				goto out;
			}
		}
		read = read_in_parts(o, ctx, nctx, plan, &fold, ord, &r, &st, quiet);
		su_parts_plan_free(plan); /* the kernel symbols the parts shared: their readers are gone */
		plan = NULL;
		if (ord) {
			int werr;
			uint64_t const written = ordered_finish(ord, &werr);
			ordered_free(ord);
			if (werr == -ENOMEM) {
				fprintf(stderr, PROG ": out of memory\n");
				goto out;
			}
			if (r.exp) {
				/* Not read whole, or records the model refused:
				 * from the start the usual way, in a new model. */
				if (!read || werr) {
					read = 0;
					export_model_free(r.exp);
					if (!(r.exp = export_model_new(o->no_inline))) {
						fprintf(stderr, PROG ": out of memory\n");
						goto out;
					}
				}
			} else if (werr) { /* said at the end, as for the usual way's */
				r.out_errno = -werr;
				read = 1;
			} else if (!read) {
				/* Read again the usual way, which says what is wrong;
				 * what the parts wrote is not written twice. */
				r.mute = written;
			}
		}
		/* Not read in parts: from the start, the usual way. */
		for (unsigned i = 0; !read && i < nctx; i++) {
			worker_fini(&ctx[i]);
			if (worker_init(&ctx[i], o)) {
				fprintf(stderr, PROG ": out of memory\n");
				goto out;
			}
		}
		if (!read) {
			folded_counts_free(&fold);
			memset(&fold, 0, sizeof(fold));
			r.skipped = r.other_events = r.other_kind = 0;
		}
	}
	if (!read) {
		r.jobs_after = nw ? jobs_after(o) : UINT64_MAX;
		if (!(r.pipeline = pipeline_new(nw, wctx + 1, r.reader, unwind_sample, format_sample_of, emit, &r))) {
			fprintf(stderr, PROG ": cannot start worker threads: %s\n", strerror(errno));
			goto out;
		}
		if (!r.fold && !r.exp) /* stacks: a chain's lines go out by reference */
			pipeline_emit_by_ref(r.pipeline);
		int const src = r.jobs_after ? 0 : pipeline_start(r.pipeline);
		if (src) {
			fprintf(stderr, PROG ": cannot start worker threads: %s\n", strerror(-src));
			goto out;
		}
		struct su_reader_callbacks cb = { .arg = &r, .sample = on_sample, .end = on_end, .stop = on_stop,
						  .hit_files = on_hit_files };
		r.ahead_threads = samples_filtered(o) ? 0 : nw;
		progress_init(&r.progress, quiet, &st.bytes_read, &st.bytes_on_disk);
		struct su_reader_opts filter = o->filter;
		filter.no_dir_bytes = !r.progress.on; /* the progress line's alone */
		filter.holds_words = nw > 0; /* workers read words in the reader's mapping */
		filter.holding = pipeline_holding(r.pipeline);
		filter.map_ahead = nw > 0;
		rrc = su_trace_read(o->trace, &filter, &cb, &st, err, sizeof(err));
		progress_end(&r.progress);
		su_inflate_ahead_stop(r.inflate_ahead, 0);
		r.inflate_ahead = NULL;
		pipeline_free(r.pipeline); /* the reader stopped early: stop the workers */
		r.pipeline = NULL;
	}
	if (rrc < 0) {
		fflush(stdout);
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rrc));
		goto out;
	}
	if (o->flamegraph) {
		if (fold_flamegraph(&fold, o))
			goto out;
	} else if (o->report) {
		if (report_print(&fold, &o->rep, stdout)) {
			fprintf(stderr, PROG ": out of memory\n");
			goto out;
		}
	} else if (o->archive) {
		if (archive_modules(ctx, nctx, o))
			goto out;
	} else if (r.fold) {
		folded_counts_print(&fold, stdout);
	}
	struct export_info const xinfo = { .name = o->name, .exporter = PROG " " PACKAGE_VERSION };
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
	if (c.exec)
		fprintf(stderr, ", %" PRIu64 " in execve (their program's image already gone)", c.exec);
	if (st.drops || st.discarded)
		fprintf(stderr, ", %" PRIu64 " dropped at capture", st.drops + st.discarded);
	fputc('\n', stderr);
	if (!c.samples && o->event)
		fprintf(stderr, PROG ": no sample of event %s (%" PRIu64 " of other events; stackunwind stats lists "
			"them)\n", o->event, r.other_events);
	else if (!c.samples && (o->filter.pid || o->filter.tid || o->filter.time_begin || o->filter.time_end || o->time_rel ||
				o->n_slices))
		fprintf(stderr,
			PROG ": no sample matched --pid/--tid/--time (%" PRIu64 " read outside --time +...; times "
			"are seconds as stacks prints them, +seconds after the first sample, or percentages of the "
			"trace's span)\n",
			r.skipped);
	if (r.other_kind && o->off_cpu == OFF_CPU_CPU)
		fprintf(stderr, PROG ": %" PRIu64 " off-CPU stacks left out (%s)\n", r.other_kind,
			o->folded ? "--off-cpu shows them, --with-off-cpu both kinds" : "speedscope shows CPU samples only");
	if (!c.samples && r.other_kind && o->off_cpu == OFF_CPU_ONLY)
		fprintf(stderr, PROG ": no off-CPU stack in %s (stackcap record --off-cpu records them)\n", o->name);
	if (ferror(stdout) || r.out_errno) {
		fprintf(stderr, PROG ": write error on standard output%s%s\n", r.out_errno ? ": " : "",
			r.out_errno ? strerror(r.out_errno) : "");
		goto out;
	}
	rc = rrc > 0 || ms.build_id_mismatch || ms.not_found ? EXIT_PARTIAL : EXIT_OK;
out:
	pipeline_free(r.pipeline);
	for (unsigned i = 0; ctx && i < nctx; i++)
		worker_fini_at_exit(&ctx[i]);
	export_out_abort(&xo);
	export_model_free(r.exp);
	folded_counts_free(&fold);
	su_parts_plan_free(plan);
	free(ctx);
	free(wctx);
	return rc;
}

/* The file descriptor table grown now, while this process has one
 * thread: the kernel grows a table shared by threads (64, 128, 256...
 * entries) only after an RCU grace period (synchronize_rcu, 1-4 ms here
 * each time), and a read of our trace opens each of its files at once
 * (a system-wide trace: hundreds), each thread its modules: a read in
 * two parts of a 214-process trace took 112 ms, 56 with the table grown
 * ahead.  2,048 entries: 16 KB; past them the kernel grows it as
 * before. */
static void fd_table_ahead(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rlim_t const top = rl.rlim_cur < 2048 ? rl.rlim_cur : 2048;
	/* Its last fd below TOP, away from the power-of-two rounding up. */
	int const fd = top > 128 ? (int)top - 64 : -1;
	for (int src = 0; fd > 0 && src < 3; src++) { /* any of them open */
		int const got = fcntl(src, F_DUPFD_CLOEXEC, fd);
		if (got >= 0) {
			close(got);
			break;
		}
	}
}

int main(int argc, char **argv)
{
	/* Heaps grown 4 MiB at a time: a thread's malloc arena otherwise
	 * grows a page or two per mprotect (glibc pads only the main one),
	 * ~250 calls a -j 2 read of a 150k-sample trace, each taking the
	 * address space's lock the other thread's page faults wait on.
	 * Untouched pages cost nothing resident. */
	mallopt(M_TOP_PAD, 4 << 20);
	struct options o;
	parse_options(argc, argv, &o);
	/* A pass over our trace holds its bigger stream files open at once,
	 * each part of -j N its own: a system-wide trace has thousands. */
	su_nofile_raise();
	if (o.jobs > 1)
		fd_table_ahead();
	int rc = EXIT_ERROR;
	if (!o.n_slices || !time_slices(&o))
		rc = !strcmp(o.command, "stats") ? cmd_stats(&o) : cmd_stacks(&o);
	free(o.slices);
	free(o.debug_dirs);
	return rc;
}
