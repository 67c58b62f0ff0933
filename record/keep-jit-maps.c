/* SPDX-License-Identifier: MIT */
/* The perf maps of the recorded processes, kept in the trace (keep-jit-maps.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctf-layout.h"
#include "common/grow.h"
#include "common/io.h"
#include "record/keep-jit-maps.h"
#include "record/proc-files.h"

#define JIT_MAX_BYTES (256ull << 20) /* a map copied up to this */
#define JIT_RUN_BYTES (1ull << 30)   /* all maps of a run at most */
#define JIT_PROCS 65536              /* processes followed; beyond: lost */
#define JIT_TRIES 16                 /* opens tried while the process runs (its JIT code met again) */

struct proc {
	uint32_t pid;
	int other_view;
	int fd;            /* the map, or -1: not opened yet */
	int tries;
	int refused;       /* another user's */
};

struct rec_jitmaps {
	char *dir;         /* the trace's */
	struct proc *p;
	size_t n, cap;
	struct rec_jitmaps_stats st;
};

struct rec_jitmaps *rec_jitmaps_new(const char *trace_dir)
{
	struct rec_jitmaps *j = calloc(1, sizeof(*j));
	if (j && !(j->dir = strdup(trace_dir))) {
		free(j);
		j = NULL;
	}
	return j;
}

/* Is P's map still to be looked for? */
static int waiting(const struct proc *p)
{
	return p->fd < 0 && !p->refused && p->tries < JIT_TRIES;
}

/* The map opened into P->fd, when there is one to take. */
static void try_open(struct proc *p)
{
	p->tries++;
	int const fd = rec_proc_jit_map_open((pid_t)p->pid, p->other_view);
	if (fd >= 0)
		p->fd = fd;
	p->refused = fd == -EPERM;
}

int rec_jitmaps_seen(struct rec_jitmaps *j, uint32_t pid, int other_view)
{
	if (!j)
		return 1;
	struct proc *p = NULL;
	for (size_t i = j->n; i-- > 0;)
		if (j->p[i].pid == pid) {
			p = &j->p[i];
			break;
		}
	if (!p) {
		if (j->n >= JIT_PROCS || SU_GROW(j->p, j->cap, j->n + 1)) {
			j->st.lost++;
			return 1;
		}
		p = &j->p[j->n++];
		*p = (struct proc){ .pid = pid, .other_view = other_view, .fd = -1 };
	}
	if (waiting(p))
		try_open(p);
	return !waiting(p);
}

void rec_jitmaps_retry(struct rec_jitmaps *j)
{
	for (size_t i = 0; j && i < j->n; i++)
		if (waiting(&j->p[i]))
			try_open(&j->p[i]);
}

/* P's map copied into the directory DFD (perf-PID.map). */
static void keep(struct rec_jitmaps *j, int dfd, struct proc *p)
{
	struct stat st;
	if (fstat(p->fd, &st) != 0) {
		j->st.lost++;
		return;
	}
	if (st.st_size == 0) { /* made, nothing named in it */
		j->st.none++;
		return;
	}
	uint64_t const size = (uint64_t)st.st_size;
	uint64_t const max = size > JIT_MAX_BYTES ? JIT_MAX_BYTES : size;
	if (dfd < 0 || j->st.bytes + max > JIT_RUN_BYTES) {
		j->st.lost++;
		return;
	}
	char name[64];
	snprintf(name, sizeof(name), "perf-%" PRIu32 ".map", p->pid);
	int const out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		j->st.lost++;
		return;
	}
	uint64_t n = 0;
	int const rc = su_copy_fd(p->fd, out, max, &n);
	if (close(out) != 0 || rc != 0 || n == 0) {
		unlinkat(dfd, name, 0);
		j->st.lost++;
		return;
	}
	j->st.kept++;
	j->st.bytes += n;
	j->st.cut += size > JIT_MAX_BYTES;
}

void rec_jitmaps_finish(struct rec_jitmaps *j, struct rec_jitmaps_stats *st)
{
	if (!j) {
		if (st)
			memset(st, 0, sizeof(*st));
		return;
	}
	int dfd = -1;
	for (size_t i = 0; i < j->n; i++) {
		struct proc *p = &j->p[i];
		/* Written since its JIT code was last met: our view's /tmp
		 * keeps it after the process; a container's only while the
		 * process is there. */
		if (p->fd < 0 && !p->refused)
			try_open(p);
		if (p->fd < 0) {
			char proc[32];
			snprintf(proc, sizeof(proc), "/proc/%" PRIu32, p->pid);
			if (p->refused)
				j->st.refused++;
			else if (p->other_view > 0 && access(proc, F_OK) != 0)
				j->st.lost++; /* gone with its /tmp before its map was seen */
			else
				j->st.none++;
			continue;
		}
		if (dfd < 0) {
			/* Made on the first map: a trace without JIT code
			 * has no such directory. */
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", j->dir, CTF_JIT_DIR);
			if (mkdir(path, 0700) != 0 && errno != EEXIST)
				dfd = -2;
			else
				dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		keep(j, dfd < 0 ? -1 : dfd, p);
		close(p->fd);
	}
	if (dfd >= 0)
		close(dfd);
	if (st)
		*st = j->st;
	free(j->p);
	free(j->dir);
	free(j);
}

void rec_jitmaps_summary(const struct rec_jitmaps_stats *st, const char *trace_dir,
			 void (*line)(void *arg, const char *text), void *arg)
{
	char t[PATH_MAX + 512];
	if (st->kept) {
		snprintf(t, sizeof(t), "perf maps naming JIT code kept in the trace: %" PRIu64 " (%s/%s, %" PRIu64
			 " bytes), where stackunwind reads them", st->kept, trace_dir, CTF_JIT_DIR, st->bytes);
		line(arg, t);
	}
	if (st->cut) {
		snprintf(t, sizeof(t), "warning: %" PRIu64 " perf maps over 256 MB: kept up to there, code named "
			 "later left unnamed", st->cut);
		line(arg, t);
	}
	if (st->refused) {
		snprintf(t, sizeof(t), "warning: %" PRIu64 " perf maps not kept: owned by another user than their "
			 "process's (anyone may write in /tmp)", st->refused);
		line(arg, t);
	}
	if (st->lost) {
		snprintf(t, sizeof(t), "warning: %" PRIu64 " perf maps could not be kept (their process gone before "
			 "its map was read, in another mount namespace; no space; over 1 GB a recording): their "
			 "JIT frames will show [anon:exec]", st->lost);
		line(arg, t);
	}
	if (st->none) {
		snprintf(t, sizeof(t), "note: %" PRIu64 " processes ran JIT code without a perf map: its frames will "
			 "show [anon:exec] (node --perf-basic-prof, python3 -X perf, a Java perf map agent write "
			 "one)", st->none);
		line(arg, t);
	}
}
