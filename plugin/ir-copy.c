/* Trace IR copier (ir-copy.h): upstream objects are mapped to ours on
 * first sight, by pointer, in small tables (a trace has a handful of
 * classes and streams).  Upstream classes and streams are referenced while
 * mapped, so a pointer never names another object. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "plugin/ir-copy.h"

struct pair {
	const void *in;
	void *out;
	int tag;
};

struct table {
	struct pair *v;
	size_t n, cap;
};

struct stream_pair {
	const bt_stream *in;
	bt_stream *out;
	const bt_packet *in_pkt;     /* the packet in progress */
	bt_packet *out_pkt;
};

struct ir_copy {
	bt_self_component *self;
	ir_extend_payload_fn extend;
	void *arg;
	struct table trace_classes;  /* in bt_trace_class -> out */
	struct table clock_classes;
	struct table stream_classes;
	struct table event_classes;
	struct table traces;
	struct table fcs;            /* field classes (length/selector lookups) */
	struct stream_pair *streams;
	size_t n_streams, cap_streams;
	char err[512];
};

static void set_err(struct ir_copy *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct ir_copy *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

const char *ir_copy_error(const struct ir_copy *c)
{
	return c->err;
}

static void *table_find(const struct table *t, const void *in, int *tag)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->v[i].in == in) {
			if (tag)
				*tag = t->v[i].tag;
			return t->v[i].out;
		}
	return NULL;
}

static int table_add(struct table *t, const void *in, void *out, int tag)
{
	if (t->n == t->cap) {
		size_t n = t->cap ? 2 * t->cap : 16;
		struct pair *nv = realloc(t->v, n * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = n;
	}
	t->v[t->n++] = (struct pair){ in, out, tag };
	return 0;
}

struct ir_copy *ir_copy_new(bt_self_component *self, ir_extend_payload_fn extend, void *arg)
{
	struct ir_copy *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->self = self;
	c->extend = extend;
	c->arg = arg;
	return c;
}

void ir_copy_free(struct ir_copy *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_streams; i++) {
		bt_stream_put_ref(c->streams[i].out);
		bt_packet_put_ref(c->streams[i].out_pkt);
		bt_stream_put_ref(c->streams[i].in);
	}
	free(c->streams);
	for (size_t i = 0; i < c->traces.n; i++) {
		bt_trace_put_ref(c->traces.v[i].in);
		bt_trace_put_ref(c->traces.v[i].out);
	}
	for (size_t i = 0; i < c->event_classes.n; i++) {
		bt_event_class_put_ref(c->event_classes.v[i].in);
		bt_event_class_put_ref(c->event_classes.v[i].out);
	}
	for (size_t i = 0; i < c->stream_classes.n; i++) {
		bt_stream_class_put_ref(c->stream_classes.v[i].in);
		bt_stream_class_put_ref(c->stream_classes.v[i].out);
	}
	for (size_t i = 0; i < c->clock_classes.n; i++) {
		bt_clock_class_put_ref(c->clock_classes.v[i].in);
		bt_clock_class_put_ref(c->clock_classes.v[i].out);
	}
	for (size_t i = 0; i < c->trace_classes.n; i++) {
		bt_trace_class_put_ref(c->trace_classes.v[i].in);
		bt_trace_class_put_ref(c->trace_classes.v[i].out);
	}
	free(c->trace_classes.v);
	free(c->clock_classes.v);
	free(c->stream_classes.v);
	free(c->event_classes.v);
	free(c->traces.v);
	free(c->fcs.v);
	free(c);
}

/* ---- field classes ----------------------------------------------------------- */

/* The field class at PATH, from the roots of the event class being copied. */
struct roots {
	const bt_field_class *pkt, *common, *specific, *payload;
};

static const bt_field_class *resolve_path(const struct roots *r, const bt_field_path *p)
{
	const bt_field_class *fc = NULL;
	switch (bt_field_path_get_root_scope(p)) {
	case BT_FIELD_PATH_SCOPE_PACKET_CONTEXT: fc = r->pkt; break;
	case BT_FIELD_PATH_SCOPE_EVENT_COMMON_CONTEXT: fc = r->common; break;
	case BT_FIELD_PATH_SCOPE_EVENT_SPECIFIC_CONTEXT: fc = r->specific; break;
	case BT_FIELD_PATH_SCOPE_EVENT_PAYLOAD: fc = r->payload; break;
	}
	uint64_t const n = bt_field_path_get_item_count(p);
	for (uint64_t i = 0; fc && i < n; i++) {
		const bt_field_path_item *it = bt_field_path_borrow_item_by_index_const(p, i);
		bt_field_class_type const t = bt_field_class_get_type(fc);
		switch (bt_field_path_item_get_type(it)) {
		case BT_FIELD_PATH_ITEM_TYPE_INDEX: {
			uint64_t const k = bt_field_path_item_index_get_index(it);
			if (t == BT_FIELD_CLASS_TYPE_STRUCTURE)
				fc = bt_field_class_structure_member_borrow_field_class_const(
					bt_field_class_structure_borrow_member_by_index_const(fc, k));
			else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT))
				fc = bt_field_class_variant_option_borrow_field_class_const(
					bt_field_class_variant_borrow_option_by_index_const(fc, k));
			else
				fc = NULL;
			break;
		}
		case BT_FIELD_PATH_ITEM_TYPE_CURRENT_ARRAY_ELEMENT:
			fc = bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)
				? bt_field_class_array_borrow_element_field_class_const(fc) : NULL;
			break;
		default:
			fc = NULL;
			break;
		}
	}
	return fc;
}

static bt_field_class *copy_fc(struct ir_copy *c, bt_trace_class *tc, const struct roots *r,
			       const bt_field_class *in);

/* The output field class of the length or selector at PATH (copied before). */
static bt_field_class *mapped_at(struct ir_copy *c, const struct roots *r, const bt_field_path *p)
{
	const bt_field_class *in = resolve_path(r, p);
	bt_field_class *out = in ? table_find(&c->fcs, in, NULL) : NULL;
	if (!out)
		set_err(c, "cannot find the length or selector field of a field class");
	return out;
}

static bt_field_class *copy_int(const bt_field_class *in, bt_field_class *out)
{
	if (!out)
		return NULL;
	bt_field_class_integer_set_field_value_range(out, bt_field_class_integer_get_field_value_range(in));
	bt_field_class_integer_set_preferred_display_base(out,
		bt_field_class_integer_get_preferred_display_base(in));
	return out;
}

static bt_field_class *copy_enum(struct ir_copy *c, const bt_field_class *in, bt_field_class *out, int is_signed)
{
	if (!copy_int(in, out))
		return NULL;
	uint64_t const n = bt_field_class_enumeration_get_mapping_count(in);
	for (uint64_t i = 0; i < n; i++) {
		int rc;
		if (is_signed) {
			const bt_field_class_enumeration_signed_mapping *m =
				bt_field_class_enumeration_signed_borrow_mapping_by_index_const(in, i);
			rc = bt_field_class_enumeration_signed_add_mapping(out,
				bt_field_class_enumeration_mapping_get_label(
					bt_field_class_enumeration_signed_mapping_as_mapping_const(m)),
				bt_field_class_enumeration_signed_mapping_borrow_ranges_const(m));
		} else {
			const bt_field_class_enumeration_unsigned_mapping *m =
				bt_field_class_enumeration_unsigned_borrow_mapping_by_index_const(in, i);
			rc = bt_field_class_enumeration_unsigned_add_mapping(out,
				bt_field_class_enumeration_mapping_get_label(
					bt_field_class_enumeration_unsigned_mapping_as_mapping_const(m)),
				bt_field_class_enumeration_unsigned_mapping_borrow_ranges_const(m));
		}
		if (rc) {
			set_err(c, "out of memory");
			bt_field_class_put_ref(out);
			return NULL;
		}
	}
	return out;
}

static bt_field_class *copy_variant(struct ir_copy *c, bt_trace_class *tc, const struct roots *r,
				    const bt_field_class *in, bt_field_class_type t)
{
	bt_field_class *sel = NULL;
	if (t != BT_FIELD_CLASS_TYPE_VARIANT_WITHOUT_SELECTOR_FIELD) {
		sel = mapped_at(c, r, bt_field_class_variant_with_selector_field_borrow_selector_field_path_const(in));
		if (!sel)
			return NULL;
	}
	bt_field_class *out = bt_field_class_variant_create(tc, sel);
	if (!out)
		return NULL;
	uint64_t const n = bt_field_class_variant_get_option_count(in);
	for (uint64_t i = 0; i < n; i++) {
		const bt_field_class_variant_option *o = bt_field_class_variant_borrow_option_by_index_const(in, i);
		bt_field_class *ofc = copy_fc(c, tc, r, bt_field_class_variant_option_borrow_field_class_const(o));
		const char *name = bt_field_class_variant_option_get_name(o);
		int rc = -1;
		if (ofc) {
			if (t == BT_FIELD_CLASS_TYPE_VARIANT_WITHOUT_SELECTOR_FIELD)
				rc = bt_field_class_variant_without_selector_append_option(out, name, ofc);
			else if (t == BT_FIELD_CLASS_TYPE_VARIANT_WITH_UNSIGNED_INTEGER_SELECTOR_FIELD)
				rc = bt_field_class_variant_with_selector_field_integer_unsigned_append_option(out, name, ofc,
					bt_field_class_variant_with_selector_field_integer_unsigned_option_borrow_ranges_const(
						bt_field_class_variant_with_selector_field_integer_unsigned_borrow_option_by_index_const(in, i)));
			else
				rc = bt_field_class_variant_with_selector_field_integer_signed_append_option(out, name, ofc,
					bt_field_class_variant_with_selector_field_integer_signed_option_borrow_ranges_const(
						bt_field_class_variant_with_selector_field_integer_signed_borrow_option_by_index_const(in, i)));
			bt_field_class_put_ref(ofc);
		}
		if (rc) {
			bt_field_class_put_ref(out);
			return NULL;
		}
	}
	return out;
}

static bt_field_class *copy_fc(struct ir_copy *c, bt_trace_class *tc, const struct roots *r,
			       const bt_field_class *in)
{
	bt_field_class *out = NULL;
	bt_field_class_type const t = bt_field_class_get_type(in);
	switch (t) {
	case BT_FIELD_CLASS_TYPE_BOOL:
		out = bt_field_class_bool_create(tc);
		break;
	case BT_FIELD_CLASS_TYPE_BIT_ARRAY:
		out = bt_field_class_bit_array_create(tc, bt_field_class_bit_array_get_length(in));
		break;
	case BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER:
		out = copy_int(in, bt_field_class_integer_unsigned_create(tc));
		break;
	case BT_FIELD_CLASS_TYPE_SIGNED_INTEGER:
		out = copy_int(in, bt_field_class_integer_signed_create(tc));
		break;
	case BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION:
		out = copy_enum(c, in, bt_field_class_enumeration_unsigned_create(tc), 0);
		break;
	case BT_FIELD_CLASS_TYPE_SIGNED_ENUMERATION:
		out = copy_enum(c, in, bt_field_class_enumeration_signed_create(tc), 1);
		break;
	case BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL:
		out = bt_field_class_real_single_precision_create(tc);
		break;
	case BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL:
		out = bt_field_class_real_double_precision_create(tc);
		break;
	case BT_FIELD_CLASS_TYPE_STRING:
		out = bt_field_class_string_create(tc);
		break;
	case BT_FIELD_CLASS_TYPE_STRUCTURE: {
		out = bt_field_class_structure_create(tc);
		uint64_t const n = bt_field_class_structure_get_member_count(in);
		for (uint64_t i = 0; out && i < n; i++) {
			const bt_field_class_structure_member *m = bt_field_class_structure_borrow_member_by_index_const(in, i);
			bt_field_class *mfc = copy_fc(c, tc, r, bt_field_class_structure_member_borrow_field_class_const(m));
			if (!mfc || bt_field_class_structure_append_member(out, bt_field_class_structure_member_get_name(m), mfc)) {
				bt_field_class_put_ref(mfc);
				bt_field_class_put_ref(out);
				return NULL;
			}
			bt_field_class_put_ref(mfc);
		}
		break;
	}
	case BT_FIELD_CLASS_TYPE_STATIC_ARRAY: {
		bt_field_class *e = copy_fc(c, tc, r, bt_field_class_array_borrow_element_field_class_const(in));
		if (!e)
			return NULL;
		out = bt_field_class_array_static_create(tc, e, bt_field_class_array_static_get_length(in));
		bt_field_class_put_ref(e);
		break;
	}
	case BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY_WITHOUT_LENGTH_FIELD:
	case BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY_WITH_LENGTH_FIELD: {
		bt_field_class *len = NULL;
		if (t == BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY_WITH_LENGTH_FIELD &&
		    !(len = mapped_at(c, r, bt_field_class_array_dynamic_with_length_field_borrow_length_field_path_const(in))))
			return NULL;
		bt_field_class *e = copy_fc(c, tc, r, bt_field_class_array_borrow_element_field_class_const(in));
		if (!e)
			return NULL;
		out = bt_field_class_array_dynamic_create(tc, e, len);
		bt_field_class_put_ref(e);
		break;
	}
	case BT_FIELD_CLASS_TYPE_VARIANT_WITHOUT_SELECTOR_FIELD:
	case BT_FIELD_CLASS_TYPE_VARIANT_WITH_UNSIGNED_INTEGER_SELECTOR_FIELD:
	case BT_FIELD_CLASS_TYPE_VARIANT_WITH_SIGNED_INTEGER_SELECTOR_FIELD:
		out = copy_variant(c, tc, r, in, t);
		break;
	default:
		set_err(c, "field class type %d not supported (options are CTF 2 only)", (int)t);
		return NULL;
	}
	if (!out) {
		if (!c->err[0])
			set_err(c, "out of memory");
		return NULL;
	}
	if (table_add(&c->fcs, in, out, 0)) {
		bt_field_class_put_ref(out);
		return NULL;
	}
	return out;
}

/* ---- classes ------------------------------------------------------------------- */

static bt_clock_class *map_clock_class(struct ir_copy *c, const bt_clock_class *in)
{
	bt_clock_class *out = table_find(&c->clock_classes, in, NULL);
	if (out)
		return out;
	out = bt_clock_class_create(c->self);
	if (!out)
		return NULL;
	if (bt_clock_class_get_name(in))
		bt_clock_class_set_name(out, bt_clock_class_get_name(in));
	if (bt_clock_class_get_description(in))
		bt_clock_class_set_description(out, bt_clock_class_get_description(in));
	bt_clock_class_set_frequency(out, bt_clock_class_get_frequency(in));
	bt_clock_class_set_precision(out, bt_clock_class_get_precision(in));
	int64_t s;
	uint64_t cy;
	bt_clock_class_get_offset(in, &s, &cy);
	bt_clock_class_set_offset(out, s, cy);
	bt_clock_class_set_origin_is_unix_epoch(out, bt_clock_class_origin_is_unix_epoch(in));
	if (bt_clock_class_get_uuid(in))
		bt_clock_class_set_uuid(out, bt_clock_class_get_uuid(in));
	if (table_add(&c->clock_classes, in, out, 0)) {
		bt_clock_class_put_ref(out);
		return NULL;
	}
	bt_clock_class_get_ref(in);
	return out;
}

static bt_trace_class *map_trace_class(struct ir_copy *c, const bt_trace_class *in)
{
	bt_trace_class *out = table_find(&c->trace_classes, in, NULL);
	if (out)
		return out;
	out = bt_trace_class_create(c->self);
	if (!out)
		return NULL;
	bt_trace_class_set_assigns_automatic_stream_class_id(out, BT_FALSE);
	if (table_add(&c->trace_classes, in, out, 0)) {
		bt_trace_class_put_ref(out);
		return NULL;
	}
	bt_trace_class_get_ref(in);
	return out;
}

static bt_stream_class *map_stream_class(struct ir_copy *c, const bt_stream_class *in)
{
	bt_stream_class *out = table_find(&c->stream_classes, in, NULL);
	if (out)
		return out;
	bt_trace_class *tc = map_trace_class(c, bt_stream_class_borrow_trace_class_const(in));
	if (!tc)
		return NULL;
	out = bt_stream_class_create_with_id(tc, bt_stream_class_get_id(in));
	if (!out)
		return NULL;
	if (bt_stream_class_get_name(in))
		bt_stream_class_set_name(out, bt_stream_class_get_name(in));
	const bt_clock_class *cc = bt_stream_class_borrow_default_clock_class_const(in);
	if (cc) {
		bt_clock_class *occ = map_clock_class(c, cc);
		if (!occ)
			goto fail;
		bt_stream_class_set_default_clock_class(out, occ);
	}
	bt_stream_class_set_assigns_automatic_event_class_id(out, BT_FALSE);
	bt_stream_class_set_assigns_automatic_stream_id(out, BT_FALSE);
	bt_stream_class_set_supports_packets(out, bt_stream_class_supports_packets(in),
		bt_stream_class_packets_have_beginning_default_clock_snapshot(in),
		bt_stream_class_packets_have_end_default_clock_snapshot(in));
	bt_stream_class_set_supports_discarded_events(out, bt_stream_class_supports_discarded_events(in),
		bt_stream_class_discarded_events_have_default_clock_snapshots(in));
	bt_stream_class_set_supports_discarded_packets(out, bt_stream_class_supports_discarded_packets(in),
		bt_stream_class_discarded_packets_have_default_clock_snapshots(in));
	struct roots r = { bt_stream_class_borrow_packet_context_field_class_const(in),
			   bt_stream_class_borrow_event_common_context_field_class_const(in), NULL, NULL };
	if (r.pkt) {
		bt_field_class *fc = copy_fc(c, tc, &r, r.pkt);
		if (!fc || bt_stream_class_set_packet_context_field_class(out, fc)) {
			bt_field_class_put_ref(fc);
			goto fail;
		}
		bt_field_class_put_ref(fc);
	}
	if (r.common) {
		bt_field_class *fc = copy_fc(c, tc, &r, r.common);
		if (!fc || bt_stream_class_set_event_common_context_field_class(out, fc)) {
			bt_field_class_put_ref(fc);
			goto fail;
		}
		bt_field_class_put_ref(fc);
	}
	if (table_add(&c->stream_classes, in, out, 0))
		goto fail;
	bt_stream_class_get_ref(in);
	return out;
fail:
	if (!c->err[0])
		set_err(c, "cannot copy stream class %llu", (unsigned long long)bt_stream_class_get_id(in));
	bt_stream_class_put_ref(out);
	return NULL;
}

static bt_event_class *map_event_class(struct ir_copy *c, const bt_event_class *in, int *tag)
{
	bt_event_class *out = table_find(&c->event_classes, in, tag);
	if (out)
		return out;
	const bt_stream_class *isc = bt_event_class_borrow_stream_class_const(in);
	bt_stream_class *sc = map_stream_class(c, isc);
	if (!sc)
		return NULL;
	bt_trace_class *tc = bt_stream_class_borrow_trace_class(sc);
	out = bt_event_class_create_with_id(sc, bt_event_class_get_id(in));
	if (!out)
		return NULL;
	if (bt_event_class_get_name(in))
		bt_event_class_set_name(out, bt_event_class_get_name(in));
	bt_event_class_log_level ll;
	if (bt_event_class_get_log_level(in, &ll) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
		bt_event_class_set_log_level(out, ll);
	if (bt_event_class_get_emf_uri(in))
		bt_event_class_set_emf_uri(out, bt_event_class_get_emf_uri(in));
	struct roots r = { bt_stream_class_borrow_packet_context_field_class_const(isc),
			   bt_stream_class_borrow_event_common_context_field_class_const(isc),
			   bt_event_class_borrow_specific_context_field_class_const(in),
			   bt_event_class_borrow_payload_field_class_const(in) };
	bt_field_class *pl = NULL;
	int t = 0, err = 0;
	if (r.specific) {
		bt_field_class *fc = copy_fc(c, tc, &r, r.specific);
		if (!fc || bt_event_class_set_specific_context_field_class(out, fc)) {
			bt_field_class_put_ref(fc);
			goto fail;
		}
		bt_field_class_put_ref(fc);
	}
	if (r.payload && !(pl = copy_fc(c, tc, &r, r.payload)))
		goto fail;
	if (c->extend) {
		bt_field_class *npl = c->extend(c->arg, tc, in, pl, &t, &err);
		if (err) {
			bt_field_class_put_ref(pl);
			goto fail;
		}
		if (npl != pl) {
			bt_field_class_put_ref(pl);
			pl = npl;
		}
	}
	if (pl && bt_event_class_set_payload_field_class(out, pl)) {
		bt_field_class_put_ref(pl);
		goto fail;
	}
	bt_field_class_put_ref(pl);
	if (table_add(&c->event_classes, in, out, t))
		goto fail;
	bt_event_class_get_ref(in);
	*tag = t;
	return out;
fail:
	if (!c->err[0])
		set_err(c, "cannot copy event class '%s'", bt_event_class_get_name(in) ? bt_event_class_get_name(in) : "");
	bt_event_class_put_ref(out);
	return NULL;
}

/* ---- traces, streams, packets ----------------------------------------------------- */

static bt_trace *map_trace(struct ir_copy *c, const bt_trace *in)
{
	bt_trace *out = table_find(&c->traces, in, NULL);
	if (out)
		return out;
	bt_trace_class *tc = map_trace_class(c, bt_trace_borrow_class_const(in));
	if (!tc || !(out = bt_trace_create(tc)))
		return NULL;
	if (bt_trace_get_name(in))
		bt_trace_set_name(out, bt_trace_get_name(in));
	if (bt_trace_get_uuid(in))
		bt_trace_set_uuid(out, bt_trace_get_uuid(in));
	uint64_t const n = bt_trace_get_environment_entry_count(in);
	for (uint64_t i = 0; i < n; i++) {
		const char *name;
		const bt_value *v;
		bt_trace_borrow_environment_entry_by_index_const(in, i, &name, &v);
		if (bt_value_get_type(v) == BT_VALUE_TYPE_SIGNED_INTEGER)
			bt_trace_set_environment_entry_integer(out, name, bt_value_integer_signed_get(v));
		else if (bt_value_get_type(v) == BT_VALUE_TYPE_STRING)
			bt_trace_set_environment_entry_string(out, name, bt_value_string_get(v));
	}
	if (table_add(&c->traces, in, out, 0)) {
		bt_trace_put_ref(out);
		return NULL;
	}
	bt_trace_get_ref(in);
	return out;
}

static struct stream_pair *find_stream(struct ir_copy *c, const bt_stream *in)
{
	for (size_t i = 0; i < c->n_streams; i++)
		if (c->streams[i].in == in)
			return &c->streams[i];
	return NULL;
}

static struct stream_pair *map_stream(struct ir_copy *c, const bt_stream *in)
{
	struct stream_pair *sp = find_stream(c, in);
	if (sp)
		return sp;
	bt_stream_class *sc = map_stream_class(c, bt_stream_borrow_class_const(in));
	bt_trace *tr = sc ? map_trace(c, bt_stream_borrow_trace_const(in)) : NULL;
	if (!tr)
		return NULL;
	bt_stream *out = bt_stream_create_with_id(sc, tr, bt_stream_get_id(in));
	if (!out)
		return NULL;
	if (bt_stream_get_name(in))
		bt_stream_set_name(out, bt_stream_get_name(in));
	if (SU_GROW(c->streams, c->cap_streams, c->n_streams + 1)) {
		bt_stream_put_ref(out);
		return NULL;
	}
	bt_stream_get_ref(in);
	sp = &c->streams[c->n_streams++];
	*sp = (struct stream_pair){ .in = in, .out = out };
	return sp;
}

static void forget_stream(struct ir_copy *c, const bt_stream *in)
{
	struct stream_pair *sp = find_stream(c, in);
	if (!sp)
		return;
	bt_stream_put_ref(sp->out);
	bt_packet_put_ref(sp->out_pkt);
	bt_stream_put_ref(sp->in);
	*sp = c->streams[--c->n_streams];
}

/* ---- field values ----------------------------------------------------------------- */

static int copy_field(bt_field *out, const bt_field *in)
{
	bt_field_class_type const t = bt_field_get_class_type(in);
	if (t == BT_FIELD_CLASS_TYPE_BOOL) {
		bt_field_bool_set_value(out, bt_field_bool_get_value(in));
	} else if (t == BT_FIELD_CLASS_TYPE_BIT_ARRAY) {
		bt_field_bit_array_set_value_as_integer(out, bt_field_bit_array_get_value_as_integer(in));
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		bt_field_integer_unsigned_set_value(out, bt_field_integer_unsigned_get_value(in));
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		bt_field_integer_signed_set_value(out, bt_field_integer_signed_get_value(in));
	} else if (t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL) {
		bt_field_real_single_precision_set_value(out, bt_field_real_single_precision_get_value(in));
	} else if (t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL) {
		bt_field_real_double_precision_set_value(out, bt_field_real_double_precision_get_value(in));
	} else if (t == BT_FIELD_CLASS_TYPE_STRING) {
		bt_field_string_clear(out);
		if (bt_field_string_append_with_length(out, bt_field_string_get_value(in),
						       bt_field_string_get_length(in)))
			return -ENOMEM;
	} else if (t == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		uint64_t const n = bt_field_class_structure_get_member_count(bt_field_borrow_class_const(in));
		for (uint64_t i = 0; i < n; i++)
			if (copy_field(bt_field_structure_borrow_member_field_by_index(out, i),
				       bt_field_structure_borrow_member_field_by_index_const(in, i)))
				return -ENOMEM;
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
		uint64_t const n = bt_field_array_get_length(in);
		if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY) &&
		    bt_field_array_dynamic_set_length(out, n))
			return -ENOMEM;
		for (uint64_t i = 0; i < n; i++)
			if (copy_field(bt_field_array_borrow_element_field_by_index(out, i),
				       bt_field_array_borrow_element_field_by_index_const(in, i)))
				return -ENOMEM;
	} else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_VARIANT)) {
		if (bt_field_variant_select_option_by_index(out, bt_field_variant_get_selected_option_index(in)))
			return -ENOMEM;
		return copy_field(bt_field_variant_borrow_selected_option_field(out),
				  bt_field_variant_borrow_selected_option_field_const(in));
	} else {
		return -ENOTSUP;
	}
	return 0;
}

/* ---- messages ---------------------------------------------------------------------- */

static uint64_t cs_value(const bt_clock_snapshot *cs)
{
	return bt_clock_snapshot_get_value(cs);
}

static bt_message *copy_event(struct ir_copy *c, bt_self_message_iterator *it, const bt_message *in, int *tag)
{
	const bt_event *ie = bt_message_event_borrow_event_const(in);
	const bt_stream *is = bt_event_borrow_stream_const(ie);
	const bt_stream_class *isc = bt_stream_borrow_class_const(is);
	bt_event_class *ec = map_event_class(c, bt_event_borrow_class_const(ie), tag);
	struct stream_pair *sp = ec ? map_stream(c, is) : NULL;
	if (!sp)
		return NULL;
	bt_message *out;
	int const has_cs = bt_stream_class_borrow_default_clock_class_const(isc) != NULL;
	uint64_t const v = has_cs ? cs_value(bt_message_event_borrow_default_clock_snapshot_const(in)) : 0;
	if (bt_stream_class_supports_packets(isc)) {
		if (!sp->out_pkt) {
			set_err(c, "event outside a packet");
			return NULL;
		}
		out = has_cs ? bt_message_event_create_with_packet_and_default_clock_snapshot(it, ec, sp->out_pkt, v)
			     : bt_message_event_create_with_packet(it, ec, sp->out_pkt);
	} else {
		out = has_cs ? bt_message_event_create_with_default_clock_snapshot(it, ec, sp->out, v)
			     : bt_message_event_create(it, ec, sp->out);
	}
	if (!out)
		return NULL;
	bt_event *oe = bt_message_event_borrow_event(out);
	const bt_field *f;
	int rc = 0;
	if ((f = bt_event_borrow_common_context_field_const(ie)))
		rc = copy_field(bt_event_borrow_common_context_field(oe), f);
	if (!rc && (f = bt_event_borrow_specific_context_field_const(ie)))
		rc = copy_field(bt_event_borrow_specific_context_field(oe), f);
	if (!rc && (f = bt_event_borrow_payload_field_const(ie)))
		rc = copy_field(bt_event_borrow_payload_field(oe), f);
	if (rc) {
		set_err(c, "cannot copy the fields of an event");
		bt_message_put_ref(out);
		return NULL;
	}
	return out;
}

/* Discarded events and discarded packets messages: one copy, through the
 * functions of each kind. */
struct discarded_kind {
	const bt_stream *(*stream)(const bt_message *);
	bt_bool (*have_cs)(const bt_stream_class *);
	bt_message *(*create_cs)(bt_self_message_iterator *, const bt_stream *, uint64_t, uint64_t);
	bt_message *(*create)(bt_self_message_iterator *, const bt_stream *);
	const bt_clock_snapshot *(*begin_cs)(const bt_message *);
	const bt_clock_snapshot *(*end_cs)(const bt_message *);
	bt_property_availability (*get_count)(const bt_message *, uint64_t *);
	void (*set_count)(bt_message *, uint64_t);
};

static const struct discarded_kind discarded_events = {
	bt_message_discarded_events_borrow_stream_const,
	bt_stream_class_discarded_events_have_default_clock_snapshots,
	bt_message_discarded_events_create_with_default_clock_snapshots,
	bt_message_discarded_events_create,
	bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const,
	bt_message_discarded_events_borrow_end_default_clock_snapshot_const,
	bt_message_discarded_events_get_count,
	bt_message_discarded_events_set_count,
};

static const struct discarded_kind discarded_packets = {
	bt_message_discarded_packets_borrow_stream_const,
	bt_stream_class_discarded_packets_have_default_clock_snapshots,
	bt_message_discarded_packets_create_with_default_clock_snapshots,
	bt_message_discarded_packets_create,
	bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const,
	bt_message_discarded_packets_borrow_end_default_clock_snapshot_const,
	bt_message_discarded_packets_get_count,
	bt_message_discarded_packets_set_count,
};

static bt_message *copy_discarded(struct ir_copy *c, bt_self_message_iterator *it, const bt_message *in,
				  const struct discarded_kind *k)
{
	const bt_stream *is = k->stream(in);
	struct stream_pair *sp = map_stream(c, is);
	if (!sp)
		return NULL;
	bt_message *out = k->have_cs(bt_stream_borrow_class_const(is))
		? k->create_cs(it, sp->out, cs_value(k->begin_cs(in)), cs_value(k->end_cs(in)))
		: k->create(it, sp->out);
	uint64_t n;
	if (out && k->get_count(in, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
		k->set_count(out, n);
	return out;
}

bt_message *ir_copy_message(struct ir_copy *c, bt_self_message_iterator *it, const bt_message *in, int *tag)
{
	bt_message *out = NULL;
	struct stream_pair *sp;
	*tag = 0;
	c->err[0] = 0;
	switch (bt_message_get_type(in)) {
	case BT_MESSAGE_TYPE_EVENT:
		out = copy_event(c, it, in, tag);
		break;
	case BT_MESSAGE_TYPE_STREAM_BEGINNING: {
		const bt_stream *is = bt_message_stream_beginning_borrow_stream_const(in);
		if (!(sp = map_stream(c, is)))
			break;
		out = bt_message_stream_beginning_create(it, sp->out);
		const bt_clock_snapshot *cs;
		if (out && bt_stream_class_borrow_default_clock_class_const(bt_stream_borrow_class_const(is)) &&
		    bt_message_stream_beginning_borrow_default_clock_snapshot_const(in, &cs) ==
			    BT_MESSAGE_STREAM_CLOCK_SNAPSHOT_STATE_KNOWN)
			bt_message_stream_beginning_set_default_clock_snapshot(out, cs_value(cs));
		break;
	}
	case BT_MESSAGE_TYPE_STREAM_END: {
		const bt_stream *is = bt_message_stream_end_borrow_stream_const(in);
		if (!(sp = map_stream(c, is)))
			break;
		out = bt_message_stream_end_create(it, sp->out);
		const bt_clock_snapshot *cs;
		if (out && bt_stream_class_borrow_default_clock_class_const(bt_stream_borrow_class_const(is)) &&
		    bt_message_stream_end_borrow_default_clock_snapshot_const(in, &cs) ==
			    BT_MESSAGE_STREAM_CLOCK_SNAPSHOT_STATE_KNOWN)
			bt_message_stream_end_set_default_clock_snapshot(out, cs_value(cs));
		if (out)
			forget_stream(c, is);
		break;
	}
	case BT_MESSAGE_TYPE_PACKET_BEGINNING: {
		const bt_packet *ip = bt_message_packet_beginning_borrow_packet_const(in);
		const bt_stream *is = bt_packet_borrow_stream_const(ip);
		const bt_stream_class *isc = bt_stream_borrow_class_const(is);
		if (!(sp = map_stream(c, is)))
			break;
		bt_packet *op = bt_packet_create(sp->out);
		if (!op)
			break;
		const bt_field *ctx = bt_packet_borrow_context_field_const(ip);
		if (ctx && copy_field(bt_packet_borrow_context_field(op), ctx)) {
			bt_packet_put_ref(op);
			set_err(c, "cannot copy a packet context");
			break;
		}
		bt_packet_put_ref(sp->out_pkt);
		sp->out_pkt = op;
		sp->in_pkt = ip;
		out = bt_stream_class_packets_have_beginning_default_clock_snapshot(isc)
			? bt_message_packet_beginning_create_with_default_clock_snapshot(it, op,
				cs_value(bt_message_packet_beginning_borrow_default_clock_snapshot_const(in)))
			: bt_message_packet_beginning_create(it, op);
		break;
	}
	case BT_MESSAGE_TYPE_PACKET_END: {
		const bt_packet *ip = bt_message_packet_end_borrow_packet_const(in);
		const bt_stream *is = bt_packet_borrow_stream_const(ip);
		const bt_stream_class *isc = bt_stream_borrow_class_const(is);
		if (!(sp = map_stream(c, is)) || !sp->out_pkt) {
			set_err(c, "packet end without a packet");
			break;
		}
		out = bt_stream_class_packets_have_end_default_clock_snapshot(isc)
			? bt_message_packet_end_create_with_default_clock_snapshot(it, sp->out_pkt,
				cs_value(bt_message_packet_end_borrow_default_clock_snapshot_const(in)))
			: bt_message_packet_end_create(it, sp->out_pkt);
		bt_packet_put_ref(sp->out_pkt);
		sp->out_pkt = NULL;
		sp->in_pkt = NULL;
		break;
	}
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		out = copy_discarded(c, it, in, &discarded_events);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		out = copy_discarded(c, it, in, &discarded_packets);
		break;
	case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY: {
		const bt_clock_snapshot *cs = bt_message_message_iterator_inactivity_borrow_clock_snapshot_const(in);
		bt_clock_class *cc = map_clock_class(c, bt_clock_snapshot_borrow_clock_class_const(cs));
		if (cc)
			out = bt_message_message_iterator_inactivity_create(it, cc, cs_value(cs));
		break;
	}
	}
	if (!out && !c->err[0])
		set_err(c, "out of memory");
	return out;
}
