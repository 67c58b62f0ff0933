/* SPDX-License-Identifier: MIT */
/* The scripted babeltrace2 graph of the unit tests (bt2-fixture.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt2-fixture.h"

struct fx_src {
	const struct fx_script *script;
	bt_trace_class *tc;
	bt_stream_class *sc;
	bt_event_class **ecs;
};

struct fx_iter {
	struct fx_src *src;
	bt_stream *stream;
	bt_packet *packet;
	size_t pos;        /* step of the script: 0 beginning, events, discarded, end */
	size_t sub;        /* within an event with packets: 0 begin, 1 event, 2 end */
	int done;
};

static bt_field_class *uint_fc(bt_trace_class *tc, unsigned bits)
{
	bt_field_class *f = bt_field_class_integer_unsigned_create(tc);
	bt_field_class_integer_set_field_value_range(f, bits);
	return f;
}

/* Append member M to structure ST. */
static int add_member(bt_trace_class *tc, bt_field_class *st, const struct fx_member *m)
{
	bt_field_class *f = NULL, *len = NULL, *elem = NULL;
	switch (m->type) {
	case FX_U8: f = uint_fc(tc, 8); break;
	case FX_U32: f = uint_fc(tc, 32); break;
	case FX_U64: f = uint_fc(tc, 64); break;
	case FX_S32:
	case FX_S64:
		f = bt_field_class_integer_signed_create(tc);
		bt_field_class_integer_set_field_value_range(f, m->type == FX_S32 ? 32 : 64);
		break;
	case FX_STR: f = bt_field_class_string_create(tc); break;
	case FX_BOOL: f = bt_field_class_bool_create(tc); break;
	case FX_DOUBLE: f = bt_field_class_real_double_precision_create(tc); break;
	case FX_ENUM: {
		f = bt_field_class_enumeration_unsigned_create(tc);
		bt_field_class_integer_set_field_value_range(f, 8);
		for (uint64_t v = 0; v < 2; v++) {
			bt_integer_range_set_unsigned *rs = bt_integer_range_set_unsigned_create();
			bt_integer_range_set_unsigned_add_range(rs, v, v);
			bt_field_class_enumeration_unsigned_add_mapping(f, v ? "one" : "zero", rs);
			bt_integer_range_set_unsigned_put_ref(rs);
		}
		break;
	}
	case FX_U8_SEQ:
	case FX_U64_SEQ: {
		char lname[128];
		snprintf(lname, sizeof(lname), "_%s_length", m->name);
		len = uint_fc(tc, 32);
		if (bt_field_class_structure_append_member(st, lname, len))
			return -1;
		elem = uint_fc(tc, m->type == FX_U8_SEQ ? 8 : 64);
		f = bt_field_class_array_dynamic_create(tc, elem, len);
		break;
	}
	case FX_U8_DYN:
		elem = uint_fc(tc, 8);
		f = bt_field_class_array_dynamic_create(tc, elem, NULL);
		break;
	case FX_U8_ARR4:
		elem = uint_fc(tc, 8);
		f = bt_field_class_array_static_create(tc, elem, 4);
		break;
	case FX_VARIANT: {
		f = bt_field_class_variant_create(tc, NULL);
		bt_field_class *n = uint_fc(tc, 64), *s = bt_field_class_string_create(tc);
		bt_field_class_variant_without_selector_append_option(f, "n", n);
		bt_field_class_variant_without_selector_append_option(f, "s", s);
		bt_field_class_put_ref(n);
		bt_field_class_put_ref(s);
		break;
	}
	case FX_OPTION:
		elem = uint_fc(tc, 8);
		f = bt_field_class_option_without_selector_create(tc, elem);
		break;
	case FX_END:
		break;
	}
	int const rc = !f || bt_field_class_structure_append_member(st, m->name, f) ? -1 : 0;
	bt_field_class_put_ref(f);
	bt_field_class_put_ref(len);
	bt_field_class_put_ref(elem);
	return rc;
}

static bt_component_class_initialize_method_status src_init(bt_self_component_source *self,
							     bt_self_component_source_configuration *cfg,
							     const bt_value *params, void *data)
{
	(void)cfg;
	(void)params;
	const struct fx_script *s = data;
	bt_self_component *sc = bt_self_component_source_as_self_component(self);
	struct fx_src *src = calloc(1, sizeof(*src));
	if (!src || !(src->ecs = calloc(s->n_classes ? s->n_classes : 1, sizeof(*src->ecs))))
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	src->script = s;
	src->tc = bt_trace_class_create(sc);
	src->sc = bt_stream_class_create(src->tc);
	bt_clock_class *cc = bt_clock_class_create(sc);
	bt_stream_class_set_default_clock_class(src->sc, cc);
	bt_clock_class_put_ref(cc);
	if (s->packets)
		bt_stream_class_set_supports_packets(src->sc, BT_TRUE, BT_TRUE, BT_TRUE);
	if (s->discarded)
		bt_stream_class_set_supports_discarded_events(src->sc, BT_TRUE, BT_TRUE);
	if (!s->no_ids) {
		bt_field_class *ctx = bt_field_class_structure_create(src->tc);
		struct fx_member const ids[] = { { "vpid", FX_S32 }, { "vtid", FX_S32 } };
		for (int i = 0; i < 2; i++)
			add_member(src->tc, ctx, &ids[i]);
		bt_stream_class_set_event_common_context_field_class(src->sc, ctx);
		bt_field_class_put_ref(ctx);
	}
	for (size_t i = 0; i < s->n_classes; i++) {
		const struct fx_class *k = &s->classes[i];
		bt_event_class *ec = bt_event_class_create(src->sc);
		bt_event_class_set_name(ec, k->name);
		if (k->members[0].type != FX_END) {
			bt_field_class *pl = bt_field_class_structure_create(src->tc);
			for (const struct fx_member *m = k->members; m->type != FX_END; m++)
				if (add_member(src->tc, pl, m))
					return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
			if (bt_event_class_set_payload_field_class(ec, pl))
				return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
			bt_field_class_put_ref(pl);
		}
		src->ecs[i] = ec;
	}
	bt_self_component_set_data(sc, src);
	if (bt_self_component_source_add_output_port(self, "out", NULL, NULL))
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void src_fini(bt_self_component_source *self)
{
	struct fx_src *src = bt_self_component_get_data(bt_self_component_source_as_self_component(self));
	if (!src)
		return;
	for (size_t i = 0; i < src->script->n_classes; i++)
		bt_event_class_put_ref(src->ecs[i]);
	free(src->ecs);
	bt_stream_class_put_ref(src->sc);
	bt_trace_class_put_ref(src->tc);
	free(src);
}

static bt_message_iterator_class_initialize_method_status
iter_init(bt_self_message_iterator *it, bt_self_message_iterator_configuration *cfg, bt_self_component_port_output *port)
{
	(void)cfg;
	(void)port;
	struct fx_src *src = bt_self_component_get_data(bt_self_message_iterator_borrow_component(it));
	struct fx_iter *i = calloc(1, sizeof(*i));
	if (!i)
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	i->src = src;
	bt_trace *t = bt_trace_create(src->tc);
	i->stream = bt_stream_create(src->sc, t);
	bt_trace_put_ref(t);
	bt_self_message_iterator_set_data(it, i);
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void iter_fini(bt_self_message_iterator *it)
{
	struct fx_iter *i = bt_self_message_iterator_get_data(it);
	bt_packet_put_ref(i->packet);
	bt_stream_put_ref(i->stream);
	free(i);
}

/* Set FIELD to value V of member type T. */
static void set_value(bt_field *f, enum fx_type t, const struct fx_value *v)
{
	switch (t) {
	case FX_U8: case FX_U32: case FX_U64: case FX_ENUM:
		bt_field_integer_unsigned_set_value(f, v->u);
		break;
	case FX_S32: case FX_S64:
		bt_field_integer_signed_set_value(f, v->s);
		break;
	case FX_STR:
		bt_field_string_set_value(f, v->str ? v->str : "");
		break;
	case FX_BOOL:
		bt_field_bool_set_value(f, v->u ? BT_TRUE : BT_FALSE);
		break;
	case FX_DOUBLE:
		bt_field_real_double_precision_set_value(f, v->d);
		break;
	case FX_U8_SEQ: case FX_U64_SEQ: case FX_U8_DYN: case FX_U8_ARR4: {
		size_t const n = t == FX_U8_ARR4 ? 4 : v->n;
		if (t != FX_U8_ARR4)
			bt_field_array_dynamic_set_length(f, n);
		for (size_t k = 0; k < n; k++)
			bt_field_integer_unsigned_set_value(bt_field_array_borrow_element_field_by_index(f, k),
							    k < v->n ? v->arr[k] : 0);
		break;
	}
	case FX_VARIANT:
		bt_field_variant_select_option_by_index(f, v->u);
		if (v->u == 0)
			bt_field_integer_unsigned_set_value(bt_field_variant_borrow_selected_option_field(f), v->s >= 0 ? (uint64_t)v->s : 0);
		else
			bt_field_string_set_value(bt_field_variant_borrow_selected_option_field(f), v->str ? v->str : "");
		break;
	case FX_OPTION:
		bt_field_option_set_has_field(f, BT_TRUE);
		bt_field_integer_unsigned_set_value(bt_field_option_borrow_field(f), v->u);
		break;
	case FX_END:
		break;
	}
}

static bt_message *event_msg(bt_self_message_iterator *it, struct fx_iter *i, const struct fx_event *e)
{
	const struct fx_script *s = i->src->script;
	bt_event_class *ec = i->src->ecs[e->cls];
	bt_message *m = s->packets ? bt_message_event_create_with_packet_and_default_clock_snapshot(it, ec, i->packet, e->ts)
				   : bt_message_event_create_with_default_clock_snapshot(it, ec, i->stream, e->ts);
	if (!m)
		return NULL;
	bt_event *ev = bt_message_event_borrow_event(m);
	if (!s->no_ids) {
		bt_field *cc = bt_event_borrow_common_context_field(ev);
		bt_field_integer_signed_set_value(bt_field_structure_borrow_member_field_by_name(cc, "vpid"), e->vpid);
		bt_field_integer_signed_set_value(bt_field_structure_borrow_member_field_by_name(cc, "vtid"), e->vtid);
	}
	bt_field *pl = bt_event_borrow_payload_field(ev);
	const struct fx_class *k = &s->classes[e->cls];
	for (size_t n = 0; pl && k->members[n].type != FX_END; n++) {
		const struct fx_member *mem = &k->members[n];
		if (mem->type == FX_U8_SEQ || mem->type == FX_U64_SEQ) {
			char lname[128];
			snprintf(lname, sizeof(lname), "_%s_length", mem->name);
			bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_name(pl, lname),
							    e->v[n].n);
		}
		set_value(bt_field_structure_borrow_member_field_by_name(pl, mem->name), mem->type, &e->v[n]);
	}
	return m;
}

/* The next message of the script, or NULL at its end. */
static bt_message *next_msg(bt_self_message_iterator *it, struct fx_iter *i)
{
	const struct fx_script *s = i->src->script;
	if (i->pos == 0) {
		i->pos++;
		return bt_message_stream_beginning_create(it, i->stream);
	}
	size_t const ev = i->pos - 1;
	if (ev < s->n_events) {
		const struct fx_event *e = &s->events[ev];
		if (!s->packets) {
			i->pos++;
			return event_msg(it, i, e);
		}
		bt_message *m = NULL;
		if (i->sub == 0) {
			i->packet = bt_packet_create(i->stream);
			m = bt_message_packet_beginning_create_with_default_clock_snapshot(it, i->packet, e->ts);
		} else if (i->sub == 1) {
			m = event_msg(it, i, e);
		} else {
			m = bt_message_packet_end_create_with_default_clock_snapshot(it, i->packet, e->ts);
			bt_packet_put_ref(i->packet);
			i->packet = NULL;
		}
		if (++i->sub == 3) {
			i->sub = 0;
			i->pos++;
		}
		return m;
	}
	uint64_t const last = s->n_events ? s->events[s->n_events - 1].ts : 0;
	if (ev == s->n_events) {
		i->pos++;
		if (s->discarded) {
			bt_message *m = bt_message_discarded_events_create_with_default_clock_snapshots(it, i->stream, last,
													 last + 1);
			bt_message_discarded_events_set_count(m, s->discarded);
			return m;
		}
	}
	if (!i->done) {
		i->done = 1;
		return bt_message_stream_end_create(it, i->stream);
	}
	return NULL;
}

static bt_message_iterator_class_next_method_status iter_next(bt_self_message_iterator *it,
							       bt_message_array_const msgs, uint64_t capacity,
							       uint64_t *count)
{
	struct fx_iter *i = bt_self_message_iterator_get_data(it);
	uint64_t n = 0;
	while (n < capacity) {
		bt_message *m = next_msg(it, i);
		if (!m)
			break;
		msgs[n++] = m;
	}
	*count = n;
	if (n)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
	return i->done ? BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END
		       : BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
}

/* ---- the sink ---------------------------------------------------------------- */

struct fx_sink {
	fx_msg_fn fn;
	void *arg;
	int rc;
	bt_message_iterator *it;
};

static bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator *it, void *data)
{
	struct fx_sink *k = data;
	k->it = it;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator *it, void *data)
{
	struct fx_sink *k = data;
	bt_message_array_const msgs;
	uint64_t n;
	switch (bt_message_iterator_next(it, &msgs, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (!k->rc)
			k->rc = k->fn(k->arg, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return k->rc ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END
		     : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

int fx_run(const struct fx_script *script, const bt_component_class_filter *filter, void *filter_data,
	   fx_msg_fn fn, void *arg)
{
	bt_message_iterator_class *ic = bt_message_iterator_class_create(iter_next);
	bt_message_iterator_class_set_initialize_method(ic, iter_init);
	bt_message_iterator_class_set_finalize_method(ic, iter_fini);
	bt_component_class_source *cls = bt_component_class_source_create("fx", ic);
	bt_component_class_source_set_initialize_method(cls, src_init);
	bt_component_class_source_set_finalize_method(cls, src_fini);
	bt_graph *g = bt_graph_create(0);
	const bt_component_source *src = NULL;
	const bt_component_filter *flt = NULL;
	const bt_component_sink *sink = NULL;
	struct fx_sink k = { .fn = fn, .arg = arg };
	int rc = -1;
	if (bt_graph_add_source_component_with_initialize_method_data(g, cls, "src", NULL, (void *)script,
								       BT_LOGGING_LEVEL_NONE, &src) ||
	    (filter && bt_graph_add_filter_component_with_initialize_method_data(g, filter, "flt", NULL, filter_data,
										  BT_LOGGING_LEVEL_NONE, &flt)) ||
	    bt_graph_add_simple_sink_component(g, "sink", sink_init, sink_consume, NULL, &k, &sink))
		goto out;
	const bt_port_output *out = bt_component_source_borrow_output_port_by_index_const(src, 0);
	if (flt) {
		if (bt_graph_connect_ports(g, out, bt_component_filter_borrow_input_port_by_index_const(flt, 0), NULL))
			goto out;
		out = bt_component_filter_borrow_output_port_by_index_const(flt, 0);
	}
	if (bt_graph_connect_ports(g, out, bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL))
		goto out;
	bt_graph_run_status st;
	while ((st = bt_graph_run(g)) == BT_GRAPH_RUN_STATUS_AGAIN)
		;
	rc = k.rc ? k.rc : st == BT_GRAPH_RUN_STATUS_OK ? 0 : -1;
out:
	if (rc == -1)
		bt_current_thread_clear_error();
	bt_graph_put_ref(g);
	bt_component_class_source_put_ref(cls);
	bt_message_iterator_class_put_ref(ic);
	return rc;
}
