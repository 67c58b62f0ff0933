/* SPDX-License-Identifier: MIT */
/*
 * stackcap: the recording front end.
 *
 *   stackcap record [-e EVENT]... [-F HZ | -c N] [--stack-cap BYTES] [--policy f1|f2] [--zstd]
 *                   [-o DIR] [--force] -- CMD [ARGS...]
 *
 * Runs CMD with libstackcap preloaded, waits for it, returns its exit
 * status and prints a one-line summary on stderr.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <dirent.h>
#include <libgen.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/convert.h"
#include "cli/misplaced.h"
#include "cli/warn.h"
#include "record/events.h"
#include "record/perf-events.h"
#include "record/keep-jit-maps.h"
#include "record/recorder.h"
#include "compress/stack-codec.h"
#include "trace/perf-data.h"

#define PROG "stackcap"

/* `stackcap record --help`: its synopses name every option of its list. */
static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " record [-e EVENT]... [-F HZ | -c N] [--stack-size BYTES] [--user-only]\n"
		"                       [--off-cpu] [--policy f1|f2] [--zstd] [--full-copy] [-o DIR]\n"
		"                       [--force] -- CMD [ARGS...]\n"
		"       " PROG " record -p PID[,PID...] | -t TID[,TID...] | -a [-e EVENT]... [-F HZ | -c N]\n"
		"                       [--stack-size BYTES] [--user-only] [--off-cpu] [--policy f1|f2]\n"
		"                       [--zstd] [--full-copy] [-o DIR] [--force] [-- CMD [ARGS...]]\n"
		"       " PROG " record --in-process [-F HZ] [--stack-size BYTES] [--policy f1|f2]\n"
		"                       [--no-fork] [--python] [--zstd] [--full-copy] [-o DIR] [--force]\n"
		"                       -- CMD [ARGS...]\n"
		"       " PROG " record --lttng [-F HZ] [--stack-cap BYTES] [--policy f1|f2] [--python]\n"
		"                       -- CMD [ARGS...]\n"
		"       " PROG " record -h\n"
		"\n"
		"  -h, --help             this text\n"
		"  -e, --event EVENT      what to sample on (repeatable; kernel copy): cpu-clock (the\n"
		"                         default), task-clock, page-faults, context-switches, ...;\n"
		"                         a tracepoint SYS:NAME (sched:sched_switch); a uprobe\n"
		"                         BINARY:FUNCTION (BINARY: a path, a program, or a library\n"
		"                         the command loads: libc:write); an SDT marker\n"
		"                         sdt:PROVIDER:NAME (in the command, its libraries or the -p\n"
		"                         processes' files) or sdt:BINARY:PROVIDER:NAME.\n"
		"                         Tracepoints, uprobes and markers: a stack per hit.\n"
		"                         NAME/period=N/, NAME/freq=HZ/: its own period or\n"
		"                         frequency; NAME:u, NAME:k: a software event in user or\n"
		"                         kernel mode only (cpu-clock:k)\n"
		"  -c, --count N          a sample every N events (software events: instead of -F)\n"
		"  -F, --freq HZ          samples per second of thread CPU time (default 999)\n"
		"      --stack-size BYTES stack bytes copied per sample: with the kernel copy at most\n"
		"                         and by default " REC_STACK_DEFAULT_S ", in process 65536 by default\n"
		"                         (--stack-cap: the same)\n"
		"  -p, --pid PID,...      attach to running processes (their threads, later ones too)\n"
		"  -t, --tid TID,...      attach to running threads\n"
		"  -a, --all-cpus         every process of the machine\n"
		"                         (these three: until CMD ends, SIGINT/SIGTERM, or they are gone)\n"
		"      --user-only        no kernel frames (the kernel copy keeps the kernel's\n"
		"                         part of each call chain where kernel addresses are\n"
		"                         readable: root, kernel.kptr_restrict)\n"
		"      --off-cpu          also where threads block and for how long: each switch\n"
		"                         out while not runnable, its stack and the time until the\n"
		"                         thread runs again (the kernel copy; stackunwind folded\n"
		"                         --off-cpu)\n"
		"      --in-process       sample with the preloaded library instead of the kernel copy\n"
		"                         (the default when perf events are not permitted)\n"
		"      --policy f1|f2     words kept: f2 code and stack pointers (default), f1 code only\n"
		"      --zstd             zstd-compress the stream files\n"
		"      --no-fork          do not record forked children (in-process)\n"
		"      --full-copy        also store every unfiltered stack copy, to measure\n"
		"                         fidelity (stackunwind stats); stores every stack word\n"
		"                         (registers stay filtered)\n"
		"      --python           also record Python frames (CPython 3.11, 3.13): each\n"
		"                         _PyEval_EvalFrameDefault becomes the Python functions\n"
		"                         and lines it ran; needs the in-process hook (also\n"
		"                         with --lttng: stackcap:runtime_frames events)\n"
		"  -o, --output DIR       trace directory (default ./stackcap.trace)\n"
		"      --force            replace an existing output directory\n"
		"      --lttng            record into the active LTTng session instead, as\n"
		"                         stackcap:* events (docs/lttng.md)\n");
}

/* `stackcap --help`: the commands; each one's --help has its options. */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " record [OPTIONS] -- CMD [ARGS...]\n"
		"       " PROG " record -p PID[,PID...] | -t TID[,TID...] | -a [OPTIONS] [-- CMD [ARGS...]]\n"
		"       " PROG " convert PERF.DATA -o DIR [--zstd] [--force]\n"
		"\n"
		"  record   sample the user-space call stacks of a command, of running processes\n"
		"           or of the whole machine into a trace directory (stackunwind reads it)\n"
		"  convert  re-encode a perf.data (perf record --call-graph dwarf) with our codec\n"
		"\n"
		"  " PROG " COMMAND --help: that command's synopsis and options; " PROG " --version\n");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The preload library NAME (libstackcap.so or liblttng-stackcap.so):
 * $ENV_NAME, the build tree next to this program, or the installed one. */
static int find_library(const char *name, const char *env_name, char *out, size_t n)
{
	const char *env = getenv(env_name);
	if (env && *env) {
		if (access(env, R_OK) != 0)
			return -errno;
		return realpath(env, out) ? 0 : -errno;
	}
	char self[PATH_MAX];
	ssize_t const len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0) {
		self[len] = '\0';
		const char *dir = dirname(self);
		const char *cands[] = { "../capture/.libs", "../../capture/.libs", "../lib" };
		for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
			char p[PATH_MAX * 2];
			snprintf(p, sizeof(p), "%s/%s/%s", dir, cands[i], name);
			if (access(p, R_OK) == 0 && realpath(p, out))
				return 0;
		}
	}
	snprintf(out, n, "%s/%s", STACKCAP_LIBDIR, name);
	return access(out, R_OK) == 0 ? 0 : -ENOENT;
}

static int setenv_u(const char *name, unsigned long long v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%llu", v);
	return setenv(name, buf, 1);
}

struct totals {
	unsigned long long samples, drops, bytes, files;
	int summaries, errors, first_error;
	int started, unfinished;  /* processes that began a trace; never ended it */
};

static void say_line(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, PROG ": %s\n", line);
}

/* The perf maps of the processes the in-process hook recorded kept in
 * their trace DIR (SHOWN as the user named it), as the kernel copy keeps
 * them (record/keep-jit-maps.h): those processes ran in our view, their
 * maps are in our /tmp. */
static void keep_jit_maps(const char *dir, const char *shown)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct rec_jitmaps *j = rec_jitmaps_new(dir);
	struct dirent *e;
	while (j && (e = readdir(d))) {
		unsigned pid;
		char map[64];
		if (sscanf(e->d_name, "proc-%u-", &pid) != 1)
			continue;
		snprintf(map, sizeof(map), "/tmp/perf-%u.map", pid);
		if (access(map, F_OK) == 0)
			rec_jitmaps_seen(j, pid, -1); /* gone: only ours or root's (we ran it) */
	}
	closedir(d);
	struct rec_jitmaps_stats st;
	rec_jitmaps_finish(j, &st);
	rec_jitmaps_summary(&st, shown, say_line, NULL);
}

/* Sum the traced processes' summaries and the bytes of the trace files.
 * A summary reads "started PID" until its process ends the trace; one
 * left so is a process killed or ended without exit(), unless a later
 * image of the same pid (exec) wrote one too. */
static void read_totals(const char *dir, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	int *started = NULL, *seen = NULL;
	size_t nstarted = 0, nseen = 0;
	while ((e = readdir(d))) {
		char p[PATH_MAX + 256];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		int pid;
		if (sscanf(e->d_name, ".summary-%d-", &pid) == 1) {
			FILE *f = fopen(p, "r");
			unsigned long long s, dr, b;
			int err, spid;
			int *ns = realloc(seen, (nseen + 1) * sizeof(*seen));
			if (ns) {
				seen = ns;
				seen[nseen++] = pid;
			}
			t->started++;
			if (f && fscanf(f, "samples %llu drops %llu bytes %llu error %d", &s, &dr, &b, &err) == 4) {
				t->samples += s;
				t->drops += dr;
				t->summaries++;
				if (err) {
					if (!t->errors)
						t->first_error = err;
					t->errors++;
				}
			} else if (f && !fseek(f, 0, SEEK_SET) && fscanf(f, "started %d", &spid) == 1) {
				/* Its running counts: what its trace held at the last flush. */
				if (fscanf(f, " samples %llu drops %llu", &s, &dr) == 2) {
					t->samples += s;
					t->drops += dr;
				}
				int *nst = realloc(started, (nstarted + 1) * sizeof(*started));
				if (nst) {
					started = nst;
					started[nstarted++] = pid;
				}
			}
			if (f)
				fclose(f);
			continue;
		}
		struct stat st;
		if (e->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			t->bytes += (unsigned long long)st.st_size;
			t->files++;
		}
	}
	closedir(d);
	for (size_t i = 0; i < nstarted; i++) {
		int same = 0;
		for (size_t j = 0; j < nseen; j++)
			same += seen[j] == started[i];
		if (same == 1)
			t->unfinished++;
		else
			t->started--; /* an image replaced by exec: not a process */
	}
	free(started);
	free(seen);
}

/* Run ARGV like time(1) does (the terminal's signals go to the command;
 * we wait).  @return 0 with its wait status in STATUS, or -1 (printed). */
static int run_command(char **argv, int *status_out)
{
	/* Like time(1): the terminal's signals go to the command; we wait. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	pid_t const pid = fork();
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		execvp(argv[0], argv);
		int const e = errno;
		/* The shell's messages and statuses. */
		if (e == ENOENT)
			fprintf(stderr, PROG ": %s: command not found\n", argv[0]);
		else
			fprintf(stderr, PROG ": %s: %s\n", argv[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, PROG ": waitpid: %s\n", strerror(errno));
			return -1;
		}
	*status_out = status;
	return 0;
}

/* Is CMD a Python interpreter (python, python3, python3.11, pypy3...)? */
static int is_python(const char *cmd)
{
	const char *b = strrchr(cmd, '/');
	b = b ? b + 1 : cmd;
	if (strncmp(b, "python", 6))
		return 0;
	for (b += 6; *b; b++)
		if (!(*b >= '0' && *b <= '9') && *b != '.' && *b != 'd' && *b != 'm')
			return 0;
	return 1;
}

static int record_lttng(char **argv, unsigned long freq, unsigned long cap, const char *policy,
			int nofork, int python);

/* The output directory OUT, new and empty (FORCE: replacing what is
 * there), its absolute path, and the recording's identity (one for every
 * process: they share the metadata).  0, or -1 printed. */
static int prepare_output(const char *out, int force, char abs_out[PATH_MAX], uint8_t uuid[16], int64_t *offset)
{
	struct stat st;
	if (lstat(out, &st) == 0) {
		if (!force) {
			fprintf(stderr, PROG ": output '%s' exists; use --force to replace it\n", out);
			return -1;
		}
		if (nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
			fprintf(stderr, PROG ": cannot remove '%s': %s\n", out, strerror(errno));
			return -1;
		}
	}
	if (mkdir(out, 0700) != 0) { /* private: the trace reveals the address layout */
		fprintf(stderr, PROG ": cannot create '%s': %s\n", out, strerror(errno));
		return -1;
	}
	if (!realpath(out, abs_out)) {
		fprintf(stderr, PROG ": '%s': %s\n", out, strerror(errno));
		return -1;
	}
	if (getrandom(uuid, 16, 0) != 16) {
		fprintf(stderr, PROG ": getrandom: %s\n", strerror(errno));
		return -1;
	}
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	*offset = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000LL + (rt.tv_nsec - mono.tv_nsec);
	return 0;
}

struct pidlist {
	pid_t *v;
	size_t n;
};

/* "12,345": appended to L.  0, or -1 when not a list of positive ids. */
static int parse_pids(struct pidlist *l, const char *arg)
{
	const char *p = arg;
	do {
		char *end;
		errno = 0;
		long const v = strtol(p, &end, 10);
		if (end == p || v <= 0 || v > INT_MAX || errno || (*end && *end != ','))
			return -1;
		pid_t *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
		if (!nv)
			return -1;
		l->v = nv;
		l->v[l->n++] = (pid_t)v;
		p = *end ? end + 1 : end;
	} while (*p);
	return 0;
}

static const char *paranoid_level(void)
{
	static char buf[16];
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (!f || !fgets(buf, sizeof(buf), f))
		snprintf(buf, sizeof(buf), "?");
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* The kernel copy (record/recorder.c) into OUT.  *REFUSED (when given):
 * perf events are not permitted, nothing ran, OUT is left empty. */
static int record_kernel(struct rec_options *ro, const char *out, int force, int *refused)
{
	char abs_out[PATH_MAX];
	if (prepare_output(out, force, abs_out, ro->uuid, &ro->clock_offset_ns))
		return 2;
	ro->out = abs_out;
	int const rc = rec_record(ro);
	if (rc == REC_REFUSED && refused) {
		*refused = 1;
		return 0;
	}
	int const cmd_only = ro->argv && !ro->n_pids && !ro->n_tids && !ro->all;
	if (rc == REC_REFUSED || rc == REC_FAILED || (cmd_only && (rc == 126 || rc == 127))) {
		/* Nothing ran (not permitted, no such process, command not
		 * found): no empty trace. */
		struct totals t;
		read_totals(abs_out, &t);
		if (rc != 126 && rc != 127 ? 1 : t.files <= 1)
			nftw(abs_out, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		return rc == REC_REFUSED || rc == REC_FAILED ? 1 : rc;
	}
	return rc;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "stack-cap", required_argument, NULL, 'S' },
		{ "policy", required_argument, NULL, 'P' },
		{ "wall-clock", no_argument, NULL, 'W' },
		{ "zstd", no_argument, NULL, 'Z' },
		{ "no-fork", no_argument, NULL, 'N' },
		{ "full-copy", no_argument, NULL, 'C' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "lttng", no_argument, NULL, 'L' },
		{ "python", no_argument, NULL, 'Y' },
		{ "stack-size", required_argument, NULL, 'S' },
		{ "in-process", no_argument, NULL, 'I' },
		{ "user-only", no_argument, NULL, 'U' },
		{ "off-cpu", no_argument, NULL, 'O' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "event", required_argument, NULL, 'e' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long freq = 999, cap = 0;
	const char *policy = "f2", *out = "stackcap.trace";
	int off_cpu = 0;
	int user_only = 0, zstd = 0, force = 0, nofork = 0, full = 0, lttng = 0, python = 0, in_process = 0, all = 0, c;
	struct pidlist pids = { 0 }, tids = { 0 };
	const char *events[REC_EVENTS_MAX];
	size_t n_events = 0;
	unsigned long long period = 0;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+F:o:p:t:e:c:ah", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (n_events == REC_EVENTS_MAX) {
				fprintf(stderr, PROG ": -e: at most %d events\n", REC_EVENTS_MAX);
				return 2;
			}
			events[n_events++] = optarg;
			break;
		case 'c':
			errno = 0;
			period = strtoull(optarg, &end, 10);
			if (*end || !*optarg || period == 0 || errno || optarg[0] == '-') {
				fprintf(stderr, PROG ": -c: a count of events per sample (1 or more), not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'F':
			freq = strtoul(optarg, &end, 10);
			if (*end || freq == 0 || freq > 100000) {
				fprintf(stderr, PROG ": -F: frequency must be 1..100000 Hz, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'S':
			cap = strtoul(optarg, &end, 10);
			if (*end || cap < 64 || cap > (64ul << 20)) {
				fprintf(stderr, PROG ": --stack-cap: must be 64..67108864 bytes, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'P':
			if (strcmp(optarg, "f1") && strcmp(optarg, "f2")) {
				fprintf(stderr, PROG ": --policy: f1 or f2, not '%s'\n", optarg);
				return 2;
			}
			policy = optarg;
			break;
		case 'W':
			/* Its timer signals reached threads blocked in nanosleep, poll,
			 * epoll_wait: those fail with EINTR whatever SA_RESTART says. */
			fprintf(stderr, PROG ": --wall-clock was removed: its signals made the program's "
					"nanosleep, poll and epoll_wait fail with EINTR; off-CPU time (where "
					"threads block, and for how long) comes from the kernel copy: --off-cpu\n");
			return 2;
		case 'Z': zstd = 1; break;
		case 'N': nofork = 1; break;
		case 'C': full = 1; break;
		case 'U': user_only = 1; break;
		case 'O': off_cpu = 1; break;
		case 'o': out = optarg; break;
		case 'f': force = 1; break;
		case 'L': lttng = 1; break;
		case 'Y': python = 1; break;
		case 'I': in_process = 1; break;
		case 'a': all = 1; break;
		case 'p':
		case 't':
			if (parse_pids(c == 'p' ? &pids : &tids, optarg)) {
				fprintf(stderr, PROG ": -%c: a comma-separated list of ids, not '%s'\n", c, optarg);
				return 2;
			}
			break;
		case 'h': record_usage(stdout); return 0;
		default: record_usage(stderr); return 2;
		}
	}
	int const attach = pids.n || tids.n || all;
	if (attach && (in_process || lttng || python || nofork)) {
		fprintf(stderr, PROG ": -p, -t and -a use the kernel copy: --in-process, --lttng, --python and "
				"--no-fork do not apply (--python needs the hook in the process from its start)\n");
		return 2;
	}
	if ((n_events || period) && (in_process || lttng || python || nofork)) {
		fprintf(stderr, PROG ": -e and -c use the kernel copy: --in-process, --lttng, --python and --no-fork "
				"do not apply\n");
		return 2;
	}
	if (off_cpu && (in_process || lttng || python || nofork)) {
		fprintf(stderr, PROG ": --off-cpu comes from the kernel copy: --in-process, --lttng, --python and "
				"--no-fork do not apply\n");
		return 2;
	}
	if (!in_process && !lttng && (python || nofork)) {
		/* --python reads the interpreter's memory at the sample: only
		 * code inside the process can. */
		if (nofork)
			fprintf(stderr, PROG ": note: --no-fork uses the in-process sampler\n");
		in_process = 1;
	}
	if (!in_process && !lttng && cap > REC_STACK_MAX) {
		if (attach || off_cpu) {
			fprintf(stderr, PROG ": --stack-size: the kernel copies at most %u bytes\n", REC_STACK_MAX);
			return 2;
		}
		fprintf(stderr, PROG ": note: a stack window over %u bytes uses the in-process sampler\n",
			REC_STACK_MAX);
		in_process = 1;
	}
	if (!cap)
		cap = in_process || lttng ? 65536 : REC_STACK_DEFAULT;
	if (optind >= argc && !attach) {
		fprintf(stderr, PROG " record: no command given\n");
		record_usage(stderr);
		return 2;
	}
	if (!python && optind < argc && is_python(argv[optind]))
		fprintf(stderr, PROG ": note: %s is a Python interpreter; add --python to see Python functions "
				"and lines instead of _PyEval_EvalFrameDefault\n", argv[optind]);
	if (lttng) {
		if (zstd || full || force || strcmp(out, "stackcap.trace")) {
			fprintf(stderr, PROG ": --lttng records into the LTTng session: "
					"-o, --force, --zstd and --full-copy do not apply\n");
			return 2;
		}
		return record_lttng(argv + optind, freq, cap, policy, nofork, python);
	}
	if (full) /* the filters exist to keep data words out: say they are bypassed */
		fprintf(stderr, PROG ": warning: --full-copy stores every stack word (local variables, "
				"secrets): keep the trace private\n");
	if (!in_process) {
		struct rec_options ro = { .freq = (uint32_t)freq, .stack_size = (uint32_t)cap & ~7u,
			.policy = strcmp(policy, "f1") ? STACKCAP_POLICY_F2 : STACKCAP_POLICY_F1, .zstd = zstd,
			.full_copy = full, .user_only = user_only, .off_cpu = off_cpu, .pids = pids.v, .n_pids = pids.n,
			.tids = tids.v, .n_tids = tids.n, .all = all, .argv = optind < argc ? argv + optind : NULL,
			.say = cli_print_stderr, .say_arg = (void *)(uintptr_t)PROG,
			.events = events, .n_events = n_events, .period = period };
		int refused = 0;
		int const krc = record_kernel(&ro, out, force, &refused);
		if (!refused)
			return krc;
		if (off_cpu) {
			fprintf(stderr, PROG ": --off-cpu: perf_event_open refused (kernel.perf_event_paranoid = %s): "
					"off-CPU time needs the kernel copy\n", paranoid_level());
			return 1;
		}
		fprintf(stderr, PROG ": perf_event_open refused (kernel.perf_event_paranoid = %s): recording with "
				"the in-process sampler (--in-process)\n", paranoid_level());
		force = 1; /* the directory record_kernel made, empty */
	}
	char lib[PATH_MAX];
	if (find_library("libstackcap.so", "STACKCAP_LIBRARY", lib, sizeof(lib)) != 0) {
		fprintf(stderr, PROG ": cannot find libstackcap.so (set STACKCAP_LIBRARY)\n");
		return 2;
	}
	char abs_out[PATH_MAX];
	uint8_t uuid[16];
	int64_t offset;
	if (prepare_output(out, force, abs_out, uuid, &offset))
		return 2;
	char uuid_hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(uuid_hex + 2 * i, 3, "%02x", uuid[i]);
	char offset_s[32];
	snprintf(offset_s, sizeof(offset_s), "%lld", (long long)offset);

	const char *old_preload = getenv("LD_PRELOAD");
	char *preload;
	/* The command's own preloads first: a sanitizer runtime must be the
	 * first library loaded (tests/stress.sh preloads libasan so). */
	if (asprintf(&preload, "%s%s%s", old_preload ? old_preload : "", old_preload && *old_preload ? " " : "",
		     lib) < 0)
		return 2;
	setenv("STACKCAP_OUTPUT", abs_out, 1);
	setenv_u("STACKCAP_FREQ", freq);
	setenv_u("STACKCAP_STACK_CAP", cap);
	setenv("STACKCAP_POLICY", policy, 1);
	setenv_u("STACKCAP_ZSTD", (unsigned)zstd);
	setenv_u("STACKCAP_NO_FORK", (unsigned)nofork);
	setenv_u("STACKCAP_FULL_COPY", (unsigned)full);
	setenv_u("STACKCAP_RUNTIME_FRAMES", (unsigned)python);
	setenv("STACKCAP_TRACE_UUID", uuid_hex, 1);
	setenv("STACKCAP_CLOCK_OFFSET_NS", offset_s, 1);
	setenv("LD_PRELOAD", preload, 1);
	free(preload);

	int status;
	if (run_command(argv + optind, &status))
		return 2;
	int const rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (WIFEXITED(status) && (rc == 126 || rc == 127)) {
		/* Maybe the command could not run at all: keep no empty trace. */
		struct totals t;
		read_totals(abs_out, &t);
		if (t.summaries == 0 && t.files <= 1) {
			nftw(abs_out, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
			return rc;
		}
	}

	struct totals t;
	read_totals(abs_out, &t);
	keep_jit_maps(abs_out, out);
	fprintf(stderr, PROG ": in-process: %llu samples, %llu drops, %llu bytes (%.1f B/sample) in %s\n", t.samples, t.drops,
		t.bytes, t.samples ? (double)t.bytes / (double)t.samples : 0.0, out);
	/* Faults are reported, never silent; the status stays the command's. */
	if (WIFSIGNALED(status))
		fprintf(stderr, PROG ": %s was killed by signal %d (%s)\n", argv[optind], WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	if (t.unfinished)
		fprintf(stderr, PROG ": %d of %d processes did not finish their trace (killed, or ended by a raw "
				"exit_group): the samples of their last moments are lost; samples and drops above "
				"count what their trace held at its last flush; stackunwind reads it\n",
			t.unfinished, t.started);
	if (t.errors)
		fprintf(stderr, PROG ": write error in %d of %d processes (%s): the trace holds what was written "
				"before it\n", t.errors, t.started, strerror(-t.first_error));
	if (!t.started) {
		/* Nothing loaded the hook: say why it could not, and what
		 * records such a program. */
		if (rec_binary_is_static(argv[optind]))
			fprintf(stderr, PROG ": %s is statically linked: the in-process hook (preloaded with "
					"LD_PRELOAD) cannot load into it, nothing was recorded; record without "
					"--in-process (the kernel copy samples any program)\n", argv[optind]);
		else
			fprintf(stderr, PROG ": no process of %s loaded the in-process hook (a statically linked "
					"or setuid program ignores LD_PRELOAD), nothing was recorded; record without "
					"--in-process (the kernel copy samples any program)\n", argv[optind]);
	} else if (!t.samples && !t.drops && !t.errors) {
		fprintf(stderr, PROG ": no sample: the command ran less CPU time than a sample period, or ran "
				"its work in a program that does not load the hook (statically linked or setuid: "
				"record without --in-process)\n");
	}
	return rc;
}

/* `lttng list`'s output, or NULL when the command cannot run (*EXIT_OUT:
 * its status, 127 when lttng is not installed). */
static char *lttng_list(int *exit_out)
{
	*exit_out = 127;
	FILE *p = popen("lttng list 2>&1", "r");
	if (!p)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	int const st = pclose(p);
	*exit_out = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	if (buf)
		buf[len] = 0;
	return buf;
}

/* stackcap record --lttng: the command runs with liblttng-stackcap.so
 * (samples as stackcap:* events in the sampled threads) and LTTng's own
 * liblttng-ust-dl (module loads) and liblttng-ust-fork (children keep
 * tracing) preloaded.  The user's session receives everything; we only
 * check that there is one to receive it. */
static int record_lttng(char **argv, unsigned long freq, unsigned long cap, const char *policy,
			int nofork, int python)
{
	char lib[PATH_MAX];
	if (find_library("liblttng-stackcap.so", "STACKCAP_LTTNG_LIBRARY", lib, sizeof(lib)) != 0) {
		fprintf(stderr, PROG ": cannot find liblttng-stackcap.so (built when lttng-ust is found: "
				"apt-get install liblttng-ust-dev, then configure; or set STACKCAP_LTTNG_LIBRARY)\n");
		return 2;
	}
	int lst;
	char *list = lttng_list(&lst);
	if (lst == 127) {
		fprintf(stderr, PROG ": --lttng: the lttng command is not installed (apt-get install lttng-tools)\n");
		free(list);
		return 2;
	}
	if (lst != 0 || !list) {
		fprintf(stderr, PROG ": --lttng: no LTTng session daemon answers `lttng list`; start one "
				"(lttng-sessiond --daemonize) and create a session (docs/lttng.md)\n");
		free(list);
		return 2;
	}
	if (!strstr(list, "[active]")) {
		fprintf(stderr, PROG ": --lttng: no active LTTng recording session; first run e.g.\n"
			"  lttng create; lttng enable-event -u 'stackcap:*,lttng_ust_statedump:*,lttng_ust_dl:*,lttng_ust_lib:*'\n"
			"  lttng add-context -u -t vpid -t vtid; lttng start\n");
		free(list);
		return 2;
	}
	free(list);
	if (getenv("LTTNG_UST_WITHOUT_BADDR_STATEDUMP"))
		fprintf(stderr, PROG ": warning: LTTNG_UST_WITHOUT_BADDR_STATEDUMP is set: LTTng records no "
				"module paths nor build-ids, and stackunwind cannot symbolize\n");

	const char *old_preload = getenv("LD_PRELOAD");
	char *preload;
	if (asprintf(&preload, "%s liblttng-ust-dl.so.1%s%s%s", lib, nofork ? "" : " liblttng-ust-fork.so.1",
		     old_preload && *old_preload ? " " : "", old_preload ? old_preload : "") < 0)
		return 2;
	/* Each traced process appends its counts here (capture/lifecycle.c). */
	const char *tmp = getenv("TMPDIR");
	char summary[PATH_MAX];
	snprintf(summary, sizeof(summary), "%s/stackcap-lttng.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int const sfd = mkstemp(summary);
	if (sfd < 0) {
		fprintf(stderr, PROG ": cannot create a summary file in %s: %s\n", tmp && *tmp ? tmp : "/tmp",
			strerror(errno));
		return 2;
	}
	close(sfd);
	setenv("STACKCAP_SUMMARY_FILE", summary, 1);
	unsetenv("STACKCAP_OUTPUT");
	setenv_u("STACKCAP_FREQ", freq);
	setenv_u("STACKCAP_STACK_CAP", cap);
	setenv("STACKCAP_POLICY", policy, 1);
	setenv_u("STACKCAP_NO_FORK", (unsigned)nofork);
	setenv_u("STACKCAP_RUNTIME_FRAMES", (unsigned)python); /* stackcap:runtime_frames (docs/lttng.md) */
	setenv("LD_PRELOAD", preload, 1);
	free(preload);
	int status;
	if (run_command(argv, &status)) {
		unlink(summary);
		return 2;
	}
	int const rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	unsigned long long samples = 0, drops = 0, s, d;
	int procs = 0, err;
	FILE *f = fopen(summary, "r");
	char line[512];
	/* A line per process that finished ("samples N drops N error E"), and
	 * the messages of those that could not start, printed as they are. */
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "samples %llu drops %llu error %d", &s, &d, &err) == 3) {
			samples += s;
			drops += d;
			procs++;
		} else {
			fputs(line, stderr);
		}
	}
	if (f)
		fclose(f);
	unlink(summary);
	if (procs)
		fprintf(stderr, PROG ": %llu samples, %llu drops recorded into the active LTTng session "
				"(stackunwind reads its output directory once the session is stopped)\n",
			samples, drops);
	else
		fprintf(stderr, PROG ": %s: no process finished its recording (%s); what it sampled is in the "
				"active LTTng session\n", argv[0],
			WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "killed, _exit or not started");
	return rc;
}

static int is_command(const char *name)
{
	return !strcmp(name, "record") || !strcmp(name, "convert");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return stackcap_convert(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf(PROG " (" PACKAGE_NAME ") " PACKAGE_VERSION "\n");
		return 0;
	}
	if (cli_misplaced_command(stderr, PROG, argc, argv, is_command)) {
		fputs("Try '" PROG " --help'.\n", stderr);
		return 2;
	}
	int const perf_data = argv[1][0] != '-' && su_perf_data_probe(argv[1]);
	char *bin = argv[1][0] != '-' && !perf_data ? rec_resolve_binary(argv[1]) : NULL;
	if (perf_data) {
		fputs(PROG ": a perf.data: stackunwind reads it as it is (stackunwind stacks ", stderr);
		cli_shell_word(stderr, argv[1]);
		fputs("); " PROG " convert re-encodes it as a trace (" PROG " convert ", stderr);
		cli_shell_word(stderr, argv[1]);
		fputs(" -o DIR)\n", stderr);
	} else if (bin && !access(bin, X_OK)) { /* a program, without record */
		fputs(PROG ": a command comes first: " PROG " record --", stderr);
		for (int i = 1; i < argc; i++) {
			fputc(' ', stderr);
			cli_shell_word(stderr, argv[i]);
		}
		fputc('\n', stderr);
	} else {
		fprintf(stderr, PROG ": unknown command '%s'\n", argv[1]);
		usage(stderr);
		free(bin);
		return 2;
	}
	free(bin);
	fputs("Try '" PROG " --help'.\n", stderr);
	return 2;
}
