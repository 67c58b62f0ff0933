/* The LTTng join (trace/lttng-join.h).
 *
 * Per process (vpid): LTTng's module events (state dump, lttng_ust_lib,
 * lttng_ust_dl: base address, size, path, build-id, load and unload
 * times) and our `stackcap:code_ranges` generations; each generation
 * becomes a maps event whose entries join the ranges to the modules by
 * address (and time).  A --python recording's stackcap:runtime and
 * stackcap:runtime_code events go out after their process's start; its
 * stackcap:runtime_frames go with their thread's next sample. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "trace/lttng-join.h"
#include "trace/bt2-event.h"

/* A module LTTng reported in one process. */
struct lt_module {
	uint64_t baddr, memsz;
	char *path;
	int is_pic;
	uint8_t build_id_len;
	uint8_t build_id[SU_BUILD_ID_MAX];
	uint64_t load_ts, unload_ts;   /* unload_ts UINT64_MAX: never unloaded */
};

/* One stackcap:code_ranges generation (the first record of it). */
struct lt_gen {
	uint32_t generation;
	uint64_t ts;
	uint64_t *vals;                /* start0, end0, ... */
	uint32_t n;                    /* ranges */
	uint8_t codec_version, policy;
	uint32_t stack_cap, frequency_hz;
	uint8_t vdso_build_id_len;
	uint8_t vdso_build_id[SU_BUILD_ID_MAX];
	int delivered;                 /* its maps went out (flush) */
};

/* A stackcap:runtime or stackcap:runtime_code event, kept until its
 * process has started (the core files them under the process). */
struct lt_rtev {
	enum raw_kind kind;
	uint64_t ts;
	struct su_runtime runtime;     /* name malloc'ed */
	struct su_rt_code code;        /* name, file, line_table malloc'ed */
};

struct lt_proc {
	uint32_t vpid;
	struct lt_rtev *rtevs;
	size_t n_rtevs, cap_rtevs, rt_sent;
	uint64_t first_ts;
	char *procname;
	struct lt_module *mods;
	size_t n_mods, cap_mods;
	struct lt_gen *gens;
	size_t n_gens, cap_gens;
	int started;                   /* its process_start went out */
	int dumped;                    /* a state dump ended, at dump_end_ts */
	uint64_t dump_end_ts;
};

/* A pending sample_segment and runtime_frames of one thread. */
struct lt_seg {
	uint32_t vpid, vtid;
	uint8_t *blob;
	size_t len, cap;
	uint32_t generation;
	int pending;
	uint8_t *rt;
	size_t rt_len, rt_cap;
	int rt_pending;
};

struct su_lttng_join {
	struct lt_proc *procs;
	size_t n_procs, cap_procs;
	struct lt_seg *segs;
	size_t n_segs, cap_segs;
	size_t undelivered;            /* generations not flushed yet */
	size_t rt_unsent;              /* runtime events kept */
	uint8_t *blob;
	size_t blob_cap;
};

enum su_lttng_event su_lttng_event_of(const char *name)
{
	if (!name)
		return SU_LTTNG_OTHER;
	if (!strcmp(name, "stackcap:sample"))
		return SU_LTTNG_SAMPLE;
	if (!strcmp(name, "stackcap:sample_segment"))
		return SU_LTTNG_SEGMENT;
	if (!strcmp(name, "stackcap:code_ranges"))
		return SU_LTTNG_CODE_RANGES;
	if (!strcmp(name, "stackcap:runtime") || !strcmp(name, "stackcap:runtime_code"))
		return SU_LTTNG_RUNTIME;
	if (!strcmp(name, "stackcap:runtime_frames"))
		return SU_LTTNG_RUNTIME_FRAMES;
	if (!strncmp(name, "lttng_ust_statedump:", 20) || !strncmp(name, "lttng_ust_dl:", 13) ||
	    !strncmp(name, "lttng_ust_lib:", 14))
		return SU_LTTNG_MODULES;
	return SU_LTTNG_OTHER;
}

int su_lttng_event_ids(const bt_message *msg, uint32_t *vpid, uint32_t *vtid)
{
	const bt_field *cc = bt_event_borrow_common_context_field_const(bt_message_event_borrow_event_const(msg));
	uint64_t p, t;
	if (su_bt2_u64(cc, "vpid", &p) || su_bt2_u64(cc, "vtid", &t))
		return -ENOENT;
	*vpid = (uint32_t)p;
	*vtid = (uint32_t)t;
	return 0;
}

struct su_lttng_join *su_lttng_join_new(void)
{
	return calloc(1, sizeof(struct su_lttng_join));
}

void su_lttng_join_free(struct su_lttng_join *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n_procs; i++) {
		struct lt_proc *p = &j->procs[i];
		for (size_t k = 0; k < p->n_mods; k++)
			free(p->mods[k].path);
		for (size_t k = 0; k < p->n_gens; k++)
			free(p->gens[k].vals);
		free(p->mods);
		free(p->gens);
		free(p->procname);
		for (size_t k = 0; k < p->n_rtevs; k++) {
			free(p->rtevs[k].runtime.name);
			free(p->rtevs[k].code.name);
			free(p->rtevs[k].code.file);
			free(p->rtevs[k].code.line_table);
		}
		free(p->rtevs);
	}
	free(j->procs);
	for (size_t i = 0; i < j->n_segs; i++) {
		free(j->segs[i].blob);
		free(j->segs[i].rt);
	}
	free(j->segs);
	free(j->blob);
	free(j);
}

/* ---- modules and generations --------------------------------------------- */

static struct lt_proc *proc_get(struct su_lttng_join *j, uint32_t vpid, uint64_t ts)
{
	for (size_t i = 0; i < j->n_procs; i++)
		if (j->procs[i].vpid == vpid) {
			if (ts < j->procs[i].first_ts)
				j->procs[i].first_ts = ts;
			return &j->procs[i];
		}
	if (su_grow((void **)&j->procs, &j->cap_procs, j->n_procs + 1, sizeof(*j->procs)))
		return NULL;
	struct lt_proc *p = &j->procs[j->n_procs++];
	p->vpid = vpid;
	p->first_ts = ts;
	return p;
}

static int on_load(struct lt_proc *p, const bt_field *pl, uint64_t ts, int pic_known)
{
	const char *path = su_bt2_str(pl, "path");
	uint64_t baddr, memsz;
	if (su_bt2_u64(pl, "baddr", &baddr) || su_bt2_u64(pl, "memsz", &memsz) || !path)
		return 0; /* not the layout we know: ignored */
	if (su_grow((void **)&p->mods, &p->cap_mods, p->n_mods + 1, sizeof(*p->mods)))
		return -ENOMEM;
	struct lt_module *m = &p->mods[p->n_mods];
	memset(m, 0, sizeof(*m));
	m->path = strdup(path);
	if (!m->path)
		return -ENOMEM;
	p->n_mods++;
	m->baddr = baddr;
	m->memsz = memsz;
	/* dlopen'ed and lttng_ust_lib objects are shared objects: PIC. */
	m->is_pic = pic_known ? (int)su_bt2_u64_or(pl, "is_pic", 1) : 1;
	m->load_ts = ts;
	m->unload_ts = UINT64_MAX;
	return 0;
}

/* The latest module of P at BADDR loaded at or before TS (build-id and
 * unload events follow their load event), else the latest at BADDR. */
static struct lt_module *module_at(struct lt_proc *p, uint64_t baddr, uint64_t ts)
{
	struct lt_module *best = NULL;
	for (size_t i = 0; i < p->n_mods; i++) {
		struct lt_module *m = &p->mods[i];
		if (m->baddr != baddr)
			continue;
		if (m->load_ts <= ts && (!best || best->load_ts > ts || m->load_ts >= best->load_ts))
			best = m;
		else if (!best)
			best = m;
	}
	return best;
}

static void on_build_id(struct lt_proc *p, const bt_field *pl, uint64_t ts)
{
	uint64_t baddr, n = 0;
	const bt_field *arr = su_bt2_array(pl, "build_id", &n);
	if (su_bt2_u64(pl, "baddr", &baddr) || !arr || n == 0 || n > SU_BUILD_ID_MAX)
		return;
	struct lt_module *m = module_at(p, baddr, ts);
	if (!m)
		return;
	m->build_id_len = (uint8_t)su_bt2_bytes(pl, "build_id", m->build_id, SU_BUILD_ID_MAX);
}

static void on_unload(struct lt_proc *p, const bt_field *pl, uint64_t ts)
{
	uint64_t baddr;
	if (su_bt2_u64(pl, "baddr", &baddr))
		return;
	struct lt_module *m = module_at(p, baddr, ts);
	if (m && m->unload_ts == UINT64_MAX && m->load_ts <= ts)
		m->unload_ts = ts;
}

static int on_code_ranges(struct su_lttng_join *j, struct lt_proc *p, const bt_field *pl, uint64_t ts)
{
	uint64_t gen, n = 0;
	const bt_field *arr = su_bt2_array(pl, "ranges", &n);
	if (su_bt2_u64(pl, "generation", &gen) || !arr || n % 2 || n / 2 > UINT32_MAX)
		return 0;
	for (size_t i = 0; i < p->n_gens; i++)
		if (p->gens[i].generation == gen)
			return 0; /* a repeat: the first is kept */
	if (su_grow((void **)&p->gens, &p->cap_gens, p->n_gens + 1, sizeof(*p->gens)))
		return -ENOMEM;
	struct lt_gen *g = &p->gens[p->n_gens];
	memset(g, 0, sizeof(*g));
	g->vals = malloc((n ? n : 1) * sizeof(*g->vals));
	if (!g->vals)
		return -ENOMEM;
	p->n_gens++;
	j->undelivered++;
	for (uint64_t i = 0; i < n; i++)
		g->vals[i] = bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(arr, i));
	g->generation = (uint32_t)gen;
	g->ts = ts;
	g->n = (uint32_t)(n / 2);
	g->codec_version = (uint8_t)su_bt2_u64_or(pl, "codec_version", 0);
	g->policy = (uint8_t)su_bt2_u64_or(pl, "policy", 0);
	g->stack_cap = (uint32_t)su_bt2_u64_or(pl, "stack_cap", 0);
	g->frequency_hz = (uint32_t)su_bt2_u64_or(pl, "frequency_hz", 0);
	uint64_t nb = 0;
	if (su_bt2_array(pl, "vdso_build_id", &nb) && nb <= SU_BUILD_ID_MAX)
		g->vdso_build_id_len = (uint8_t)su_bt2_bytes(pl, "vdso_build_id", g->vdso_build_id, SU_BUILD_ID_MAX);
	return 0;
}

/* A stackcap:runtime or stackcap:runtime_code event (NAME) of P, kept. */
static int on_runtime(struct su_lttng_join *j, struct lt_proc *p, const char *name, const bt_field *pl, uint64_t ts)
{
	if (su_grow((void **)&p->rtevs, &p->cap_rtevs, p->n_rtevs + 1, sizeof(*p->rtevs)))
		return -ENOMEM;
	struct lt_rtev *e = &p->rtevs[p->n_rtevs];
	memset(e, 0, sizeof(*e));
	e->ts = ts;
	const char *n = su_bt2_str(pl, "name");
	if (!strcmp(name, "stackcap:runtime")) {
		e->kind = RAW_RUNTIME;
		e->runtime.kind = (uint8_t)su_bt2_u64_or(pl, "runtime", 0);
		e->runtime.version = (uint32_t)su_bt2_u64_or(pl, "version", 0);
		e->runtime.eval_start = su_bt2_u64_or(pl, "eval_start", 0);
		e->runtime.eval_end = su_bt2_u64_or(pl, "eval_end", 0);
		e->runtime.chains = su_bt2_u64_or(pl, "chains", 0);
		e->runtime.dropped = su_bt2_u64_or(pl, "dropped", 0);
		if (!(e->runtime.name = strdup(n ? n : "")))
			return -ENOMEM;
	} else {
		e->kind = RAW_RUNTIME_CODE;
		const char *f = su_bt2_str(pl, "file");
		e->code.code = su_bt2_u64_or(pl, "code", 0);
		e->code.fp = n && f ? (uint32_t)su_bt2_u64_or(pl, "fingerprint", 0) : 0; /* not ours: never named */
		e->code.first_line = (uint32_t)su_bt2_u64_or(pl, "first_line", 0);
		size_t cap = 0;
		int64_t const lt = su_bt2_copy_bytes(pl, "line_table", &e->code.line_table, &cap);
		e->code.name = strdup(n ? n : "");
		e->code.file = strdup(f ? f : "");
		if (lt == -ENOMEM || !e->code.name || !e->code.file) {
			free(e->code.line_table);
			free(e->code.name);
			free(e->code.file);
			return -ENOMEM;
		}
		e->code.line_table_len = lt > 0 ? (uint32_t)lt : 0;
	}
	p->n_rtevs++;
	j->rt_unsent++;
	return 0;
}

int su_lttng_join_add(struct su_lttng_join *j, const bt_message *msg, enum su_lttng_event kind, uint32_t vpid,
		      uint64_t ts)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(e));
	const bt_field *pl = bt_event_borrow_payload_field_const(e);
	struct lt_proc *p = proc_get(j, vpid, ts);
	if (!p)
		return -ENOMEM;
	if (kind == SU_LTTNG_CODE_RANGES)
		return on_code_ranges(j, p, pl, ts);
	if (kind == SU_LTTNG_RUNTIME)
		return name ? on_runtime(j, p, name, pl, ts) : 0;
	if (kind != SU_LTTNG_MODULES || !name)
		return 0;
	if (!strcmp(name, "lttng_ust_statedump:start")) {
		/* A state dump lists every module loaded now (again): what was
		 * known before counts as unloaded here, so after an exec() the
		 * old image's modules stop matching. */
		for (size_t i = 0; i < p->n_mods; i++)
			if (p->mods[i].unload_ts == UINT64_MAX && p->mods[i].load_ts < ts)
				p->mods[i].unload_ts = ts;
		return 0;
	}
	if (!strcmp(name, "lttng_ust_statedump:end")) {
		p->dumped = 1;
		p->dump_end_ts = ts;
		return 0;
	}
	if (!strcmp(name, "lttng_ust_statedump:bin_info"))
		return on_load(p, pl, ts, 1);
	if (!strcmp(name, "lttng_ust_dl:dlopen") || !strcmp(name, "lttng_ust_dl:dlmopen") ||
	    !strcmp(name, "lttng_ust_lib:load"))
		return on_load(p, pl, ts, 0);
	if (!strcmp(name, "lttng_ust_statedump:build_id") || !strcmp(name, "lttng_ust_dl:build_id") ||
	    !strcmp(name, "lttng_ust_lib:build_id")) {
		on_build_id(p, pl, ts);
		return 0;
	}
	if (!strcmp(name, "lttng_ust_dl:dlclose") || !strcmp(name, "lttng_ust_lib:unload")) {
		on_unload(p, pl, ts);
		return 0;
	}
	if (!strcmp(name, "lttng_ust_statedump:procname")) {
		const char *pn = su_bt2_str(pl, "procname");
		if (pn && !p->procname && !(p->procname = strdup(pn)))
			return -ENOMEM;
	}
	return 0;
}

/* ---- the join ------------------------------------------------------------- */

/* The module holding range [START, END) at time TS (docs/lttng.md):
 * loaded last at or before TS and not unloaded by then, else the earliest
 * loaded after TS (a state dump after the first code_ranges record). */
static const struct lt_module *module_for_range(const struct lt_proc *p, uint64_t start, uint64_t ts,
						int sized)
{
	const struct lt_module *before = NULL, *after = NULL;
	for (size_t i = 0; i < p->n_mods; i++) {
		const struct lt_module *m = &p->mods[i];
		/* The vDSO is reported with memsz 0: a few pages, and only
		 * where no module with a size is (ld.so often follows it). */
		if (sized != (m->memsz != 0))
			continue;
		uint64_t const size = m->memsz ? m->memsz : 4 * 4096;
		if (start < m->baddr || start - m->baddr >= size)
			continue;
		if (m->load_ts <= ts) {
			if (m->unload_ts > ts && (!before || m->load_ts >= before->load_ts))
				before = m;
		} else if (!after || m->load_ts < after->load_ts) {
			after = m;
		}
	}
	return before ? before : after;
}

static int is_vdso_path(const char *path)
{
	return path[0] == '[' && strstr(path, "vdso");
}

static struct su_maps *build_maps(const struct lt_proc *p, const struct lt_gen *g)
{
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->generation = g->generation;
	m->count = g->n;
	m->entries = calloc(g->n ? g->n : 1, sizeof(*m->entries));
	m->range_list = calloc(g->n ? g->n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		su_maps_free(m);
		return NULL;
	}
	for (uint32_t i = 0; i < g->n; i++) {
		struct su_map_entry *e = &m->entries[i];
		e->start = g->vals[2 * i];
		e->end = g->vals[2 * i + 1];
		const struct lt_module *mod = module_for_range(p, e->start, g->ts, 1);
		if (!mod)
			mod = module_for_range(p, e->start, g->ts, 0);
		const char *path = "";
		if (!mod) {
			/* No module: anonymous executable memory (JIT), named
			 * as libstackcap names it in its own maps events. */
			e->flags = SU_MAP_ANON;
			path = "[anon:exec]";
		} else if (is_vdso_path(mod->path)) {
			e->flags = SU_MAP_VDSO;
			path = "[vdso]";
			e->bias = mod->baddr;
			e->build_id_len = g->vdso_build_id_len;
			memcpy(e->build_id, g->vdso_build_id, g->vdso_build_id_len);
		} else {
			path = mod->path;
			/* baddr is the first PT_LOAD's address, whose p_vaddr is 0
			 * in a PIC object. */
			e->bias = mod->is_pic ? mod->baddr : 0;
			e->offset = e->start - mod->baddr; /* not recorded by LTTng; unused */
			e->build_id_len = mod->build_id_len;
			memcpy(e->build_id, mod->build_id, mod->build_id_len);
		}
		e->path = strdup(path);
		if (!e->path) {
			su_maps_free(m);
			return NULL;
		}
		m->range_list[i] = (struct stackcap_code_range){ e->start, e->end, i };
	}
	return m;
}

/* The main executable's path: the first module not named like a shared
 * object (LTTng's state dump does not flag it). */
static const char *main_path(const struct lt_proc *p)
{
	for (size_t i = 0; i < p->n_mods; i++) {
		const char *path = p->mods[i].path;
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		if (path[0] != '[' && !strstr(base, ".so"))
			return path;
	}
	return "";
}

/* Can G's maps go out at NOW?  Modules loaded later can no longer change
 * a range found in a module with a size (one loaded before G wins, and the
 * first seen after G is the earliest), nor, once a state dump has listed
 * the modules loaded at startup, the vDSO's range (nothing is loaded over
 * the vDSO; before the dump its few pages may be ld.so's).  A range in
 * no module yet (JIT code, a dlopen reported after G) waits for a state
 * dump after G, or WAIT_NS. */
static int settled(const struct lt_proc *p, const struct lt_gen *g, uint64_t now, uint64_t wait_ns)
{
	if ((p->dumped && p->dump_end_ts >= g->ts) || now >= g->ts + wait_ns)
		return 1;
	for (uint32_t i = 0; i < g->n; i++) {
		uint64_t const start = g->vals[2 * i];
		const struct lt_module *vdso = module_for_range(p, start, g->ts, 0);
		if (!module_for_range(p, start, g->ts, 1) && !(p->dumped && vdso && vdso->load_ts <= g->ts))
			return 0;
	}
	return 1;
}

static int start_process(struct lt_proc *p, raw_emit_fn emit, void *ctx)
{
	const struct lt_gen *g0 = &p->gens[0];
	struct raw_event ev = {
		.kind = RAW_PROCESS_START, .ts = p->first_ts, .pid = p->vpid, .stream_id = p->vpid,
		.proc = { .pid = p->vpid, .comm = strdup(p->procname ? p->procname : ""),
			  .exe = strdup(main_path(p)), .frequency_hz = g0->frequency_hz,
			  .stack_cap = g0->stack_cap, .policy = g0->policy, .codec_version = g0->codec_version },
	};
	if (!ev.proc.comm || !ev.proc.exe) {
		free(ev.proc.comm);
		free(ev.proc.exe);
		return -ENOMEM;
	}
	p->started = 1;
	return emit(ctx, &ev);
}

/* P's runtime events not sent yet (P has started). */
static int send_runtime(struct su_lttng_join *j, struct lt_proc *p, raw_emit_fn emit, void *ctx)
{
	for (; p->rt_sent < p->n_rtevs; p->rt_sent++) {
		const struct lt_rtev *e = &p->rtevs[p->rt_sent];
		struct raw_event ev = { .kind = e->kind, .ts = e->ts, .pid = p->vpid, .stream_id = p->vpid,
					.runtime = e->runtime, .rt_code = e->code };
		j->rt_unsent--;
		int const rc = emit(ctx, &ev);
		if (rc)
			return rc;
	}
	return 0;
}

int su_lttng_join_flush(struct su_lttng_join *j, uint64_t now, uint64_t wait_ns, int force, raw_emit_fn emit,
			void *ctx)
{
	int rc = 0;
	for (size_t i = 0; i < j->n_procs && j->undelivered; i++) {
		struct lt_proc *p = &j->procs[i];
		for (size_t k = 0; k < p->n_gens; k++) {
			struct lt_gen *g = &p->gens[k];
			if (g->delivered || (!force && !settled(p, g, now, wait_ns)))
				continue;
			rc = p->started ? 0 : start_process(p, emit, ctx);
			if (rc)
				return rc;
			struct raw_event mev = { .kind = RAW_MAPS, .ts = g->ts, .pid = p->vpid, .stream_id = p->vpid };
			if (!(mev.maps = build_maps(p, g)))
				return -ENOMEM;
			g->delivered = 1;
			j->undelivered--;
			rc = emit(ctx, &mev);
			if (rc)
				return rc;
		}
	}
	for (size_t i = 0; i < j->n_procs && j->rt_unsent && !rc; i++)
		if (j->procs[i].started)
			rc = send_runtime(j, &j->procs[i], emit, ctx);
	return rc;
}

int su_lttng_join_has_generations(const struct su_lttng_join *j)
{
	for (size_t i = 0; i < j->n_procs; i++)
		if (j->procs[i].n_gens)
			return 1;
	return 0;
}

/* ---- samples ---------------------------------------------------------------- */

static struct lt_seg *seg_get(struct su_lttng_join *j, uint32_t vpid, uint32_t vtid)
{
	for (size_t i = 0; i < j->n_segs; i++)
		if (j->segs[i].vpid == vpid && j->segs[i].vtid == vtid)
			return &j->segs[i];
	if (su_grow((void **)&j->segs, &j->cap_segs, j->n_segs + 1, sizeof(*j->segs)))
		return NULL;
	struct lt_seg *g = &j->segs[j->n_segs++];
	g->vpid = vpid;
	g->vtid = vtid;
	return g;
}

int su_lttng_join_sample(struct su_lttng_join *j, const bt_message *msg, enum su_lttng_event kind, uint32_t vpid,
			 uint32_t vtid, uint64_t ts, struct raw_event *ev, struct su_lttng_extra *x)
{
	const bt_field *pl = bt_event_borrow_payload_field_const(bt_message_event_borrow_event_const(msg));
	uint64_t gen;
	x->has_seg = x->has_rt = 0;
	if (kind == SU_LTTNG_RUNTIME_FRAMES) {
		struct lt_seg *g = seg_get(j, vpid, vtid);
		if (!g)
			return -ENOMEM;
		int64_t const n = su_bt2_copy_blob(pl, &g->rt, &g->rt_cap);
		if (n == -ENOMEM)
			return -ENOMEM;
		g->rt_pending = n >= 0;
		g->rt_len = n >= 0 ? (size_t)n : 0;
		return 0;
	}
	if (su_bt2_u64(pl, "generation", &gen))
		return 0;
	if (kind == SU_LTTNG_SEGMENT) {
		struct lt_seg *g = seg_get(j, vpid, vtid);
		if (!g)
			return -ENOMEM;
		int64_t const n = su_bt2_copy_blob(pl, &g->blob, &g->cap);
		if (n == -ENOMEM)
			return -ENOMEM;
		g->pending = n >= 0;
		g->len = n >= 0 ? (size_t)n : 0;
		g->generation = (uint32_t)gen;
		return 0;
	}
	int64_t n = su_bt2_copy_blob(pl, &j->blob, &j->blob_cap);
	if (n == -ENOMEM)
		return -ENOMEM;
	if (n == -EINVAL)
		n = 0; /* words that do not hold their byte count: a sample, whose blob is said damaged */
	if (n < 0)
		return 0;
	/* Its segment and runtime frames were recorded just before it in
	 * the same thread. */
	for (size_t i = 0; i < j->n_segs; i++) {
		struct lt_seg *g = &j->segs[i];
		if (g->vpid != vpid || g->vtid != vtid)
			continue;
		if (g->pending) {
			g->pending = 0;
			x->seg = (struct raw_event){ .kind = RAW_SAMPLE_SEGMENT, .ts = ts, .pid = vpid, .tid = vtid,
						     .stream_id = vpid, .generation = g->generation,
						     .blob = g->blob, .blob_len = g->len };
			x->has_seg = 1;
		}
		if (g->rt_pending) {
			g->rt_pending = 0;
			x->rt = (struct raw_event){ .kind = RAW_RUNTIME_FRAMES, .ts = ts, .pid = vpid, .tid = vtid,
						    .stream_id = vpid, .blob = g->rt, .blob_len = g->rt_len };
			x->has_rt = 1;
		}
		break;
	}
	*ev = (struct raw_event){ .kind = RAW_SAMPLE, .ts = ts, .pid = vpid, .tid = vtid, .stream_id = vpid,
				  .generation = (uint32_t)gen, .blob = j->blob, .blob_len = (size_t)n };
	return 1;
}
