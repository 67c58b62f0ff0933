/* One record of a perf.data file or a live stream (perf-data-internal.h):
 * which attribute it belongs to, its time for ordering, a SAMPLE decoded
 * into the model (registers, stack copy, call chains), and the dispatch of
 * every record type to what handles it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/kallsyms.h"
#include "trace/perf-data-internal.h"

/* ---- records -------------------------------------------------------------------- */

const struct attr *perf_attr_of_id(const struct pr *r, uint64_t id)
{
	size_t lo = 0, hi = r->n_ids;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->ids[mid].id == id)
			return &r->attrs[r->ids[mid].attr];
		if (r->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Size of the sample_id trailer of a non-sample record. */
size_t perf_trailer_size(const struct attr *a)
{
	if (!(a->flags & ATTR_SAMPLE_ID_ALL))
		return 0;
	uint64_t const t = a->sample_type;
	return 8u * (!!(t & S_TID) + !!(t & S_TIME) + !!(t & S_ID) + !!(t & S_STREAM_ID) +
		     !!(t & S_CPU) + !!(t & S_IDENTIFIER));
}

/* The attr of a non-sample record and its trailer. */
const struct attr *perf_record_attr(struct pr *r, const uint8_t *rec, size_t len)
{
	const struct attr *a = &r->attrs[0];
	if (r->n_attrs > 1 && r->id_from_end && len >= 8 + 8u * (size_t)r->id_from_end) {
		const struct attr *b = perf_attr_of_id(r, su_ld64(rec + len - 8u * (size_t)r->id_from_end));
		if (b)
			a = b;
	}
	return a;
}

/* Timestamp of REC for ordering: 0 when it has none (delivered at once). */
uint64_t perf_record_time(struct pr *r, const uint8_t *rec, size_t len)
{
	uint32_t const type = su_ld32(rec);
	if (type == R_SAMPLE) {
		const struct attr *a = &r->attrs[0];
		if (r->n_attrs > 1 && r->id_pos >= 0 && len >= 8 + 8u * ((size_t)r->id_pos + 1)) {
			const struct attr *b = perf_attr_of_id(r, su_ld64(rec + 8 + 8u * (size_t)r->id_pos));
			if (b)
				a = b;
		}
		uint64_t const t = a->sample_type;
		if (!(t & S_TIME))
			return 0;
		size_t const at = 8 + 8u * (!!(t & S_IDENTIFIER) + !!(t & S_IP) + !!(t & S_TID));
		return at + 8 <= len ? su_ld64(rec + at) : 0;
	}
	if (type >= 64) /* perf's own records carry no sample_id */
		return 0;
	const struct attr *a = perf_record_attr(r, rec, len);
	size_t const ts = perf_trailer_size(a);
	if (!ts || !(a->sample_type & S_TIME) || len < 8 + ts)
		return 0;
	return su_ld64(rec + len - ts + 8u * !!(a->sample_type & S_TID));
}

/* Skip the READ field of a sample: its size from the read_format. */
static int skip_read(const struct attr *a, const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t const f = a->read_format;
	uint64_t const per = 8u * (1 + !!(f & F_ID) + !!(f & F_LOST));
	uint64_t const times = 8u * (!!(f & F_TOTAL_TIME_ENABLED) + !!(f & F_TOTAL_TIME_RUNNING));
	if (f & F_GROUP) {
		if (end - p < 8)
			return -1;
		uint64_t const nr = su_ld64(p);
		if (nr > (uint64_t)(end - p) / per)
			return -1;
		uint64_t const sz = 8 + times + nr * per;
		if (sz > (uint64_t)(end - p))
			return -1;
		*pp = p + sz;
	} else {
		uint64_t const sz = per + times;
		if (sz > (uint64_t)(end - p))
			return -1;
		*pp = p + sz;
	}
	return 0;
}

#define NEED(n) do { if ((uint64_t)(end - p) < (uint64_t)(n)) goto bad; } while (0)

/* N 64-bit words at P: in place when P is 8-aligned (the mapping is
 * private, never written), else copied into the reader's scratch SLOT
 * (one sample's stack or user call chain at a time in 0, its kernel call
 * chain in 1).  NULL (and cb_rc set) when out of memory. */
static uint64_t *words_at(struct pr *r, const uint8_t *p, size_t n, int slot)
{
	if (((uintptr_t)p & 7) == 0)
		return (uint64_t *)(uintptr_t)p;
	if (su_grow((void **)&r->scratch[slot], &r->scratch_cap[slot], n + 1, 8)) {
		r->cb_rc = -ENOMEM;
		return NULL;
	}
	memcpy(r->scratch[slot], p, n * 8);
	return r->scratch[slot];
}

/* The part of the NR-entry call chain at P after context marker MARKER,
 * up to the next marker: its first entry and count (*N, at most MAX), or
 * NULL when it has none. */
static const uint8_t *chain_part(const uint8_t *p, uint64_t nr, uint64_t marker, uint32_t max, uint32_t *n)
{
	for (uint64_t i = 0; i < nr; i++) {
		if (su_ld64(p + 8 * i) != marker)
			continue;
		uint64_t k = i + 1;
		while (k < nr && su_ld64(p + 8 * k) < CONTEXT_MAX)
			k++;
		if (k == i + 1)
			return NULL;
		*n = (uint32_t)(k - i - 1 < max ? k - i - 1 : max);
		return p + 8 * (i + 1);
	}
	return NULL;
}

/* Why a file's kernel frames cannot be named by this machine's
 * /proc/kallsyms, or NULL when they can: the recording's kernel is this
 * one (the build-id of the file's [kernel.kallsyms], else its release). */
static const char *kernel_why(struct pr *r)
{
	uint8_t id[SU_BUILD_ID_MAX];
	size_t const id_len = su_kernel_build_id(id);
	const struct path_info *pi = perf_intern(r, "[kernel.kallsyms]", 17);
	if (pi && pi->table_id_len) {
		if (pi->table_id_len != id_len || memcmp(pi->table_id, id, id_len) != 0)
			return "the recording's kernel (its build-id) is not this machine's";
	} else if (!perf_recorded_here(r)) {
		return "the recording names no kernel build-id, and its kernel release is not this machine's";
	}
	return NULL;
}

/* The symbols could not be read (RC), or do not fit (WHY): said once. */
static void kernel_unnamed(struct pr *r, int rc, const char *why)
{
	if (rc == -ENOMEM) {
		r->cb_rc = -ENOMEM;
		return;
	}
	if (rc == -EACCES)
		why = "/proc/kallsyms hides kernel addresses here (kernel.kptr_restrict: read as root)";
	else if (rc)
		why = strerror(-rc);
	if (why)
		su_reader_warn(r->warn, "%s: kernel frames not named: %s", r->name, why);
}

void perf_kernel_syms_ahead(struct pr *r)
{
	int chains = 0;
	for (size_t i = 0; i < r->n_attrs; i++)
		chains |= (r->attrs[i].sample_type & S_CALLCHAIN) &&
			  !(r->attrs[i].flags & (ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_CALLCHAIN_KERNEL));
	if (chains && !r->kernel_tried && !r->kernel_ahead && !kernel_why(r))
		r->kernel_ahead = su_kallsyms_ahead(r->opts ? r->opts->kernel_cache_dir : NULL);
}

void perf_kernel_syms_end(struct pr *r)
{
	/* 0 at once unless R->KERNEL was read ahead (kernel_syms took it). */
	int const rc = su_kallsyms_ahead_wait(r->kernel);
	if (rc)
		kernel_unnamed(r, rc, NULL);
}

/* The symbols naming a file's kernel frames, once: this machine's
 * /proc/kallsyms, as perf script takes them, when the recording's kernel
 * is this one; otherwise the frames keep their addresses, and that is said
 * once.  Every maps generation points to them. */
static void kernel_syms(struct pr *r)
{
	if (r->kernel_tried)
		return;
	r->kernel_tried = 1;
	if (r->kernel_ahead) {
		/* Being read (perf_kernel_syms_ahead): lookups wait for it;
		 * a failure is said at the end (perf_kernel_syms_end). */
		r->kernel = r->kernel_ahead;
		r->kernel_ahead = NULL;
	} else {
		const char *const why = kernel_why(r);
		int const rc = why ? 0 : su_kallsyms_read_cached(r->opts ? r->opts->kernel_cache_dir : NULL, &r->kernel);
		if (rc || why) {
			kernel_unnamed(r, rc, why);
			return;
		}
	}
	for (size_t i = 0; i < r->n_gens; i++)
		if (r->gens[i]) /* NULL: released (su_perf_stream_release) */
			r->gens[i]->kernel = r->kernel;
}

/* P lies in the file's mapping or, reading a directory, in a data.N's. */
static int in_mapping(const struct pr *r, const void *p)
{
	const uint8_t *const b = p;
	if (r->map && b >= r->map && b < r->map + r->file_size)
		return 1;
	size_t lo = 0, hi = r->n_stay;
	while (lo < hi) {
		size_t const mid = lo + (hi - lo) / 2;
		if (b < r->stay[mid].lo)
			hi = mid;
		else if (b >= r->stay[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

static void on_sample(struct pr *r, const uint8_t *rec, size_t len)
{
	const uint8_t *p = rec + 8, *const end = rec + len;
	const struct attr *a = &r->attrs[0];
	if (r->n_attrs > 1 && r->id_pos >= 0) {
		if (len < 8 + 8u * ((size_t)r->id_pos + 1))
			goto bad;
		a = perf_attr_of_id(r, su_ld64(rec + 8 + 8u * (size_t)r->id_pos));
		if (!a) {
			r->unknown_ids++;
			return;
		}
	}
	uint64_t const t = a->sample_type;
	uint32_t pid = 0, tid = 0;
	uint64_t ts = 0;
	if (t & S_IDENTIFIER) { NEED(8); p += 8; }
	if (t & S_IP) { NEED(8); p += 8; }
	if (t & S_TID) { NEED(8); pid = su_ld32(p); tid = su_ld32(p + 4); p += 8; }
	if (t & S_TIME) { NEED(8); ts = su_ld64(p); p += 8; }
	if (t & S_ADDR) { NEED(8); p += 8; }
	if (t & S_ID) { NEED(8); p += 8; }
	if (t & S_STREAM_ID) { NEED(8); p += 8; }
	if (t & S_CPU) { NEED(8); p += 8; }
	if (t & S_PERIOD) { NEED(8); p += 8; }
	if ((t & S_READ) && skip_read(a, &p, end))
		goto bad;
	const uint8_t *uchain = NULL, *kchain = NULL;
	uint32_t n_uchain = 0, n_kchain = 0;
	if (t & S_CALLCHAIN) {
		NEED(8);
		uint64_t const nr = su_ld64(p);
		p += 8;
		if (nr > (uint64_t)(end - p) / 8)
			goto bad;
		/* The kernel part (a perf.data file's, as perf script shows it,
		 * unless --user-only; a live stream's when its user part is
		 * ours to unwind, exclude_callchain_user), and the user part. */
		if (r->live_cb ? (a->flags & ATTR_EXCLUDE_CALLCHAIN_USER) != 0 : !(r->opts && r->opts->user_only))
			kchain = chain_part(p, nr, CONTEXT_KERNEL, UINT16_MAX, &n_kchain);
		uchain = chain_part(p, nr, CONTEXT_USER, UINT32_MAX, &n_uchain);
		p += nr * 8;
	}
	if (t & S_RAW) {
		NEED(4);
		uint32_t const sz = su_ld32(p);
		p += 4;
		NEED(sz);
		p += sz;
	}
	if (t & S_BRANCH_STACK) {
		NEED(8);
		uint64_t const nr = su_ld64(p);
		p += 8;
		if (a->branch_sample_type & BRANCH_HW_INDEX) { NEED(8); p += 8; }
		if (nr > (uint64_t)(end - p) / 24)
			goto bad;
		p += nr * 24;
	}
	if (r->opts && r->opts->pid && r->opts->pid != pid)
		return;
	if (r->opts && r->opts->tid && r->opts->tid != tid)
		return;
	if (r->opts && (ts < r->opts->time_begin || (r->opts->time_end && ts > r->opts->time_end)))
		return;
	struct stackcap_image img = { .policy = STACKCAP_POLICY_ALL, .encoding = STACKCAP_WORDS_RAW };
	uint64_t abi = 0;
	if (t & S_REGS_USER) {
		NEED(8);
		abi = su_ld64(p);
		p += 8;
		if (abi) {
			NEED(8u * a->nregs);
			/* Ours only, each from its place among the values.
			 * perf record --call-graph dwarf's 20 (flags and
			 * segments among them) at fixed places, the common
			 * case; another mask through the attr's list
			 * (perf_attr_parse). */
			if (a->regs_dwarf) {
#define REG(ours, i) img.regs[STACKCAP_REG_##ours] = su_ld64(p + 8u * (i))
				REG(RAX, 0), REG(RBX, 1), REG(RCX, 2), REG(RDX, 3), REG(RSI, 4), REG(RDI, 5);
				REG(RBP, 6), REG(RSP, 7), REG(RIP, 8), REG(R8, 12), REG(R9, 13), REG(R10, 14);
				REG(R11, 15), REG(R12, 16), REG(R13, 17), REG(R14, 18), REG(R15, 19);
#undef REG
			} else {
				for (uint32_t k = 0; k < a->n_used; k++)
					img.regs[a->used_reg[k]] = su_ld64(p + 8u * a->used_at[k]);
			}
			img.regs_kept = a->used_mask;
			p += 8u * a->nregs;
		}
	}
	uint64_t size = 0, dyn = 0;
	const uint8_t *stack = NULL;
	if (t & S_STACK_USER) {
		NEED(8);
		size = su_ld64(p);
		p += 8;
		if (size) {
			NEED(size);
			stack = p;
			p += size;
			NEED(8);
			dyn = su_ld64(p);
			p += 8;
			if (dyn > size)
				goto bad;
		}
	}
	uint32_t const need = 1u << STACKCAP_REG_RIP | 1u << STACKCAP_REG_RSP;
	int const no_user = abi != 2 || (img.regs_kept & need) != need || !(t & S_STACK_USER);
	int const chain_only = no_user && uchain && abi != 1;
	if (no_user) {
		/* A kernel thread, a task sampled while exiting, a 32-bit task,
		 * or an event without --call-graph dwarf: no user state to
		 * unwind.  Delivered with no registers and no stack: the
		 * unwinder takes the user call chain the kernel walked when
		 * there is one (perf record -g), else says no-user, so that
		 * every sample perf script prints is printed, in its order. */
		if (abi == 1)
			r->compat_regs++;
		if (!chain_only)
			r->st->no_user_regs++;
		else
			r->st->chain_only++;
		memset(img.regs, 0, sizeof(img.regs));
		img.regs_kept = 0;
		size = dyn = 0;
		stack = NULL;
	}
	img.sp = img.regs[STACKCAP_REG_RSP];
	img.nwords = dyn / 8;
	struct proc *pr = perf_proc_get(r, pid);
	if (!pr) {
		r->cb_rc = -ENOMEM;
		return;
	}
	/* The copy cut where the stack sp is in ends (recorded with data
	 * mappings): what the kernel copied above it is another mapping's. */
	uint64_t const top = img.nwords ? su_mem_ranges_stack_end(&pr->mem, img.sp) : 0;
	int const cut = top > img.sp && (top - img.sp) / 8 < img.nwords;
	if (cut)
		img.nwords = (top - img.sp) / 8;
	img.capacity = img.nwords;
	if (stack && !(img.words = words_at(r, stack, img.nwords, 0)))
		return;
	if (kchain && !r->live_cb)
		kernel_syms(r);
	struct su_maps *maps = perf_proc_maps(r, pr);
	if (!maps) {
		r->cb_rc = -ENOMEM;
		return;
	}
	if (!maps->count && (!no_user || chain_only))
		r->st->no_maps++;
	r->st->samples++;
	r->st->raw_stack_bytes += img.nwords * 8;
	r->st->blob_bytes += size;
	if (!r->cb->sample || r->cb_rc)
		return;
	struct su_sample s = {
		.time_ns = ts,
		.pid = pid,
		.tid = tid,
		.process = &pr->p,
		.maps = maps,
		.image = &img,
		.stack_capped = !no_user && dyn >= size && !cut,
		.event = a->name,
		/* In the file's mapping (not a copy, nor a decompressed chunk). */
		.words_stay = img.words && in_mapping(r, img.words),
	};
	if (chain_only) {
		if (!(s.user_chain = words_at(r, uchain, n_uchain, 0)))
			return;
		s.n_user_chain = n_uchain;
	}
	if (kchain) {
		if (!(s.kernel_chain = words_at(r, kchain, n_kchain, 1)))
			return;
		s.n_kernel_chain = n_kchain;
	}
	r->cb_rc = r->cb->sample(r->cb->arg, &s);
	return;
bad:
	r->bad_samples++;
}

/* A live stream's loss, told with the pid and tid of its sample_id
 * trailer (the task running when the kernel wrote the record). */
static void lost_told(struct pr *r, const uint8_t *rec, size_t len, uint64_t n, int throttled)
{
	if (!throttled && n)
		r->records_lost = 1;
	if (!r->live_cb || !r->live_cb->lost || r->cb_rc)
		return;
	const struct attr *a = perf_record_attr(r, rec, len);
	size_t const tl = perf_trailer_size(a);
	uint32_t pid = UINT32_MAX, tid = UINT32_MAX;
	if (tl && (a->sample_type & S_TID) && len >= 8 + tl) {
		pid = su_ld32(rec + len - tl);
		tid = su_ld32(rec + len - tl + 4);
	}
	r->cb_rc = r->live_cb->lost(r->cb->arg, pid, tid, n, throttled);
}

/* A live stream's context switch (PERF_RECORD_SWITCH, or _CPU_WIDE for
 * a CPU's events), told with the pid and tid of its sample_id trailer:
 * the task switched in or out. */
static void switch_told(struct pr *r, const uint8_t *rec, size_t len)
{
	if (!r->live_cb || !r->live_cb->context_switch || r->cb_rc)
		return;
	const struct attr *a = perf_record_attr(r, rec, len);
	size_t const tl = perf_trailer_size(a);
	if (!tl || !(a->sample_type & S_TID) || !(a->sample_type & S_TIME) || len < 8 + tl)
		return;
	uint16_t const misc = su_ld16(rec + 4);
	int const out = !!(misc & (1u << 13));       /* PERF_RECORD_MISC_SWITCH_OUT */
	int const preempted = !!(misc & (1u << 14)); /* PERF_RECORD_MISC_SWITCH_OUT_PREEMPT */
	const uint8_t *const id = rec + len - tl;
	r->cb_rc = r->live_cb->context_switch(r->cb->arg, su_ld32(id), su_ld32(id + 4), su_ld64(id + 8), out,
					      preempted);
}

void perf_deliver(struct pr *r, const uint8_t *rec, size_t len)
{
	switch (su_ld32(rec)) {
	case R_SAMPLE: on_sample(r, rec, len); break;
	case R_MMAP: perf_on_mmap(r, rec, len, 0); break;
	case R_MMAP2: perf_on_mmap(r, rec, len, 1); break;
	case R_COMM: perf_on_comm(r, rec, len); break;
	case R_FORK: perf_on_fork_exit(r, rec, len, 1); break;
	case R_EXIT: perf_on_fork_exit(r, rec, len, 0); break;
	case R_LOST:
		if (len >= 24) {
			r->st->drops += su_ld64(rec + 16);
			lost_told(r, rec, len, su_ld64(rec + 16), 0);
		}
		break;
	case R_LOST_SAMPLES:
		if (len >= 16) {
			r->st->drops += su_ld64(rec + 8);
			lost_told(r, rec, len, su_ld64(rec + 8), 0);
		}
		break;
	case R_THROTTLE:
		lost_told(r, rec, len, 0, 1);
		break;
	case R_SWITCH:
	case R_SWITCH_CPU_WIDE: /* -a: the same, with the other task's ids (not needed) */
		switch_told(r, rec, len);
		break;
	default: break; /* KSYMBOL, BPF_EVENT...: nothing for user stacks */
	}
}
