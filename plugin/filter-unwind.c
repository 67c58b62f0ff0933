/* filter.stackcap.unwind: every message passes through (copied into our
 * own trace IR, plugin/ir-copy.c); each `sample` event gets three payload
 * fields: `comm`, `callstack` (innermost frame first, inlined functions as
 * entries of their own) and `unwind_end`.
 *
 * Events reach the reader core one at a time (trace/reader-push.h).  A
 * sample may come before the maps event of its generation (the writer
 * stamps a snapshot when it writes it): such a sample and every message
 * after it wait in a queue until the maps arrive, or until the trace time
 * has moved WAIT_NS past it, or the queue holds MAX_QUEUE messages, or the
 * input ends; then a sample still without maps leaves with an empty
 * callstack (unwind_end "not-decoded").  Messages leave in arrival order.
 *
 * Which events are what is one table (event_map): the stackcap trace's
 * names today; LTTng's `stackcap:*` events go there too. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin.h"
#include "plugin/ir-copy.h"
#include "trace/reader-push.h"
#include "debuginfo/module.h"
#include "unwind/unwind.h"
#include "symbolize/symbolize.h"

#define WAIT_NS (5ull * 1000000000u)
#define MAX_QUEUE (1u << 20)
#define MAX_SYMFRAMES 64
#define DEFAULT_MAX_FRAMES 1024

/* Event class name -> what the reader core makes of it. */
static const struct {
	const char *name;
	enum raw_kind kind;
} event_map[] = {
	{ "sample", RAW_SAMPLE },
	{ "sample_full", RAW_SAMPLE_FULL },
	{ "sample_segment", RAW_SAMPLE_SEGMENT },
	{ "process_start", RAW_PROCESS_START },
	{ "maps", RAW_MAPS },
	{ "drops", RAW_DROPS },
	{ "process_end", RAW_PROCESS_END },
};

/* The tag of an event class: 1 + its raw_kind, 0 when not ours. */
static int event_tag(const char *name)
{
	for (size_t i = 0; name && i < sizeof(event_map) / sizeof(event_map[0]); i++)
		if (!strcmp(event_map[i].name, name))
			return 1 + (int)event_map[i].kind;
	return 0;
}

struct unwind_comp {
	bt_self_component *self;
	bt_self_component_filter *filter;
	const char **debug_dirs;     /* NULL-terminated */
	char *symfs;
	struct su_debuginfo_opts di;
	int no_inline;
	size_t max_frames;
};

struct qitem {
	bt_message *msg;
	int pending;                 /* a sample waiting to be decoded */
	struct raw_event ev;         /* of a pending sample; blob malloc'ed */
};

struct unwind_iter {
	struct unwind_comp *comp;
	bt_self_message_iterator *self;
	bt_message_iterator *up;
	struct ir_copy *copy;
	struct su_reader *reader;
	struct su_modcache *modules;
	struct su_unwinder *unwinder;
	struct su_frame *frames;
	struct { const struct su_map_entry *e; struct su_module *m; } emod[256];
	/* the queue: a ring of messages in arrival order */
	struct qitem *q;
	size_t qhead, qlen, qcap;
	size_t n_pending;
	uint64_t last_ts;
	int ended;
	/* the event whose sample is being decoded */
	bt_message *cur;
	int cur_done;
	int fatal;
	uint8_t *blob;               /* conversion buffer */
	size_t blob_cap;
};

/* ---- parameters --------------------------------------------------------------- */

static void comp_free(struct unwind_comp *c)
{
	if (!c)
		return;
	if (c->debug_dirs)
		for (size_t i = 0; c->debug_dirs[i]; i++)
			free((char *)c->debug_dirs[i]);
	free(c->debug_dirs);
	free(c->symfs);
	free(c);
}

static int parse_params(struct unwind_comp *c, const bt_value *params)
{
	const bt_value *v = bt_value_map_borrow_entry_value_const(params, "debug-dir");
	size_t nd = 0;
	c->debug_dirs = calloc(v && bt_value_is_array(v) ? bt_value_array_get_length(v) + 1 : 2, sizeof(char *));
	if (!c->debug_dirs)
		return -ENOMEM;
	if (v && bt_value_is_string(v)) {
		c->debug_dirs[nd++] = strdup(bt_value_string_get(v));
	} else if (v && bt_value_is_array(v)) {
		for (uint64_t i = 0; i < bt_value_array_get_length(v); i++) {
			const bt_value *e = bt_value_array_borrow_element_by_index_const(v, i);
			if (!bt_value_is_string(e)) {
				BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(c->self,
					"parameter debug-dir: an array of strings, element %" PRIu64 " is not", i);
				return -EINVAL;
			}
			c->debug_dirs[nd++] = strdup(bt_value_string_get(e));
		}
	} else if (v) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(c->self,
			"parameter debug-dir: a string or an array of strings");
		return -EINVAL;
	}
	for (size_t i = 0; i < nd; i++)
		if (!c->debug_dirs[i])
			return -ENOMEM;
	v = bt_value_map_borrow_entry_value_const(params, "symfs");
	if (v) {
		if (!bt_value_is_string(v)) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(c->self, "parameter symfs: a string");
			return -EINVAL;
		}
		if (!(c->symfs = strdup(bt_value_string_get(v))))
			return -ENOMEM;
	}
	int const nodbg = sc_param_bool(params, "no-debuginfod");
	int const noinl = sc_param_bool(params, "no-inline");
	if (nodbg < 0 || noinl < 0) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(c->self,
			"parameters no-debuginfod and no-inline are booleans (e.g. no-inline=yes)");
		return -EINVAL;
	}
	c->no_inline = noinl;
	c->max_frames = DEFAULT_MAX_FRAMES;
	v = bt_value_map_borrow_entry_value_const(params, "max-frames");
	if (v) {
		int64_t mf = bt_value_is_unsigned_integer(v) ? (int64_t)bt_value_integer_unsigned_get(v)
			   : bt_value_is_signed_integer(v) ? bt_value_integer_signed_get(v) : -1;
		if (mf < 1 || mf > 65536) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(c->self,
				"parameter max-frames: an integer between 1 and 65536");
			return -EINVAL;
		}
		c->max_frames = (size_t)mf;
	}
	c->di.debug_dirs = nd ? c->debug_dirs : NULL;
	c->di.symfs = c->symfs;
	c->di.no_debuginfod = nodbg;
	return 0;
}


bt_component_class_initialize_method_status unwind_init(bt_self_component_filter *self,
	bt_self_component_filter_configuration *config, const bt_value *params, void *init_data)
{
	static const char *const known[] = { "debug-dir", "symfs", "no-debuginfod", "no-inline", "max-frames" };
	(void)config;
	(void)init_data;
	struct unwind_comp *c = calloc(1, sizeof(*c));
	if (!c)
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	c->filter = self;
	c->self = bt_self_component_filter_as_self_component(self);
	int rc = sc_check_params(c->self, params, known, sizeof(known) / sizeof(known[0]));
	if (!rc)
		rc = parse_params(c, params);
	if (rc) {
		comp_free(c);
		return rc == -ENOMEM ? BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR
				     : BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	if (bt_self_component_filter_add_input_port(self, "in", NULL, NULL) ||
	    bt_self_component_filter_add_output_port(self, "out", NULL, NULL)) {
		comp_free(c);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	bt_self_component_set_data(c->self, c);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

void unwind_finalize(bt_self_component_filter *self)
{
	comp_free(bt_self_component_get_data(bt_self_component_filter_as_self_component(self)));
}

/* ---- the added fields ------------------------------------------------------------ */

/* ir-copy's hook: tag our event classes; a sample's payload gets
 * comm, callstack and unwind_end. */
static bt_field_class *extend_payload(void *arg, bt_trace_class *tc, const bt_event_class *in_ec,
				      bt_field_class *payload, int *tag, int *err)
{
	(void)arg;
	*tag = event_tag(bt_event_class_get_name(in_ec));
	if (*tag != 1 + RAW_SAMPLE && *tag != 1 + RAW_SAMPLE_FULL && *tag != 1 + RAW_SAMPLE_SEGMENT)
		return payload;
	/* A `sample` of someone else's trace is left alone. */
	if (!payload || !bt_field_class_structure_borrow_member_by_name_const(payload, "blob") ||
	    !bt_field_class_structure_borrow_member_by_name_const(payload, "generation")) {
		*tag = 0;
		return payload;
	}
	if (*tag != 1 + RAW_SAMPLE)
		return payload;
	bt_field_class *frame = bt_field_class_structure_create(tc);
	bt_field_class *ip = bt_field_class_integer_unsigned_create(tc);
	bt_field_class *fn = bt_field_class_string_create(tc);
	bt_field_class *mod = bt_field_class_string_create(tc);
	bt_field_class *off = bt_field_class_integer_unsigned_create(tc);
	bt_field_class *file = bt_field_class_string_create(tc);
	bt_field_class *line = bt_field_class_integer_unsigned_create(tc);
	bt_field_class *inl = bt_field_class_bool_create(tc);
	bt_field_class *comm = bt_field_class_string_create(tc);
	bt_field_class *end = bt_field_class_string_create(tc);
	bt_field_class *arr = NULL;
	*err = 1;
	if (frame && ip && fn && mod && off && file && line && inl && comm && end) {
		bt_field_class_integer_set_preferred_display_base(ip, BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL);
		bt_field_class_integer_set_preferred_display_base(off, BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL);
		if (!bt_field_class_structure_append_member(frame, "ip", ip) &&
		    !bt_field_class_structure_append_member(frame, "function", fn) &&
		    !bt_field_class_structure_append_member(frame, "module", mod) &&
		    !bt_field_class_structure_append_member(frame, "offset", off) &&
		    !bt_field_class_structure_append_member(frame, "file", file) &&
		    !bt_field_class_structure_append_member(frame, "line", line) &&
		    !bt_field_class_structure_append_member(frame, "inlined", inl) &&
		    (arr = bt_field_class_array_dynamic_create(tc, frame, NULL)) &&
		    !bt_field_class_structure_append_member(payload, SC_FIELD_COMM, comm) &&
		    !bt_field_class_structure_append_member(payload, SC_FIELD_CALLSTACK, arr) &&
		    !bt_field_class_structure_append_member(payload, SC_FIELD_UNWIND_END, end))
			*err = 0;
	}
	bt_field_class_put_ref(frame);
	bt_field_class_put_ref(ip);
	bt_field_class_put_ref(fn);
	bt_field_class_put_ref(mod);
	bt_field_class_put_ref(off);
	bt_field_class_put_ref(file);
	bt_field_class_put_ref(line);
	bt_field_class_put_ref(inl);
	bt_field_class_put_ref(comm);
	bt_field_class_put_ref(end);
	bt_field_class_put_ref(arr);
	return payload;
}

/* The maps entry and module of frame F, or NULL. */
static struct su_module *frame_module(struct unwind_iter *it, const struct su_maps *maps, const struct su_frame *f,
				      const struct su_map_entry **e_out)
{
	const struct su_map_entry *e = f->map >= 0 && maps && (uint64_t)f->map < maps->count
		? &maps->entries[f->map] : NULL;
	*e_out = e;
	if (!e)
		return NULL;
	size_t const slot = ((uintptr_t)e >> 4) % 256;
	if (it->emod[slot].e == e)
		return it->emod[slot].m;
	struct su_module *m = su_modcache_get(it->modules, e);
	if (m) {
		it->emod[slot].e = e;
		it->emod[slot].m = m;
	}
	return m;
}

struct frame_out {
	uint64_t ip, offset;
	const char *function, *module, *file;
	uint64_t line;
	int inlined;
};

static int set_frame(bt_field *arr, uint64_t *n, const struct frame_out *fo)
{
	if (bt_field_array_dynamic_set_length(arr, *n + 1))
		return -ENOMEM;
	bt_field *st = bt_field_array_borrow_element_field_by_index(arr, (*n)++);
	bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(st, 0), fo->ip);
	if (bt_field_string_set_value(bt_field_structure_borrow_member_field_by_index(st, 1), fo->function) ||
	    bt_field_string_set_value(bt_field_structure_borrow_member_field_by_index(st, 2), fo->module))
		return -ENOMEM;
	bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(st, 3), fo->offset);
	if (bt_field_string_set_value(bt_field_structure_borrow_member_field_by_index(st, 4), fo->file))
		return -ENOMEM;
	bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(st, 5), fo->line);
	bt_field_bool_set_value(bt_field_structure_borrow_member_field_by_index(st, 6), fo->inlined ? BT_TRUE : BT_FALSE);
	return 0;
}

/* Fill MSG's added fields: COMM, the frames and END (names as stackunwind
 * folded shows them: an unknown function is "" with its module and ELF
 * address; a pc outside every module has module "" too). */
static int fill_sample(struct unwind_iter *it, bt_message *msg, const struct su_sample *s,
		       const struct su_frame *frames, size_t nframes, const char *end)
{
	bt_field *pl = bt_event_borrow_payload_field(bt_message_event_borrow_event(msg));
	bt_field *comm = bt_field_structure_borrow_member_field_by_name(pl, SC_FIELD_COMM);
	bt_field *arr = bt_field_structure_borrow_member_field_by_name(pl, SC_FIELD_CALLSTACK);
	bt_field *endf = bt_field_structure_borrow_member_field_by_name(pl, SC_FIELD_UNWIND_END);
	if (!comm || !arr || !endf)
		return -EINVAL;
	if (bt_field_string_set_value(comm, s && s->process && s->process->comm[0] ? s->process->comm : "[unknown]") ||
	    bt_field_string_set_value(endf, end) || bt_field_array_dynamic_set_length(arr, 0))
		return -ENOMEM;
	uint64_t n = 0;
	for (size_t i = 0; i < nframes; i++) {
		const struct su_frame *f = &frames[i];
		const struct su_map_entry *e;
		struct su_module *m = frame_module(it, s->maps, f, &e);
		struct frame_out fo = { .ip = f->pc, .function = "", .module = "", .file = "" };
		if (!m) {
			if (set_frame(arr, &n, &fo))
				return -ENOMEM;
			continue;
		}
		uint64_t const elf_addr = f->pc - e->bias;
		fo.module = e->path[0] ? e->path : "[anon]";
		fo.offset = elf_addr;
		struct su_symframe sf[MAX_SYMFRAMES];
		size_t const ns = m->status == SU_MODULE_OK
			? su_symbolize(m, elf_addr - (f->activation ? 0 : 1), sf, MAX_SYMFRAMES) : 0;
		if (ns == 0 || !sf[ns - 1].function) {
			if (set_frame(arr, &n, &fo))
				return -ENOMEM;
			continue;
		}
		/* Innermost inlined function first; the real function last. */
		for (size_t k = it->comp->no_inline ? ns - 1 : 0; k < ns; k++) {
			fo.function = sf[k].function ? sf[k].function : "[unknown]";
			fo.file = sf[k].file ? sf[k].file : "";
			fo.line = sf[k].line;
			fo.inlined = k + 1 < ns;
			if (set_frame(arr, &n, &fo))
				return -ENOMEM;
		}
	}
	return 0;
}

/* The reader core's sample callback: unwind into the current message. */
static int on_sample(void *arg, const struct su_sample *s)
{
	struct unwind_iter *it = arg;
	if (!it->cur)
		return 0;
	enum su_unwind_end end = SU_END_ERROR;
	size_t const n = su_unwind(it->unwinder, s, it->frames, it->comp->max_frames, &end);
	int rc = fill_sample(it, it->cur, s, it->frames, n, su_unwind_end_name(end));
	it->cur_done = 1;
	return rc;
}

/* ---- babeltrace2 events -> raw events ----------------------------------------------- */

static const bt_field *member(const bt_field *st, const char *name)
{
	return st && bt_field_get_class_type(st) == BT_FIELD_CLASS_TYPE_STRUCTURE
		? bt_field_structure_borrow_member_field_by_name_const(st, name) : NULL;
}

static uint64_t member_u64(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	if (!f)
		return 0;
	bt_field_class_type const t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return (uint64_t)bt_field_integer_signed_get_value(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return bt_field_integer_unsigned_get_value(f);
	return 0;
}

static char *member_str(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	const char *s = f && bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_STRING ? bt_field_string_get_value(f) : NULL;
	return strdup(s ? s : "");
}

/* A u8 array member into BUF (at most CAP bytes).  @return its length. */
static uint64_t member_bytes(const bt_field *st, const char *name, uint8_t *buf, uint64_t cap)
{
	const bt_field *f = member(st, name);
	if (!f || !bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_ARRAY))
		return 0;
	uint64_t const n = bt_field_array_get_length(f);
	for (uint64_t i = 0; i < n && i < cap; i++) {
		const bt_field *e = bt_field_array_borrow_element_field_by_index_const(f, i);
		if (!bt_field_class_type_is(bt_field_get_class_type(e), BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
			return 0;
		buf[i] = (uint8_t)bt_field_integer_unsigned_get_value(e);
	}
	return n;
}

static int maps_of(const bt_field *pl, struct raw_event *ev)
{
	const bt_field *arr = member(pl, "entries");
	uint64_t const n = arr && bt_field_class_type_is(bt_field_get_class_type(arr), BT_FIELD_CLASS_TYPE_ARRAY)
		? bt_field_array_get_length(arr) : 0;
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->generation = (uint32_t)member_u64(pl, "generation");
	m->entries = calloc(n ? n : 1, sizeof(*m->entries));
	m->range_list = calloc(n ? n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		su_maps_free(m);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		const bt_field *e = bt_field_array_borrow_element_field_by_index_const(arr, i);
		struct su_map_entry *me = &m->entries[i];
		me->start = member_u64(e, "start");
		me->end = member_u64(e, "end");
		me->offset = member_u64(e, "offset");
		me->bias = member_u64(e, "bias");
		me->flags = (uint32_t)member_u64(e, "flags");
		uint64_t const bl = member_bytes(e, "build_id", me->build_id, SU_BUILD_ID_MAX);
		me->build_id_len = (uint8_t)(bl <= SU_BUILD_ID_MAX ? bl : 0);
		m->count = (uint32_t)i + 1;
		if (!(me->path = member_str(e, "path"))) {
			su_maps_free(m);
			return -ENOMEM;
		}
		m->range_list[i] = (struct stackcap_code_range){ me->start, me->end, (uint32_t)i };
	}
	ev->maps = m;
	return 0;
}

/* The raw event of IN (an event message of kind TAG - 1).  Blobs point
 * into it->blob until the next call. */
static int raw_of(struct unwind_iter *it, const bt_message *in, int tag, struct raw_event *ev)
{
	const bt_event *e = bt_message_event_borrow_event_const(in);
	const bt_field *pl = bt_event_borrow_payload_field_const(e);
	const bt_packet *pkt = bt_stream_class_supports_packets(bt_stream_borrow_class_const(bt_event_borrow_stream_const(e)))
		? bt_event_borrow_packet_const(e) : NULL;
	const bt_field *ctx = pkt ? bt_packet_borrow_context_field_const(pkt) : NULL;
	const bt_stream_class *sc = bt_stream_borrow_class_const(bt_event_borrow_stream_const(e));
	memset(ev, 0, sizeof(*ev));
	ev->kind = (enum raw_kind)(tag - 1);
	ev->pid = (uint32_t)member_u64(ctx, "pid");
	ev->tid = (uint32_t)member_u64(ctx, "tid");
	ev->ts = bt_stream_class_borrow_default_clock_class_const(sc)
		? bt_clock_snapshot_get_value(bt_message_event_borrow_default_clock_snapshot_const(in)) : 0;
	ev->stream_id = bt_stream_get_id(bt_event_borrow_stream_const(e));
	switch (ev->kind) {
	case RAW_SAMPLE:
	case RAW_SAMPLE_FULL:
	case RAW_SAMPLE_SEGMENT: {
		const bt_field *bf = member(pl, "blob");
		uint64_t const len = bf ? bt_field_array_get_length(bf) : 0;
		if (len + 1 > it->blob_cap) {
			uint8_t *nb = realloc(it->blob, len + 1);
			if (!nb)
				return -ENOMEM;
			it->blob = nb;
			it->blob_cap = len + 1;
		}
		ev->blob_len = member_bytes(pl, "blob", it->blob, len);
		ev->blob = it->blob;
		ev->generation = (uint32_t)member_u64(pl, "generation");
		return 0;
	}
	case RAW_PROCESS_START:
		ev->proc.pid = (uint32_t)member_u64(pl, "pid");
		ev->proc.ppid = (uint32_t)member_u64(pl, "ppid");
		ev->proc.comm = member_str(pl, "comm");
		ev->proc.exe = member_str(pl, "exe");
		ev->proc.clock_offset_ns = (int64_t)member_u64(pl, "clock_offset_ns");
		ev->proc.frequency_hz = (uint32_t)member_u64(pl, "frequency_hz");
		ev->proc.stack_cap = (uint32_t)member_u64(pl, "stack_cap");
		ev->proc.policy = (uint8_t)member_u64(pl, "policy");
		ev->proc.codec_version = (uint8_t)member_u64(pl, "codec_version");
		if (!ev->proc.comm || !ev->proc.exe) {
			free(ev->proc.comm);
			free(ev->proc.exe);
			return -ENOMEM;
		}
		return 0;
	case RAW_MAPS:
		return maps_of(pl, ev);
	case RAW_DROPS:
		ev->drop_tid = (uint32_t)member_u64(pl, "tid");
		ev->drops_total = member_u64(pl, "ring_full") + member_u64(pl, "nested") +
				  member_u64(pl, "no_stack_bounds") + member_u64(pl, "other");
		return 0;
	default:
		return 0;
	}
}

/* ---- the queue -------------------------------------------------------------------- */

static int q_push(struct unwind_iter *it, bt_message *msg, const struct raw_event *pending)
{
	if (it->qlen == it->qcap) {
		size_t const n = it->qcap ? 2 * it->qcap : 256;
		struct qitem *nq = malloc(n * sizeof(*nq));
		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < it->qlen; i++)
			nq[i] = it->q[(it->qhead + i) % it->qcap];
		free(it->q);
		it->q = nq;
		it->qcap = n;
		it->qhead = 0;
	}
	struct qitem *qi = &it->q[(it->qhead + it->qlen) % it->qcap];
	memset(qi, 0, sizeof(*qi));
	qi->msg = msg;
	if (pending) {
		qi->pending = 1;
		qi->ev = *pending;
		uint8_t *b = malloc(pending->blob_len ? pending->blob_len : 1);
		if (!b)
			return -ENOMEM;
		memcpy(b, pending->blob, pending->blob_len);
		qi->ev.blob = b;
		it->n_pending++;
	}
	it->qlen++;
	return 0;
}

/* Decode sample EV into MSG now (TAG's kind). */
static int decode_now(struct unwind_iter *it, bt_message *msg, const struct raw_event *ev)
{
	it->cur = ev->kind == RAW_SAMPLE ? msg : NULL;
	it->cur_done = 0;
	int rc = su_reader_push(it->reader, ev);
	if (rc == 0 && ev->kind == RAW_SAMPLE && !it->cur_done)
		rc = fill_sample(it, msg, NULL, NULL, 0, SC_END_NOT_DECODED);
	it->cur = NULL;
	return rc;
}

/* Decode the waiting samples that can be, in order; FORCE: all of them. */
static int resolve(struct unwind_iter *it, int force)
{
	for (size_t i = 0; i < it->qlen && it->n_pending; i++) {
		struct qitem *qi = &it->q[(it->qhead + i) % it->qcap];
		if (!qi->pending)
			continue;
		if (!force && !su_reader_can_decode(it->reader, &qi->ev) &&
		    it->last_ts < qi->ev.ts + WAIT_NS && it->qlen < MAX_QUEUE)
			break;
		int rc = decode_now(it, qi->msg, &qi->ev);
		free((void *)qi->ev.blob);
		qi->pending = 0;
		it->n_pending--;
		if (rc)
			return rc;
	}
	return 0;
}

static int handle(struct unwind_iter *it, const bt_message *in)
{
	int tag = 0;
	bt_message *out = ir_copy_message(it->copy, it->self, in, &tag);
	if (!out) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(it->self,
			"cannot copy a message: %s", ir_copy_error(it->copy));
		return -1;
	}
	if (!tag)
		return q_push(it, out, NULL);
	struct raw_event ev;
	int rc = raw_of(it, in, tag, &ev);
	if (rc) {
		bt_message_put_ref(out);
		return rc;
	}
	if (ev.ts > it->last_ts)
		it->last_ts = ev.ts;
	switch (ev.kind) {
	case RAW_SAMPLE:
	case RAW_SAMPLE_FULL:
	case RAW_SAMPLE_SEGMENT:
		if (it->n_pending || !su_reader_can_decode(it->reader, &ev))
			return q_push(it, out, &ev);
		rc = decode_now(it, out, &ev);
		if (rc) {
			bt_message_put_ref(out);
			return rc;
		}
		return q_push(it, out, NULL);
	default:
		/* The core takes process strings and maps, even on error. */
		rc = su_reader_push(it->reader, &ev);
		if (rc) {
			bt_message_put_ref(out);
			return rc;
		}
		rc = q_push(it, out, NULL);
		if (!rc && it->n_pending)
			rc = resolve(it, 0);
		return rc;
	}
}

/* ---- the message iterator ------------------------------------------------------------ */

static void iter_free(struct unwind_iter *it)
{
	if (!it)
		return;
	for (size_t i = 0; i < it->qlen; i++) {
		struct qitem *qi = &it->q[(it->qhead + i) % it->qcap];
		bt_message_put_ref(qi->msg);
		if (qi->pending)
			free((void *)qi->ev.blob);
	}
	free(it->q);
	bt_message_iterator_put_ref(it->up);
	ir_copy_free(it->copy);
	su_reader_free(it->reader);
	su_unwinder_free(it->unwinder);
	su_modcache_free(it->modules);
	free(it->frames);
	free(it->blob);
	free(it);
}

bt_message_iterator_class_initialize_method_status unwind_iter_init(bt_self_message_iterator *self,
	bt_self_message_iterator_configuration *config, bt_self_component_port_output *port)
{
	(void)config;
	(void)port;
	bt_self_component *sc = bt_self_message_iterator_borrow_component(self);
	struct unwind_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	it->comp = bt_self_component_get_data(sc);
	it->self = self;
	struct su_reader_callbacks cb = { .arg = it, .sample = on_sample };
	it->copy = ir_copy_new(sc, extend_payload, it);
	it->reader = su_reader_new(NULL, &cb);
	it->modules = su_modcache_new(&it->comp->di);
	if (it->modules)
		su_modcache_set_finalizers(it->modules, NULL, su_symbolize_cache_free);
	it->unwinder = it->modules ? su_unwinder_new(SU_UNWINDER_FAST, it->modules) : NULL;
	it->frames = calloc(it->comp->max_frames, sizeof(*it->frames));
	if (!it->copy || !it->reader || !it->unwinder || !it->frames) {
		iter_free(it);
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	bt_self_component_port_input *in = bt_self_component_filter_borrow_input_port_by_name(it->comp->filter, "in");
	if (bt_message_iterator_create_from_message_iterator(self, in, &it->up) !=
	    BT_MESSAGE_ITERATOR_CREATE_FROM_MESSAGE_ITERATOR_STATUS_OK) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(self, "cannot create the upstream iterator");
		iter_free(it);
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	bt_self_message_iterator_set_data(self, it);
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

void unwind_iter_finalize(bt_self_message_iterator *self)
{
	iter_free(bt_self_message_iterator_get_data(self));
}

bt_message_iterator_class_next_method_status unwind_iter_next(bt_self_message_iterator *self,
	bt_message_array_const msgs, uint64_t capacity, uint64_t *count)
{
	struct unwind_iter *it = bt_self_message_iterator_get_data(self);
	/* Fill the queue until its head can leave. */
	while (!it->ended && (it->qlen == 0 || it->q[it->qhead].pending)) {
		bt_message_array_const in;
		uint64_t n = 0;
		bt_message_iterator_next_status const st = bt_message_iterator_next(it->up, &in, &n);
		if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_END) {
			it->ended = 1;
			if (resolve(it, 1))
				return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
			break;
		}
		if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN) {
			if (it->qlen && !it->q[it->qhead].pending)
				break;
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_AGAIN;
		}
		if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR)
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_MEMORY_ERROR;
		if (st != BT_MESSAGE_ITERATOR_NEXT_STATUS_OK)
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
		int rc = 0;
		for (uint64_t i = 0; i < n; i++) {
			if (!rc)
				rc = handle(it, in[i]);
			bt_message_put_ref(in[i]);
		}
		if (!rc && it->n_pending)
			rc = resolve(it, 0); /* waited long enough? */
		if (rc == -ENOMEM)
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_MEMORY_ERROR;
		if (rc)
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	}
	uint64_t k = 0;
	while (k < capacity && it->qlen && !it->q[it->qhead].pending) {
		msgs[k++] = it->q[it->qhead].msg;
		it->qhead = (it->qhead + 1) % it->qcap;
		it->qlen--;
	}
	*count = k;
	if (k)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
}
