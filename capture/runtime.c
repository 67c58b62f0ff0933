/* SPDX-License-Identifier: MIT */
/*
 * runtime.c: the runtime-unwinder registry and the fault-free reads every
 * unwinder uses (runtime.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture/capture-internal.h"
#include "capture/ctf-writer.h"
#include "compress/rt-frames.h"
#include "capture/runtime.h"

static const struct capture_runtime *const known[] = { &capture_rt_cpython };
static struct capture_runtime active;
static int have_active;
static _Atomic uint64_t n_chains, n_dropped;

size_t capture_rt_room(void)
{
	return have_active ? CAPTURE_RT_MAX_BYTES + CAPTURE_RT_SCRATCH + 8 : 0;
}

size_t capture_rt_sample(uint8_t *out, size_t room)
{
	if (!have_active || room < capture_rt_room())
		return 0;
	void *scratch = (void *)(((uintptr_t)out + CAPTURE_RT_MAX_BYTES + 7) & ~(uintptr_t)7);
	int const r = active.unwind(&active, out, CAPTURE_RT_MAX_BYTES, scratch);
	if (r < 0) {
		atomic_fetch_add_explicit(&n_dropped, 1, memory_order_relaxed);
		return 0;
	}
	if (r > 0)
		atomic_fetch_add_explicit(&n_chains, 1, memory_order_relaxed);
	return (size_t)r;
}

void capture_rt_counts(uint64_t *chains, uint64_t *dropped)
{
	*chains = atomic_load(&n_chains);
	*dropped = atomic_load(&n_dropped);
}

const struct capture_runtime *capture_rt_active(void)
{
	return have_active ? &active : NULL;
}

int capture_rt_init(void)
{
	if (have_active)
		return 0;
	int rc = -ENOENT;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct capture_runtime r = *known[i];
		int const prc = r.probe(&r);
		if (prc == 0) {
			active = r;
			have_active = 1;
			return 0;
		}
		if (prc != -ENOENT)
			rc = prc;
	}
	return rc;
}

size_t capture_rt_readv(void *const *dst, const uint64_t *addr, const size_t *len, uint8_t *ok, size_t n)
{
	/* Batches of 64 (the iovecs live on the handler's stack); a failed
	 * read ends the kernel's walk, so the rest is read again after it. */
	struct iovec l[64], r[64];
	size_t idx[64];
	size_t done = 0;
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		for (; i < n && k < 64; i++) {
			ok[i] = 0;
			if (!addr[i] || !len[i])
				continue;
			l[k] = (struct iovec){ dst[i], len[i] };
			r[k] = (struct iovec){ (void *)(uintptr_t)addr[i], len[i] };
			idx[k++] = i;
		}
		for (size_t j = 0; j < k;) {
			ssize_t got = process_vm_readv(stackcap_g.pid, l + j, k - j, r + j, k - j, 0);
			if (got < 0)
				got = 0;
			for (; j < k && (size_t)got >= l[j].iov_len; j++) {
				got -= (ssize_t)l[j].iov_len;
				ok[idx[j]] = 1;
				done++;
			}
			j++; /* the one that failed (if any) */
		}
	}
	return done;
}

int capture_rt_read(void *dst, uint64_t addr, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)addr, len };
	if (!addr)
		return -1;
	return process_vm_readv(stackcap_g.pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* ---- the writer side ---------------------------------------------------------- */

/* (code, fingerprint) pairs met: described, or found stale. */
static struct {
	struct seen { uint64_t code; uint32_t fp, used; } *t;
	size_t n, cap;
	uint64_t stale;
} seen;

/* Mark (CODE, FP) met.  @return 1 when it was new, 0 if known, -ENOMEM. */
static int seen_add(uint64_t code, uint32_t fp)
{
	if ((seen.n + 1) * 2 > seen.cap) {
		size_t const ncap = seen.cap ? 2 * seen.cap : 1024;
		struct seen *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < seen.cap; i++) {
			if (!seen.t[i].used)
				continue;
			size_t h = (seen.t[i].code * 0x9E3779B97F4A7C15ull ^ seen.t[i].fp) & (ncap - 1);
			while (nt[h].used)
				h = (h + 1) & (ncap - 1);
			nt[h] = seen.t[i];
		}
		free(seen.t);
		seen.t = nt;
		seen.cap = ncap;
	}
	size_t h = (code * 0x9E3779B97F4A7C15ull ^ fp) & (seen.cap - 1);
	for (; seen.t[h].used; h = (h + 1) & (seen.cap - 1))
		if (seen.t[h].code == code && seen.t[h].fp == fp)
			return 0;
	seen.t[h] = (struct seen){ code, fp, 1 };
	seen.n++;
	return 1;
}

int capture_rt_write_info(struct ctf_stream *proc, uint64_t proc_ts, int start)
{
	if (start) {
		free(seen.t);
		memset(&seen, 0, sizeof(seen));
	}
	if (!have_active)
		return 0;
	uint64_t chains, dropped;
	capture_rt_counts(&chains, &dropped);
	struct ctf_runtime_info const info = {
		.runtime = (uint8_t)active.kind, .version = active.version, .eval_start = active.eval_lo,
		.eval_end = active.eval_hi, .chains = chains, .dropped = dropped, .stale = seen.stale,
		.name = active.name,
	};
	return ctf_stream_runtime(proc, proc_ts, &info);
}

/* Describe each code object of BLOB's frames not met yet, handing each
 * description to OUT.  @return 0, -errno (OUT's, or out of memory). */
static int describe_new(const uint8_t *blob, size_t len,
			int (*out)(void *ctx, const struct capture_rt_code *c), void *ctx)
{
	struct rt_frames_dec d;
	struct rt_frame f;
	if (rt_frames_open(&d, blob, len))
		return 0;
	while (rt_frames_next(&d, &f) == 1) {
		if (!f.fp)
			continue;
		int const isnew = seen_add(f.code, f.fp);
		if (isnew <= 0) {
			if (isnew < 0)
				return isnew;
			continue;
		}
		struct capture_rt_code c;
		int const drc = active.describe(&active, f.code, f.fp, &c);
		if (drc == -ESTALE) {
			seen.stale++;
			continue;
		}
		int const orc = drc < 0 ? drc : out(ctx, &c);
		if (orc < 0)
			return orc;
	}
	return 0;
}

struct ctf_out {
	struct ctf_stream *proc;
	uint64_t ts;
};

static int code_to_ctf(void *ctx, const struct capture_rt_code *c)
{
	const struct ctf_out *o = ctx;
	return ctf_stream_runtime_code(o->proc, o->ts, (uint8_t)active.kind, c->code, c->fp, c->first_line, c->name,
				       c->file, c->line_table, c->line_table_len);
}

int capture_rt_write(struct ctf_stream *proc, uint64_t proc_ts, struct ctf_stream *samples, uint64_t ts,
		     uint32_t tid, const uint8_t *blob, size_t len)
{
	if (!have_active)
		return 0;
	struct ctf_out o = { proc, proc_ts };
	int const rc = describe_new(blob, len, code_to_ctf, &o);
	if (rc < 0)
		return rc;
	return ctf_stream_runtime_frames(samples, ts, tid, (uint8_t)active.kind, blob, len);
}

/* ---- LTTng mode (the writer thread) -------------------------------------------- */

static int code_to_lttng(void *ctx, const struct capture_rt_code *c)
{
	(void)ctx;
	capture_lttng_sink.runtime_code((uint8_t)active.kind, c->code, c->fp, c->first_line, c->name, c->file,
					c->line_table, (uint32_t)c->line_table_len);
	return 0;
}

/* A forked child (stackcap_g.pid changed) describes again what its parent
 * described: readers file descriptions per process. */
static void lttng_forget_parent(void)
{
	static pid_t described_in;
	if (described_in == stackcap_g.pid)
		return;
	free(seen.t);
	memset(&seen, 0, sizeof(seen));
	described_in = stackcap_g.pid;
}

int capture_rt_lttng_info(void)
{
	if (!have_active || !&capture_lttng_sink)
		return 0;
	lttng_forget_parent();
	uint64_t chains, dropped;
	capture_rt_counts(&chains, &dropped);
	return capture_lttng_sink.runtime((uint8_t)active.kind, active.version, active.eval_lo, active.eval_hi,
					  chains, dropped, active.name);
}

void capture_rt_lttng_codes(const uint8_t *blob, size_t len)
{
	if (!have_active || !&capture_lttng_sink)
		return;
	lttng_forget_parent();
	describe_new(blob, len, code_to_lttng, NULL);
}
