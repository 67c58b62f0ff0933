/* SPDX-License-Identifier: MIT */
/*
 * stackunwind: offline unwinding and symbolization of recorded traces.
 *
 *   stackunwind stacks [OPTIONS] TRACE   one block per sample, like perf script
 *   stackunwind stats  [OPTIONS] TRACE   sizes, savings, drops, fidelity
 *   stackunwind export --format speedscope|pprof -o FILE [OPTIONS] TRACE
 *   stackunwind folded / flamegraph      stacks aggregated (cli/flamegraph.c draws)
 *
 * The reader decodes samples in time order on the main thread (each blob
 * may refer to the previous sample of its thread); batches of decoded
 * samples are unwound, symbolized and formatted by N workers, each with
 * its own modules (elfutils is not thread-safe), and written in order, so
 * the output of -j N is byte-identical to -j 1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace-read.h"
#include "debuginfo/module.h"
#include "debuginfo/inflate-cache.h"
#include "unwind/unwind.h"
#include "symbolize/symbolize.h"
#include "symbolize/perfmap.h"
#include "cli/export.h"
#include "cli/flamegraph.h"
#include "cli/progress.h"

#define PROG "stackunwind"
#define BATCH 1024
#define MAX_FRAMES 1024
#define MAX_SYMFRAMES 64

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3 };
enum { EXPORT_SPEEDSCOPE = 1, EXPORT_PPROF };

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
		"                           either side may be empty)\n"
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
		"  folded and flamegraph:\n"
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

struct options {
	const char *command;
	const char *trace;
	struct su_reader_opts filter;
	unsigned jobs;
	enum su_unwinder_kind unwinder;
	const char **debug_dirs;
	size_t n_debug_dirs;
	struct su_debuginfo_opts di;
	size_t max_frames;
	int folded;              /* `folded`: aggregate stacks instead of listing samples */
	int roots;               /* folded root: 0 comm, 1 comm-pid, 2 comm-pid/tid */
	int no_inline;           /* folded, flamegraph, export: real functions only */
	int flamegraph;          /* `flamegraph`: folded, each frame with its module, drawn */
	struct flame_opts flame;
	int export_format;       /* export: EXPORT_SPEEDSCOPE or EXPORT_PPROF */
	const char *output;      /* flamegraph, export: -o FILE */
};

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		die_usage("%s: not a number: '%s'", what, s);
	return v;
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
	       OPT_PER_PROCESS = 200, OPT_PER_THREAD, OPT_NO_INLINE, OPT_TIME = 256, OPT_UNWINDER, OPT_READER, OPT_DEBUG_DIR, OPT_SYMFS, OPT_NO_DEBUGINFOD, OPT_MAX_FRAMES, OPT_FORMAT, OPT_NO_CACHE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "time", required_argument, NULL, OPT_TIME },
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
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "icicle", no_argument, NULL, OPT_ICICLE },
		{ "reverse", no_argument, NULL, OPT_REVERSE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	memset(o, 0, sizeof(*o));
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
			o->flame.width = (unsigned)parse_u64(optarg, "--width");
			if (o->flame.width < 100 || o->flame.width > 100000)
				die_usage("--width: between 100 and 100000");
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
		case 't':
			o->filter.tid = (uint32_t)parse_u64(optarg, "--tid");
			break;
		case OPT_TIME: {
			const char *comma = strchr(optarg, ',');
			if (!comma)
				die_usage("--time wants START,END (either may be empty)");
			o->filter.time_begin = parse_time(optarg, (size_t)(comma - optarg), 0);
			o->filter.time_end = parse_time(comma + 1, strlen(comma + 1), 0);
			if (o->filter.time_end && o->filter.time_end < o->filter.time_begin)
				die_usage("--time: END is before START");
			break;
		}
		case 'j':
			o->jobs = (unsigned)parse_u64(optarg, "--jobs");
			if (o->jobs < 1 || o->jobs > 1024)
				die_usage("--jobs: between 1 and 1024");
			break;
		case OPT_UNWINDER:
			if (!strcmp(optarg, "fast"))
				o->unwinder = SU_UNWINDER_FAST;
			else if (!strcmp(optarg, "dwfl"))
				o->unwinder = SU_UNWINDER_DWFL;
			else
				die_usage("--unwinder: fast or dwfl, not '%s'", optarg);
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
			if (!strcmp(optarg, "native"))
				o->filter.source = SU_READER_NATIVE;
			else if (!strcmp(optarg, "babeltrace2"))
				o->filter.source = SU_READER_BABELTRACE2;
			else
				die_usage("--reader: native or babeltrace2, not '%s'", optarg);
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
		case OPT_MAX_FRAMES:
			o->max_frames = (size_t)parse_u64(optarg, "--max-frames");
			if (o->max_frames < 1 || o->max_frames > 65536)
				die_usage("--max-frames: between 1 and 65536");
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "speedscope"))
				o->export_format = EXPORT_SPEEDSCOPE;
			else if (!strcmp(optarg, "pprof"))
				o->export_format = EXPORT_PPROF;
			else
				die_usage("--format: speedscope or pprof, not '%s'", optarg);
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
	if (is_export && !o->export_format)
		die_usage("export: missing --format speedscope|pprof");
	if (is_export && !o->output)
		die_usage("export: missing -o FILE");
	o->trace = argv[optind];
	o->di.debug_dirs = o->n_debug_dirs ? o->debug_dirs : NULL;
	o->di.inflate_cache_dir = no_cache ? NULL : su_inflate_default_dir();
}

/* ---- a growable text buffer -------------------------------------------------- */

struct text {
	char *buf;
	size_t len, cap;
	int oom;
};

static void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(struct text *t, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (t->buf && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t ncap = t->cap ? t->cap * 2 : 65536;
		while (ncap < t->len + (size_t)n + 1)
			ncap *= 2;
		char *nb = realloc(t->buf, ncap);
		if (!nb) {
			t->oom = 1;
			return;
		}
		t->buf = nb;
		t->cap = ncap;
	}
}

/* ---- per-worker unwinding and formatting ------------------------------------ */

struct counts {
	uint64_t samples;
	uint64_t complete;       /* unwound to the outermost frame */
	uint64_t truncated;      /* cut by the stack cap */
	uint64_t incomplete;     /* stopped early for another reason */
	uint64_t no_user;        /* no user state (perf.data: kernel threads, exiting tasks) */
	uint64_t unknown_frames; /* frames without a symbol */
	uint64_t frames;
};

/* The text after the address of every line a frame prints (several when
 * functions were inlined there), cached: a long trace repeats its pcs. */
struct frame_text {
	const struct su_module *m;   /* NULL: empty slot */
	const char *path;            /* the maps entry's path (module name shown) */
	uint64_t addr;               /* ELF address looked up */
	uint8_t activation;
	uint8_t unknown;             /* no symbol: counts as an unknown frame */
	uint16_t lines;
	char *text;                  /* LINES lines, each ending in '\n' */
};

/* A module a frame needed but that could not be used. */
struct bad_module {
	const struct su_module *m;
};

struct worker {
	const struct options *o;
	struct bad_module *bad;
	size_t n_bad, cap_bad;
	struct frame_text *ftext;    /* open addressing, power of two */
	size_t n_ftext, cap_ftext;
	/* The module of a maps entry, by entry address: maps live until the
	 * reader's end callback, so an address never names another entry. */
	struct { const struct su_map_entry *e; struct su_module *m; } emod[512];
	struct su_modcache *modules;
	struct su_perfmaps *perfmaps; /* JIT names (symbolize/perfmap.h) */
	struct su_unwinder *unwinder;
	struct su_frame *frames;
	struct counts counts;
};

static int worker_init(struct worker *w, const struct options *o)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->modules = su_modcache_new(&o->di);
	if (!w->modules)
		return -ENOMEM;
	su_modcache_set_finalizers(w->modules, NULL, su_symbolize_cache_free);
	w->unwinder = su_unwinder_new(o->unwinder, w->modules);
	w->frames = calloc(o->max_frames, sizeof(*w->frames));
	w->perfmaps = su_perfmaps_new(o->di.symfs);
	return w->unwinder && w->frames && w->perfmaps ? 0 : -ENOMEM;
}

static void worker_fini(struct worker *w)
{
	su_unwinder_free(w->unwinder);
	su_modcache_free(w->modules);
	su_perfmaps_free(w->perfmaps);
	free(w->frames);
	free(w->bad);
	for (size_t i = 0; i < w->cap_ftext; i++)
		free(w->ftext[i].text);
	free(w->ftext);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

static void note_bad_module(struct worker *w, const struct su_module *m)
{
	for (size_t i = 0; i < w->n_bad; i++)
		if (w->bad[i].m == m)
			return;
	if (w->n_bad == w->cap_bad) {
		size_t n = w->cap_bad ? 2 * w->cap_bad : 8;
		struct bad_module *nb = realloc(w->bad, n * sizeof(*nb));
		if (!nb)
			return; /* only the warning is lost */
		w->bad = nb;
		w->cap_bad = n;
	}
	w->bad[w->n_bad++].m = m;
}

/* One warning per binary that frames needed and could not use (every
 * worker met its own copy of the module: deduplicate by path). */
static void warn_bad_modules(struct worker *workers, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (size_t j = 0; j < workers[i].n_bad; j++) {
			const struct su_module *m = workers[i].bad[j].m;
			int seen = 0;
			for (unsigned a = 0; a <= i && !seen; a++)
				for (size_t b = 0; b < (a == i ? j : workers[a].n_bad) && !seen; b++)
					seen = !strcmp(workers[a].bad[b].m->recorded_path, m->recorded_path);
			if (seen)
				continue;
			char hex[2 * SU_BUILD_ID_MAX + 1] = "none recorded";
			for (unsigned k = 0; k < m->build_id_len; k++)
				snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
			fprintf(stderr, PROG ": warning: %s (build-id %s): %s; its frames show module+offset\n",
				m->recorded_path, hex,
				m->status == SU_MODULE_BUILD_ID_MISMATCH
					? "the file there has another build-id (rebuilt since the recording?); "
					  "give the right one with --debug-dir or --symfs"
					: "not found (give it with --debug-dir or --symfs, or set DEBUGINFOD_URLS)");
		}
}

/* ---- fast text ------------------------------------------------------------- */

/* printf was 70% of `stacks`: the per-sample text is built by hand. */
static int text_reserve(struct text *t, size_t n)
{
	if (t->len + n < t->cap)
		return 0;
	size_t ncap = t->cap ? t->cap * 2 : 65536;
	while (ncap < t->len + n + 1)
		ncap *= 2;
	char *nb = realloc(t->buf, ncap);
	if (!nb) {
		t->oom = 1;
		return -1;
	}
	t->buf = nb;
	t->cap = ncap;
	return 0;
}

static void text_put(struct text *t, const char *s, size_t n)
{
	if (text_reserve(t, n))
		return;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

static void text_puts(struct text *t, const char *s)
{
	text_put(t, s, strlen(s));
}

static void text_u64(struct text *t, uint64_t v, int min_digits)
{
	char b[24];
	int i = (int)sizeof(b);
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v || (int)sizeof(b) - i < min_digits);
	text_put(t, b + i, sizeof(b) - (size_t)i);
}

/* "\t" and V in hex, right-aligned in 16 columns, then a space: perf's. */
static void text_pc(struct text *t, uint64_t v)
{
	char b[18];
	int i = 17;
	b[17] = ' ';
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (i > 1)
		b[--i] = ' ';
	b[0] = '\t';
	text_put(t, b, sizeof(b));
}

/* ---- frame text, cached per (module, address) --------------------------------- */

static uint64_t frame_hash(const void *m, const char *path, uint64_t addr, int act)
{
	uint64_t h = (uint64_t)(uintptr_t)m * 0x9E3779B97F4A7C15ull;
	h ^= (uint64_t)(uintptr_t)path * 0xC2B2AE3D27D4EB4Full;
	h ^= (addr * 2 + (uint64_t)act) * 0x165667B19E3779F9ull;
	return h ^ (h >> 29);
}

static struct frame_text *frame_cache_slot(struct worker *w, const struct su_module *m, const char *path,
					   uint64_t addr, int act)
{
	if ((w->n_ftext + 1) * 2 > w->cap_ftext) {
		size_t ncap = w->cap_ftext ? w->cap_ftext * 2 : 1024;
		struct frame_text *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return NULL;
		for (size_t i = 0; i < w->cap_ftext; i++) {
			struct frame_text *o = &w->ftext[i];
			if (!o->m)
				continue;
			size_t h = frame_hash(o->m, o->path, o->addr, o->activation) & (ncap - 1);
			while (nt[h].m)
				h = (h + 1) & (ncap - 1);
			nt[h] = *o;
		}
		free(w->ftext);
		w->ftext = nt;
		w->cap_ftext = ncap;
	}
	size_t h = frame_hash(m, path, addr, act) & (w->cap_ftext - 1);
	for (;;) {
		struct frame_text *f = &w->ftext[h];
		if (!f->m || (f->m == m && f->path == path && f->addr == addr && f->activation == act))
			return f;
		h = (h + 1) & (w->cap_ftext - 1);
	}
}

/* Build the text of a frame in module M at ELF address ADDR. */
static int frame_text_build(struct frame_text *ft, struct su_module *m, uint64_t elf_addr, int act,
			    const char *module_name)
{
	struct su_symframe sf[MAX_SYMFRAMES];
	uint64_t const lookup = elf_addr - (act ? 0 : 1);
	size_t n = m->status == SU_MODULE_OK ? su_symbolize(m, lookup, sf, MAX_SYMFRAMES) : 0;
	struct text t = { 0 };
	if (n == 0 || !sf[n - 1].function) {
		/* module+offset: what can still be looked up later by hand. */
		n = 1;
		text_printf(&t, "%s+0x%" PRIx64 " (%s)\n", base_name(module_name), elf_addr, module_name);
		ft->unknown = 1;
	} else {
		for (size_t i = 0; i < n; i++) {
			const struct su_symframe *y = &sf[i];
			const char *fn = y->function ? y->function : "[unknown]";
			if (y->inlined)
				text_printf(&t, "%s (inlined) (%s)", fn, module_name);
			else
				text_printf(&t, "%s+0x%" PRIx64 " (%s)", fn, y->func_offset + (act ? 0 : 1),
					    module_name);
			if (y->file && y->line)
				text_printf(&t, " %s:%u\n", y->file, y->line);
			else
				text_printf(&t, "\n");
		}
	}
	if (t.oom || !t.buf) {
		free(t.buf);
		return -ENOMEM;
	}
	ft->text = t.buf;
	ft->lines = (uint16_t)n;
	return 0;
}

/* The maps entry (*E) and module of frame F, or NULL. */
static struct su_module *frame_module(struct worker *w, const struct su_maps *maps, const struct su_frame *f,
				      const struct su_map_entry **e_out)
{
	const struct su_map_entry *e = f->map >= 0 && maps && (uint64_t)f->map < maps->count
		? &maps->entries[f->map] : NULL;
	struct su_module *m = NULL;
	*e_out = e;
	if (!e)
		return NULL;
	size_t const slot = ((uintptr_t)e >> 4) % 512;
	if (w->emod[slot].e == e)
		return w->emod[slot].m;
	if ((m = su_modcache_get(w->modules, e)) != NULL) {
		w->emod[slot].e = e;
		w->emod[slot].m = m;
	}
	return m;
}

/* A frame in code no file describes (a JIT's): its name from the perf map
 * of process PID, as perf script names it.  @return 1, *SF and *MAP (the
 * map file, perf's module name; MAP may be NULL), or 0. */
static int jit_frame(struct worker *w, uint32_t pid, const struct su_module *m, const struct su_frame *f,
		     struct su_symframe *sf, const char **map)
{
	if (!m || m->status != SU_MODULE_NO_FILE)
		return 0;
	uint64_t start = 0;
	const char *name = su_perfmap_lookup(w->perfmaps, pid, su_frame_lookup_pc(f), &start, map);
	if (!name)
		return 0;
	*sf = (struct su_symframe){ .function = name, .func_offset = f->pc - start };
	return 1;
}

/* One frame's lines: inlined frames first, like perf's "(inlined)". */
static void format_frame(struct worker *w, uint32_t pid, const struct su_maps *maps, const struct su_frame *f,
			 struct text *out)
{
	const struct su_map_entry *e;
	struct su_module *m = frame_module(w, maps, f, &e);
	if (!m) {
		w->counts.unknown_frames++;
		text_pc(out, f->pc);
		text_puts(out, "[unknown] ([unknown])\n");
		return;
	}
	struct su_symframe jf;
	const char *jmap;
	if (jit_frame(w, pid, m, f, &jf, &jmap)) {
		text_pc(out, f->pc);
		text_printf(out, "%s+0x%" PRIx64 " (%s)\n", jf.function, jf.func_offset, jmap);
		return;
	}
	if (m->status == SU_MODULE_NOT_FOUND || m->status == SU_MODULE_BUILD_ID_MISMATCH)
		note_bad_module(w, m);
	uint64_t const elf_addr = f->pc - e->bias;
	struct frame_text *ft = frame_cache_slot(w, m, e->path, elf_addr, f->activation);
	struct frame_text tmp = { 0 };
	if (!ft || !ft->m) {
		struct frame_text *dst = ft ? ft : &tmp;
		const char *module_name = e->path[0] ? e->path : (e->flags & SU_MAP_ANON ? "[anon]" : "[unknown]");
		if (frame_text_build(dst, m, elf_addr, f->activation, module_name)) {
			out->oom = 1;
			return;
		}
		dst->m = m;
		dst->path = e->path;
		dst->addr = elf_addr;
		dst->activation = f->activation;
		if (ft)
			w->n_ftext++;
		ft = dst;
	}
	if (ft->unknown)
		w->counts.unknown_frames++;
	const char *p = ft->text;
	for (uint16_t i = 0; i < ft->lines; i++) {
		const char *nl = strchr(p, '\n');
		text_pc(out, f->pc);
		text_put(out, p, (size_t)(nl - p) + 1);
		p = nl + 1;
	}
	if (ft == &tmp)
		free(tmp.text);
}

/* What a worker needs to print one unwound sample. */
struct unwound {
	const struct su_process *process;
	const struct su_maps *maps;
	uint32_t pid, tid;
	uint64_t time_ns;
	uint32_t nframes;
	uint8_t end;             /* enum su_unwind_end */
	size_t frame_off;        /* in the batch's frame arena */
};

/* A pid or tid as perf prints it: signed, so the kernel's "no task any
 * more" (a task sampled after release_task) is -1, not 4294967295. */
static void text_id(struct text *out, uint32_t id)
{
	if (id == UINT32_MAX)
		text_put(out, "-1", 2);
	else
		text_u64(out, id, 1);
}

/* Unwind S into W's frames, counting how it ended. */
static size_t unwind_sample(struct worker *w, const struct su_sample *s, enum su_unwind_end *end)
{
	*end = SU_END_ERROR;
	size_t const n = su_unwind(w->unwinder, s, w->frames, w->o->max_frames, end);
	w->counts.samples++;
	w->counts.frames += n;
	if (*end == SU_END_OUTERMOST)
		w->counts.complete++;
	else if (*end == SU_END_TRUNCATED)
		w->counts.truncated++;
	else if (*end == SU_END_NO_USER)
		w->counts.no_user++;
	else
		w->counts.incomplete++;
	return n;
}

static void format_sample(struct worker *w, const struct unwound *u, const struct su_frame *frames,
			  struct text *out)
{
	/* "comm pid/tid sec.nsec:" */
	text_puts(out, u->process && u->process->comm[0] ? u->process->comm : "[unknown]");
	text_put(out, " ", 1);
	text_id(out, u->pid);
	text_put(out, "/", 1);
	text_id(out, u->tid);
	text_put(out, " ", 1);
	text_u64(out, u->time_ns / 1000000000u, 1);
	text_put(out, ".", 1);
	text_u64(out, u->time_ns % 1000000000u, 9);
	text_put(out, ":\n", 2);
	for (size_t i = 0; i < u->nframes; i++)
		format_frame(w, u->pid, u->maps, &frames[i], out);
	if (u->end != SU_END_OUTERMOST) {
		text_pc(out, 0);
		text_put(out, "[", 1);
		text_puts(out, su_unwind_end_name((enum su_unwind_end)u->end));
		text_puts(out, "] ([stackunwind])\n");
	}
	text_put(out, "\n", 1);
}

/* A function name for folded stacks: ';' separates frames there. */
static void text_folded_name(struct text *out, const char *name)
{
	for (const char *p = name; *p; p++)
		text_put(out, *p == ';' ? ":" : p, 1);
}

/* flamegraph: a frame's module follows its name (FLAME_MODSEP). */
static void fold_module(struct worker *w, struct text *out, const char *mod)
{
	if (!w->o->flamegraph)
		return;
	text_put(out, (const char[]){ FLAME_MODSEP }, 1);
	text_folded_name(out, mod);
}

/* One line "comm;[end;]outermost;...;leaf\n": every frame by function
 * name, inlined functions as frames of their own, module+offset where
 * nothing is known; a stack that did not reach its outermost frame is
 * rooted under "[truncated]" (or why it stopped), so it groups apart. */
static void format_folded(struct worker *w, const struct unwound *u, const struct su_frame *frames,
			  struct text *out)
{
	text_folded_name(out, u->process && u->process->comm[0] ? u->process->comm : "[unknown]");
	if (w->o->roots >= 1) {
		text_put(out, "-", 1);
		text_id(out, u->pid);
	}
	if (w->o->roots >= 2) {
		text_put(out, "/", 1);
		text_id(out, u->tid);
	}
	if (u->end != SU_END_OUTERMOST) {
		text_puts(out, ";[");
		text_puts(out, su_unwind_end_name((enum su_unwind_end)u->end));
		text_put(out, "]", 1);
	}
	for (size_t i = u->nframes; i-- > 0;) {
		const struct su_frame *f = &frames[i];
		const struct su_map_entry *e;
		struct su_module *m = frame_module(w, u->maps, f, &e);
		text_put(out, ";", 1);
		if (!m) {
			w->counts.unknown_frames++;
			text_puts(out, "[unknown]");
			continue;
		}
		/* folded and flamegraph warn of a missing or rebuilt binary too. */
		if (m->status == SU_MODULE_NOT_FOUND || m->status == SU_MODULE_BUILD_ID_MISMATCH)
			note_bad_module(w, m);
		uint64_t const elf_addr = f->pc - e->bias;
		struct su_symframe sf[MAX_SYMFRAMES];
		size_t n = m->status == SU_MODULE_OK
			? su_symbolize(m, elf_addr - (f->activation ? 0 : 1), sf, MAX_SYMFRAMES) : 0;
		const char *mod = base_name(e->path[0] ? e->path : "[anon]"), *jmap;
		if (!n && jit_frame(w, u->pid, m, f, &sf[0], &jmap)) {
			mod = base_name(jmap);
			n = 1;
		}
		if (n == 0 || !sf[n - 1].function) {
			w->counts.unknown_frames++;
			text_folded_name(out, mod);
			text_printf(out, "+0x%" PRIx64, elf_addr);
			fold_module(w, out, mod);
			continue;
		}
		/* Outermost (the real function) first; --no-inline keeps only it. */
		size_t const last = w->o->no_inline ? n - 1 : 0;
		for (size_t k = n; k-- > last;) {
			text_folded_name(out, sf[k].function ? sf[k].function : "[unknown]");
			fold_module(w, out, mod);
			if (k > last)
				text_put(out, ";", 1);
		}
	}
	text_put(out, "\n", 1);
}

/* `export`: the sample as records for the export model (cli/export.h):
 * symbolized here, in the worker; deduplicated in the main thread. */
static void format_export(struct worker *w, const struct unwound *u, const struct su_frame *frames,
			  struct text *out)
{
	struct export_rec_sample const h = { .time_ns = u->time_ns, .process = u->process, .pid = u->pid,
					     .tid = u->tid, .nframes = u->nframes, .end = u->end };
	text_put(out, (const char *)&h, sizeof(h));
	for (size_t i = 0; i < u->nframes; i++) {
		const struct su_frame *f = &frames[i];
		const struct su_map_entry *e;
		struct su_module *m = frame_module(w, u->maps, f, &e);
		struct su_symframe sf[MAX_SYMFRAMES];
		size_t n = 0;
		if (m && (m->status == SU_MODULE_NOT_FOUND || m->status == SU_MODULE_BUILD_ID_MISMATCH))
			note_bad_module(w, m);
		if (m && m->status == SU_MODULE_OK)
			n = su_symbolize(m, f->pc - e->bias - (f->activation ? 0 : 1), sf, MAX_SYMFRAMES);
		if (n && !sf[n - 1].function)
			n = 0;
		if (!n && jit_frame(w, u->pid, m, f, &sf[0], NULL))
			n = 1;
		if (!n)
			w->counts.unknown_frames++;
		struct export_rec_frame const r = { .pc = f->pc, .map = e, .activation = f->activation,
						    .module_ok = m && m->status == SU_MODULE_OK, .nsym = (uint16_t)n };
		text_put(out, (const char *)&r, sizeof(r));
		text_put(out, (const char *)sf, n * sizeof(*sf));
	}
}

/* The text of one unwound sample, as the command wants it. */
static void format_one(struct worker *w, const struct unwound *u, const struct su_frame *frames,
		       struct text *out)
{
	if (w->o->export_format)
		format_export(w, u, frames, out);
	else
		(w->o->folded ? format_folded : format_sample)(w, u, frames, out);
}

static void unwound_of(struct unwound *u, const struct su_sample *s, size_t n, enum su_unwind_end end)
{
	*u = (struct unwound){ .process = s->process, .maps = s->maps, .pid = s->pid, .tid = s->tid,
			       .time_ns = s->time_ns, .nframes = (uint32_t)n, .end = (uint8_t)end };
}

/* ---- batches: unwound samples on their way to a worker ------------------------ */

/* The reader thread decodes and unwinds (cheap: the cached CFI rules);
 * workers symbolize and format, the costly part.  A batch carries frames,
 * not stack images, so nothing big is copied. */
struct batch {
	size_t n;
	struct unwound samples[BATCH];
	struct su_frame *frames; /* arena */
	size_t used, cap;        /* in frames */
	struct text out;
	uint64_t seq;
	int state;               /* 0 free, 1 filled, 2 in work, 3 done */
};

static int batch_add(struct batch *b, const struct su_sample *s, const struct su_frame *frames, size_t n,
		     enum su_unwind_end end)
{
	if (b->used + n > b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 4096;
		while (ncap < b->used + n)
			ncap *= 2;
		struct su_frame *nf = realloc(b->frames, ncap * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		b->frames = nf;
		b->cap = ncap;
	}
	struct unwound *u = &b->samples[b->n++];
	unwound_of(u, s, n, end);
	u->frame_off = b->used;
	memcpy(b->frames + b->used, frames, n * sizeof(*frames));
	b->used += n;
	return 0;
}

/* ---- folded stacks: distinct stack -> count ------------------------------------ */

struct fold_entry {
	char *key;               /* the line without its '\n'; NULL: empty slot */
	uint64_t hash, count;
};

struct folded {
	struct fold_entry *tab;  /* open addressing, power of two */
	size_t n, cap;
	int oom;
};

static uint64_t fold_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static void fold_add(struct folded *f, const char *s, size_t n)
{
	if ((f->n + 1) * 2 > f->cap) {
		size_t ncap = f->cap ? 2 * f->cap : 1024;
		struct fold_entry *nt = calloc(ncap, sizeof(*nt));
		if (!nt) {
			f->oom = 1;
			return;
		}
		for (size_t i = 0; i < f->cap; i++)
			if (f->tab[i].key) {
				size_t h = f->tab[i].hash & (ncap - 1);
				while (nt[h].key)
					h = (h + 1) & (ncap - 1);
				nt[h] = f->tab[i];
			}
		free(f->tab);
		f->tab = nt;
		f->cap = ncap;
	}
	uint64_t const hash = fold_hash(s, n);
	size_t h = hash & (f->cap - 1);
	for (; f->tab[h].key; h = (h + 1) & (f->cap - 1))
		if (f->tab[h].hash == hash && !strncmp(f->tab[h].key, s, n) && !f->tab[h].key[n]) {
			f->tab[h].count++;
			return;
		}
	char *k = strndup(s, n);
	if (!k) {
		f->oom = 1;
		return;
	}
	f->tab[h] = (struct fold_entry){ k, hash, 1 };
	f->n++;
}

static int fold_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fold_entry *)a)->key, ((const struct fold_entry *)b)->key);
}

/* The entries at the start of the table, sorted by stack, so the output
 * is the same whatever the order of samples.  @return their number. */
static size_t fold_sort(struct folded *f)
{
	size_t n = 0;
	for (size_t i = 0; i < f->cap; i++)
		if (f->tab[i].key) {
			f->tab[n] = f->tab[i];
			if (i != n++)
				f->tab[i].key = NULL;
		}
	if (n)
		qsort(f->tab, n, sizeof(*f->tab), fold_cmp);
	return n;
}

/* The SVG of the counts, to -o FILE or stdout.  @return 0 or -1 (said). */
static int fold_flamegraph(struct folded *f, const struct options *o)
{
	size_t const n = fold_sort(f);
	struct flame_stack *st = malloc((n ? n : 1) * sizeof(*st));
	if (!st) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		st[i] = (struct flame_stack){ f->tab[i].key, f->tab[i].count };
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

static void fold_print(struct folded *f, FILE *out)
{
	size_t const n = fold_sort(f);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", f->tab[i].key, f->tab[i].count);
	for (size_t i = 0; i < n; i++)
		free(f->tab[i].key);
	free(f->tab);
	memset(f, 0, sizeof(*f));
}

struct run {
	const struct options *o;
	struct worker *workers;
	unsigned n_workers;
	pthread_t *threads;
	struct batch *slots;     /* ring of n_slots */
	unsigned n_slots;
	uint64_t next_fill, next_write;  /* sequence numbers */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	int oom;
	FILE *out;
	struct text direct;      /* -j 1: samples go straight here, no copy */
	struct folded *fold;     /* `folded`: the counts, in the main thread */
	struct export_model *exp; /* `export`: the profile, in the main thread */
	struct worker *reader;   /* the reader thread's context: it unwinds (-j 1: everything) */
	struct progress progress;
};

static void batch_work(struct worker *w, struct batch *b)
{
	b->out.len = 0;
	for (size_t i = 0; i < b->n; i++)
		format_one(w, &b->samples[i], b->frames + b->samples[i].frame_off, &b->out);
}

struct worker_arg {
	struct run *run;
	struct worker *w;
};

static void *worker_thread(void *arg)
{
	struct worker_arg *a = arg;
	struct run *r = a->run;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct batch *b = NULL;
		for (unsigned i = 0; i < r->n_slots; i++)
			if (r->slots[i].state == 1 && (!b || r->slots[i].seq < b->seq))
				b = &r->slots[i];
		if (!b) {
			if (r->stop)
				break;
			pthread_cond_wait(&r->cond, &r->lock);
			continue;
		}
		b->state = 2;
		pthread_mutex_unlock(&r->lock);
		batch_work(a->w, b);
		pthread_mutex_lock(&r->lock);
		b->state = 3;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Write finished batches in sequence order.  Lock held. */
/* Text of finished samples: to the output, or into the folded counts. */
static void emit(struct run *r, const char *buf, size_t len)
{
	if (r->exp) {
		if (export_model_add(r->exp, buf, len))
			r->oom = 1;
		return;
	}
	if (!r->fold) {
		fwrite(buf, 1, len, r->out);
		return;
	}
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t const n = nl ? (size_t)(nl - buf) : len;
		fold_add(r->fold, buf, n);
		len -= n + (nl != NULL);
		buf += n + (nl != NULL);
	}
}

static void write_done(struct run *r)
{
	for (;;) {
		struct batch *b = &r->slots[r->next_write % r->n_slots];
		if (b->seq != r->next_write || b->state != 3)
			return;
		if (b->out.oom)
			r->oom = 1;
		emit(r, b->out.buf, b->out.len);
		b->state = 0;
		b->n = 0;
		b->used = 0;
		r->next_write++;
	}
}

/* The batch being filled (slot of next_fill), waiting for it to be free. */
static struct batch *fill_slot(struct run *r)
{
	struct batch *b = &r->slots[r->next_fill % r->n_slots];
	pthread_mutex_lock(&r->lock);
	for (;;) {
		write_done(r);
		if (b->state == 0)
			break;
		pthread_cond_wait(&r->cond, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return b;
}

static void submit(struct run *r, struct batch *b)
{
	b->seq = r->next_fill++;
	pthread_mutex_lock(&r->lock);
	b->state = 1;
	pthread_cond_broadcast(&r->cond);
	write_done(r);
	pthread_mutex_unlock(&r->lock);
}

static int on_sample(void *arg, const struct su_sample *s)
{
	struct run *r = arg;
	enum su_unwind_end end;
	progress_sample(&r->progress);
	size_t const n = unwind_sample(r->reader, s, &end);
	if (r->o->jobs == 1) {
		/* The same formatting as a worker's, right here. */
		struct unwound u;
		unwound_of(&u, s, n, end);
		format_one(r->reader, &u, r->reader->frames, &r->direct);
		if (r->direct.oom)
			return -ENOMEM;
		if (r->direct.len >= 1u << 16) {
			emit(r, r->direct.buf, r->direct.len);
			r->direct.len = 0;
		}
		return 0;
	}
	struct batch *b = fill_slot(r);
	if (batch_add(b, s, r->reader->frames, n, end))
		return -ENOMEM;
	if (b->n == BATCH)
		submit(r, b);
	return 0;
}

static int on_end(void *arg)
{
	struct run *r = arg;
	if (r->o->jobs == 1) {
		emit(r, r->direct.buf, r->direct.len);
		r->direct.len = 0;
		return r->direct.oom ? -ENOMEM : 0;
	}
	struct batch *b = fill_slot(r);
	if (b->n)
		submit(r, b);
	if (r->n_workers) {
		pthread_mutex_lock(&r->lock);
		while (r->next_write != r->next_fill) {
			write_done(r);
			if (r->next_write == r->next_fill)
				break;
			pthread_cond_wait(&r->cond, &r->lock);
		}
		r->stop = 1;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		for (unsigned i = 0; i < r->n_workers; i++)
			pthread_join(r->threads[i], NULL);
		r->n_workers = 0; /* joined */
	}
	return r->oom ? -ENOMEM : 0;
}

static void sum_module_stats(struct worker *w, struct su_modcache_stats *total)
{
	struct su_modcache_stats st;
	su_modcache_get_stats(w->modules, &st);
	if (st.not_found > total->not_found)
		total->not_found = st.not_found;
	if (st.build_id_mismatch > total->build_id_mismatch)
		total->build_id_mismatch = st.build_id_mismatch;
	if (st.modules > total->modules)
		total->modules = st.modules;
}

static int cmd_stacks(const struct options *o)
{
	struct folded fold = { 0 };
	struct run r = { .o = o, .out = stdout, .fold = o->folded ? &fold : NULL };
	/* -j N: the reader thread parses, decodes and unwinds; N - 1 workers
	 * symbolize and format.  -j 1 does it all in the reader thread.
	 * ctx[0] is the reader's context, ctx[1..] the workers'. */
	unsigned const nw = o->jobs > 1 ? o->jobs - 1 : 0;
	unsigned const nctx = nw + 1;
	struct worker *ctx = calloc(nctx, sizeof(*ctx));
	int rc = EXIT_ERROR;
	struct worker_arg *args = NULL;
	struct export_out xo = { 0 };
	char xerr[1024];

	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	r.n_slots = nw ? 2 * nw + 2 : 1;
	r.slots = calloc(r.n_slots, sizeof(*r.slots));
	r.threads = calloc(nctx, sizeof(*r.threads));
	args = calloc(nctx, sizeof(*args));
	if (!ctx || !r.slots || !r.threads || !args) {
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
	for (unsigned i = 0; i < nctx; i++)
		if (worker_init(&ctx[i], o)) {
			fprintf(stderr, PROG ": out of memory\n");
			goto out;
		}
	r.reader = &ctx[0];
	r.workers = ctx + 1;
	for (unsigned i = 0; i < nw; i++) {
		args[i] = (struct worker_arg){ &r, &r.workers[i] };
		if (pthread_create(&r.threads[i], NULL, worker_thread, &args[i])) {
			fprintf(stderr, PROG ": cannot start worker threads\n");
			r.stop = 1;
			pthread_cond_broadcast(&r.cond);
			for (unsigned j = 0; j < i; j++)
				pthread_join(r.threads[j], NULL);
			goto out;
		}
		r.n_workers = i + 1;
	}
	struct su_reader_callbacks cb = { .arg = &r, .sample = on_sample, .end = on_end };
	struct su_reader_stats st;
	char err[1024];
	/* No progress line among samples printed to the same terminal. */
	int const to_stdout = !(o->flamegraph || o->export_format) || !o->output || !strcmp(o->output, "-");
	progress_init(&r.progress, to_stdout && isatty(STDOUT_FILENO), &st.bytes_read, &st.bytes_on_disk);
	int const rrc = su_trace_read(o->trace, &o->filter, &cb, &st, err, sizeof(err));
	progress_end(&r.progress);
	if (r.n_workers) { /* the reader stopped early: stop the workers */
		pthread_mutex_lock(&r.lock);
		r.stop = 1;
		pthread_cond_broadcast(&r.cond);
		pthread_mutex_unlock(&r.lock);
		for (unsigned i = 0; i < r.n_workers; i++)
			pthread_join(r.threads[i], NULL);
		r.n_workers = 0;
	}
	if (rrc < 0) {
		fflush(stdout);
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rrc));
		goto out;
	}
	if (fold.oom) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	if (o->flamegraph) {
		if (fold_flamegraph(&fold, o))
			goto out;
	} else if (r.fold) {
		fold_print(&fold, stdout);
	}
	struct export_info const xinfo = { .name = o->trace, .exporter = PROG " " PACKAGE_VERSION };
	if (r.exp && export_out_finish(&xo, r.exp, o->export_format == EXPORT_PPROF, &xinfo, xerr, sizeof(xerr))) {
		fprintf(stderr, PROG ": %s\n", xerr);
		goto out;
	}
	fflush(stdout);
	struct counts c = { 0 };
	struct su_modcache_stats ms = { 0 };
	for (unsigned i = 0; i < nctx; i++) {
		struct counts *k = &ctx[i].counts;
		c.samples += k->samples;
		c.complete += k->complete;
		c.truncated += k->truncated;
		c.incomplete += k->incomplete;
		c.no_user += k->no_user;
		c.unknown_frames += k->unknown_frames;
		c.frames += k->frames;
		sum_module_stats(&ctx[i], &ms);
	}
	warn_bad_modules(ctx, nctx);
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
	if (ferror(stdout)) {
		fprintf(stderr, PROG ": write error on standard output\n");
		goto out;
	}
	rc = rrc > 0 || ms.build_id_mismatch || ms.not_found ? EXIT_PARTIAL : EXIT_OK;
out:
	for (unsigned i = 0; ctx && i < nctx; i++)
		worker_fini(&ctx[i]);
	for (unsigned i = 0; r.slots && i < r.n_slots; i++) {
		free(r.slots[i].frames);
		free(r.slots[i].out.buf);
	}
	free(r.direct.buf);
	export_out_abort(&xo);
	export_model_free(r.exp);
	for (size_t i = 0; i < fold.cap; i++)
		free(fold.tab[i].key);
	free(fold.tab);
	free(ctx);
	free(r.slots);
	free(r.threads);
	free(args);
	return rc;
}

/* ---- stats ------------------------------------------------------------------- */

/* Fidelity: the chain unwound from the compressed image against the one
 * unwound from the unfiltered copy of the same stack. */
struct fidelity {
	struct worker w;
	struct progress progress;
	struct su_frame *full_frames;
	uint64_t compared, equal;
	/* Per process (pid) sampled: samples, those whose copy filled the
	 * window, its drops and name (copied: a section moves while read). */
	struct pstat {
		uint32_t pid;
		char comm[32];
		uint64_t samples, capped, drops;
	} *procs;
	size_t n_procs, cap_procs;
	uint64_t capped;
	uint32_t window;       /* the first process's stack window (cap) */
};

static int fidelity_sample(void *arg, const struct su_sample *s)
{
	struct fidelity *f = arg;
	progress_sample(&f->progress);
	f->capped += s->stack_capped != 0;
	size_t at = 0;
	while (at < f->n_procs && f->procs[at].pid != s->pid)
		at++;
	if (at == f->n_procs) {
		if (su_grow((void **)&f->procs, &f->cap_procs, f->n_procs + 1, sizeof(*f->procs)))
			return -ENOMEM;
		f->procs[f->n_procs++] = (struct pstat){ .pid = s->pid };
	}
	struct pstat *ps = &f->procs[at];
	ps->samples++;
	ps->capped += s->stack_capped != 0;
	if (s->process) { /* its drops are known before the first sample */
		snprintf(ps->comm, sizeof(ps->comm), "%s", s->process->comm ? s->process->comm : "");
		ps->drops = s->process->drops;
		if (!f->window)
			f->window = s->process->stack_cap;
	}
	if (!s->full_image)
		return 0;
	struct su_sample full = *s;
	full.image = s->full_image;
	full.full_image = NULL;
	enum su_unwind_end e1, e2;
	size_t const n1 = su_unwind(f->w.unwinder, s, f->w.frames, f->w.o->max_frames, &e1);
	size_t const n2 = su_unwind(f->w.unwinder, &full, f->full_frames, f->w.o->max_frames, &e2);
	int same = n1 == n2 && e1 == e2;
	for (size_t i = 0; same && i < n1; i++)
		same = f->w.frames[i].pc == f->full_frames[i].pc;
	f->compared++;
	f->equal += same;
	return 0;
}

static int cmd_stats(const struct options *o)
{
	struct fidelity f = { 0 };
	if (worker_init(&f.w, o) || !(f.full_frames = calloc(o->max_frames, sizeof(*f.full_frames)))) {
		fprintf(stderr, PROG ": out of memory\n");
		worker_fini(&f.w);
		return EXIT_ERROR;
	}
	struct su_reader_callbacks cb = { .arg = &f, .sample = fidelity_sample };
	struct su_reader_stats st;
	char err[1024];
	progress_init(&f.progress, isatty(STDOUT_FILENO), &st.bytes_read, &st.bytes_on_disk);
	int rrc = su_trace_read(o->trace, &o->filter, &cb, &st, err, sizeof(err));
	progress_end(&f.progress);
	worker_fini(&f.w);
	free(f.full_frames);
	if (rrc < 0) {
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rrc));
		free(f.procs);
		return EXIT_ERROR;
	}
	double const per = st.samples ? (double)st.bytes_on_disk / (double)st.samples : 0;
	printf("trace:                %s\n", o->trace);
	printf("processes:            %" PRIu64 " (%" PRIu64 " ended normally)\n", st.processes, st.ended);
	printf("samples:              %" PRIu64 "\n", st.samples);
	printf("bytes on disk:        %" PRIu64 "\n", st.bytes_on_disk);
	printf("bytes per sample:     %.1f\n", per);
	int const perf = su_trace_probe(o->trace) == SU_TRACE_PERF;
	printf("format:               %s\n", su_trace_format_name(su_trace_probe(o->trace)));
	printf("stack bytes (raw):    %" PRIu64 "\n", st.raw_stack_bytes);
	if (perf) {
		/* perf stores its whole window whatever the stack used. */
		printf("stack bytes (perf):   %" PRIu64 " stored, %.1f%% of them stack\n", st.blob_bytes,
		       st.blob_bytes ? 100.0 * (double)st.raw_stack_bytes / (double)st.blob_bytes : 0);
		if (st.chain_only)
			printf("call chains only:     %" PRIu64 " samples (perf record -g: no stack, the chain the kernel walked)\n",
			       st.chain_only);
		if (st.no_user_regs)
			printf("no user state:        %" PRIu64 " samples (kernel threads, exiting or 32-bit tasks): no-user\n",
			       st.no_user_regs);
	} else {
		printf("stack bytes (codec):  %" PRIu64 "\n", st.blob_bytes);
		printf("codec saved:          %" PRIu64 " bytes (%.1fx smaller)\n",
		       st.raw_stack_bytes > st.blob_bytes ? st.raw_stack_bytes - st.blob_bytes : 0,
		       st.blob_bytes ? (double)st.raw_stack_bytes / (double)st.blob_bytes : 0);
	}
	printf("drops:                %" PRIu64 " at capture, %" PRIu64 " lost by the writer\n",
	       st.drops, st.discarded);
	if (!perf) {
		char sampler[32];
		su_stackcap_trace_sampler(o->trace, sampler, sizeof(sampler));
		int const kernel = !strcmp(sampler, "kernel");
		printf("sampler:              %s, %" PRIu32 "-byte stack %s\n",
		       kernel ? "kernel copy (perf events, stackcap record)" : "in-process (libstackcap)", f.window,
		       kernel ? "window from sp" : "cap");
	}
	printf("stack window full:    %" PRIu64 " samples (their stacks may be cut)\n", f.capped);
	if (f.n_procs)
		printf("per process sampled:\n");
	for (size_t i = 0; i < f.n_procs; i++) {
		const struct pstat *ps = &f.procs[i];
		printf("  pid %-8" PRIu32 " %" PRIu64 " samples, %" PRIu64 " drops, %" PRIu64
		       " filled the stack window  %s\n", ps->pid, ps->samples, ps->drops, ps->capped, ps->comm);
	}
	free(f.procs);
	if (st.bad_blobs || st.no_maps || st.truncated_files)
		printf("unreadable:           %" PRIu64 " samples, %d files cut or corrupt\n",
		       st.bad_blobs + st.no_maps, st.truncated_files);
	if (st.full_samples) {
		printf("full copies:          %" PRIu64 " samples\n", st.full_samples);
		/* Rounded down: 100.0% means every sample. */
		uint64_t const tenths = f.compared ? f.equal * 1000 / f.compared : 0;
		printf("fidelity:             %" PRIu64 ".%" PRIu64 "%% (%" PRIu64 " of %" PRIu64
		       " samples unwind to the same chain as their full copy)\n",
		       tenths / 10, tenths % 10, f.equal, f.compared);
	}
	return rrc > 0 ? EXIT_PARTIAL : EXIT_OK;
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);
	int rc = !strcmp(o.command, "stats") ? cmd_stats(&o) : cmd_stacks(&o);
	free(o.debug_dirs);
	return rc;
}
