/* SPDX-License-Identifier: MIT */
/* The kernel sampler's perf events and their rings (perf-events.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/perf-events.h"
#include "common/grow.h"

/* x86-64's user registers as perf numbers them (PERF_REG_X86_AX..R15):
 * every general-purpose register, flags and the segment selectors perf
 * accepts (not DS, ES, FS, GS: refused on 64-bit). */
#define X86_64_REGS_MASK (((1ull << 24) - 1) & ~(0xfull << 12))

void rec_attr_no_side_records(struct perf_event_attr *attr)
{
	attr->mmap = 0;
	attr->mmap2 = 0;
	attr->mmap_data = 0;
	attr->build_id = 0;
	attr->comm = 0;
	attr->comm_exec = 0;
	attr->task = 0;
}

void rec_attr_init(struct perf_event_attr *attr, const struct rec_attr_opts *o)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->freq = 1;
	attr->sample_freq = o->freq;
	attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	attr->sample_regs_user = X86_64_REGS_MASK;
	attr->sample_stack_user = o->stack_size;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC; /* as our traces */
	attr->mmap = 1;
	attr->mmap2 = 1;
	/* Data mappings too: the end of each thread's stack (trace/mem-ranges.h),
	 * where its copies are cut. */
	attr->mmap_data = 1;
	attr->build_id = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
	attr->sample_id_all = 1;
	attr->exclude_kernel = o->exclude_kernel ? 1 : 0;
	attr->exclude_hv = 1;
	if (o->kernel_chain && !o->exclude_kernel) {
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
		attr->exclude_callchain_user = 1;
		attr->sample_max_stack = REC_KERNEL_CHAIN_MAX;
	} else {
		attr->exclude_callchain_kernel = 1;
	}
	attr->disabled = 1;
	attr->inherit = o->inherit ? 1 : 0;
	attr->enable_on_exec = o->enable_on_exec ? 1 : 0;
	/* Woken when a quarter of the ring is used, whatever the sample rate. */
	attr->watermark = 1;
}

static int event_open(const struct perf_event_attr *attr, pid_t pid, int cpu, int group)
{
	long const fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static int add_fd(struct rec_events *ev, int fd, size_t attr)
{
	size_t cap = ev->cap_fds;
	if (su_grow((void **)&ev->fds, &ev->cap_fds, ev->n_fds + 1, sizeof(*ev->fds)) ||
	    su_grow((void **)&ev->fd_attr, &cap, ev->n_fds + 1, sizeof(*ev->fd_attr)))
		return -ENOMEM;
	ev->fd_attr[ev->n_fds] = attr;
	ev->fds[ev->n_fds++] = fd;
	return 0;
}

static const char *open_reason(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return "not permitted (kernel.perf_event_paranoid; root or CAP_PERFMON may)";
	case ESRCH: return "no such process or thread";
	case ENOENT:
	case EOPNOTSUPP:
	case EINVAL: return "not supported by this kernel";
	case EMFILE: return "too many open files (ulimit -n)";
	default: return strerror(e);
	}
}

/* Open events FIRST to N_ATTRS - 1 of ATTRS on every CPU for task PID;
 * with OWN_RINGS, event FIRST (0) of the first task owns each CPU's ring,
 * else they write to the rings (mapped: an event can only write to a
 * mapped ring).  On failure *BAD is the index of the event refused. */
static int open_task(struct rec_events *ev, struct perf_event_attr *attrs, size_t first, size_t n_attrs,
		     pid_t pid, int own_rings, size_t *bad)
{
	for (size_t c = 0; c < ev->n_rings; c++) {
		struct rec_ring *r = &ev->rings[c];
		for (size_t a = first; a < n_attrs; a++) {
			*bad = a;
			int const fd = event_open(&attrs[a], pid, r->cpu, -1);
			if (fd < 0)
				return fd;
			if (add_fd(ev, fd, a)) {
				close(fd);
				return -ENOMEM;
			}
			if (own_rings && a == 0) {
				r->fd = fd;
			} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
				return -errno;
			}
		}
	}
	return 0;
}

static int online_cpus(int **cpus)
{
	long const n = sysconf(_SC_NPROCESSORS_CONF);
	if (n <= 0)
		return -EINVAL;
	*cpus = calloc((size_t)n, sizeof(**cpus));
	if (!*cpus)
		return -ENOMEM;
	int k = 0;
	for (long c = 0; c < n; c++) {
		char path[96];
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/online", c);
		FILE *f = fopen(path, "r");
		int on = 1; /* cpu0 often has no "online" file */
		if (f) {
			if (fscanf(f, "%d", &on) != 1)
				on = 1;
			fclose(f);
		}
		if (on)
			(*cpus)[k++] = (int)c;
	}
	return k;
}

int rec_events_open(struct rec_events *ev, const struct perf_event_attr *attrs0, const char *const *names,
		    size_t n_attrs, const pid_t *tids, size_t n, size_t data_pages, char *err, size_t errlen)
{
	memset(ev, 0, sizeof(*ev));
	if (!n_attrs || n_attrs > REC_EVENTS_MAX)
		return -EINVAL;
	struct perf_event_attr attrs[REC_EVENTS_MAX];
	memcpy(attrs, attrs0, n_attrs * sizeof(*attrs));
	long const page = sysconf(_SC_PAGESIZE);
	int *cpus = NULL;
	int const ncpu = online_cpus(&cpus);
	if (ncpu <= 0) {
		snprintf(err, errlen, "cannot list the CPUs");
		free(cpus);
		return ncpu ? ncpu : -EINVAL;
	}
	ev->rings = calloc((size_t)ncpu, sizeof(*ev->rings));
	if (!ev->rings) {
		free(cpus);
		return -ENOMEM;
	}
	ev->n_rings = (size_t)ncpu;
	ev->data_pages = data_pages;
	/* The samples' layout, when every event's is the same (else 0: each
	 * sample drained whole, its layout unknown to rec_ring_drain). */
	uint64_t sample_type = attrs[0].sample_type;
	for (size_t a = 1; a < n_attrs; a++)
		if (attrs[a].sample_type != sample_type || attrs[a].sample_regs_user != attrs[0].sample_regs_user)
			sample_type = 0;
	for (int c = 0; c < ncpu; c++) {
		ev->rings[c].cpu = cpus[c];
		ev->rings[c].fd = -1;
		ev->rings[c].sample_type = sample_type;
		ev->rings[c].nregs = (uint32_t)__builtin_popcountll(attrs[0].sample_regs_user);
	}
	free(cpus);
	for (size_t a = 0; a < n_attrs; a++)
		attrs[a].wakeup_watermark = (uint32_t)(data_pages * (size_t)page / 4);
	int rc = 0;
	for (size_t i = 0; i < (n ? n : 1); i++) {
		pid_t const pid = n ? tids[i] : -1;
		size_t bad = 0;
		rc = open_task(ev, attrs, 0, i == 0 ? 1 : n_attrs, pid, i == 0, &bad);
		if (rc) {
			char ename[300] = "";
			if (names && names[bad])
				snprintf(ename, sizeof(ename), ", event %s", names[bad]);
			if (n)
				snprintf(err, errlen, "perf_event_open (task %d%s): %s", (int)pid, ename, open_reason(-rc));
			else
				snprintf(err, errlen, "perf_event_open (every task%s): %s", ename, open_reason(-rc));
			goto fail;
		}
		if (i == 0) {
			for (size_t c = 0; c < ev->n_rings; c++) {
				struct rec_ring *r = &ev->rings[c];
				size_t const len = (data_pages + 1) * (size_t)page;
				void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
				if (m == MAP_FAILED) {
					rc = errno == EPERM ? -EDQUOT : -errno;
					snprintf(err, errlen, "mapping a %zu KiB ring buffer: %s", len / 1024,
						 rc == -EDQUOT ? "over the locked-memory limit (kernel.perf_event_mlock_kb)"
							       : strerror(-rc));
					goto fail;
				}
				r->meta = m;
				r->data = (uint8_t *)m + page;
				r->size = data_pages * (uint64_t)page;
			}
			/* The first task's other events, into the mapped rings. */
			if (n_attrs > 1 && (rc = open_task(ev, attrs, 1, n_attrs, pid, 0, &bad)) != 0) {
				char ename[300] = "";
				if (names && names[bad])
					snprintf(ename, sizeof(ename), ", event %s", names[bad]);
				snprintf(err, errlen, "perf_event_open (%s %d%s): %s", n ? "task" : "every task, cpu",
					 n ? (int)pid : ev->rings[0].cpu, ename, open_reason(-rc));
				goto fail;
			}
		}
	}
	return 0;
fail:
	rec_events_close(ev);
	return rc;
}

int rec_events_add_task(struct rec_events *ev, const struct perf_event_attr *attrs0, size_t n_attrs, pid_t tid)
{
	if (!n_attrs || n_attrs > REC_EVENTS_MAX)
		return -EINVAL;
	struct perf_event_attr attrs[REC_EVENTS_MAX];
	memcpy(attrs, attrs0, n_attrs * sizeof(*attrs));
	for (size_t a = 0; a < n_attrs; a++) {
		attrs[a].wakeup_watermark = (uint32_t)(ev->data_pages * (size_t)sysconf(_SC_PAGESIZE) / 4);
		attrs[a].disabled = 0;
		attrs[a].enable_on_exec = 0;
	}
	size_t bad;
	return open_task(ev, attrs, 0, n_attrs, tid, 0, &bad);
}

int rec_events_id(const struct rec_events *ev, size_t i, uint64_t *id)
{
	return ioctl(ev->fds[i], PERF_EVENT_IOC_ID, id) ? -errno : 0;
}

static int ioctl_all(struct rec_events *ev, unsigned long req)
{
	for (size_t i = 0; i < ev->n_fds; i++)
		if (ioctl(ev->fds[i], req, 0))
			return -errno;
	return 0;
}

int rec_events_enable(struct rec_events *ev)
{
	return ioctl_all(ev, PERF_EVENT_IOC_ENABLE);
}

int rec_events_disable(struct rec_events *ev)
{
	return ioctl_all(ev, PERF_EVENT_IOC_DISABLE);
}

/* N bytes of ring R from its offset AT (modulo its size) into DST. */
static void ring_read(const struct rec_ring *r, uint64_t at, void *dst, size_t n)
{
	uint64_t const o = at & (r->size - 1);
	size_t const first = n < r->size - o ? n : (size_t)(r->size - o);
	memcpy(dst, r->data + o, first);
	memcpy((uint8_t *)dst + first, r->data, n - first);
}

/* Offset in the sample record at AT (LEN bytes) of its stack's size
 * field, or 0 (a layout we did not ask for, or cut). */
static size_t stack_field(const struct rec_ring *r, uint64_t at, size_t len)
{
	uint64_t const t = r->sample_type;
	uint64_t const ours = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if ((t & ~ours) || !(t & PERF_SAMPLE_STACK_USER) || !(t & PERF_SAMPLE_REGS_USER))
		return 0;
	uint64_t off = 8 + 8u * (!!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_TID) + !!(t & PERF_SAMPLE_TIME));
	uint64_t v;
	if (t & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > len)
			return 0;
		ring_read(r, at + off, &v, 8);
		if (v > len / 8)
			return 0;
		off += 8 + 8 * v;
	}
	if (off + 8 > len)
		return 0;
	ring_read(r, at + off, &v, 8); /* the registers' ABI: none, no registers */
	off += 8 + (v ? 8u * r->nregs : 0);
	return off + 8 <= len ? (size_t)off : 0;
}

/* Record AT (LEN bytes) into DST: a sample whose copy stopped short of its
 * window without the rest.  @return the bytes written. */
static size_t copy_record(const struct rec_ring *r, uint64_t at, size_t len, uint8_t *dst)
{
	size_t const sf = stack_field(r, at, len);
	uint64_t size = 0, dyn = 0;
	if (sf) {
		ring_read(r, at + sf, &size, 8);
		if (size && sf + 16 + size <= len)
			ring_read(r, at + sf + 8 + size, &dyn, 8);
	}
	uint64_t const keep = ((dyn + 7) & ~7ull) + 8;
	if (!sf || !size || sf + 16 + size > len || keep >= size) {
		ring_read(r, at, dst, len);
		return len;
	}
	size_t const after = len - (sf + 16 + size); /* nothing follows in ours */
	ring_read(r, at, dst, sf);
	memcpy(dst + sf, &keep, 8);
	ring_read(r, at + sf + 8, dst + sf + 8, (size_t)dyn);
	memset(dst + sf + 8 + dyn, 0, (size_t)(keep - dyn));
	memcpy(dst + sf + 8 + keep, &dyn, 8);
	ring_read(r, at + sf + 16 + size, dst + sf + 16 + keep, after);
	size_t const n = sf + 16 + (size_t)keep + after;
	uint16_t const n16 = (uint16_t)n;
	memcpy(dst + 6, &n16, 2);
	return n;
}

int64_t rec_ring_drain(struct rec_ring *r, rec_reserve_fn *reserve, rec_commit_fn *commit, void *arg)
{
	if (!r->meta)
		return 0;
	uint64_t const head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t const tail = r->meta->data_tail;
	uint64_t const len = head - tail;
	if (!len)
		return 0;
	uint8_t *buf = reserve(arg, (size_t)len);
	if (!buf)
		return -ENOMEM;
	/* Record by record, reading of each sample only what the kernel
	 * copied (a full window is 64 KiB, most copies are a few). */
	uint64_t at = tail;
	size_t out = 0;
	while (head - at >= 8) {
		struct perf_event_header h;
		ring_read(r, at, &h, sizeof(h));
		if (h.size < 8 || h.size > head - at)
			break; /* damaged: the rest as it is, for the reader to say */
		out += h.type == PERF_RECORD_SAMPLE ? copy_record(r, at, h.size, buf + out)
						    : (ring_read(r, at, buf + out, h.size), h.size);
		at += h.size;
	}
	ring_read(r, at, buf + out, (size_t)(head - at));
	out += (size_t)(head - at);
	/* The kernel may write there again: the copy is ours. */
	__atomic_store_n(&r->meta->data_tail, head, __ATOMIC_RELEASE);
	int const rc = commit(arg, out);
	return rc < 0 ? rc : (int64_t)len;
}

void rec_events_close(struct rec_events *ev)
{
	long const page = sysconf(_SC_PAGESIZE);
	for (size_t c = 0; c < ev->n_rings; c++)
		if (ev->rings[c].meta)
			munmap(ev->rings[c].meta, (ev->data_pages + 1) * (size_t)page);
	for (size_t i = 0; i < ev->n_fds; i++)
		close(ev->fds[i]);
	free(ev->rings);
	free(ev->fds);
	free(ev->fd_attr);
	memset(ev, 0, sizeof(*ev));
}
