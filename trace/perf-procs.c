/* The perf.data reader's process model (perf-data-internal.h): interned
 * paths and what their files say, processes (sections by pid, fork and
 * exec), their maps, and the MMAP/MMAP2, COMM, FORK and EXIT records that
 * change them.
 *
 * Maps: each process keeps its executable mappings as the kernel would
 * (a new mmap replaces what it overlaps); a maps generation is built only
 * when a sample follows a change, and kept until the end (consumers key
 * caches by entry address).  perf.data records file offsets, our model
 * ELF addresses: a file mapping keeps its (start, offset) and is marked
 * SU_MAP_FILE_BIAS, its load bias read by debuginfo/ from the file it
 * finds (su_module_bias: under --symfs, in a --debug-dir...). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include "common/hash.h"
#include "trace/perf-data-internal.h"

/* ---- interned paths and what their files say -------------------------------- */

struct path_info *perf_intern(struct pr *r, const char *s, size_t n)
{
	uint64_t const h = su_fnv1a(s, n) | 1; /* as before: the same slots */
	if ((r->n_paths + 1) * 2 > r->cap_paths) {
		size_t ncap = r->cap_paths ? r->cap_paths * 2 : 64;
		struct path_info **nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return NULL;
		for (size_t i = 0; i < r->cap_paths; i++) {
			if (!r->paths[i])
				continue;
			size_t k = r->paths[i]->hash & (ncap - 1);
			while (nt[k])
				k = (k + 1) & (ncap - 1);
			nt[k] = r->paths[i];
		}
		free(r->paths);
		r->paths = nt;
		r->cap_paths = ncap;
	}
	size_t k = h & (r->cap_paths - 1);
	for (; r->paths[k]; k = (k + 1) & (r->cap_paths - 1))
		if (r->paths[k]->hash == h && strlen(r->paths[k]->path) == n &&
		    memcmp(r->paths[k]->path, s, n) == 0)
			return r->paths[k];
	struct path_info *pi = calloc(1, sizeof(*pi));
	if (!pi || !(pi->path = strndup(s, n))) {
		free(pi);
		return NULL;
	}
	pi->hash = h;
	r->paths[k] = pi;
	r->n_paths++;
	return pi;
}

/* Whether the recording was made on this machine's kernel release
 * (HEADER_OSRELEASE; a live stream's is this one's), once. */
int perf_recorded_here(struct pr *r)
{
	if (!r->here_tried) {
		struct utsname u;
		r->here_tried = 1;
		r->here = !uname(&u) && r->osrelease[0] && strcmp(u.release, r->osrelease) == 0;
	}
	return r->here;
}

/* ---- processes -------------------------------------------------------------- */

static struct proc *proc_live(struct pr *r, uint32_t pid)
{
	if (!r->cap_live)
		return NULL;
	size_t k = (pid * 0x9E3779B1u) & (r->cap_live - 1);
	for (; r->live[k].p; k = (k + 1) & (r->cap_live - 1))
		if (r->live[k].pid == pid)
			return r->live[k].p;
	return NULL;
}

static int live_set(struct pr *r, uint32_t pid, struct proc *p)
{
	if ((r->n_live + 1) * 2 > r->cap_live) {
		size_t ncap = r->cap_live ? r->cap_live * 2 : 64;
		__typeof__(r->live) nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < r->cap_live; i++) {
			if (!r->live[i].p)
				continue;
			size_t k = (r->live[i].pid * 0x9E3779B1u) & (ncap - 1);
			while (nt[k].p)
				k = (k + 1) & (ncap - 1);
			nt[k] = r->live[i];
		}
		free(r->live);
		r->live = nt;
		r->cap_live = ncap;
	}
	size_t k = (pid * 0x9E3779B1u) & (r->cap_live - 1);
	for (; r->live[k].p; k = (k + 1) & (r->cap_live - 1))
		if (r->live[k].pid == pid) {
			r->live[k].p = p;
			return 0;
		}
	r->live[k].pid = pid;
	r->live[k].p = p;
	r->n_live++;
	return 0;
}

/* The most stack bytes a sample of A holds: sample_stack_user, unless the
 * record would pass 64 KiB (its size is a u16): then the kernel cuts the
 * copy to fit (perf_sample_ustack_size), 65,320 bytes with every user
 * register.  A copy this long may have been cut.  (Fields of variable
 * size before the stack, a call chain, make it smaller still: for the
 * kernel frames of a live stream (CHAIN), its count is counted here, the
 * context marker and addresses of a sample that has them by the trace's
 * reader; not for perf.data files.) */
uint32_t perf_attr_stack_cap(const struct attr *a, int chain)
{
	uint64_t const t = a->sample_type;
	uint64_t head = 8 + 8u * (!!(t & S_IDENTIFIER) + !!(t & S_IP) + !!(t & S_TID) + !!(t & S_TIME) +
				  !!(t & S_ADDR) + !!(t & S_ID) + !!(t & S_STREAM_ID) + !!(t & S_CPU) +
				  !!(t & S_PERIOD));
	if (t & S_REGS_USER)
		head += 8 + 8u * a->nregs;
	head += 16; /* the stack's size and dynamic size */
	if (chain && (t & S_CALLCHAIN)) /* nr: a sample without kernel frames */
		head += 8;
	if ((uint64_t)a->sample_stack_user + head <= 0xffff || head + 8 > 0xffff)
		return a->sample_stack_user;
	return (uint32_t)((0xffff - head - 8 + 7) & ~7ull);
}

/* A new section for PID (first sight, fork or exec), its maps copied from
 * FROM (fork) or empty. */
static struct proc *proc_new(struct pr *r, uint32_t pid, uint32_t ppid, const char *comm,
			     const struct proc *from)
{
	if (su_grow((void **)&r->procs, &r->cap_procs, r->n_procs + 1, sizeof(*r->procs)))
		return NULL;
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->p.pid = pid;
	p->p.ppid = ppid;
	p->p.comm = strdup(comm ? comm : "");
	p->p.exe = strdup(from && from->p.exe ? from->p.exe : "");
	p->p.policy = STACKCAP_POLICY_ALL;
	p->p.codec_version = STACKCAP_CODEC_VERSION;
	if (r->n_attrs) {
		p->p.stack_cap = perf_attr_stack_cap(&r->attrs[0], r->live_cb != NULL);
		if (r->attrs[0].flags & ATTR_FREQ)
			p->p.frequency_hz = (uint32_t)r->attrs[0].period_or_freq;
	}
	/* After the pid's earlier sections: the newest is its live one (a pid
	 * is never dropped from LIVE).  Counting them over every section was
	 * quadratic: 23,561 FORKs inflated from 724 bytes of -z records took
	 * the fuzzer past its 5 s. */
	const struct proc *const before = proc_live(r, pid);
	p->p.seq = before ? before->p.seq + 1 : 0;
	p->dirty = 1;
	if (!p->p.comm || !p->p.exe)
		goto fail;
	if (from && from->n) {
		p->m = malloc(from->n * sizeof(*p->m));
		if (!p->m)
			goto fail;
		memcpy(p->m, from->m, from->n * sizeof(*p->m));
		p->n = p->cap = from->n;
	}
	if (from && su_mem_ranges_copy(&p->mem, &from->mem))
		goto fail;
	if (live_set(r, pid, p))
		goto fail;
	r->procs[r->n_procs++] = p;
	r->st->processes++;
	if (r->cb->process_start && !r->cb_rc)
		r->cb_rc = r->cb->process_start(r->cb->arg, &p->p);
	return p;
fail:
	free(p->p.comm);
	free(p->p.exe);
	free(p->m);
	su_mem_ranges_free(&p->mem);
	free(p);
	return NULL;
}

struct proc *perf_proc_get(struct pr *r, uint32_t pid)
{
	struct proc *p = proc_live(r, pid);
	return p ? p : proc_new(r, pid, 0, NULL, NULL);
}

/* Insert [START, END) as the kernel would: it replaces whatever it
 * overlaps.  EXEC 0: only the removal (a data mapping over code). */
static int proc_mmap(struct proc *p, const struct pmap *nm, int exec)
{
	/* Remove or cut every overlapping entry. */
	size_t need = p->n + 2;
	if (need > p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		while (ncap < need)
			ncap *= 2;
		struct pmap *m = realloc(p->m, ncap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		p->m = m;
		p->cap = ncap;
	}
	int changed = 0;
	for (size_t i = 0; i < p->n;) {
		struct pmap *e = &p->m[i];
		if (e->end <= nm->start || e->start >= nm->end) {
			i++;
			continue;
		}
		changed = 1;
		if (e->start < nm->start && e->end > nm->end) {
			/* Split in two around the new one. */
			memmove(&p->m[i + 1], &p->m[i], (p->n - i) * sizeof(*p->m));
			p->n++;
			p->m[i].end = nm->start;
			p->m[i + 1].pgoff += nm->end - p->m[i + 1].start;
			p->m[i + 1].start = nm->end;
			i += 2;
		} else if (e->start < nm->start) {
			e->end = nm->start;
			i++;
		} else if (e->end > nm->end) {
			e->pgoff += nm->end - e->start;
			e->start = nm->end;
			i++;
		} else {
			memmove(&p->m[i], &p->m[i + 1], (p->n - i - 1) * sizeof(*p->m));
			p->n--;
		}
	}
	if (exec) {
		size_t at = p->n;
		while (at > 0 && p->m[at - 1].start > nm->start)
			at--;
		memmove(&p->m[at + 1], &p->m[at], (p->n - at) * sizeof(*p->m));
		p->m[at] = *nm;
		p->n++;
		changed = 1;
	}
	if (changed)
		p->dirty = 1;
	return 0;
}

void perf_maps_free(struct su_maps *m)
{
	if (!m)
		return;
	free(m->entries);
	free(m->range_list);
	free(m);
}

/* The maps generation of P now, built if its maps changed. */
struct su_maps *perf_proc_maps(struct pr *r, struct proc *p)
{
	if (!p->dirty && p->cur)
		return p->cur;
	if (su_grow((void **)&r->gens, &r->cap_gens, r->n_gens + 1, sizeof(*r->gens)) ||
	    su_grow((void **)&p->gen_at, &p->cap_gen_at, p->n_gen_at + 1, sizeof(*p->gen_at)))
		return NULL;
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->generation = ++p->next_gen;
	m->kernel = r->kernel;
	m->count = (uint32_t)p->n;
	m->entries = calloc(p->n ? p->n : 1, sizeof(*m->entries));
	m->range_list = calloc(p->n ? p->n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		perf_maps_free(m);
		return NULL;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct pmap *e = &p->m[i];
		struct su_map_entry *o = &m->entries[i];
		o->start = e->start;
		o->end = e->end;
		o->offset = e->pgoff;
		o->bias = e->bias;
		o->flags = e->flags;
		o->build_id_len = e->id_len;
		memcpy(o->build_id, e->id, e->id_len);
		o->path = (char *)e->path; /* interned: freed with the reader */
		o->dev = e->dev;
		o->ino = e->ino;
		m->range_list[i] = (struct stackcap_code_range){ e->start, e->end, (uint32_t)i };
	}
	if (stackcap_code_list_check(m->range_list, m->count)) {
		perf_maps_free(m); /* cannot happen: proc_mmap keeps them disjoint */
		return NULL;
	}
	p->gen_at[p->n_gen_at++] = r->n_gens;
	r->gens[r->n_gens++] = m;
	p->cur = m;
	p->dirty = 0;
	if (r->cb->maps && !r->cb_rc)
		r->cb_rc = r->cb->maps(r->cb->arg, &p->p, m);
	return m;
}

void perf_proc_release(struct pr *r, struct proc *p)
{
	for (size_t i = 0; i < p->n_gen_at; i++) {
		perf_maps_free(r->gens[p->gen_at[i]]);
		r->gens[p->gen_at[i]] = NULL;
	}
	free(p->gen_at);
	p->gen_at = NULL;
	p->n_gen_at = p->cap_gen_at = 0;
	free(p->m);
	p->m = NULL;
	p->n = p->cap = 0;
	su_mem_ranges_free(&p->mem);
	p->cur = NULL;
	p->dirty = 1;
}

void perf_on_mmap(struct pr *r, const uint8_t *rec, size_t len, int v2)
{
	uint16_t const misc = su_ld16(rec + 4);
	size_t const fixed = v2 ? 8 + 8 + 24 + 24 + 8 : 8 + 8 + 24;
	size_t const tl = perf_trailer_size(perf_record_attr(r, rec, len));
	if (len < fixed + tl + 1) {
		r->bad_samples++;
		return;
	}
	uint32_t const pid = su_ld32(rec + 8);
	if ((misc & MISC_CPUMODE_MASK) == MISC_KERNEL || pid == UINT32_MAX)
		return; /* the kernel's maps: we unwind user space only */
	uint64_t const addr = su_ld64(rec + 16), mlen = su_ld64(rec + 24), pgoff = su_ld64(rec + 32);
	int exec;
	struct pmap nm = { .start = addr, .end = addr + mlen, .pgoff = pgoff };
	if (v2) {
		uint32_t const prot = su_ld32(rec + 64);
		exec = (prot & 4) != 0; /* PROT_EXEC */
		if (misc & MISC_MMAP_BUILD_ID) {
			uint8_t const n = rec[40];
			if (n > 0 && n <= 20) {
				nm.id_len = n;
				memcpy(nm.id, rec + 44, n);
			}
		} else {
			nm.dev = makedev(su_ld32(rec + 40), su_ld32(rec + 44));
			nm.ino = su_ld64(rec + 48);
		}
	} else {
		exec = !(misc & MISC_MMAP_DATA);
	}
	if (nm.end <= nm.start)
		return;
	const char *fname = (const char *)rec + fixed;
	size_t const fmax = len - fixed - tl;
	size_t const flen = strnlen(fname, fmax);
	struct proc *p = perf_proc_get(r, pid);
	if (!p || su_mem_ranges_map(&p->mem, nm.start, nm.end, flen == 7 && !memcmp(fname, "[stack]", 7)))
		goto oom;
	if (exec) {
		struct path_info *pi = perf_intern(r, fname, flen);
		if (!pi)
			goto oom;
		nm.path = pi->path;
		if (strcmp(pi->path, "[vdso]") == 0) {
			nm.flags = SU_MAP_VDSO;
			nm.bias = nm.start - nm.pgoff;
			if (!nm.id_len && pi->table_id_len) {
				nm.id_len = pi->table_id_len;
				memcpy(nm.id, pi->table_id, nm.id_len);
			}
			/* None stored: debuginfo/ takes its own vDSO's, the
			 * recording's when the kernel is the same. */
			if (!nm.id_len && perf_recorded_here(r))
				nm.flags |= SU_MAP_THIS_KERNEL;
		} else if (pi->path[0] != '/' || !strcmp(pi->path, "//anon") || !strncmp(pi->path, "/memfd:", 7) ||
			   !strncmp(pi->path, "/anon_hugepage", 14) || !strncmp(pi->path, "/dev/zero", 9)) {
			/* //anon, [heap], [stack], /memfd:..., /anon_hugepage,
			 * /dev/zero: code with no file (JITs), as perf's
			 * is_anon_memory() and is_no_dso_memory() say. */
			nm.flags = SU_MAP_ANON;
			nm.pgoff = 0; /* the kernel's is the address: no file, no offset */
			struct path_info *e = perf_intern(r, "", 0);
			if (!e)
				goto oom;
			nm.path = e->path;
		} else {
			if (!nm.id_len && pi->table_id_len) {
				nm.id_len = pi->table_id_len;
				memcpy(nm.id, pi->table_id, nm.id_len);
			}
			/* perf.data records file offsets: the load bias comes from
			 * the file debuginfo/ finds (su_module_bias). */
			nm.bias = nm.start - nm.pgoff;
			nm.flags = SU_MAP_FILE_BIAS;
			if (!p->p.exe[0]) {
				char *exe = strdup(pi->path);
				if (!exe)
					goto oom;
				free(p->p.exe);
				p->p.exe = exe;
			}
			if (strcmp(p->p.exe, pi->path) == 0)
				nm.flags |= SU_MAP_MAIN;
		}
	}
	if (proc_mmap(p, &nm, exec))
		goto oom;
	return;
oom:
	r->cb_rc = -ENOMEM;
}

void perf_on_comm(struct pr *r, const uint8_t *rec, size_t len)
{
	size_t const tl = perf_trailer_size(perf_record_attr(r, rec, len));
	if (len < 16 + tl + 1) {
		r->bad_samples++;
		return;
	}
	uint32_t const pid = su_ld32(rec + 8), tid = su_ld32(rec + 12);
	const char *comm = (const char *)rec + 16;
	size_t const n = strnlen(comm, len - 16 - tl);
	char name[64];
	snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), comm);
	if (pid != tid)
		return; /* a thread's own name: the process keeps its comm */
	struct proc *p = proc_live(r, pid);
	if (su_ld16(rec + 4) & MISC_COMM_EXEC) {
		/* exec: a new image, its mappings follow. */
		if (p)
			su_mem_ranges_free(&p->mem);
		if (!proc_new(r, pid, p ? p->p.ppid : 0, name, NULL))
			r->cb_rc = -ENOMEM;
		return;
	}
	if (!p) {
		if (!proc_new(r, pid, 0, name, NULL))
			r->cb_rc = -ENOMEM;
		return;
	}
	char *c = strdup(name);
	if (!c) {
		r->cb_rc = -ENOMEM;
		return;
	}
	free(p->p.comm);
	p->p.comm = c;
}

/* The callbacks told that TID of PID (TID == PID: the process) ended. */
static void perf_tell_exit(struct pr *r, uint32_t pid, uint32_t tid, uint64_t time)
{
	if (r->live_cb && r->live_cb->exit && !r->cb_rc)
		r->cb_rc = r->live_cb->exit(r->cb->arg, pid, tid);
	if (r->cb->thread_exit && !r->cb_rc)
		r->cb_rc = r->cb->thread_exit(r->cb->arg, pid, tid, time);
}

void perf_on_fork_exit(struct pr *r, const uint8_t *rec, size_t len, int fork)
{
	if (len < 8 + 24) {
		r->bad_samples++;
		return;
	}
	uint32_t const pid = su_ld32(rec + 8), ppid = su_ld32(rec + 12), tid = su_ld32(rec + 16);
	struct proc *p;
	if (fork) {
		if (pid != tid) { /* a new thread of PID */
			if (pid == ppid && (p = proc_live(r, pid)) && p->threads < UINT32_MAX)
				p->threads++;
			return;
		}
		if (pid == ppid)
			return;
		const struct proc *parent = proc_live(r, ppid);
		if (!proc_new(r, pid, ppid, parent ? parent->p.comm : NULL, parent))
			r->cb_rc = -ENOMEM;
		return;
	}
	/* The process ends with its last thread: its main thread's EXIT when
	 * no other thread it started is left, else the EXIT of the last one
	 * (the main thread left by pthread_exit; the others go on, their
	 * samples and mappings still the process's).  A thread that was
	 * there before the recording is not counted: its EXIT takes one off
	 * the count at most. */
	p = proc_live(r, pid);
	int ends = 0;
	if (pid == tid) {
		ends = !p || !p->threads ||
		       (r->records_lost && r->live_cb && r->live_cb->process_alive &&
			!r->live_cb->process_alive(r->cb->arg, pid));
		if (p)
			p->leader_exited = 1;
	} else if (p) {
		if (p->threads)
			p->threads--;
		ends = p->leader_exited && !p->threads;
	}
	if (pid != tid || ends)
		perf_tell_exit(r, pid, tid, su_ld64(rec + 24)); /* its time field */
	if (!ends)
		return;
	if (pid != tid)
		perf_tell_exit(r, pid, pid, su_ld64(rec + 24)); /* the process, with it */
	if (p && !p->p.ended) {
		p->p.ended = 1;
		r->st->ended++;
		su_mem_ranges_free(&p->mem);
	}
}
