/* SPDX-License-Identifier: MIT */
/*
 * bench/read: read a recorded trace with each event source, in a child
 * process per run so peak RSS is the run's own (wait4's ru_maxrss).
 *
 *   bench/read [-r RUNS] [-s native|babeltrace2|both] TRACE_DIR
 *
 * Two rows per source: the whole read (su_stackcap_trace_read: events,
 * process model, stack-codec decode of every sample) and the source alone
 * (its events counted and dropped), which is what the parser costs.  The
 * run of median wall time is shown, with its CPU time (user + system),
 * steadier than wall time on a shared machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/reader-internal.h"

struct result {
	double seconds;
	uint64_t samples;         /* samples delivered, or sample events */
	uint64_t events;
	long maxrss_kib;
	double cpu_seconds;      /* user + system of the child (steadier on a busy machine) */
	int rc;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t sink;

static int on_sample(void *arg, const struct su_sample *s)
{
	uint64_t *n = arg;
	(*n)++;
	sink += s->image->nwords ? s->image->words[0] : 0;
	return 0;
}

struct count {
	uint64_t samples, events;
};

static int on_raw(void *ctx, const struct raw_event *ev)
{
	struct count *c = ctx;
	c->events++;
	if (ev->kind == RAW_SAMPLE)
		c->samples++;
	if (ev->kind == RAW_PROCESS_START) {
		free(ev->proc.comm);
		free(ev->proc.exe);
	}
	if (ev->kind == RAW_MAPS)
		su_maps_free(ev->maps);
	if (ev->blob_len)
		sink += ev->blob[0];
	return 0;
}

/* In the child: one run.  @return its result. */
static struct result run_once(const char *dir, enum su_reader_source which, int source_only)
{
	struct result r = { 0 };
	char err[512] = "";
	double const t0 = now();
	if (source_only) {
		const struct event_source *src =
			which == SU_READER_BABELTRACE2 ? &su_source_babeltrace2 : &su_source_native;
		struct source_report rep = { 0 };
		struct count c = { 0 };
		char *abs = realpath(dir, NULL);
		void *h = NULL;
		r.rc = abs ? src->open(abs, &rep, &h, err, sizeof(err)) : -errno;
		if (!r.rc) {
			r.rc = src->run(h, PASS_PROCESS, on_raw, &c, err, sizeof(err));
			if (!r.rc)
				r.rc = src->run(h, PASS_SAMPLES, on_raw, &c, err, sizeof(err));
			src->close(h);
		}
		free(abs);
		r.samples = c.samples;
		r.events = c.events;
	} else {
		struct su_reader_opts opts = { .source = which };
		struct su_reader_stats st;
		uint64_t n = 0;
		struct su_reader_callbacks cb = { .arg = &n, .sample = on_sample };
		r.rc = su_stackcap_trace_read(dir, &opts, &cb, &st, err, sizeof(err));
		r.samples = st.samples;
		r.events = n;
	}
	r.seconds = now() - t0;
	if (r.rc < 0)
		fprintf(stderr, "bench/read: %s\n", err);
	return r;
}

/* Run in a child and collect its result and peak RSS. */
static int run_child(const char *dir, enum su_reader_source which, int source_only, struct result *out)
{
	int fds[2];
	if (pipe(fds))
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fds[0]);
		struct result r = run_once(dir, which, source_only);
		ssize_t w = write(fds[1], &r, sizeof(r));
		_exit(w == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], out, sizeof(*out));
	close(fds[0]);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		return -errno;
	if (n != (ssize_t)sizeof(*out) || !WIFEXITED(status) || WEXITSTATUS(status))
		return -EIO;
	out->maxrss_kib = ru.ru_maxrss;
	out->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
			   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	return 0;
}

static int cmp_seconds(const void *a, const void *b)
{
	double const x = ((const struct result *)a)->seconds, y = ((const struct result *)b)->seconds;
	return x < y ? -1 : x > y;
}

static void bench(const char *dir, enum su_reader_source which, int source_only, int runs)
{
	struct result rs[32];
	const char *name = which == SU_READER_BABELTRACE2 ? "babeltrace2" : "native";
	for (int i = 0; i < runs; i++) {
		if (run_child(dir, which, source_only, &rs[i]) || rs[i].rc < 0) {
			printf("| %s | %s | failed |\n", name, source_only ? "source only" : "full read");
			return;
		}
	}
	qsort(rs, (size_t)runs, sizeof(rs[0]), cmp_seconds);
	struct result const *m = &rs[runs / 2];
	long maxrss = 0;
	for (int i = 0; i < runs; i++)
		if (rs[i].maxrss_kib > maxrss)
			maxrss = rs[i].maxrss_kib;
	printf("| %s | %s | %llu | %.3f s | %.0f k/s | %.3f s | %.0f k/s | %.1f MiB |\n", name,
	       source_only ? "source only" : "full read (decode)",
	       (unsigned long long)m->samples, m->seconds, (double)m->samples / m->seconds / 1000.0,
	       m->cpu_seconds, (double)m->samples / m->cpu_seconds / 1000.0, (double)maxrss / 1024.0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int runs = 3, opt;
	const char *which = "both";
	while ((opt = getopt(argc, argv, "r:s:")) != -1) {
		switch (opt) {
		case 'r':
			runs = atoi(optarg);
			break;
		case 's':
			which = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || runs < 1 || runs > 32)
		goto usage;
	const char *dir = argv[optind];
	printf("| source | what | samples | wall (median) | samples/s | CPU | samples/CPU-s | peak RSS |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
	for (int s = 0; s < 2; s++) {
		enum su_reader_source const src = s ? SU_READER_BABELTRACE2 : SU_READER_NATIVE;
		if (strcmp(which, "both") && strcmp(which, s ? "babeltrace2" : "native"))
			continue;
		bench(dir, src, 0, runs);
		bench(dir, src, 1, runs);
	}
	return 0;
usage:
	fprintf(stderr, "usage: bench/read [-r RUNS (1-32)] [-s native|babeltrace2|both] TRACE_DIR\n");
	return 2;
}
