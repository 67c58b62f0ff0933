/* sink.stackcap.folded: folded stacks of the sample events that
 * filter.stackcap.unwind gave a callstack, built by export/folded.h from
 * the callstack fields as `stackunwind folded` builds them from resolved
 * frames: an entry with a function is that function, one without is
 * module+0xELFADDR (offset), one without module [unknown].  Samples that
 * could not be decoded are left out.  Parameters as stackunwind folded's
 * options: event=NAME (--event: the samples of that event only, by the
 * filter's event_name field), off-cpu=yes (--off-cpu: the off-CPU stacks
 * only, each counted as its blocked microseconds), no-inline, per-process,
 * per-thread, and path (the output file). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin.h"
#include "export/folded.h"

struct folded_sink {
	bt_self_component_sink *self;
	bt_message_iterator *it;
	char *path;
	struct folded_opts fold;
	struct folded_counts counts;
	/* member indexes of the callstack entry class ELEM (found by name once) */
	const bt_field_class *elem;
	uint64_t i_fn, i_mod, i_off, i_inl;
	struct text line;            /* the line being built */
	uint64_t samples;
	uint64_t bare;               /* `sample` events without a callstack */
	/* The last off_cpu event (format version 5): the sample of its stream
	 * and time is off-CPU time, left out as `stackunwind folded` does. */
	const bt_stream *off_stream;
	int64_t off_ts;
	uint64_t off_cpu;
	char *event;                 /* event=: only its samples */
	int off_only;                /* off-cpu=yes: only off-CPU stacks, weighted */
};

/* The event's time (ns from the clock's origin), or INT64_MIN. */
static int64_t event_ns(const bt_message *msg)
{
	const bt_clock_snapshot *cs;
	int64_t ns;
	if (!bt_message_event_borrow_stream_class_default_clock_class_const(msg))
		return INT64_MIN;
	cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
	return bt_clock_snapshot_get_ns_from_origin(cs, &ns) == BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK
		? ns : INT64_MIN;
}

/* ---- events -------------------------------------------------------------------- */

static const bt_field *member(const bt_field *st, const char *name)
{
	return st && bt_field_get_class_type(st) == BT_FIELD_CLASS_TYPE_STRUCTURE
		? bt_field_structure_borrow_member_field_by_name_const(st, name) : NULL;
}

static const char *member_str(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	return f && bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_STRING ? bt_field_string_get_value(f) : NULL;
}

static uint64_t member_u64(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	if (!f)
		return 0;
	bt_field_class_type const t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return bt_field_integer_unsigned_get_value(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return (uint64_t)bt_field_integer_signed_get_value(f);
	return 0;
}

/* Find the members of callstack entry class EC (its member types checked).
 * @return 0, or -1 when it is not the filter's. */
static int entry_class(struct folded_sink *s, const bt_field_class *ec)
{
	if (ec == s->elem)
		return 0;
	s->elem = NULL;
	if (bt_field_class_get_type(ec) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return -1;
	static const struct { const char *name; bt_field_class_type type; } want[4] = {
		{ "function", BT_FIELD_CLASS_TYPE_STRING }, { "module", BT_FIELD_CLASS_TYPE_STRING },
		{ "offset", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER }, { "inlined", BT_FIELD_CLASS_TYPE_BOOL },
	};
	uint64_t *const idx[4] = { &s->i_fn, &s->i_mod, &s->i_off, &s->i_inl };
	uint64_t const n = bt_field_class_structure_get_member_count(ec);
	for (int w = 0; w < 4; w++) {
		uint64_t i = 0;
		for (; i < n; i++) {
			const bt_field_class_structure_member *m = bt_field_class_structure_borrow_member_by_index_const(ec, i);
			if (!strcmp(bt_field_class_structure_member_get_name(m), want[w].name))
				break;
		}
		if (i == n || bt_field_class_get_type(bt_field_class_structure_member_borrow_field_class_const(
			    bt_field_class_structure_borrow_member_by_index_const(ec, i))) != want[w].type)
			return -1;
		*idx[w] = i;
	}
	s->elem = ec;
	return 0;
}

/* Count the stack of event message MSG, if it carries one. */
static int on_event(struct folded_sink *s, const bt_message *msg)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const bt_field *pl = bt_event_borrow_payload_field_const(e);
	const bt_field *cs = member(pl, SC_FIELD_CALLSTACK);
	const char *comm = member_str(pl, SC_FIELD_COMM);
	const char *end = member_str(pl, SC_FIELD_UNWIND_END);
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(e));
	if (name && !strcmp(name, "off_cpu")) {
		s->off_stream = bt_event_borrow_stream_const(e);
		s->off_ts = event_ns(msg);
		return 0;
	}
	if (!SC_IS_SAMPLE_EVENT(name))
		return 0; /* a user's event with its sample's stack: counted there */
	/* Off-CPU time: the filter's off_cpu_ns, else (an older filter's
	 * output) the off_cpu event just before the sample. */
	uint64_t off_ns = 0;
	int const off = member(pl, SC_FIELD_OFF_CPU) ? (off_ns = member_u64(pl, SC_FIELD_OFF_CPU)) != 0
		      : s->off_stream && s->off_stream == bt_event_borrow_stream_const(e) && s->off_ts == event_ns(msg);
	if (s->off_stream && s->off_stream == bt_event_borrow_stream_const(e) && s->off_ts == event_ns(msg))
		s->off_stream = NULL;
	if (off != s->off_only) {
		s->off_cpu += off;
		return 0;
	}
	if (s->event && cs) {
		const char *ev = member_str(pl, SC_FIELD_EVENT);
		if (strcmp(ev ? ev : "cpu-clock", s->event))
			return 0;
	}
	if (!cs) {
		s->bare++;
		return 0;
	}
	if (!cs || !comm || !end || !strcmp(end, SC_END_NOT_DECODED) ||
	    !bt_field_class_type_is(bt_field_get_class_type(cs), BT_FIELD_CLASS_TYPE_ARRAY))
		return 0;
	if (entry_class(s, bt_field_class_array_borrow_element_field_class_const(bt_field_borrow_class_const(cs))))
		return 0;
	uint64_t pid = 0, tid = 0;
	if (s->fold.root != FOLDED_ROOT_COMM) {
		/* pid/tid: the stackcap packet context, or LTTng's vpid/vtid context. */
		const bt_packet *pkt = bt_stream_class_supports_packets(bt_stream_borrow_class_const(
			bt_event_borrow_stream_const(e))) ? bt_event_borrow_packet_const(e) : NULL;
		const bt_field *ctx = pkt ? bt_packet_borrow_context_field_const(pkt) : NULL;
		const bt_field *cc = bt_event_borrow_common_context_field_const(e);
		pid = member(ctx, "pid") ? member_u64(ctx, "pid") : member_u64(cc, "vpid");
		tid = member(ctx, "tid") ? member_u64(ctx, "tid") : member_u64(cc, "vtid");
	}
	s->line.len = 0;
	folded_root(&s->line, &s->fold, comm, pid, tid, strcmp(end, "outermost") ? end : NULL);
	for (uint64_t i = bt_field_array_get_length(cs); i-- > 0;) {
		const bt_field *f = bt_field_array_borrow_element_field_by_index_const(cs, i);
		if (s->fold.no_inline &&
		    bt_field_bool_get_value(bt_field_structure_borrow_member_field_by_index_const(f, s->i_inl)))
			continue;
		const char *fn = bt_field_string_get_value(bt_field_structure_borrow_member_field_by_index_const(f, s->i_fn));
		const char *mod = bt_field_string_get_value(bt_field_structure_borrow_member_field_by_index_const(f, s->i_mod));
		if (fn && fn[0])
			folded_function(&s->line, &s->fold, fn, mod);
		else if (!mod || !mod[0])
			folded_unknown(&s->line);
		else
			folded_address(&s->line, &s->fold, mod, bt_field_integer_unsigned_get_value(
				bt_field_structure_borrow_member_field_by_index_const(f, s->i_off)));
	}
	if (s->line.oom)
		return -ENOMEM;
	s->samples++;
	if (s->off_only) {
		/* Microseconds blocked, at least 1 (format.c's weight). */
		uint64_t const us = (off_ns + 500) / 1000;
		return folded_counts_add_n(&s->counts, s->line.buf, s->line.len, us ? us : 1);
	}
	return folded_counts_add(&s->counts, s->line.buf, s->line.len);
}

static int write_out(struct folded_sink *s)
{
	FILE *out = stdout;
	if (s->path && !(out = fopen(s->path, "w"))) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(bt_self_component_sink_as_self_component(s->self),
			"cannot write %s: %s", s->path, strerror(errno));
		return -1;
	}
	folded_counts_print(&s->counts, out);
	folded_counts_free(&s->counts);
	int bad = fflush(out) != 0 || ferror(out);
	if (out != stdout)
		bad |= fclose(out) != 0;
	if (bad) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(bt_self_component_sink_as_self_component(s->self),
			"write error on %s", s->path ? s->path : "standard output");
		return -1;
	}
	return 0;
}

/* ---- the component --------------------------------------------------------------- */

bt_component_class_initialize_method_status folded_init(bt_self_component_sink *self,
	bt_self_component_sink_configuration *config, const bt_value *params, void *init_data)
{
	static const char *const known[] = { "path", "no-inline", "per-process", "per-thread", "event", "off-cpu" };
	(void)config;
	(void)init_data;
	bt_self_component *sc = bt_self_component_sink_as_self_component(self);
	if (sc_check_params(sc, params, known, sizeof(known) / sizeof(known[0])))
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	struct folded_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	s->self = self;
	const bt_value *v = bt_value_map_borrow_entry_value_const(params, "path");
	if (v && !bt_value_is_string(v)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc, "parameter path: a string");
		free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	if (v && !(s->path = strdup(bt_value_string_get(v)))) {
		free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	v = bt_value_map_borrow_entry_value_const(params, "event");
	if (v && !bt_value_is_string(v)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc, "parameter event: a string (event=\"sched:sched_switch\")");
		free(s->path);
		free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	if (v && !(s->event = strdup(bt_value_string_get(v)))) {
		free(s->path);
		free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	int const ni = sc_param_bool(params, "no-inline");
	int const pp = sc_param_bool(params, "per-process");
	int const pt = sc_param_bool(params, "per-thread");
	int const oc = sc_param_bool(params, "off-cpu");
	if (ni < 0 || pp < 0 || pt < 0 || oc < 0) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc,
			"parameters no-inline, per-process, per-thread and off-cpu are booleans (e.g. no-inline=yes)");
		free(s->event);
		free(s->path);
		free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	s->off_only = oc;
	s->fold = (struct folded_opts){ .root = pt ? FOLDED_ROOT_THREAD : pp ? FOLDED_ROOT_PROCESS : FOLDED_ROOT_COMM,
					.no_inline = ni };
	if (bt_self_component_sink_add_input_port(self, "in", NULL, NULL)) {
		free(s->event);
		free(s->path);
		free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	bt_self_component_set_data(sc, s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

void folded_finalize(bt_self_component_sink *self)
{
	struct folded_sink *s = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
	if (!s)
		return;
	bt_message_iterator_put_ref(s->it);
	folded_counts_free(&s->counts);
	free(s->line.buf);
	free(s->event);
	free(s->path);
	free(s);
}

bt_component_class_sink_graph_is_configured_method_status folded_graph_is_configured(bt_self_component_sink *self)
{
	struct folded_sink *s = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
	if (bt_message_iterator_create_from_sink_component(self,
		    bt_self_component_sink_borrow_input_port_by_name(self, "in"), &s->it) !=
	    BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_OK)
		return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR;
	return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;
}

bt_component_class_sink_consume_method_status folded_consume(bt_self_component_sink *self)
{
	struct folded_sink *s = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
	bt_message_array_const msgs;
	uint64_t n = 0;
	switch (bt_message_iterator_next(s->it, &msgs, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		if (s->bare && !s->samples) {
			/* Samples came, none unwound: the filter is missing. */
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(bt_self_component_sink_as_self_component(self),
				"%" PRIu64 " sample events, none with a callstack: put filter.stackcap.unwind "
				"before sink.stackcap.folded (-c filter.stackcap.unwind -c sink.stackcap.folded)", s->bare);
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
		}
		return write_out(s) ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR
				    : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	default:
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	int rc = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (!rc && bt_message_get_type(msgs[i]) == BT_MESSAGE_TYPE_EVENT)
			rc = on_event(s, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return rc ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR
		  : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}
