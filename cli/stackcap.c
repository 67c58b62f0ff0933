/* SPDX-License-Identifier: MIT */
/*
 * stackcap: the recording front end.
 *
 *   stackcap record [-F HZ] [--stack-cap BYTES] [--policy f1|f2] [--zstd]
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

#define PROG "stackcap"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " record [-F HZ] [--stack-cap BYTES] [--policy f1|f2] [--zstd]\n"
		"                       [--full-copy] [-o DIR] [--force] -- CMD [ARGS...]\n"
		"\n"
		"  -F, --freq HZ          samples per second of thread CPU time (default 999)\n"
		"      --stack-cap BYTES  bound of one stack copy (default 65536)\n"
		"      --policy f1|f2     words kept: f2 code and stack pointers (default), f1 code only\n"
		"      --wall-clock       sample wall-clock time instead of CPU time\n"
		"      --zstd             zstd-compress the stream files\n"
		"      --no-fork          do not record forked children\n"
		"      --full-copy        also store every unfiltered stack copy, to measure\n"
		"                         fidelity (stackunwind stats); stores every stack word\n"
		"  -o, --output DIR       trace directory (default ./stackcap.trace)\n"
		"      --force            replace an existing output directory\n");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The preload library: $STACKCAP_LIBRARY, the build tree next to this
 * program, or the installed one. */
static int find_library(char *out, size_t n)
{
	const char *env = getenv("STACKCAP_LIBRARY");
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
		const char *cands[] = { "../capture/.libs/libstackcap.so", "../../capture/.libs/libstackcap.so",
					"../lib/libstackcap.so" };
		for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
			char p[PATH_MAX * 2];
			snprintf(p, sizeof(p), "%s/%s", dir, cands[i]);
			if (access(p, R_OK) == 0 && realpath(p, out))
				return 0;
		}
	}
	snprintf(out, n, "%s/libstackcap.so", STACKCAP_LIBDIR);
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long freq = 999, cap = 65536;
	const char *policy = "f2", *out = "stackcap.trace";
	int zstd = 0, force = 0, wall = 0, nofork = 0, full = 0, c;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+F:o:h", longopts, NULL)) != -1) {
		switch (c) {
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
		case 'W': wall = 1; break;
		case 'Z': zstd = 1; break;
		case 'N': nofork = 1; break;
		case 'C': full = 1; break;
		case 'o': out = optarg; break;
		case 'f': force = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, PROG " record: no command given\n");
		usage(stderr);
		return 2;
	}
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)) != 0) {
		fprintf(stderr, PROG ": cannot find libstackcap.so (set STACKCAP_LIBRARY)\n");
		return 2;
	}
	struct stat st;
	if (lstat(out, &st) == 0) {
		if (!force) {
			fprintf(stderr, PROG ": output '%s' exists; use --force to replace it\n", out);
			return 2;
		}
		if (nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
			fprintf(stderr, PROG ": cannot remove '%s': %s\n", out, strerror(errno));
			return 2;
		}
	}
	if (mkdir(out, 0777) != 0) {
		fprintf(stderr, PROG ": cannot create '%s': %s\n", out, strerror(errno));
		return 2;
	}
	char abs_out[PATH_MAX];
	if (!realpath(out, abs_out)) {
		fprintf(stderr, PROG ": '%s': %s\n", out, strerror(errno));
		return 2;
	}

	/* One identity for every process of the recording (shared metadata). */
	uint8_t uuid[16];
	if (getrandom(uuid, sizeof(uuid), 0) != (ssize_t)sizeof(uuid)) {
		fprintf(stderr, PROG ": getrandom: %s\n", strerror(errno));
		return 2;
	}
	char uuid_hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(uuid_hex + 2 * i, 3, "%02x", uuid[i]);
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	long long const offset = ((long long)rt.tv_sec - mono.tv_sec) * 1000000000LL + (rt.tv_nsec - mono.tv_nsec);
	char offset_s[32];
	snprintf(offset_s, sizeof(offset_s), "%lld", offset);

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
	setenv_u("STACKCAP_WALL_CLOCK", (unsigned)wall);
	setenv_u("STACKCAP_NO_FORK", (unsigned)nofork);
	setenv_u("STACKCAP_FULL_COPY", (unsigned)full);
	setenv("STACKCAP_TRACE_UUID", uuid_hex, 1);
	setenv("STACKCAP_CLOCK_OFFSET_NS", offset_s, 1);
	setenv("LD_PRELOAD", preload, 1);
	free(preload);

	/* Like time(1): the terminal's signals go to the command; we wait. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	pid_t const pid = fork();
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		execvp(argv[optind], argv + optind);
		int const e = errno;
		/* The shell's messages and statuses. */
		if (e == ENOENT)
			fprintf(stderr, PROG ": %s: command not found\n", argv[optind]);
		else
			fprintf(stderr, PROG ": %s: %s\n", argv[optind], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, PROG ": waitpid: %s\n", strerror(errno));
			return 2;
		}
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
	fprintf(stderr, PROG ": %llu samples, %llu drops, %llu bytes (%.1f B/sample) in %s\n", t.samples, t.drops,
		t.bytes, t.samples ? (double)t.bytes / (double)t.samples : 0.0, out);
	/* Faults are reported, never silent; the status stays the command's. */
	if (WIFSIGNALED(status))
		fprintf(stderr, PROG ": %s was killed by signal %d (%s)\n", argv[optind], WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	if (t.unfinished)
		fprintf(stderr, PROG ": %d of %d processes did not finish their trace (killed): the samples of "
				"their last moments are lost, samples and drops above leave them out; stackunwind "
				"reads the rest\n", t.unfinished, t.started);
	if (t.errors)
		fprintf(stderr, PROG ": write error in %d of %d processes (%s): the trace holds what was written "
				"before it\n", t.errors, t.started, strerror(-t.first_error));
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, PROG ": unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
