/* SPDX-License-Identifier: MIT */
/*
 * The kernel sampler of `stackcap record` (recorder.h).
 *
 * Events: cpu-clock, or those of -e (record/events.c), and with --off-cpu
 * the context-switch event (record/offcpu.h), each one per CPU and task
 * (record/perf-events.c), all writing to one ring per CPU; with several,
 * each sample carries its event's id (PERF_SAMPLE_IDENTIFIER), which the
 * record stream turns into the event's name.  For a
 * command: the child is forked and waits on a pipe while its events are
 * opened with inherit (its threads and children) and enable_on_exec, then
 * execs: that is how perf record starts a workload (an inherited event
 * cannot be mapped with cpu -1, so one per CPU).  Attached (-p, -t): the
 * same per-CPU events with inherit on every thread that exists (listed
 * again until no new one appears), so threads and children created later
 * are followed by the kernel; what was mapped before the attach comes
 * from /proc (record/procmaps.c).  -a: one event per CPU for every task.
 *
 * This thread polls the rings, copies what they hold into the perf record
 * stream (trace/perf-data.c, the reader of perf.data files, fed live) and,
 * once per pass over every ring, delivers the records up to the time every
 * ring has passed, in time order, to the encoder (record/encode.c).  The
 * traced program is never waited for: a full ring loses samples, which
 * the kernel counts (LOST) and the trace shows per process.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/ctf-writer.h"
#include "record/encode.h"
#include "record/events.h"
#include "record/kallsyms.h"
#include "record/offcpu.h"
#include "record/perf-events.h"
#include "record/procmaps.h"
#include "record/recorder.h"
#include "record/files-ahead.h"
#include "record/keep-binaries.h"
#include "record/keep-jit-maps.h"
#include "debuginfo/inflate-cache.h"
#include "trace/perf-data.h"
#include "common/grow.h"
#include "common/io.h"

struct recorder {
	const struct rec_options *o;
	/* The events (-e), and the perf events they need: ATTRS[i] is a
	 * site of EVS[ATTR_EVENT[i]], named NAMES[i]; with --off-cpu the
	 * last one is the context-switch event (OFF_ATTR). */
	struct rec_event *evs;
	size_t n_evs;
	struct perf_event_attr attrs[REC_EVENTS_MAX];
	const char *names[REC_EVENTS_MAX];
	size_t n_attrs;
	size_t off_attr;       /* --off-cpu: the index of its attr, else n_attrs */
	const char *table[REC_EVENTS_MAX]; /* the trace's event table (n_table 0: none) */
	size_t n_table;
	size_t ids_known;      /* events whose ids the record stream knows */
	struct rec_events ev;
	struct ctf_writer *w;
	struct rec_files_ahead *ahead; /* its stream files made ahead (record/files-ahead.h) */
	struct rec_keeper *keeper;     /* copies of the files a reader would not find (record/keep-binaries.h) */
	struct rec_keeper_stats kept;
	struct rec_jitmaps *jit;       /* the JIT maps copied into the trace (record/keep-jit-maps.h) */
	struct rec_jitmaps_stats jit_kept;
	struct rec_encoder *enc;
	struct su_perf_stream *ps;
	struct su_reader_stats rst;
	struct su_perf_stream_callbacks live; /* the record stream's own callbacks */
	pid_t self;
	uint64_t self_samples; /* -a: our own samples, left out */
	uint64_t ring_bytes;
	uint32_t window;       /* the stack bytes a sample holds at most */
	int werr;              /* first writing error */
	double cpu_loop;       /* our CPU seconds while sampling (the poll loop) */
	double cmd_cpu;        /* the command's CPU seconds (-1: not known) */
};

/* Packets in flight put on disk this often (as the capture library
 * does); the sample streams' stay open (rec_encoder_flush). */
#define FLUSH_PERIOD_NS (250 * 1000000ull)

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- the record stream's consumers -------------------------------------------- */

static int on_sample(void *arg, const struct su_sample *s)
{
	struct recorder *r = arg;
	if (s->pid == (uint32_t)r->self) {
		r->self_samples++;
		return 0;
	}
	/* The context-switch event's samples (--off-cpu) are where threads
	 * block: held until their switch records tell for how long. */
	int const rc = r->off_attr < r->n_attrs && s->event == r->names[r->off_attr] ? rec_encoder_hold(r->enc, s)
										       : rec_encoder_sample(r->enc, s);
	if (rc && !r->werr)
		r->werr = rc;
	return rc;
}

static int on_process(void *arg, const struct su_process *p)
{
	struct recorder *r = arg;
	if (r->o->all) /* the whole machine: only processes sampled */
		return 0;
	int const rc = rec_encoder_process(r->enc, p, su_perf_stream_time(r->ps));
	if (rc && !r->werr)
		r->werr = rc;
	return rc;
}

/* A file a process maps that a reader would not find at its path. */
static void on_keep(void *arg, int fd, const uint8_t *id, size_t len)
{
	struct recorder *r = arg;
	rec_keeper_add(r->keeper, fd, id, len);
}

/* A process with JIT code: its perf map for the trace. */
static int on_jit(void *arg, uint32_t pid, int other_view)
{
	struct recorder *r = arg;
	return rec_jitmaps_seen(r->jit, pid, other_view);
}

/* A section ended: the stream's model frees its process's maps. */
static void on_released(void *arg, const struct su_process *p)
{
	struct recorder *r = arg;
	if (r->ps)
		su_perf_stream_release(r->ps, p);
}

static int on_lost(void *arg, uint32_t pid, uint32_t tid, uint64_t n, int throttled)
{
	(void)tid;
	struct recorder *r = arg;
	return rec_encoder_lost(r->enc, pid, n, throttled);
}

static int on_exit_task(void *arg, uint32_t pid, uint32_t tid)
{
	struct recorder *r = arg;
	if (pid == tid) /* its perf map complete: copied, its descriptor closed */
		rec_jitmaps_exit(r->jit, pid);
	int const rc = rec_encoder_thread_exit(r->enc, pid, tid, su_perf_stream_time(r->ps));
	if (rc && !r->werr)
		r->werr = rc;
	return rc;
}

static int on_process_alive(void *arg, uint32_t pid)
{
	(void)arg;
	return rec_proc_running((pid_t)pid);
}

static int on_switch(void *arg, uint32_t pid, uint32_t tid, uint64_t time, int out, int preempted)
{
	struct recorder *r = arg;
	if (pid == (uint32_t)r->self)
		return 0;
	int const rc = rec_encoder_switch(r->enc, pid, tid, time, out, preempted);
	if (rc && !r->werr)
		r->werr = rc;
	return rc;
}

static int on_end(void *arg)
{
	struct recorder *r = arg;
	return rec_encoder_finish(r->enc, now_ns());
}

static uint8_t *reserve(void *arg, size_t len)
{
	struct recorder *r = arg;
	return su_perf_stream_reserve(r->ps, len);
}

static int commit(void *arg, size_t len)
{
	struct recorder *r = arg;
	int const rc = su_perf_stream_commit(r->ps, len);
	return rc > 0 ? -ECANCELED : rc;
}

/* One pass over every ring, then the records every ring has passed.
 * @return the bytes drained or -errno. */
static int64_t drain(struct recorder *r)
{
	int64_t total = 0;
	for (size_t i = 0; i < r->ev.n_rings; i++) {
		int64_t const n = rec_ring_drain(&r->ev.rings[i], reserve, commit, r);
		if (n < 0)
			return n;
		total += n;
	}
	r->ring_bytes += (uint64_t)total;
	int const rc = su_perf_stream_round(r->ps);
	return rc ? (rc > 0 ? -ECANCELED : rc) : total;
}

/* ---- tasks ----------------------------------------------------------------------- */

struct tidset {
	pid_t *v;
	size_t n, cap;
};

static int tidset_has(const struct tidset *t, pid_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i] == tid)
			return 1;
	return 0;
}

static int tidset_add(struct tidset *t, pid_t tid)
{
	if (tidset_has(t, tid))
		return 0;
	if (su_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	t->v[t->n++] = tid;
	return 0;
}

/* The ids of the events opened since the last call, told to the record
 * stream (several events: a sample is known by its id).  0 or -errno. */
static int register_ids(struct recorder *r)
{
	for (; r->n_attrs > 1 && r->ids_known < r->ev.n_fds; r->ids_known++) {
		uint64_t id;
		int rc = rec_events_id(&r->ev, r->ids_known, &id);
		if (!rc)
			rc = su_perf_stream_add_id(r->ps, id, r->ev.fd_attr[r->ids_known]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Threads of the -p processes that are not followed yet: open theirs
 * (enabled at once).  Until a listing finds no new one.  0 or -errno. */
static int follow_new_threads(struct recorder *r, struct tidset *have)
{
	for (int round = 0; round < 100; round++) {
		int added = 0;
		for (size_t i = 0; i < r->o->n_pids; i++) {
			pid_t *t = NULL;
			int const n = rec_proc_threads(r->o->pids[i], &t);
			for (int k = 0; k < n; k++) {
				if (tidset_has(have, t[k]))
					continue;
				int rc = rec_events_add_task(&r->ev, r->attrs, r->n_attrs, t[k]);
				if (!rc)
					rc = register_ids(r);
				if (rc == -ESRCH) /* ended meanwhile */
					rc = 0;
				if (!rc)
					rc = tidset_add(have, t[k]);
				if (rc) {
					free(t);
					return rc;
				}
				added = 1;
			}
			free(t);
		}
		if (!added)
			return 0;
	}
	return 0;
}

static int pidfd_open(pid_t pid)
{
	long const fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : (int)fd;
}

/* The task still exists (a thread: /proc/TID; a zombie counts as gone). */
static int task_alive(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t const n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* ---- messages ------------------------------------------------------------------- */

/* One line to the user through O's say hook (the caller prints it after
 * "PROG: "): the recorder never prints. */
static void say(const struct rec_options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct rec_options *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	if (!o->say)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->say(o->say_arg, line);
}

/* The record stream's and the encoder's warnings (su_warn_hook; ARG: O). */
static void warn_line(void *arg, const char *msg)
{
	say(arg, "warning: %s", msg);
}

/* ---- the child ------------------------------------------------------------------- */

/* Fork ARGV; it waits for a byte on *GO before exec when GO is given
 * (its events are opened meanwhile).  It runs with the open-file limit
 * the recorder was given (NOFILE; RLIM_INFINITY: unchanged), not the
 * recorder's raised one.  @return its pid or -errno. */
static pid_t spawn(char **argv, int *go, const struct rec_options *o, rlim_t nofile)
{
	int p[2] = { -1, -1 };
	if (go && pipe2(p, O_CLOEXEC))
		return -errno;
	pid_t const pid = fork();
	if (pid < 0) {
		int const e = errno;
		if (go) {
			close(p[0]);
			close(p[1]);
		}
		return -e;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		su_nofile_restore(nofile);
		if (go) {
			char c;
			close(p[1]);
			ssize_t n;
			while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
				;
			if (n != 1)
				_exit(127); /* the recorder gave up: nothing to run */
		}
		execvp(argv[0], argv);
		int const e = errno;
		/* The shell's messages and statuses. */
		if (e == ENOENT)
			say(o, "%s: command not found", argv[0]);
		else
			say(o, "%s: %s", argv[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	if (go) {
		close(p[0]);
		*go = p[1];
	}
	return pid;
}

/* RU's user and system time, in seconds. */
static double ru_seconds(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec +
	       ((double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_usec) * 1e-6;
}

/* Waits for PID; its CPU time (and that of the descendants it waited
 * for), in seconds, into *CPU when not NULL. */
static int reap(pid_t pid, int *status, double *cpu)
{
	struct rusage ru;
	while (wait4(pid, status, 0, &ru) < 0)
		if (errno != EINTR)
			return -errno;
	if (cpu)
		*cpu = ru_seconds(&ru);
	return 0;
}

/* ---- the events ------------------------------------------------------------------ */

/* Where an SDT marker named without its file is looked for: the command,
 * the attached processes' executables and the files they map executable.
 * *OUT malloc'd (each string too); @return how many. */
static size_t sdt_binaries(const struct rec_options *o, char ***out)
{
	char **v = NULL;
	size_t n = 0, cap = 0;
	if (o->argv && o->argv[0] && !su_grow((void **)&v, &cap, n + 1, sizeof(*v)) && (v[n] = strdup(o->argv[0])))
		n++;
	for (size_t i = 0; i < o->n_pids; i++) {
		char path[64], line[4600];
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)o->pids[i]);
		FILE *f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			char perms[8] = "";
			int at = 0;
			if (sscanf(line, "%*s %7s %*s %*s %*s%n", perms, &at) != 1 || perms[2] != 'x')
				continue;
			char *file = line + at + strspn(line + at, " ");
			file[strcspn(file, "\n")] = 0;
			if (file[0] != '/')
				continue;
			int dup = 0;
			for (size_t k = 0; k < n && !dup; k++)
				dup = !strcmp(v[k], file);
			if (!dup && !su_grow((void **)&v, &cap, n + 1, sizeof(*v)) && (v[n] = strdup(file)))
				n++;
		}
		if (f)
			fclose(f);
	}
	*out = v;
	return n;
}

/* The events of -e (cpu-clock without), each parsed; errors printed.
 * The trace's event table unless the one event is cpu-clock (such a
 * trace is as it always was).  0 or -1. */
static int events_parse(struct recorder *r)
{
	const struct rec_options *o = r->o;
	static const char *const dflt[] = { "cpu-clock" };
	const char *const *specs = o->n_events ? o->events : dflt;
	size_t const n = o->n_events ? o->n_events : 1;
	if (n + (o->off_cpu != 0) > REC_EVENTS_MAX) {
		say(o, "-e: at most %d events%s", REC_EVENTS_MAX - (o->off_cpu != 0), o->off_cpu ? " with --off-cpu" : "");
		return -1;
	}
	if (!(r->evs = calloc(n, sizeof(*r->evs))))
		return -1;
	char **bins = NULL;
	size_t const nb = sdt_binaries(o, &bins);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char err[1024];
		if (rec_event_parse(specs[i], (const char *const *)bins, nb, &r->evs[i], err, sizeof(err))) {
			say(o, "%s", err);
			rc = -1;
			break;
		}
		r->n_evs = i + 1;
		for (size_t k = 0; k < i; k++)
			if (!strcmp(r->evs[k].name, r->evs[i].name)) {
				say(o, "-e %s: given twice", specs[i]);
				rc = -1;
			}
	}
	for (size_t i = 0; i < nb; i++)
		free(bins[i]);
	free(bins);
	if (rc)
		return rc;
	/* (cpu-clock:u, cpu-clock/period=N/: named, not the default) */
	int const plain = r->n_evs == 1 && r->evs[0].kind == REC_EV_SOFTWARE &&
			  r->evs[0].config == PERF_COUNT_SW_CPU_CLOCK && !strcmp(r->evs[0].name, "cpu-clock");
	for (size_t i = 0; !plain && i < r->n_evs; i++)
		r->table[r->n_table++] = r->evs[i].name;
	/* --off-cpu beside named events: its stacks are one more event of
	 * the table (without a table their off_cpu events alone mark them). */
	if (!plain && o->off_cpu)
		r->table[r->n_table++] = REC_OFFCPU_EVENT;
	return 0;
}

/* The perf events for sampler options AO: a site of an event each, then
 * with --off-cpu the context-switch event (record/offcpu.h); only the
 * first also tracking maps, comm and tasks; with several, each sample
 * carries its event's id.  0, or -1 said. */
static int events_attrs(struct recorder *r, const struct rec_attr_opts *ao)
{
	struct perf_event_attr base;
	rec_attr_init(&base, ao);
	r->n_attrs = 0;
	for (size_t i = 0; i < r->n_evs; i++)
		for (size_t site = 0; site < r->evs[i].n_sites; site++) {
			if (r->n_attrs == REC_EVENTS_MAX) {
				say(r->o, "-e: more than %d perf events (each site of an SDT marker is one)",
				    REC_EVENTS_MAX);
				return -1;
			}
			struct perf_event_attr *a = &r->attrs[r->n_attrs];
			rec_event_attr(&r->evs[i], site, &base, r->o->freq, r->o->period, a);
			if (r->n_attrs)
				rec_attr_no_side_records(a);
			r->names[r->n_attrs++] = r->evs[i].name;
		}
	r->off_attr = r->n_attrs;
	if (r->o->off_cpu) {
		if (r->n_attrs == REC_EVENTS_MAX) {
			say(r->o, "-e: more than %d perf events with --off-cpu's", REC_EVENTS_MAX);
			return -1;
		}
		rec_offcpu_attr(&r->attrs[r->n_attrs], &base);
		r->names[r->n_attrs++] = REC_OFFCPU_EVENT;
	}
	for (size_t k = 0; r->n_attrs > 1 && k < r->n_attrs; k++)
		r->attrs[k].sample_type |= PERF_SAMPLE_IDENTIFIER;
	return 0;
}

/* ---- the recording --------------------------------------------------------------- */

static size_t ring_pages(uint32_t stack_size)
{
	/* About 256 samples of the window per CPU, 128 KiB to 16 MiB. */
	size_t const page = (size_t)sysconf(_SC_PAGESIZE);
	size_t const want = ((size_t)stack_size + 256) * 256 / page;
	size_t pages = 32;
	while (pages < want && pages < 4096)
		pages *= 2;
	return pages;
}

/* This process's CPU time so far, in seconds. */
static double cpu_now(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru_seconds(&ru);
}

/* Processes named in the summary's drops, the most first. */
#define DROP_LINES 10

static int by_drops(const void *a, const void *b)
{
	const struct rec_proc_stats *x = a, *y = b;
	uint64_t const dx = x->lost + x->throttled, dy = y->lost + y->throttled;
	return dx < dy ? 1 : dx > dy ? -1 : (x->pid > y->pid) - (x->pid < y->pid);
}

static void summary(const struct recorder *r, const struct rec_encoder_stats *sp, uint64_t bytes)
{
	const struct rec_options *o = r->o;
	uint32_t const window = r->window;
	struct rec_encoder_stats const st = *sp;
	uint64_t const drops = st.lost + st.throttled;
	/* The cost moved out of the traced threads: the recorder's own CPU,
	 * all of it, and while sampling only (without the start and the end:
	 * opening events, the kernel symbols). */
	double const cpu = cpu_now();
	double const per = st.samples ? 1e6 / (double)st.samples : 0.0;
	say(o, "kernel copy (%u Hz, %u-byte stack window): %" PRIu64 " samples, %" PRIu64
		" drops, %" PRIu64 " bytes (%.1f B/sample) in %s; recorder CPU %.3f s (%.1f us/sample, %.1f while "
		"sampling)", o->freq, window, st.samples, drops, bytes,
		st.samples ? (double)bytes / (double)st.samples : 0.0, o->out, cpu, cpu * per, r->cpu_loop * per);
	/* What the samples should be: cpu-clock samples CPU time, the
	 * command's threads' and its waited-for children's. */
	if (r->cmd_cpu >= 0 && !r->n_table && !o->period && !o->off_cpu)
		say(o, "the command's CPU time: %.3f s, %.0f samples at %u Hz (%" PRIu64 " taken, %.1f%%)", r->cmd_cpu,
		    r->cmd_cpu * o->freq, o->freq, st.samples,
		    r->cmd_cpu > 0 ? 100.0 * (double)st.samples / (r->cmd_cpu * o->freq) : 0.0);
	if (drops) {
		/* The processes that lost most, at most DROP_LINES of them: a
		 * whole machine's recording may name thousands. */
		size_t n_drop = 0;
		uint64_t rest_lost = 0, rest_thr = 0;
		struct rec_proc_stats *dp = malloc((st.n_procs + 1) * sizeof(*dp));
		for (size_t i = 0; dp && i < st.n_procs; i++)
			if (st.procs[i].lost || st.procs[i].throttled)
				dp[n_drop++] = st.procs[i];
		if (dp)
			qsort(dp, n_drop, sizeof(*dp), by_drops);
		for (size_t i = 0; i < n_drop; i++) {
			const struct rec_proc_stats *p = &dp[i];
			if (i >= DROP_LINES) {
				rest_lost += p->lost;
				rest_thr += p->throttled;
				continue;
			}
			char who[64] = "unknown process";
			if (p->pid != UINT32_MAX)
				snprintf(who, sizeof(who), "pid %" PRIu32 " (%.*s)", p->pid, (int)sizeof(p->comm),
					 p->comm[0] ? p->comm : "?");
			say(o, "  %s: %" PRIu64 " samples, %" PRIu64 " lost (ring buffer full: the recorder fell "
			    "behind), %" PRIu64 " throttled", who, p->samples, p->lost, p->throttled);
		}
		free(dp);
		if (n_drop > DROP_LINES)
			say(o, "  %zu more processes: %" PRIu64 " lost, %" PRIu64 " throttled", n_drop - DROP_LINES,
			    rest_lost, rest_thr);
		int hits = 0;
		for (size_t i = 0; i < r->n_evs; i++)
			hits |= r->evs[i].kind != REC_EV_SOFTWARE;
		/* A record is the whole window, however little of it the stack
		 * used: bursts of hits fill the rings at that size. */
		if (hits && st.lost)
			say(o, "note: a tracepoint or probe hit in bursts fills the rings with %u-byte "
			    "samples faster than they drain: a smaller --stack-size (8192 is 8 times smaller) "
			    "keeps more", window);
	}
	if (r->n_table && st.event_samples) {
		char line[1024];
		size_t at = (size_t)snprintf(line, sizeof(line), "samples per event:");
		for (size_t i = 0; i < r->n_table && at < sizeof(line); i++)
			at += (size_t)snprintf(line + at, sizeof(line) - at, "%s %s %" PRIu64, i ? "," : "", r->table[i],
					       st.event_samples[i]);
		say(o, "%s", line);
	}
	if (o->off_cpu)
		say(o, "off-CPU: %" PRIu64 " stacks where threads blocked, %.6f s blocked in all (%" PRIu64
		    " of them still blocked at the end, counted until then); %" PRIu64 " preemptions left out; %" PRIu64
		    " stacks whose switch records were lost (ring full) left out", st.off_cpu_samples,
		    (double)st.off_cpu_ns * 1e-9, st.off_cpu_unfinished, st.off_cpu_preempted, st.off_cpu_unpaired);
	if (o->off_cpu && st.off_cpu_unwritable)
		say(o, "off-CPU: %" PRIu64 " held stacks left out: the sample they were encoded against was no longer "
		    "in their packet", st.off_cpu_unwritable);
	if (st.after_end)
		say(o, "%" PRIu64 " samples of processes whose exit was already recorded left out", st.after_end);
	if (st.kernel_samples)
		say(o, "kernel frames in %" PRIu64 " samples; %" PRIu64 " kernel symbols kept (%" PRIu64
			" bytes)", st.kernel_samples, st.kernel_symbols, st.kernel_symbol_bytes);
	uint64_t capped = 0;
	for (size_t i = 0; i < st.n_procs; i++)
		capped += st.procs[i].capped;
	if (capped)
		say(o, "%" PRIu64 " of %" PRIu64 " samples filled the %u-byte window: their stacks "
			"may be cut (--stack-size, up to %u)", capped, st.samples, window,
			REC_STACK_MAX);
	if (r->kept.kept || r->kept.had)
		say(o, "%" PRIu64 " files mapped by processes (a container's, a deleted one) are not at their path "
		    "here: kept by build-id in %s (%" PRIu64 " copied now, %.1f MB; %" PRIu64 " kept before), where "
		    "stackunwind finds them on this machine (`stackunwind archive %s` puts them in the trace, for "
		    "another)", r->kept.kept + r->kept.had, r->kept.dir, r->kept.kept,
		    (double)r->kept.bytes / 1e6, r->kept.had, o->out);
	if (r->kept.failed)
		say(o, "warning: %" PRIu64 " files mapped by processes are not at their path here and could not be "
		    "kept in %s (their process gone before they were read, no space or permission, over 512 MB a "
		    "file or 2 GB a recording, more than 64 waiting, or a directory another user can change): their "
		    "frames will show module+offset unless "
		    "stackunwind is given them (--debug-dir, --symfs)", r->kept.failed, r->kept.dir);
	if (o->say)
		rec_jitmaps_summary(&r->jit_kept, o->out, o->say, o->say_arg);
	if (st.no_user && (o->all || o->n_pids || o->n_tids))
		say(o, "%" PRIu64 " samples without user state (kernel threads, exiting tasks) left out", st.no_user);
}

int rec_record(const struct rec_options *o)
{
	struct recorder R = { .o = o, .self = getpid(), .cmd_cpu = -1,
			      .live = { .lost = on_lost, .exit = on_exit_task, .context_switch = on_switch,
					.process_alive = on_process_alive, .warn = { warn_line, (void *)o } } };
	struct recorder *r = &R;
	int const attach = o->n_pids || o->n_tids;
	int const cmd_only = o->argv && !attach && !o->all;
	char err[512] = "";
	int rc, status = 0, ret = 1;
	pid_t child = -1;
	int go = -1, child_fd = -1;
	int *pidfds = NULL;
	/* Two stream files per process sampled, open while it runs. */
	rlim_t const nofile = su_nofile_raise();
	struct tidset have = { 0 };
	struct rec_buf synth = { 0 };
	uint64_t const t0 = now_ns();

	stop_signal = 0;
	/* What the rings hold is copied out every pass (up to 16 MiB a CPU)
	 * into buffers freed a round later: from the heap, kept, not fresh
	 * mappings that fault in and zero every page each time. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	/* The tasks: a command (waiting for its events), or those named. */
	if (cmd_only) {
		/* Like time(1): the terminal's signals go to the command. */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		child = spawn(o->argv, &go, o, nofile);
		if (child < 0) {
			say(o, "fork: %s", strerror((int)-child));
			return REC_FAILED;
		}
		if ((rc = tidset_add(&have, child)) != 0)
			goto fail;
	} else if (attach) {
		for (size_t i = 0; i < o->n_pids; i++) {
			pid_t *t = NULL;
			int const n = rec_proc_threads(o->pids[i], &t);
			if (n <= 0) {
				say(o, "-p %d: no such process", (int)o->pids[i]);
				free(t);
				ret = REC_FAILED;
				goto out;
			}
			for (int k = 0; k < n; k++)
				if ((rc = tidset_add(&have, t[k])) != 0) {
					free(t);
					goto fail;
				}
			free(t);
		}
		for (size_t i = 0; i < o->n_tids; i++) {
			if (rec_proc_tgid(o->tids[i]) < 0) {
				say(o, "-t %d: no such thread", (int)o->tids[i]);
				ret = REC_FAILED;
				goto out;
			}
			if ((rc = tidset_add(&have, o->tids[i])) != 0)
				goto fail;
		}
	}

	if (events_parse(r)) {
		ret = REC_FAILED;
		goto fail_cmd;
	}
	int hits = 0, in_kernel = 0;
	for (size_t i = 0; i < r->n_evs; i++) {
		hits |= r->evs[i].kind != REC_EV_SOFTWARE;
		in_kernel |= rec_event_in_kernel(&r->evs[i]);
	}
	in_kernel |= o->off_cpu != 0; /* the context switch is taken in the kernel */
	/* The events: kernel time too when permitted (the user stack of a
	 * task in a system call is sampled as perf does), else user time.
	 * A tracepoint or probe gives a sample per hit, as fast as the
	 * program hits it: the largest rings (16 MiB per CPU) hold 1,900
	 * samples of an 8 KiB window whatever the recorder's delay. */
	size_t pages = hits ? 4096 : ring_pages(o->stack_size);
	rc = -EINVAL;
	/* Kernel frames where kernel addresses are ours to read (root,
	 * kernel.kptr_restrict): else said once. */
	int const kreadable = !o->user_only && rec_kallsyms_readable();
	int kframes = 0;
	for (int attempt = kreadable ? 0 : 1; attempt < 3; attempt++) {
		int const excl = attempt == 2;
		if (excl && in_kernel) /* it would never fire: say why it was refused */
			break;
		kframes = attempt == 0;
		struct rec_attr_opts const ao = {
			.freq = o->freq, .stack_size = o->stack_size, .inherit = !o->all,
			.enable_on_exec = cmd_only, .exclude_kernel = excl, .kernel_chain = kframes,
		};
		if (events_attrs(r, &ao)) {
			rc = -EINVAL;
			snprintf(err, sizeof(err), "-e: too many perf events");
			break;
		}
		for (;;) {
			rc = rec_events_open(&r->ev, r->attrs, r->names, r->n_attrs, have.v, o->all ? 0 : have.n, pages,
					     err, sizeof(err));
			if (rc != -EDQUOT || pages <= 8)
				break;
			pages /= 2; /* a smaller ring under the locked-memory limit */
		}
		if (rc != -EACCES && rc != -EPERM)
			break;
	}
	if (rc) {
		if (cmd_only) {
			close(go); /* the child sees EOF and leaves without running */
			go = -1;
			reap(child, &status, NULL);
			child = -1;
			/* Refused: the in-process sampler may take over (cpu-clock
			 * only; the caller refuses --off-cpu there, saying why). */
			if ((rc == -EACCES || rc == -EPERM) && !r->n_table) {
				ret = REC_REFUSED;
				goto out;
			}
		}
		if ((rc == -EACCES || rc == -EPERM) && in_kernel)
			say(o, "%s (the event fires in the kernel: kernel.perf_event_paranoid must be 1 or "
			    "less, or root)", err);
		else
			say(o, "%s", err);
		ret = REC_FAILED;
		goto out;
	}

	{
		uint64_t const ring = r->ev.data_pages * (uint64_t)sysconf(_SC_PAGESIZE);
		if (ring < 8 * ((uint64_t)o->stack_size + 512))
			say(o, "note: ring buffers of %" PRIu64 " KiB per CPU (the locked-memory limit, "
			    "kernel.perf_event_mlock_kb) hold few samples of a %u-byte window: samples may be lost "
			    "(a smaller --stack-size holds more)", ring / 1024, o->stack_size);
	}

	/* The trace and the record stream. */
	if (!o->user_only && !kframes)
		say(o, "note: no kernel frames: %s (--user-only says you want none)",
		    kreadable ? "kernel call chains are not permitted here (kernel.perf_event_paranoid)"
				  : "kernel addresses are hidden from this user (kernel.kptr_restrict, "
				    "kernel.perf_event_paranoid; root sees them)");
	struct ctf_writer_opts wo = { .sz = sizeof(wo), .own_fds = 1, .zstd = o->zstd, .clock_offset_ns = o->clock_offset_ns,
				     .sampler = "kernel", .kernel_frames = kframes,
				     .events = r->n_table ? r->table : NULL, .n_events = r->n_table, .off_cpu = o->off_cpu };
	memcpy(wo.uuid, o->uuid, sizeof(wo.uuid));
	if ((rc = ctf_writer_open(o->out, &wo, &r->w)) != 0) {
		say(o, "cannot create the trace in %s: %s", o->out, strerror(-rc));
		goto fail_quiet;
	}
	/* Each process a file or two: made ahead, off the thread that drains
	 * the rings (a slow file system held it, and samples were lost). */
	if ((r->ahead = rec_files_ahead_start(o->out)) != NULL)
		ctf_writer_set_create(r->w, rec_files_ahead_take, r->ahead);
	r->keeper = rec_keeper_start(su_inflate_default_dir());
	r->jit = rec_jitmaps_new(o->out);
	struct rec_encoder_opts const eo = { .full_copy = o->full_copy, .end_all = 1, .policy = o->policy, .live = 1,
					     .keep = r->keeper ? on_keep : NULL, .keep_arg = r,
					     .jit = r->jit ? on_jit : NULL, .jit_arg = r,
					     .kernel_frames = kframes, .events = r->n_table ? r->table : NULL,
					     .n_events = r->n_table, .warn = { warn_line, (void *)o },
					     .released = on_released, .released_arg = r };
	struct su_reader_callbacks cb = { .arg = r, .process_start = on_process, .sample = on_sample, .end = on_end };
	if ((rc = rec_encoder_new(r->w, &eo, &r->enc)) != 0 ||
	    (rc = su_perf_stream_new(&r->attrs[0], sizeof(r->attrs[0]), &cb, &r->live, &r->rst, &r->ps)) != 0)
		goto fail;
	for (size_t k = 0; (r->n_table || r->n_attrs > 1) && k < r->n_attrs; k++) {
		int const x = su_perf_stream_add_event(r->ps, &r->attrs[k], sizeof(r->attrs[k]), r->names[k]);
		if (x < 0) {
			rc = x;
			goto fail;
		}
	}
	if ((rc = register_ids(r)) != 0)
		goto fail;
	r->window = su_perf_stream_stack_cap(r->ps);

	/* Start: a command at its exec; attached tasks now, then what they
	 * had mapped (stamped before the start: read first). */
	if (cmd_only) {
		if (write(go, "g", 1) != 1) {
			rc = -errno;
			goto fail;
		}
		close(go);
		go = -1;
	} else {
		if ((rc = rec_events_enable(&r->ev)) != 0)
			goto fail;
		if (attach && (rc = follow_new_threads(r, &have)) != 0)
			goto fail;
		pid_t *procs = NULL;
		int np = 0;
		if (o->all) {
			np = rec_proc_all(&procs);
		} else {
			procs = calloc(o->n_pids + o->n_tids + 1, sizeof(*procs));
			for (size_t i = 0; procs && i < o->n_pids; i++)
				procs[np++] = o->pids[i];
			for (size_t i = 0; procs && i < o->n_tids; i++) {
				pid_t const g = rec_proc_tgid(o->tids[i]);
				int dup = 0;
				for (int k = 0; k < np; k++)
					dup |= procs[k] == g;
				if (g > 0 && !dup)
					procs[np++] = g;
			}
		}
		/* Several events: the records carry the first one's id. */
		if (r->n_attrs > 1 && r->ev.n_fds) {
			synth.with_id = 1;
			if ((rc = rec_events_id(&r->ev, 0, &synth.id)) != 0)
				goto fail;
		}
		struct rec_file_ids ids = { 0 };
		for (int i = 0; i < np; i++)
			if (procs[i] != r->self && rec_proc_synthesize(&synth, procs[i], t0, &ids) == -ENOMEM) {
				np = -ENOMEM;
				break;
			}
		rec_file_ids_free(&ids);
		free(procs);
		if (np < 0) {
			rc = np;
			goto fail;
		}
		if (synth.len && (rc = su_perf_stream_feed(r->ps, synth.p, synth.len)) != 0)
			goto fail;
		free(synth.p);
		synth.p = NULL;
		if (o->argv) { /* -p/-t/-a -- CMD: record until it ends */
			child = spawn(o->argv, NULL, o, nofile);
			if (child < 0) {
				rc = (int)child;
				child = -1;
				goto fail;
			}
			signal(SIGINT, SIG_IGN);
			signal(SIGQUIT, SIG_IGN);
		}
	}
	if (child > 0 && (child_fd = pidfd_open(child)) < 0) {
		rc = child_fd;
		goto fail;
	}
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	if (!o->argv)
		sigaction(SIGINT, &sa, NULL);

	/* Until the command ends, a signal, or the attached tasks are gone. */
	size_t const nfd = r->ev.n_rings + 1 + o->n_pids;
	struct pollfd *fds = calloc(nfd, sizeof(*fds));
	pidfds = calloc(o->n_pids + 1, sizeof(*pidfds));
	if (!fds || !pidfds) {
		free(fds);
		rc = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < o->n_pids; i++)
		pidfds[i] = pidfd_open(o->pids[i]);
	int forwarded = 0, child_done = 0;
	uint64_t last_flush = now_ns();
	double const cpu0 = cpu_now();
	rc = 0;
	for (;;) {
		size_t k = 0;
		for (size_t i = 0; i < r->ev.n_rings; i++)
			fds[k++] = (struct pollfd){ .fd = r->ev.rings[i].fd, .events = POLLIN };
		size_t const at_child = k;
		if (child_fd >= 0)
			fds[k++] = (struct pollfd){ .fd = child_fd, .events = POLLIN };
		size_t const at_pids = k;
		for (size_t i = 0; i < o->n_pids; i++)
			fds[k++] = (struct pollfd){ .fd = pidfds[i], .events = POLLIN };
		int const n = poll(fds, k, 100);
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		int64_t const d = drain(r);
		if (d < 0) {
			rc = (int)d;
			break;
		}
		uint64_t const now = now_ns();
		if (now - last_flush >= FLUSH_PERIOD_NS) {
			last_flush = now;
			rec_jitmaps_retry(r->jit);
			if ((rc = rec_encoder_flush(r->enc)) != 0) {
				r->werr = rc;
				break;
			}
		}
		if (child_fd >= 0 && n > 0 && fds[at_child].revents) {
			child_done = 1;
			break;
		}
		if (stop_signal) {
			if (child > 0 && cmd_only) {
				if (!forwarded)
					kill(child, stop_signal);
				forwarded = 1;
				continue; /* until it ends */
			}
			break;
		}
		if (attach && !o->argv) {
			int alive = 0;
			for (size_t i = 0; i < o->n_pids; i++)
				alive |= pidfds[i] >= 0 ? !(n > 0 && fds[at_pids + i].revents) : task_alive(o->pids[i]);
			for (size_t i = 0; i < o->n_tids; i++)
				alive |= task_alive(o->tids[i]);
			if (!alive)
				break;
		}
	}
	free(fds);
	rec_events_disable(&r->ev);
	int64_t const d = rc ? 0 : drain(r);
	r->cpu_loop = cpu_now() - cpu0;
	if (!rc && d < 0)
		rc = (int)d;
	int const erc = rc ? rc : su_perf_stream_end(r->ps);
	if (erc && !r->werr)
		r->werr = erc > 0 ? -ECANCELED : erc;
	if (child > 0) {
		if (!child_done && !cmd_only)
			kill(child, SIGTERM); /* -p -- CMD stopped by a signal */
		reap(child, &status, cmd_only ? &r->cmd_cpu : NULL);
	}
	/* The streams closed, the bytes counted; the stats kept for the summary. */
	struct rec_encoder_stats st;
	rec_encoder_get_stats(r->enc, &st);
	struct rec_proc_stats *procs = malloc((st.n_procs + 1) * sizeof(*procs));
	if (procs)
		memcpy(procs, st.procs, st.n_procs * sizeof(*procs));
	st.procs = procs;
	st.n_procs = procs ? st.n_procs : 0;
	uint64_t *ev_samples = r->n_table ? calloc(r->n_table, sizeof(*ev_samples)) : NULL;
	if (ev_samples && st.event_samples)
		memcpy(ev_samples, st.event_samples, r->n_table * sizeof(*ev_samples));
	st.event_samples = ev_samples;
	int const frc = rec_encoder_free(r->enc);
	r->enc = NULL;
	if (frc && !r->werr)
		r->werr = frc;
	rec_keeper_stop(r->keeper, &r->kept); /* the copies asked for done, for the summary */
	r->keeper = NULL;
	rec_jitmaps_finish(r->jit, &r->jit_kept);
	r->jit = NULL;
	uint64_t const bytes = ctf_writer_bytes_written(r->w);
	int const crc = ctf_writer_close(r->w);
	r->w = NULL;
	if (crc && !r->werr)
		r->werr = crc;
	summary(r, &st, bytes);
	free(procs);
	free(ev_samples);
	if (WIFSIGNALED(status) && child > 0)
		say(o, "%s was killed by signal %d (%s)", o->argv[0], WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (r->werr)
		say(o, "recording stopped by an error: %s; the trace holds what was written before it",
		    strerror(-r->werr));
	ret = child > 0 ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : r->werr ? 1 : 0;
	goto out;

fail:
	say(o, "%s", strerror(-rc));
fail_quiet:
	ret = 1;
fail_cmd: /* RET set */
	if (go >= 0) {
		close(go);
		go = -1;
	}
	if (child > 0) {
		if (!cmd_only)
			kill(child, SIGTERM);
		reap(child, &status, NULL);
	}
out:
	if (r->ps)
		su_perf_stream_free(r->ps);
	if (r->enc)
		rec_encoder_free(r->enc);
	if (r->w)
		ctf_writer_close(r->w);
	rec_keeper_stop(r->keeper, NULL); /* a failure before the summary's */
	r->keeper = NULL;
	rec_jitmaps_finish(r->jit, NULL); /* what is held copied all the same */
	r->jit = NULL;
	rec_files_ahead_stop(r->ahead); /* after the writer: it may take one until then */
	r->ahead = NULL;
	rec_events_close(&r->ev);
	if (child_fd >= 0)
		close(child_fd);
	for (size_t i = 0; pidfds && i < o->n_pids; i++)
		if (pidfds[i] >= 0)
			close(pidfds[i]);
	free(pidfds);
	free(have.v);
	free(synth.p);
	for (size_t i = 0; i < r->n_evs; i++)
		rec_event_free(&r->evs[i]);
	free(r->evs);
	su_nofile_restore(nofile); /* for a command run after us (the in-process sampler) */
	return ret;
}
