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
#include "common/hashmap.h"
#include "common/io.h"
#include "record/keep-jit-maps.h"
#include "record/proc-files.h"

#define JIT_MAX_BYTES (256ull << 20) /* a map copied up to this */
#define JIT_RUN_BYTES (1ull << 30)   /* all maps of a run at most */
#define JIT_NOW_BYTES (16ull << 20)  /* copied as its process ends up to this; a bigger one at the end */
#define JIT_PROCS 65536              /* processes followed; beyond: lost */
#define JIT_HELD 1024                /* maps held open at once; beyond: opened as their process ends */
#define JIT_TRIES 16                 /* opens tried while the process runs (its JIT code met again) */

struct proc {
	uint32_t pid;
	int other_view;
	uid_t owner;       /* its user, seen while it ran; (uid_t)-1: not known */
	int fd;            /* the map, or -1: not opened (yet) */
	int tries;
	int refused;       /* another user's */
	int done;          /* copied, or given up, as its process ended */
};

struct rec_jitmaps {
	char *dir;         /* the trace's */
	int dfd;           /* its jit directory: -1 not made yet, -2 could not be */
	struct proc *p;
	size_t n, cap;
	struct su_hmap by_pid;
	size_t held;       /* descriptors open */
	struct rec_jitmaps_stats st;
};

struct rec_jitmaps *rec_jitmaps_new(const char *trace_dir)
{
	struct rec_jitmaps *j = calloc(1, sizeof(*j));
	if (j && !(j->dir = strdup(trace_dir))) {
		free(j);
		j = NULL;
	}
	if (j)
		j->dfd = -1;
	return j;
}

/* Is P's map still to be looked for while its process runs? */
static int waiting(const struct rec_jitmaps *j, const struct proc *p)
{
	return !p->done && p->fd < 0 && !p->refused && p->tries < JIT_TRIES && j->held < JIT_HELD;
}

/* The map opened into P->fd, when there is one to take. */
static void try_open(struct rec_jitmaps *j, struct proc *p)
{
	p->tries++;
	int const fd = rec_proc_jit_map_open((pid_t)p->pid, p->other_view, p->owner);
	if (fd >= 0) {
		p->fd = fd;
		j->held++;
	}
	p->refused = fd == -EPERM;
}

static int pid_eq(const void *arg, uint32_t i)
{
	const struct rec_jitmaps *const *jp = arg;
	return (*jp)->p[i].pid == (*jp)->p[(*jp)->n].pid; /* the key sits past the last entry */
}

/* PID's entry, or NULL; with ADD a new one made when there is none (*FRESH
 * set; NULL: no room). */
static struct proc *proc_of(struct rec_jitmaps *j, uint32_t pid, int add, int *fresh)
{
	*fresh = 0;
	if (SU_GROW(j->p, j->cap, j->n + 2) || su_hmap_reserve(&j->by_pid))
		return NULL;
	j->p[j->n].pid = pid; /* the key */
	uint64_t const h = pid * 0x9e3779b97f4a7c15ull;
	const struct rec_jitmaps *jc = j;
	size_t const slot = su_hmap_find(&j->by_pid, h, pid_eq, &jc);
	if (su_hmap_used(&j->by_pid, slot))
		return &j->p[su_hmap_value(&j->by_pid, slot)];
	if (!add || j->n >= JIT_PROCS)
		return NULL;
	su_hmap_set(&j->by_pid, slot, h, (uint32_t)j->n);
	*fresh = 1;
	return &j->p[j->n++];
}

int rec_jitmaps_seen(struct rec_jitmaps *j, uint32_t pid, int other_view)
{
	if (!j)
		return 1;
	int fresh;
	struct proc *p = proc_of(j, pid, 1, &fresh);
	if (!p) {
		j->st.lost++;
		return 1;
	}
	if (fresh) {
		*p = (struct proc){ .pid = pid, .other_view = other_view, .owner = (uid_t)-1, .fd = -1 };
		char path[32];
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%" PRIu32, pid);
		if (other_view >= 0 && stat(path, &st) == 0) /* its owner: the process's user */
			p->owner = st.st_uid;
	} else if (p->done) {
		/* Another process of that pid (reused during the
		 * recording): one map per pid in the trace, the first's. */
		j->st.reused++;
		return 1;
	}
	if (waiting(j, p))
		try_open(j, p);
	return !waiting(j, p);
}

void rec_jitmaps_retry(struct rec_jitmaps *j)
{
	for (size_t i = 0; j && i < j->n; i++)
		if (waiting(j, &j->p[i]))
			try_open(j, &j->p[i]);
}

/* The trace's jit directory, made at the first map: a trace without JIT
 * code has none.  -1: it could not be made. */
static int jit_dir(struct rec_jitmaps *j)
{
	if (j->dfd == -1) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", j->dir, CTF_JIT_DIR);
		j->dfd = (mkdir(path, 0700) != 0 && errno != EEXIST) ? -2
			 : open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (j->dfd == -1)
			j->dfd = -2;
	}
	return j->dfd >= 0 ? j->dfd : -1;
}

/* P's map, open, copied into the jit directory (perf-PID.map), unless
 * bigger than UPTO (then left for later: 0).  @return 1 when done. */
static int keep(struct rec_jitmaps *j, struct proc *p, uint64_t upto)
{
	struct stat st;
	if (fstat(p->fd, &st) != 0) {
		j->st.lost++;
		return 1;
	}
	uint64_t const size = (uint64_t)st.st_size;
	if (size > upto)
		return 0;
	if (size == 0) { /* made, nothing named in it */
		j->st.none++;
		return 1;
	}
	uint64_t const max = size > JIT_MAX_BYTES ? JIT_MAX_BYTES : size;
	int const dfd = jit_dir(j);
	char name[64];
	snprintf(name, sizeof(name), "perf-%" PRIu32 ".map", p->pid);
	int const out = dfd < 0 || j->st.bytes + max > JIT_RUN_BYTES
				? -1
				: openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		j->st.lost++;
		return 1;
	}
	uint64_t n = 0;
	int const rc = su_copy_fd(p->fd, out, max, &n);
	if (close(out) != 0 || rc != 0 || n == 0) {
		unlinkat(dfd, name, 0);
		j->st.lost++;
		return 1;
	}
	j->st.kept++;
	j->st.bytes += n;
	j->st.cut += size > JIT_MAX_BYTES;
	return 1;
}

/* P's process has ended (END: or the recording): its map copied, or why
 * not counted; UPTO as keep's. */
static void settle(struct rec_jitmaps *j, struct proc *p, uint64_t upto)
{
	if (p->done)
		return;
	/* Written since its JIT code was last met: our view's /tmp keeps it
	 * after the process; a container's only while the process is there. */
	if (p->fd < 0 && !p->refused)
		try_open(j, p);
	if (p->fd < 0) {
		char proc[32];
		snprintf(proc, sizeof(proc), "/proc/%" PRIu32, p->pid);
		if (p->refused && p->owner == (uid_t)-1)
			j->st.unverified++;
		else if (p->refused)
			j->st.refused++;
		else if (p->other_view > 0 && access(proc, F_OK) != 0)
			j->st.lost++; /* gone with its /tmp before its map was seen */
		else
			j->st.none++;
		p->done = 1;
		return;
	}
	if (!keep(j, p, upto))
		return; /* big: at the end */
	close(p->fd);
	p->fd = -1;
	j->held--;
	p->done = 1;
}

void rec_jitmaps_exit(struct rec_jitmaps *j, uint32_t pid)
{
	int fresh;
	struct proc *p = j && j->n ? proc_of(j, pid, 0, &fresh) : NULL;
	if (p)
		settle(j, p, JIT_NOW_BYTES);
}

void rec_jitmaps_finish(struct rec_jitmaps *j, struct rec_jitmaps_stats *st)
{
	if (!j) {
		if (st)
			memset(st, 0, sizeof(*st));
		return;
	}
	for (size_t i = 0; i < j->n; i++) {
		struct proc *p = &j->p[i];
		settle(j, p, UINT64_MAX);
		if (p->fd >= 0)
			close(p->fd);
	}
	if (j->dfd >= 0)
		close(j->dfd);
	if (st)
		*st = j->st;
	su_hmap_free(&j->by_pid);
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
	if (st->unverified) {
		snprintf(t, sizeof(t), "warning: %" PRIu64 " perf maps not kept: their process was gone before its "
			 "user was seen, and the map is neither ours nor root's (as perf script, such a map is not "
			 "trusted); record as that user, or keep its processes running longer", st->unverified);
		line(arg, t);
	}
	if (st->lost) {
		snprintf(t, sizeof(t), "warning: %" PRIu64 " perf maps could not be kept (their process gone before "
			 "its map was read, in another mount namespace; no space; over 1 GB a recording): their "
			 "JIT frames will show [anon:exec]", st->lost);
		line(arg, t);
	}
	if (st->reused) {
		snprintf(t, sizeof(t), "warning: %" PRIu64 " processes with JIT code had the pid of an earlier one "
			 "whose perf map the trace keeps (one a pid): their JIT frames will be named from that map",
			 st->reused);
		line(arg, t);
	}
	if (st->none) {
		snprintf(t, sizeof(t), "note: %" PRIu64 " processes ran JIT code without a perf map: its frames will "
			 "show [anon:exec] (node --perf-basic-prof, python3 -X perf, a Java perf map agent write "
			 "one)", st->none);
		line(arg, t);
	}
}
