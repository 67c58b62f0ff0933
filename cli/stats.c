/* SPDX-License-Identifier: MIT */
/* `stackunwind stats`: format, sizes, codec savings (perf's stored stack
 * bytes on a perf.data), drops, and fidelity on --full-copy traces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctf-layout.h"
#include "common/grow.h"
#include "cli/stackunwind.h"
#include "cli/worker.h"
#include "cli/progress.h"

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
	uint64_t delta, delta_words; /* samples with words of their thread's previous one, those words */
	uint64_t off_cpu, off_cpu_ns; /* stacks where threads blocked, their time */
	uint32_t window;       /* the first process's stack window (cap) */
	/* Samples per event (su_sample_event), in the order first met. */
	struct estat {
		char *name;
		uint64_t samples;
	} *events;
	size_t n_events, cap_events;
	uint64_t other_events; /* not of --event */
	int perf;              /* a perf.data file: its event is not named */
};

static int count_event(struct fidelity *f, const char *name)
{
	for (size_t i = 0; i < f->n_events; i++)
		if (!strcmp(f->events[i].name, name)) {
			f->events[i].samples++;
			return 0;
		}
	if (su_grow((void **)&f->events, &f->cap_events, f->n_events + 1, sizeof(*f->events)))
		return -ENOMEM;
	if (!(f->events[f->n_events].name = strdup(name)))
		return -ENOMEM;
	f->events[f->n_events++].samples = 1;
	return 0;
}

static int fidelity_sample(void *arg, const struct su_sample *s)
{
	struct fidelity *f = arg;
	progress_sample(&f->progress);
	if (f->w.o->event && strcmp(su_sample_event(s), f->w.o->event)) {
		f->other_events++;
		return 0;
	}
	if (count_event(f, s->event || !f->perf ? su_sample_event(s) : "(unnamed: perf.data)"))
		return -ENOMEM;
	f->capped += s->stack_capped != 0;
	if (s->image && s->image->elided) {
		f->delta++;
		f->delta_words += s->image->elided;
	}
	f->off_cpu += s->off_cpu_ns != 0;
	f->off_cpu_ns += s->off_cpu_ns;
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
		/* The name, copied when it changed (an exec): not formatted per sample. */
		const char *const comm = s->process->comm ? s->process->comm : "";
		if (strncmp(ps->comm, comm, sizeof(ps->comm) - 1))
			snprintf(ps->comm, sizeof(ps->comm), "%s", comm);
		ps->drops = s->process->drops;
		if (!f->window)
			f->window = s->process->stack_cap;
	}
	if (!s->full_image)
		return 0;
	struct su_sample full = *s;
	full.image = s->full_image;
	full.full_image = NULL;
	full.decode_no = 0; /* not the thread's decoded image: its top is not vouched for */
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

/* The perf maps the recording kept in the trace (DIR: its jit
 * directory, or NULL): how many, their bytes (not in the recording's). */
static void jit_maps(const char *dir)
{
	DIR *d = dir ? opendir(dir) : NULL;
	if (!d)
		return;
	uint64_t n = 0, bytes = 0;
	struct dirent *e;
	struct stat sb;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "perf-", 5) && fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode)) {
			n++;
			bytes += (uint64_t)sb.st_size;
		}
	closedir(d);
	printf("JIT perf maps:        %" PRIu64 " kept, %" PRIu64 " bytes, in %s\n", n, bytes, dir);
}

/* Regular files under DIR, DEPTH levels down at most: *N, *BYTES. */
static void files_under(int dfd, const char *name, int depth, uint64_t *n, uint64_t *bytes)
{
	int const fd = depth > 0 ? openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	struct stat sb;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISREG(sb.st_mode)) {
				(*n)++;
				*bytes += (uint64_t)sb.st_size;
			} else if (S_ISDIR(sb.st_mode)) {
				files_under(dirfd(d), e->d_name, depth - 1, n, bytes);
			}
		}
	closedir(d);
}

int cmd_stats(const struct options *o)
{
	struct fidelity f = { 0 };
	if (worker_init(&f.w, o) || !(f.full_frames = calloc(o->max_frames, sizeof(*f.full_frames)))) {
		fprintf(stderr, PROG ": out of memory\n");
		worker_fini(&f.w);
		return EXIT_ERROR;
	}
	f.perf = su_trace_probe(o->trace) == SU_TRACE_PERF;
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
		for (size_t i = 0; i < f.n_events; i++)
			free(f.events[i].name);
		free(f.events);
		return EXIT_ERROR;
	}
	double const per = st.samples ? (double)st.bytes_on_disk / (double)st.samples : 0;
	printf("trace:                %s\n", o->name);
	printf("processes:            %" PRIu64 " (%" PRIu64 " ended normally)\n", st.processes, st.ended);
	printf("samples:              %" PRIu64 "\n", st.samples);
	printf("bytes on disk:        %" PRIu64 "\n", st.bytes_on_disk);
	printf("bytes per sample:     %.1f\n", per);
	jit_maps(o->jit_dir);
	char archived[4200];
	uint64_t na = 0, nab = 0;
	snprintf(archived, sizeof(archived), "%s/%s", o->trace, CTF_DEBUG_DIR);
	files_under(AT_FDCWD, archived, 3, &na, &nab); /* debug, .build-id, xx */
	if (na)
		printf("archived files:       %" PRIu64 ", %" PRIu64 " bytes (stackunwind archive), in %s\n", na, nab,
		       archived);
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
		printf("delta-coded:          %" PRIu64 " samples took %" PRIu64 " stack words from their thread's "
		       "previous sample\n", f.delta, f.delta_words);
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
	if (f.off_cpu)
		printf("off-CPU:              %" PRIu64 " of the samples are stacks where threads blocked, %.6f s "
		       "blocked in all\n", f.off_cpu, (double)f.off_cpu_ns * 1e-9);
	if (f.n_procs)
		printf("per process sampled:\n");
	for (size_t i = 0; i < f.n_procs; i++) {
		const struct pstat *ps = &f.procs[i];
		printf("  pid %-8" PRIu32 " %" PRIu64 " samples, %" PRIu64 " drops, %" PRIu64
		       " filled the stack window  %s\n", ps->pid, ps->samples, ps->drops, ps->capped, ps->comm);
	}
	free(f.procs);
	if (f.n_events)
		printf("per event:\n");
	for (size_t i = 0; i < f.n_events; i++) {
		printf("  %-20s %" PRIu64 " samples\n", f.events[i].name, f.events[i].samples);
		free(f.events[i].name);
	}
	free(f.events);
	if (o->event)
		printf("other events:         %" PRIu64 " samples not of %s (--event)\n", f.other_events, o->event);
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
