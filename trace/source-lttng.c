/* Event source: an LTTng-UST trace holding `stackcap:*` events
 * (docs/lttng.md), read with babeltrace2 (src.ctf.fs over every trace below
 * the directory -> flt.utils.muxer -> our sink), turned into the raw
 * events of the stackcap reader core.
 *
 * Pass 1 gathers, per process (vpid), LTTng's module events (state dump,
 * lttng_ust_lib, lttng_ust_dl: base address, size, path, build-id, load and
 * unload times) and our `stackcap:code_ranges` generations; at its end each
 * process becomes a process_start and each generation a maps event whose
 * entries join the ranges to the modules by address (and time).  Pass 2
 * delivers the samples, with vpid/vtid as pid/tid. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <babeltrace2/babeltrace.h>

#include "trace/reader-internal.h"
#include "trace/lttng-reader.h"

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
};

struct lt_proc {
	uint32_t vpid;
	uint64_t first_ts;
	char *procname;
	struct lt_module *mods;
	size_t n_mods, cap_mods;
	struct lt_gen *gens;
	size_t n_gens, cap_gens;
};

/* A pending sample_segment of one thread. */
struct lt_seg {
	uint32_t vpid, vtid;
	uint8_t *blob;
	size_t len, cap;
	uint32_t generation;
	int pending;
};

struct lt_source {
	struct source_report *rep;
	char dir[4096];
	char **traces;                 /* trace directories below dir */
	size_t n_traces, cap_traces;
	char **staged;                 /* private copies of damaged traces (removed at close) */
	size_t n_staged, cap_staged;
	enum source_pass pass;
	raw_emit_fn emit;
	void *ctx;
	int emit_rc;
	int fatal;
	struct lt_proc *procs;
	size_t n_procs, cap_procs;
	struct lt_seg *segs;
	size_t n_segs, cap_segs;
	uint8_t *blob;
	size_t blob_cap;
	uint64_t samples_seen;
	char *err;
	size_t errlen;
};

static void set_err(struct lt_source *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct lt_source *s, const char *fmt, ...)
{
	va_list ap;
	if (!s->err || !s->errlen || s->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
	*arr = p;
	*cap = n;
	return 0;
}

/* ---- field access -------------------------------------------------------- */

static const bt_field *member(const bt_field *st, const char *name)
{
	return st ? bt_field_structure_borrow_member_field_by_name_const(st, name) : NULL;
}

static int member_u64(const bt_field *st, const char *name, uint64_t *out)
{
	const bt_field *f = member(st, name);
	if (!f)
		return -1;
	bt_field_class_type const t = bt_field_get_class_type(f);
	if (t == BT_FIELD_CLASS_TYPE_SIGNED_INTEGER || t == BT_FIELD_CLASS_TYPE_SIGNED_ENUMERATION)
		*out = (uint64_t)bt_field_integer_signed_get_value(f);
	else if (t == BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER || t == BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION)
		*out = bt_field_integer_unsigned_get_value(f);
	else
		return -1;
	return 0;
}

static uint64_t u64_or(const bt_field *st, const char *name, uint64_t dflt)
{
	uint64_t v;
	return member_u64(st, name, &v) ? dflt : v;
}

static const char *member_cstr(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	if (!f || bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING)
		return NULL;
	return bt_field_string_get_value(f);
}

/* The integer array NAME of ST (NULL if absent): its length in *N. */
static const bt_field *member_array(const bt_field *st, const char *name, uint64_t *n)
{
	const bt_field *f = member(st, name);
	if (!f)
		return NULL;
	bt_field_class_type const t = bt_field_get_class_type(f);
	if (!bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY))
		return NULL;
	*n = bt_field_array_get_length(f);
	return f;
}

static uint64_t elem_u64(const bt_field *arr, uint64_t i)
{
	return bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(arr, i));
}

/* ---- pass 1: processes, modules, generations ----------------------------- */

static struct lt_proc *proc_get(struct lt_source *s, uint32_t vpid, uint64_t ts)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].vpid == vpid) {
			if (ts < s->procs[i].first_ts)
				s->procs[i].first_ts = ts;
			return &s->procs[i];
		}
	if (grow((void **)&s->procs, &s->cap_procs, s->n_procs + 1, sizeof(*s->procs)))
		return NULL;
	struct lt_proc *p = &s->procs[s->n_procs++];
	p->vpid = vpid;
	p->first_ts = ts;
	return p;
}

static int on_load(struct lt_source *s, struct lt_proc *p, const bt_field *pl, uint64_t ts, int pic_known)
{
	const char *path = member_cstr(pl, "path");
	uint64_t baddr, memsz;
	if (member_u64(pl, "baddr", &baddr) || member_u64(pl, "memsz", &memsz) || !path)
		return 0; /* not the layout we know: ignored */
	if (grow((void **)&p->mods, &p->cap_mods, p->n_mods + 1, sizeof(*p->mods)))
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
	m->is_pic = pic_known ? (int)u64_or(pl, "is_pic", 1) : 1;
	m->load_ts = ts;
	m->unload_ts = UINT64_MAX;
	(void)s;
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
	const bt_field *arr = member_array(pl, "build_id", &n);
	if (member_u64(pl, "baddr", &baddr) || !arr || n == 0 || n > SU_BUILD_ID_MAX)
		return;
	struct lt_module *m = module_at(p, baddr, ts);
	if (!m)
		return;
	for (uint64_t i = 0; i < n; i++)
		m->build_id[i] = (uint8_t)elem_u64(arr, i);
	m->build_id_len = (uint8_t)n;
}

static void on_unload(struct lt_proc *p, const bt_field *pl, uint64_t ts)
{
	uint64_t baddr;
	if (member_u64(pl, "baddr", &baddr))
		return;
	struct lt_module *m = module_at(p, baddr, ts);
	if (m && m->unload_ts == UINT64_MAX && m->load_ts <= ts)
		m->unload_ts = ts;
}

static int on_code_ranges(struct lt_proc *p, const bt_field *pl, uint64_t ts)
{
	uint64_t gen, n = 0;
	const bt_field *arr = member_array(pl, "ranges", &n);
	if (member_u64(pl, "generation", &gen) || !arr || n % 2 || n / 2 > UINT32_MAX)
		return 0;
	for (size_t i = 0; i < p->n_gens; i++)
		if (p->gens[i].generation == gen)
			return 0; /* a repeat: the first is kept */
	if (grow((void **)&p->gens, &p->cap_gens, p->n_gens + 1, sizeof(*p->gens)))
		return -ENOMEM;
	struct lt_gen *g = &p->gens[p->n_gens];
	memset(g, 0, sizeof(*g));
	g->vals = malloc((n ? n : 1) * sizeof(*g->vals));
	if (!g->vals)
		return -ENOMEM;
	p->n_gens++;
	for (uint64_t i = 0; i < n; i++)
		g->vals[i] = elem_u64(arr, i);
	g->generation = (uint32_t)gen;
	g->ts = ts;
	g->n = (uint32_t)(n / 2);
	g->codec_version = (uint8_t)u64_or(pl, "codec_version", 0);
	g->policy = (uint8_t)u64_or(pl, "policy", 0);
	g->stack_cap = (uint32_t)u64_or(pl, "stack_cap", 0);
	g->frequency_hz = (uint32_t)u64_or(pl, "frequency_hz", 0);
	uint64_t nb = 0;
	const bt_field *vb = member_array(pl, "vdso_build_id", &nb);
	if (vb && nb <= SU_BUILD_ID_MAX) {
		for (uint64_t i = 0; i < nb; i++)
			g->vdso_build_id[i] = (uint8_t)elem_u64(vb, i);
		g->vdso_build_id_len = (uint8_t)nb;
	}
	return 0;
}

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

/* End of pass 1: each process with stackcap generations becomes a
 * process section and its maps. */
static int emit_processes(struct lt_source *s)
{
	for (size_t i = 0; i < s->n_procs && !s->emit_rc; i++) {
		struct lt_proc *p = &s->procs[i];
		if (!p->n_gens)
			continue;
		const struct lt_gen *g0 = &p->gens[0];
		struct raw_event ev = {
			.kind = RAW_PROCESS_START, .ts = p->first_ts, .pid = p->vpid,
			.stream_id = p->vpid,
			.proc = { .pid = p->vpid, .comm = strdup(p->procname ? p->procname : ""),
				  .exe = strdup(main_path(p)), .frequency_hz = g0->frequency_hz,
				  .stack_cap = g0->stack_cap, .policy = g0->policy,
				  .codec_version = g0->codec_version },
		};
		if (!ev.proc.comm || !ev.proc.exe) {
			free(ev.proc.comm);
			free(ev.proc.exe);
			return -ENOMEM;
		}
		int rc = s->emit(s->ctx, &ev);
		if (rc) {
			s->emit_rc = rc;
			break;
		}
		for (size_t j = 0; j < p->n_gens; j++) {
			struct raw_event mev = { .kind = RAW_MAPS, .ts = p->gens[j].ts, .pid = p->vpid,
						 .stream_id = p->vpid };
			mev.maps = build_maps(p, &p->gens[j]);
			if (!mev.maps)
				return -ENOMEM;
			rc = s->emit(s->ctx, &mev);
			if (rc) {
				s->emit_rc = rc;
				break;
			}
		}
	}
	return 0;
}

/* ---- pass 2: samples ------------------------------------------------------ */

static struct lt_seg *seg_get(struct lt_source *s, uint32_t vpid, uint32_t vtid)
{
	for (size_t i = 0; i < s->n_segs; i++)
		if (s->segs[i].vpid == vpid && s->segs[i].vtid == vtid)
			return &s->segs[i];
	if (grow((void **)&s->segs, &s->cap_segs, s->n_segs + 1, sizeof(*s->segs)))
		return NULL;
	struct lt_seg *g = &s->segs[s->n_segs++];
	g->vpid = vpid;
	g->vtid = vtid;
	return g;
}

/* Copy the blob of PL into *BUF (grown as needed).  @return its length,
 * or -1 when absent, -ENOMEM. */
static int64_t copy_blob(const bt_field *pl, uint8_t **buf, size_t *cap)
{
	uint64_t n = 0;
	const bt_field *arr = member_array(pl, "blob", &n);
	if (!arr)
		return -1;
	if (n + 1 > *cap) {
		uint8_t *nb = realloc(*buf, n + 1);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = n + 1;
	}
	for (uint64_t i = 0; i < n; i++)
		(*buf)[i] = (uint8_t)elem_u64(arr, i);
	return (int64_t)n;
}

static int on_sample(struct lt_source *s, const bt_field *pl, int segment, uint32_t vpid, uint32_t vtid,
		     uint64_t ts)
{
	uint64_t gen;
	if (member_u64(pl, "generation", &gen))
		return 0;
	if (segment) {
		struct lt_seg *g = seg_get(s, vpid, vtid);
		if (!g)
			return -ENOMEM;
		int64_t const n = copy_blob(pl, &g->blob, &g->cap);
		if (n == -ENOMEM)
			return -ENOMEM;
		g->pending = n >= 0;
		g->len = n >= 0 ? (size_t)n : 0;
		g->generation = (uint32_t)gen;
		return 0;
	}
	int64_t const n = copy_blob(pl, &s->blob, &s->blob_cap);
	if (n == -ENOMEM)
		return -ENOMEM;
	if (n < 0)
		return 0;
	/* Its segment was recorded just before it in the same thread: the
	 * core pairs them by time, so it gets the sample's. */
	for (size_t i = 0; i < s->n_segs; i++) {
		struct lt_seg *g = &s->segs[i];
		if (g->pending && g->vpid == vpid && g->vtid == vtid) {
			g->pending = 0;
			struct raw_event sev = { .kind = RAW_SAMPLE_SEGMENT, .ts = ts, .pid = vpid, .tid = vtid,
						 .stream_id = vpid, .generation = g->generation,
						 .blob = g->blob, .blob_len = g->len };
			int const rc = s->emit(s->ctx, &sev);
			if (rc) {
				s->emit_rc = rc;
				return 0;
			}
		}
	}
	struct raw_event ev = { .kind = RAW_SAMPLE, .ts = ts, .pid = vpid, .tid = vtid, .stream_id = vpid,
				.generation = (uint32_t)gen, .blob = s->blob, .blob_len = (size_t)n };
	int const rc = s->emit(s->ctx, &ev);
	if (rc)
		s->emit_rc = rc;
	return 0;
}

/* ---- babeltrace2 messages ------------------------------------------------ */

static int handle_event(struct lt_source *s, const bt_message *msg)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(e));
	if (!name)
		return 0;
	int const ours = strncmp(name, "stackcap:", 9) == 0;
	if (!ours && strncmp(name, "lttng_ust_", 10) != 0)
		return 0; /* the user's own events */
	const bt_field *pl = bt_event_borrow_payload_field_const(e);
	const bt_field *cc = bt_event_borrow_common_context_field_const(e);
	uint64_t vpid, vtid;
	if (member_u64(cc, "vpid", &vpid) || member_u64(cc, "vtid", &vtid)) {
		if (!ours)
			return 0;
		set_err(s, "%s: stackcap events without the vpid and vtid contexts: record with "
			   "`lttng add-context -u -t vpid -t vtid` (docs/lttng.md)", s->dir);
		return -EINVAL;
	}
	const bt_clock_snapshot *cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
	uint64_t const ts = cs ? bt_clock_snapshot_get_value(cs) : 0;
	if (s->pass == PASS_SAMPLES) {
		if (!strcmp(name, "stackcap:sample"))
			return on_sample(s, pl, 0, (uint32_t)vpid, (uint32_t)vtid, ts);
		if (!strcmp(name, "stackcap:sample_segment"))
			return on_sample(s, pl, 1, (uint32_t)vpid, (uint32_t)vtid, ts);
		return 0;
	}
	if (!strcmp(name, "stackcap:sample") || !strcmp(name, "stackcap:sample_segment")) {
		s->samples_seen++;
		return 0;
	}
	struct lt_proc *p = proc_get(s, (uint32_t)vpid, ts);
	if (!p)
		return -ENOMEM;
	if (!strcmp(name, "stackcap:code_ranges"))
		return on_code_ranges(p, pl, ts);
	if (!strcmp(name, "lttng_ust_statedump:start")) {
		/* A state dump lists every module loaded now (again): what was
		 * known before counts as unloaded here, so after an exec() the
		 * old image's modules stop matching. */
		for (size_t i = 0; i < p->n_mods; i++)
			if (p->mods[i].unload_ts == UINT64_MAX && p->mods[i].load_ts < ts)
				p->mods[i].unload_ts = ts;
		return 0;
	}
	if (!strcmp(name, "lttng_ust_statedump:bin_info"))
		return on_load(s, p, pl, ts, 1);
	if (!strcmp(name, "lttng_ust_dl:dlopen") || !strcmp(name, "lttng_ust_dl:dlmopen") ||
	    !strcmp(name, "lttng_ust_lib:load"))
		return on_load(s, p, pl, ts, 0);
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
		const char *pn = member_cstr(pl, "procname");
		if (pn && !p->procname && !(p->procname = strdup(pn)))
			return -ENOMEM;
		return 0;
	}
	return 0;
}

static bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator *it, void *data)
{
	(void)it;
	(void)data;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator *it, void *data)
{
	struct lt_source *s = data;
	bt_message_array_const msgs;
	uint64_t count = 0;
	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	int rc = 0;
	for (uint64_t i = 0; i < count; i++) {
		const bt_message *m = msgs[i];
		if (rc == 0 && !s->emit_rc) {
			bt_message_type const t = bt_message_get_type(m);
			if (t == BT_MESSAGE_TYPE_EVENT) {
				rc = handle_event(s, m);
			} else if (t == BT_MESSAGE_TYPE_DISCARDED_EVENTS && s->pass == PASS_SAMPLES) {
				/* LTTng's ring buffer was full: records lost. */
				struct raw_event ev = { .kind = RAW_DISCARDED };
				if (bt_message_discarded_events_get_count(m, &ev.discarded) ==
					    BT_PROPERTY_AVAILABILITY_AVAILABLE && ev.discarded) {
					int const erc = s->emit(s->ctx, &ev);
					if (erc)
						s->emit_rc = erc;
				}
			}
		}
		bt_message_put_ref(m);
	}
	if (rc) {
		s->fatal = rc;
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	if (s->emit_rc)
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

static void take_bt_error(struct lt_source *s, const char *what)
{
	const bt_error *e = bt_current_thread_take_error();
	const char *cause = NULL;
	if (e && bt_error_get_cause_count(e) > 0)
		cause = bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0));
	set_err(s, "%s%s%s", what, cause ? ": " : "", cause ? cause : "");
	if (e)
		bt_error_release(e);
}

static const bt_plugin *find_plugin(const char *name)
{
	const bt_plugin *plugin = NULL;
	if (bt_plugin_find(name, BT_TRUE, BT_FALSE, BT_TRUE, BT_TRUE, BT_FALSE, &plugin) != BT_PLUGIN_FIND_STATUS_OK)
		return NULL;
	return plugin;
}

/* src.ctf.fs, one per trace below DIR (babeltrace2 2.0's component does
 * not search subdirectories) -> flt.utils.muxer -> our sink. */
static int run_graph(struct lt_source *s)
{
	int rc = -1;
	bt_graph *g = bt_graph_create(0);
	const bt_plugin *ctf = find_plugin("ctf");
	const bt_plugin *utils = find_plugin("utils");
	const bt_component_class_source *src_cls =
		ctf ? bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs") : NULL;
	const bt_component_class_filter *mux_cls =
		utils ? bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer") : NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;

	if (!src_cls || !mux_cls) {
		set_err(s, "babeltrace2 plugins ctf and utils not found (apt-get install babeltrace2)");
		goto out;
	}
	if (!g) {
		set_err(s, "out of memory");
		goto out;
	}
	if (bt_graph_add_filter_component(g, mux_cls, "mux", NULL, BT_LOGGING_LEVEL_NONE, &mux) ||
	    bt_graph_add_simple_sink_component(g, "sink", sink_init, sink_consume, NULL, s, &sink)) {
		take_bt_error(s, "cannot set up babeltrace2");
		goto out;
	}
	for (size_t t = 0; t < s->n_traces; t++) {
		const bt_component_source *src = NULL;
		bt_value *params = bt_value_map_create();
		bt_value *inputs = NULL;
		char name[32];
		snprintf(name, sizeof(name), "src%zu", t);
		if (!params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ||
		    bt_value_array_append_string_element(inputs, s->traces[t])) {
			bt_value_put_ref(params);
			set_err(s, "out of memory");
			goto out;
		}
		int const arc = bt_graph_add_source_component(g, src_cls, name, params, BT_LOGGING_LEVEL_NONE, &src);
		bt_value_put_ref(params);
		if (arc) {
			take_bt_error(s, "cannot open the LTTng trace with babeltrace2");
			goto out;
		}
		uint64_t const nout = bt_component_source_get_output_port_count(src);
		for (uint64_t i = 0; i < nout; i++) {
			const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(
				mux, bt_component_filter_get_input_port_count(mux) - 1);
			if (bt_graph_connect_ports(g, bt_component_source_borrow_output_port_by_index_const(src, i),
						   in, NULL)) {
				take_bt_error(s, "cannot connect babeltrace2 ports");
				goto out;
			}
		}
	}
	if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL)) {
		take_bt_error(s, "cannot connect babeltrace2 ports");
		goto out;
	}
	for (;;) {
		bt_graph_run_status const st = bt_graph_run(g);
		if (st == BT_GRAPH_RUN_STATUS_AGAIN)
			continue;
		if (st == BT_GRAPH_RUN_STATUS_OK)
			rc = 0;
		else if (s->fatal)
			rc = s->fatal;
		else
			take_bt_error(s, "babeltrace2 could not read the LTTng trace");
		break;
	}
out:
	if (rc && s->fatal == -ENOMEM)
		set_err(s, "out of memory");
	bt_graph_put_ref(g);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return rc;
}

/* ---- damaged stream files ------------------------------------------------- */

/* LTTng's packet header and context put magic and packet_size where ours
 * do (docs/trace-format.md): su_ctf_complete_packets() finds where the
 * complete packets of a stream file end. */

static void rm_staged(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		char p[8192];
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int copy_prefix(const char *src, const char *dst, uint64_t len)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		int const e = -errno;
		close(in);
		return e;
	}
	char buf[65536];
	int rc = 0;
	while (len > 0 && !rc) {
		ssize_t const n = read(in, buf, len < sizeof(buf) ? len : sizeof(buf));
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else if (write(out, buf, (size_t)n) != n)
			rc = -EIO;
		else
			len -= (uint64_t)n;
	}
	close(in);
	if (close(out) && !rc)
		rc = -errno;
	return rc;
}

/* If a stream file of trace directory *DIR ends inside a packet, replace
 * *DIR by a private copy (metadata and intact files linked, damaged ones
 * cut after their last complete packet, no index: it would name the lost
 * packets), so babeltrace2 reads every complete packet.  @return 0 or
 * -errno. */
static int stage_if_damaged(struct lt_source *s, char **dir)
{
	DIR *d = opendir(*dir);
	if (!d)
		return 0;
	char *stage = NULL;
	struct dirent *e;
	int rc = 0;
	char src[8192], dst[8192];
	/* Two rounds: find damage; then, if any, build the copy. */
	for (int round = 0; round < 2 && !rc; round++) {
		int damaged = 0;
		rewinddir(d);
		while (!rc && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(src, sizeof(src), "%s/%s", *dir, e->d_name);
			struct stat sb;
			if (stat(src, &sb) || !S_ISREG(sb.st_mode))
				continue;
			uint64_t good = (uint64_t)sb.st_size;
			if (strcmp(e->d_name, "metadata") != 0) {
				int const fd = open(src, O_RDONLY | O_CLOEXEC);
				if (fd >= 0) {
					good = su_ctf_complete_packets(fd, (uint64_t)sb.st_size);
					close(fd);
				}
			}
			if (good < (uint64_t)sb.st_size) {
				damaged = 1;
				if (round == 1) {
					su_reader_warn("%s: cut or malformed packet at byte %llu of %llu: only the "
						       "packets before it are read", src, (unsigned long long)good,
						       (unsigned long long)sb.st_size);
					s->rep->truncated_files++;
				}
			}
			if (round == 1) {
				snprintf(dst, sizeof(dst), "%s/%s", stage, e->d_name);
				rc = good < (uint64_t)sb.st_size ? copy_prefix(src, dst, good)
								  : (symlink(src, dst) ? -errno : 0);
			}
		}
		if (round == 0) {
			if (!damaged)
				break;
			const char *tmp = getenv("TMPDIR");
			char tpl[4200];
			snprintf(tpl, sizeof(tpl), "%s/stackunwind-lttng.XXXXXX", tmp && *tmp ? tmp : "/tmp");
			if (!mkdtemp(tpl) || !(stage = strdup(tpl)) ||
			    grow((void **)&s->staged, &s->cap_staged, s->n_staged + 1, sizeof(*s->staged))) {
				rc = -errno ? -errno : -ENOMEM;
				free(stage);
				stage = NULL;
				break;
			}
			s->staged[s->n_staged++] = stage;
		}
	}
	closedir(d);
	if (!rc && stage) {
		char *const copy = strdup(stage);
		if (!copy)
			return -ENOMEM;
		free(*dir);
		*dir = copy;
	}
	return rc;
}

/* ---- the source ----------------------------------------------------------- */

static int find_lttng_ust(struct lt_source *s, const char *dir, int depth);

static void lt_close(void *h)
{
	struct lt_source *s = h;
	if (!s)
		return;
	for (size_t i = 0; i < s->n_procs; i++) {
		struct lt_proc *p = &s->procs[i];
		for (size_t j = 0; j < p->n_mods; j++)
			free(p->mods[j].path);
		for (size_t j = 0; j < p->n_gens; j++)
			free(p->gens[j].vals);
		free(p->mods);
		free(p->gens);
		free(p->procname);
	}
	free(s->procs);
	for (size_t i = 0; i < s->n_segs; i++)
		free(s->segs[i].blob);
	free(s->segs);
	free(s->blob);
	for (size_t i = 0; i < s->n_traces; i++)
		free(s->traces[i]);
	free(s->traces);
	for (size_t i = 0; i < s->n_staged; i++) {
		rm_staged(s->staged[i]);
		free(s->staged[i]);
	}
	free(s->staged);
	free(s);
}

static void *lt_open(const char *dir, struct source_report *rep, char *err, size_t errlen)
{
	struct lt_source *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->rep = rep;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	int const n = find_lttng_ust(s, dir, 6);
	if (n <= 0) {
		snprintf(err, errlen, n < 0 ? "out of memory" : "%s holds no LTTng-UST trace", dir);
		lt_close(s);
		return NULL;
	}
	for (size_t i = 0; i < s->n_traces; i++) {
		int const rc = stage_if_damaged(s, &s->traces[i]);
		if (rc) {
			snprintf(err, errlen, "cannot stage the damaged trace %s: %s", s->traces[i], strerror(-rc));
			lt_close(s);
			return NULL;
		}
	}
	return s;
}

static int lt_run(void *h, enum source_pass pass, raw_emit_fn emit, void *ctx, char *err, size_t errlen)
{
	struct lt_source *s = h;
	s->pass = pass;
	s->emit = emit;
	s->ctx = ctx;
	s->emit_rc = 0;
	s->fatal = 0;
	s->err = err;
	s->errlen = errlen;
	int rc = run_graph(s);
	if (rc)
		return rc;
	if (pass == PASS_PROCESS) {
		int has_gens = 0;
		for (size_t i = 0; i < s->n_procs; i++)
			has_gens |= s->procs[i].n_gens > 0;
		if (!has_gens) {
			set_err(s, "%s: no stackcap:code_ranges event (%llu stackcap:sample events): enable "
				   "`stackcap:*` in the LTTng session and record with stackcap record --lttng or "
				   "liblttng-stackcap.so (docs/lttng.md)",
				s->dir, (unsigned long long)s->samples_seen);
			return -1;
		}
		rc = emit_processes(s);
		if (rc == -ENOMEM)
			set_err(s, "out of memory");
	}
	return rc ? rc : s->emit_rc;
}

const struct event_source su_source_lttng = {
	.name = "lttng",
	.open = lt_open,
	.run = lt_run,
	.close = lt_close,
	.no_process_end = 1,
};

/* ---- probing and the entry point ------------------------------------------ */

/* Does the CTF metadata file PATH (LTTng writes it packetized: text inside
 * binary packet headers) name the lttng-ust tracer? */
static int metadata_is_lttng_ust(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[16384];
	ssize_t const n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	static const char needle[] = "tracer_name = \"lttng-ust\"";
	for (ssize_t i = 0; i + (ssize_t)sizeof(needle) - 1 <= n; i++)
		if (buf[i] == 't' && memcmp(buf + i, needle, sizeof(needle) - 1) == 0)
			return 1;
	return 0;
}

/* LTTng-UST traces at DIR or below it (session dir, ust/uid/N/64-bit/):
 * counted, and added to S when not NULL.  @return how many, or -ENOMEM. */
static int find_lttng_ust(struct lt_source *s, const char *dir, int depth)
{
	char p[8192];
	snprintf(p, sizeof(p), "%s/metadata", dir);
	if (metadata_is_lttng_ust(p)) {
		if (!s)
			return 1;
		if (grow((void **)&s->traces, &s->cap_traces, s->n_traces + 1, sizeof(*s->traces)) ||
		    !(s->traces[s->n_traces] = strdup(dir)))
			return -ENOMEM;
		s->n_traces++;
		return 1;
	}
	if (depth <= 0)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat sb;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			int const n = find_lttng_ust(s, p, depth - 1);
			if (n < 0) {
				found = n;
				break;
			}
			found += n;
			if (found && !s)
				break;
		}
	}
	closedir(d);
	return found;
}

int su_lttng_trace_probe(const char *dir)
{
	struct stat sb;
	return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && find_lttng_ust(NULL, dir, 6) > 0;
}

int su_lttng_trace_read(const char *dir, const struct su_reader_opts *opts, const struct su_reader_callbacks *cb,
			struct su_reader_stats *stats, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	if (!su_lttng_trace_probe(dir)) {
		snprintf(err, errlen, "%s holds no LTTng-UST trace (no metadata naming tracer \"lttng-ust\")", dir);
		return -EINVAL;
	}
	return su_reader_run_source(dir, &su_source_lttng, opts, cb, stats, err, errlen);
}
