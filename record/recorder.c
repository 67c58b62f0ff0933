/* SPDX-License-Identifier: MIT */
/*
 * The kernel sampler of `stackcap record` (recorder.h).
 *
 * Events: cpu-clock, one per CPU and task (record/perf-events.c).  For a
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
#include <malloc.h>
#include <poll.h>
#include <signal.h>
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
#include "record/kallsyms.h"
#include "record/perf-events.h"
#include "record/procmaps.h"
#include "record/recorder.h"
#include "trace/perf-data.h"
#include "trace/stackcap-reader.h" /* su_grow */

struct recorder {
	const struct rec_options *o;
	struct perf_event_attr attr;
	struct rec_events ev;
	struct ctf_writer *w;
	struct rec_encoder *enc;
	struct su_perf_stream *ps;
	struct su_reader_stats rst;
	pid_t self;
	uint64_t self_samples; /* -a: our own samples, left out */
	uint64_t ring_bytes;
	uint32_t window;       /* the stack bytes a sample holds at most */
	int werr;              /* first writing error */
	double cpu_loop;       /* our CPU seconds while sampling (the poll loop) */
};

/* Packets in flight written this often (as the capture library does). */
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
	int const rc = rec_encoder_sample(r->enc, s);
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

static int on_lost(void *arg, uint32_t pid, uint32_t tid, uint64_t n, int throttled)
{
	(void)tid;
	struct recorder *r = arg;
	return rec_encoder_lost(r->enc, pid, n, throttled);
}

static int on_exit_task(void *arg, uint32_t pid, uint32_t tid)
{
	struct recorder *r = arg;
	rec_encoder_thread_exit(r->enc, pid, tid);
	return 0;
}

static const struct su_perf_stream_callbacks live_cb = { .lost = on_lost, .exit = on_exit_task };

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
				int rc = rec_events_add_task(&r->ev, &r->attr, t[k]);
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

/* ---- the child ------------------------------------------------------------------- */

/* Fork ARGV; it waits for a byte on *GO before exec when GO is given
 * (its events are opened meanwhile).  @return its pid or -errno. */
static pid_t spawn(char **argv, int *go, const char *prog)
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
			fprintf(stderr, "%s: %s: command not found\n", prog, argv[0]);
		else
			fprintf(stderr, "%s: %s: %s\n", prog, argv[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	if (go) {
		close(p[0]);
		*go = p[1];
	}
	return pid;
}

static int reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
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
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
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
	fprintf(stderr, "%s: kernel copy (%u Hz, %u-byte stack window): %" PRIu64 " samples, %" PRIu64
		" drops, %" PRIu64 " bytes (%.1f B/sample) in %s; recorder CPU %.3f s (%.1f us/sample, %.1f while "
		"sampling)\n", o->prog, o->freq, window, st.samples, drops, bytes,
		st.samples ? (double)bytes / (double)st.samples : 0.0, o->out, cpu, cpu * per, r->cpu_loop * per);
	if (drops) {
		for (size_t i = 0; i < st.n_procs; i++) {
			const struct rec_proc_stats *p = &st.procs[i];
			if (!p->lost && !p->throttled)
				continue;
			if (p->pid == UINT32_MAX)
				fprintf(stderr, "%s:   unknown process:", o->prog);
			else
				fprintf(stderr, "%s:   pid %" PRIu32 " (%s):", o->prog, p->pid, p->comm[0] ? p->comm : "?");
			fprintf(stderr, " %" PRIu64 " samples, %" PRIu64 " lost (ring buffer full: the recorder fell "
				"behind), %" PRIu64 " throttled\n", p->samples, p->lost, p->throttled);
		}
	}
	if (st.kernel_samples)
		fprintf(stderr, "%s: kernel frames in %" PRIu64 " samples; %" PRIu64 " kernel symbols kept (%" PRIu64
			" bytes)\n", o->prog, st.kernel_samples, st.kernel_symbols, st.kernel_symbol_bytes);
	uint64_t capped = 0;
	for (size_t i = 0; i < st.n_procs; i++)
		capped += st.procs[i].capped;
	if (capped)
		fprintf(stderr, "%s: %" PRIu64 " of %" PRIu64 " samples filled the %u-byte window: their stacks "
			"may be cut (--stack-size, up to %u)\n", o->prog, capped, st.samples, window,
			REC_STACK_MAX);
	if (st.no_user && (o->all || o->n_pids || o->n_tids))
		fprintf(stderr, "%s: %" PRIu64 " samples without user state (kernel threads, exiting tasks) left out\n",
			o->prog, st.no_user);
}

int rec_record(const struct rec_options *o)
{
	struct recorder R = { .o = o, .self = getpid() };
	struct recorder *r = &R;
	int const attach = o->n_pids || o->n_tids;
	int const cmd_only = o->argv && !attach && !o->all;
	char err[512] = "";
	int rc, status = 0, ret = 1;
	pid_t child = -1;
	int go = -1, child_fd = -1;
	int *pidfds = NULL;
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
		child = spawn(o->argv, &go, o->prog);
		if (child < 0) {
			fprintf(stderr, "%s: fork: %s\n", o->prog, strerror((int)-child));
			return REC_FAILED;
		}
		if ((rc = tidset_add(&have, child)) != 0)
			goto fail;
	} else if (attach) {
		for (size_t i = 0; i < o->n_pids; i++) {
			pid_t *t = NULL;
			int const n = rec_proc_threads(o->pids[i], &t);
			if (n <= 0) {
				fprintf(stderr, "%s: -p %d: no such process\n", o->prog, (int)o->pids[i]);
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
				fprintf(stderr, "%s: -t %d: no such thread\n", o->prog, (int)o->tids[i]);
				ret = REC_FAILED;
				goto out;
			}
			if ((rc = tidset_add(&have, o->tids[i])) != 0)
				goto fail;
		}
	}

	/* The events: kernel time too when permitted (the user stack of a
	 * task in a system call is sampled as perf does), else user time. */
	size_t pages = ring_pages(o->stack_size);
	rc = -EINVAL;
	/* Kernel frames where kernel addresses are ours to read (root,
	 * kernel.kptr_restrict): else said once. */
	int const kreadable = !o->user_only && rec_kallsyms_readable();
	int kframes = 0;
	for (int attempt = kreadable ? 0 : 1; attempt < 3; attempt++) {
		int const excl = attempt == 2;
		kframes = attempt == 0;
		struct rec_attr_opts const ao = {
			.freq = o->freq, .stack_size = o->stack_size, .inherit = !o->all,
			.enable_on_exec = cmd_only, .exclude_kernel = excl, .kernel_chain = kframes,
		};
		rec_attr_init(&r->attr, &ao);
		for (;;) {
			rc = rec_events_open(&r->ev, &r->attr, have.v, o->all ? 0 : have.n, pages, err, sizeof(err));
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
			reap(child, &status);
			child = -1;
			if (rc == -EACCES || rc == -EPERM) {
				ret = REC_REFUSED;
				goto out;
			}
		}
		fprintf(stderr, "%s: %s\n", o->prog, err);
		ret = REC_FAILED;
		goto out;
	}

	{
		uint64_t const ring = r->ev.data_pages * (uint64_t)sysconf(_SC_PAGESIZE);
		if (ring < 8 * ((uint64_t)o->stack_size + 512))
			fprintf(stderr, "%s: note: ring buffers of %" PRIu64 " KiB per CPU (the locked-memory limit, "
				"kernel.perf_event_mlock_kb) hold few samples of a %u-byte window: samples may be lost "
				"(a smaller --stack-size holds more)\n", o->prog, ring / 1024, o->stack_size);
	}

	/* The trace and the record stream. */
	if (!o->user_only && !kframes)
		fprintf(stderr, "%s: note: no kernel frames: %s (--user-only says you want none)\n", o->prog,
			kreadable ? "kernel call chains are not permitted here (kernel.perf_event_paranoid)"
				  : "kernel addresses are hidden from this user (kernel.kptr_restrict, "
				    "kernel.perf_event_paranoid; root sees them)");
	struct ctf_writer_opts wo = { .sz = sizeof(wo), .zstd = o->zstd, .clock_offset_ns = o->clock_offset_ns,
				     .sampler = "kernel", .kernel_frames = kframes };
	memcpy(wo.uuid, o->uuid, sizeof(wo.uuid));
	if ((rc = ctf_writer_open(o->out, &wo, &r->w)) != 0) {
		fprintf(stderr, "%s: cannot create the trace in %s: %s\n", o->prog, o->out, strerror(-rc));
		goto fail_quiet;
	}
	struct rec_encoder_opts const eo = { .full_copy = o->full_copy, .end_all = 1, .policy = o->policy,
					     .kernel_frames = kframes };
	struct su_reader_callbacks cb = { .arg = r, .process_start = on_process, .sample = on_sample, .end = on_end };
	if ((rc = rec_encoder_new(r->w, &eo, &r->enc)) != 0 ||
	    (rc = su_perf_stream_new(&r->attr, sizeof(r->attr), &cb, &live_cb, &r->rst, &r->ps)) != 0)
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
		for (int i = 0; i < np; i++)
			if (procs[i] != r->self && rec_proc_synthesize(&synth, procs[i], t0) == -ENOMEM) {
				np = -ENOMEM;
				break;
			}
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
			child = spawn(o->argv, NULL, o->prog);
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
		reap(child, &status);
	}
	/* The streams closed, the bytes counted; the stats kept for the summary. */
	struct rec_encoder_stats st;
	rec_encoder_get_stats(r->enc, &st);
	struct rec_proc_stats *procs = malloc((st.n_procs + 1) * sizeof(*procs));
	if (procs)
		memcpy(procs, st.procs, st.n_procs * sizeof(*procs));
	st.procs = procs;
	st.n_procs = procs ? st.n_procs : 0;
	int const frc = rec_encoder_free(r->enc);
	r->enc = NULL;
	if (frc && !r->werr)
		r->werr = frc;
	uint64_t const bytes = ctf_writer_bytes_written(r->w);
	int const crc = ctf_writer_close(r->w);
	r->w = NULL;
	if (crc && !r->werr)
		r->werr = crc;
	summary(r, &st, bytes);
	free(procs);
	if (WIFSIGNALED(status) && child > 0)
		fprintf(stderr, "%s: %s was killed by signal %d (%s)\n", o->prog, o->argv[0], WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	if (r->werr)
		fprintf(stderr, "%s: recording stopped by an error: %s; the trace holds what was written before it\n",
			o->prog, strerror(-r->werr));
	ret = child > 0 ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : r->werr ? 1 : 0;
	goto out;

fail:
	fprintf(stderr, "%s: %s\n", o->prog, strerror(-rc));
fail_quiet:
	ret = 1;
	if (go >= 0) {
		close(go);
		go = -1;
	}
	if (child > 0) {
		if (!cmd_only)
			kill(child, SIGTERM);
		reap(child, &status);
	}
out:
	if (r->ps)
		su_perf_stream_free(r->ps);
	if (r->enc)
		rec_encoder_free(r->enc);
	if (r->w)
		ctf_writer_close(r->w);
	rec_events_close(&r->ev);
	if (child_fd >= 0)
		close(child_fd);
	for (size_t i = 0; pidfds && i < o->n_pids; i++)
		if (pidfds[i] >= 0)
			close(pidfds[i]);
	free(pidfds);
	free(have.v);
	free(synth.p);
	return ret;
}
