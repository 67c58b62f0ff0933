/* SPDX-License-Identifier: MIT */
/*
 * perf-events.h: the kernel sampler's events (perf_event_open, no perf
 * binary): cpu-clock at a frequency, each sample the user registers and
 * a copy of the user stack window, side records for maps (with build-ids;
 * data mappings too, where each thread's stack ends),
 * comm and task; one ring buffer per CPU, mapped and drained by the
 * recorder, never blocking the traced program (a full ring loses samples
 * and the kernel says how many: LOST records).
 */
#ifndef STACKCAP_RECORD_PERF_EVENTS_H
#define STACKCAP_RECORD_PERF_EVENTS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest stack window the kernel copies (perf_event_attr.sample_stack_user:
 * a record's size is a u16). */
#define REC_STACK_MAX 65528u
/* The default window (docs/stack-window.md says why). */
#define REC_STACK_DEFAULT 65528u
#define REC_STACK_DEFAULT_S "65528"
/* The deepest kernel call chain kept (perf_event_attr.sample_max_stack):
 * each address of a sample's chain is 8 bytes less of its stack window
 * when the record reaches 64 KiB. */
#define REC_KERNEL_CHAIN_MAX 64

struct rec_attr_opts {
	uint32_t freq;        /* samples per second of CPU time */
	uint32_t stack_size;  /* bytes of stack copied from sp, multiple of 8 */
	int inherit;          /* children and new threads of the tasks too */
	int enable_on_exec;   /* start at the task's next exec (a command) */
	int exclude_kernel;   /* only time in user space */
	int kernel_chain;     /* also the kernel part of the call chain (PERF_SAMPLE_CALLCHAIN,
			       * exclude_callchain_user: the user part is ours to unwind) */
};

/* Fill ATTR for the sampler (disabled: rec_events_enable starts it). */
void rec_attr_init(struct perf_event_attr *attr, const struct rec_attr_opts *o);
/* ATTR without the side records (maps, comm, task) rec_attr_init asks
 * for: for every event after the first, which already tracks them once. */
void rec_attr_no_side_records(struct perf_event_attr *attr);

struct rec_ring {
	int fd;               /* the event whose ring it is */
	int cpu;
	uint64_t sample_type; /* of its samples' attr */
	uint32_t nregs;       /* user registers per sample */
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size;        /* bytes of the data area (a power of 2) */
};

/* The most events one recording opens (stackcap record -e, each SDT
 * marker's sites counted). */
#define REC_EVENTS_MAX 64

struct rec_events {
	int *fds;             /* every event */
	size_t *fd_attr;      /* the attr each was opened with (index) */
	size_t n_fds, cap_fds;
	struct rec_ring *rings; /* one per CPU */
	size_t n_rings;
	size_t data_pages;
};

/* Open the N_ATTRS events ATTRS (named NAMES in messages; NULL: none) on
 * every CPU for each of the N tasks TIDS (N 0: every task, the whole
 * machine), one ring per CPU of DATA_PAGES pages (a power of 2) that every
 * event of that CPU writes to.  @return 0, or -errno with a message in
 * ERR naming the task and the event (EACCES/EPERM: refused by
 * perf_event_paranoid; ESRCH: a task is gone; ENOENT/EOPNOTSUPP: the
 * kernel lacks a feature; EDQUOT: the rings are over the locked-memory
 * limit). */
int rec_events_open(struct rec_events *ev, const struct perf_event_attr *attrs, const char *const *names,
		    size_t n_attrs, const pid_t *tids, size_t n, size_t data_pages, char *err, size_t errlen);

/* Open the events for one more task TID on every CPU, writing to the
 * rings, enabled at once (a thread of an attached process).  0 or -errno. */
int rec_events_add_task(struct rec_events *ev, const struct perf_event_attr *attrs, size_t n_attrs, pid_t tid);

/* The kernel's id of event I (fds[I]): what its samples carry. */
int rec_events_id(const struct rec_events *ev, size_t i, uint64_t *id);

int rec_events_enable(struct rec_events *ev);
int rec_events_disable(struct rec_events *ev);

/* The records of ring R now: into a buffer from RESERVE(ARG, LEN), then
 * COMMIT(ARG, LEN2), LEN2 <= LEN: a sample whose stack copy stopped short
 * of the window (the kernel found memory unreadable) is copied without the
 * rest of the window, its stack size field made the copy's, rounded up,
 * plus a word (so it does not read as filling the window).  The ring is
 * freed once COMMIT returned.  @return the bytes drained from the ring,
 * or a negative error of the callbacks. */
typedef uint8_t *rec_reserve_fn(void *arg, size_t len);
typedef int rec_commit_fn(void *arg, size_t len);
int64_t rec_ring_drain(struct rec_ring *r, rec_reserve_fn *reserve, rec_commit_fn *commit, void *arg);

void rec_events_close(struct rec_events *ev);

#endif
