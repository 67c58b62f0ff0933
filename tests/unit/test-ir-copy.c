/* SPDX-License-Identifier: MIT */
/* The trace IR copier of the babeltrace2 plugin (plugin/ir-copy.c), in a
 * graph made in the test (bt2-fixture.h): scripted source -> a filter that
 * copies every message with ir_copy_message -> a sink that checks each
 * copy against the script: every field kind src.ctf.fs makes, packets,
 * discarded events, clock values, the payload extension and its tag, and
 * what it must refuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-main.h"
#include "bt2-fixture.h"
#include "plugin/ir-copy.h"

/* ---- the filter under test -------------------------------------------------------- */

struct flt_opts {
	int extend;        /* append "callstack" to stackcap:sample, tag 7 */
	int extend_fails;  /* the extension reports an error */
};

/* What the filter saw (one graph per test process). */
static struct {
	int extend_calls;
	int tags[64];
	int n_tags;
	char err[512];
} seen;

struct flt {
	struct ir_copy *c;
	bt_self_component_port_input *in;
};

struct flt_it {
	struct flt *f;
	bt_message_iterator *up;
};

static bt_field_class *extend(void *arg, bt_trace_class *tc, const bt_event_class *in_ec, bt_field_class *payload,
			      int *tag, int *err)
{
	const struct flt_opts *o = arg;
	seen.extend_calls++;
	if (o->extend_fails) {
		*err = 1;
		return NULL;
	}
	if (strcmp(bt_event_class_get_name(in_ec), "stackcap:sample") != 0)
		return payload;
	bt_field_class *pl = payload;
	if (!pl)
		pl = bt_field_class_structure_create(tc);
	bt_field_class *s = bt_field_class_string_create(tc);
	bt_field_class_structure_append_member(pl, "callstack", s);
	bt_field_class_put_ref(s);
	*tag = 7;
	return pl;
}

static bt_component_class_initialize_method_status flt_init(bt_self_component_filter *self,
							     bt_self_component_filter_configuration *cfg,
							     const bt_value *params, void *data)
{
	struct flt_opts *o = data;
	struct flt *f = calloc(1, sizeof(*f));
	bt_self_component *sc = bt_self_component_filter_as_self_component(self);
	f->c = ir_copy_new(sc, o->extend || o->extend_fails ? extend : NULL, o);
	bt_self_component_filter_add_input_port(self, "in", NULL, &f->in);
	bt_self_component_filter_add_output_port(self, "out", NULL, NULL);
	bt_self_component_set_data(sc, f);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void flt_fini(bt_self_component_filter *self)
{
	struct flt *f = bt_self_component_get_data(bt_self_component_filter_as_self_component(self));
	ir_copy_free(f->c);
	free(f);
}

static bt_message_iterator_class_initialize_method_status
fit_init(bt_self_message_iterator *it, bt_self_message_iterator_configuration *cfg, bt_self_component_port_output *port)
{
	struct flt_it *i = calloc(1, sizeof(*i));
	i->f = bt_self_component_get_data(bt_self_message_iterator_borrow_component(it));
	if (bt_message_iterator_create_from_message_iterator(it, i->f->in, &i->up))
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	bt_self_message_iterator_set_data(it, i);
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void fit_fini(bt_self_message_iterator *it)
{
	struct flt_it *i = bt_self_message_iterator_get_data(it);
	bt_message_iterator_put_ref(i->up);
	free(i);
}

static bt_message_iterator_class_next_method_status fit_next(bt_self_message_iterator *it,
							      bt_message_array_const msgs, uint64_t capacity,
							      uint64_t *count)
{
	struct flt_it *i = bt_self_message_iterator_get_data(it);
	bt_message_array_const in;
	uint64_t n;
	switch (bt_message_iterator_next(i->up, &in, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_AGAIN;
	default:
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	}
	ck_assert_uint_le(n, capacity); /* the upstream batch fits: same capacity */
	uint64_t k = 0;
	int failed = 0;
	for (uint64_t j = 0; j < n; j++) {
		int tag = -1;
		bt_message *out = failed ? NULL : ir_copy_message(i->f->c, it, in[j], &tag);
		if (!failed && !out) {
			failed = 1;
			snprintf(seen.err, sizeof(seen.err), "%s", ir_copy_error(i->f->c));
		}
		if (out && bt_message_get_type(out) == BT_MESSAGE_TYPE_EVENT) {
			if (tag == 7) {
				bt_field *pl = bt_event_borrow_payload_field(bt_message_event_borrow_event(out));
				bt_field_string_set_value(bt_field_structure_borrow_member_field_by_name(pl, "callstack"),
							  "main;work");
			}
			if (seen.n_tags < 64)
				seen.tags[seen.n_tags++] = tag;
		}
		if (out)
			msgs[k++] = out;
		bt_message_put_ref(in[j]);
	}
	*count = k;
	if (failed) {
		for (uint64_t j = 0; j < k; j++)
			bt_message_put_ref(msgs[j]);
		*count = 0;
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	}
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
}

static bt_component_class_filter *filter_class(void)
{
	bt_message_iterator_class *ic = bt_message_iterator_class_create(fit_next);
	bt_message_iterator_class_set_initialize_method(ic, fit_init);
	bt_message_iterator_class_set_finalize_method(ic, fit_fini);
	bt_component_class_filter *fc = bt_component_class_filter_create("copy", ic);
	bt_component_class_filter_set_initialize_method(fc, flt_init);
	bt_component_class_filter_set_finalize_method(fc, flt_fini);
	bt_message_iterator_class_put_ref(ic);
	return fc;
}

/* ---- the sink: each copy against the script ------------------------------------------ */

struct expect {
	const struct fx_script *s;
	size_t next_event;
	int stream_begin, stream_end, packet_begin, packet_end, events;
	uint64_t discarded;
	int callstacks;
	const bt_trace_class *out_tc;  /* the copies' trace class: one for all */
};

static void check_value(const bt_field *f, enum fx_type t, const struct fx_value *v)
{
	switch (t) {
	case FX_U8: case FX_U32: case FX_U64: case FX_ENUM:
		ck_assert_uint_eq(bt_field_integer_unsigned_get_value(f), v->u);
		break;
	case FX_S32: case FX_S64:
		ck_assert_int_eq(bt_field_integer_signed_get_value(f), v->s);
		break;
	case FX_STR:
		ck_assert_str_eq(bt_field_string_get_value(f), v->str);
		break;
	case FX_BOOL:
		ck_assert_int_eq(!!bt_field_bool_get_value(f), !!v->u);
		break;
	case FX_DOUBLE:
		ck_assert(bt_field_real_double_precision_get_value(f) == v->d);
		break;
	case FX_U8_SEQ: case FX_U64_SEQ: case FX_U8_DYN: case FX_U8_ARR4: {
		uint64_t const n = t == FX_U8_ARR4 ? 4 : v->n;
		ck_assert_uint_eq(bt_field_array_get_length(f), n);
		for (uint64_t k = 0; k < n; k++)
			ck_assert_uint_eq(bt_field_integer_unsigned_get_value(
						  bt_field_array_borrow_element_field_by_index_const(f, k)),
					  k < v->n ? v->arr[k] : 0);
		break;
	}
	case FX_VARIANT: {
		ck_assert_uint_eq(bt_field_variant_get_selected_option_index(f), v->u);
		const bt_field *o = bt_field_variant_borrow_selected_option_field_const(f);
		if (v->u == 0)
			ck_assert_uint_eq(bt_field_integer_unsigned_get_value(o), (uint64_t)v->s);
		else
			ck_assert_str_eq(bt_field_string_get_value(o), v->str);
		break;
	}
	default:
		ck_abort_msg("member type %d not checked", (int)t);
	}
}

static void check_event(struct expect *x, const bt_message *m)
{
	ck_assert_uint_lt(x->next_event, x->s->n_events);
	const struct fx_event *e = &x->s->events[x->next_event++];
	const struct fx_class *k = &x->s->classes[e->cls];
	const bt_event *ev = bt_message_event_borrow_event_const(m);
	const bt_event_class *ec = bt_event_borrow_class_const(ev);
	ck_assert_str_eq(bt_event_class_get_name(ec), k->name);
	ck_assert_uint_eq(bt_clock_snapshot_get_value(bt_message_event_borrow_default_clock_snapshot_const(m)), e->ts);
	const bt_trace_class *tc = bt_stream_class_borrow_trace_class_const(bt_event_class_borrow_stream_class_const(ec));
	if (!x->out_tc)
		x->out_tc = tc;
	ck_assert_ptr_eq(tc, x->out_tc);
	const bt_field *cc = bt_event_borrow_common_context_field_const(ev);
	if (x->s->no_ids) {
		ck_assert_ptr_null(cc);
	} else {
		ck_assert_int_eq(bt_field_integer_signed_get_value(bt_field_structure_borrow_member_field_by_name_const(cc, "vpid")),
				 e->vpid);
		ck_assert_int_eq(bt_field_integer_signed_get_value(bt_field_structure_borrow_member_field_by_name_const(cc, "vtid")),
				 e->vtid);
	}
	const bt_field *pl = bt_event_borrow_payload_field_const(ev);
	size_t n = 0;
	for (; k->members[n].type != FX_END; n++) {
		const struct fx_member *mem = &k->members[n];
		ck_assert_ptr_nonnull(pl);
		const bt_field *f = bt_field_structure_borrow_member_field_by_name_const(pl, mem->name);
		ck_assert_msg(f != NULL, "member %s of %s not copied", mem->name, k->name);
		check_value(f, mem->type, &e->v[n]);
		if (mem->type == FX_U8_SEQ || mem->type == FX_U64_SEQ) {
			char lname[128];
			snprintf(lname, sizeof(lname), "_%s_length", mem->name);
			const bt_field *lf = bt_field_structure_borrow_member_field_by_name_const(pl, lname);
			ck_assert_ptr_nonnull(lf);
			ck_assert_uint_eq(bt_field_integer_unsigned_get_value(lf), e->v[n].n);
		}
	}
	const bt_field *cs = pl ? bt_field_structure_borrow_member_field_by_name_const(pl, "callstack") : NULL;
	if (cs) {
		ck_assert_str_eq(bt_field_string_get_value(cs), "main;work");
		x->callstacks++;
	}
}

static int on_copy(void *arg, const bt_message *m)
{
	struct expect *x = arg;
	switch (bt_message_get_type(m)) {
	case BT_MESSAGE_TYPE_STREAM_BEGINNING: x->stream_begin++; break;
	case BT_MESSAGE_TYPE_STREAM_END: x->stream_end++; break;
	case BT_MESSAGE_TYPE_PACKET_BEGINNING: {
		x->packet_begin++;
		/* Each packet of the script begins at its event's time. */
		const bt_clock_snapshot *cs = bt_message_packet_beginning_borrow_default_clock_snapshot_const(m);
		ck_assert_uint_eq(bt_clock_snapshot_get_value(cs), x->s->events[x->next_event].ts);
		break;
	}
	case BT_MESSAGE_TYPE_PACKET_END: x->packet_end++; break;
	case BT_MESSAGE_TYPE_EVENT:
		x->events++;
		check_event(x, m);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS: {
		uint64_t n = 0;
		ck_assert_int_eq(bt_message_discarded_events_get_count(m, &n), BT_PROPERTY_AVAILABILITY_AVAILABLE);
		x->discarded += n;
		break;
	}
	default:
		break;
	}
	return 0;
}

static int run_copy(const struct fx_script *s, struct flt_opts *o, struct expect *x)
{
	memset(x, 0, sizeof(*x));
	x->s = s;
	bt_component_class_filter *fc = filter_class();
	int const rc = fx_run(s, fc, o, on_copy, x);
	bt_component_class_filter_put_ref(fc);
	return rc;
}

/* ---- the script ------------------------------------------------------------------ */

#define ARR(...) .arr = (const uint64_t[]){ __VA_ARGS__ }, .n = sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)

enum { C_SCALARS, C_ARRAYS, C_EMPTY, C_SAMPLE, C_OPTION };
static const struct fx_class classes[] = {
	[C_SCALARS] = { "t:scalars",
			{ { "u8", FX_U8 }, { "s64", FX_S64 }, { "str", FX_STR }, { "flag", FX_BOOL },
			  { "real", FX_DOUBLE }, { "en", FX_ENUM }, { "u32", FX_U32 }, { "u64", FX_U64 } } },
	[C_ARRAYS] = { "t:arrays",
		       { { "seq8", FX_U8_SEQ }, { "seq64", FX_U64_SEQ }, { "dyn", FX_U8_DYN }, { "a4", FX_U8_ARR4 },
			 { "var", FX_VARIANT } } },
	[C_EMPTY] = { "t:empty", { { NULL, FX_END } } },
	[C_SAMPLE] = { "stackcap:sample", { { "generation", FX_U32 }, { "blob", FX_U8_SEQ } } },
	[C_OPTION] = { "t:option", { { "opt", FX_OPTION } } },
};

static const struct fx_event events[] = {
	{ C_SCALARS, 10, 11, 1000,
	  { { .u = 255 }, { .s = -1234567890123LL }, { .str = "h\xc3\xa9llo" }, { .u = 1 }, { .d = -2.5 }, { .u = 1 },
	    { .u = 0xffffffffu }, { .u = UINT64_MAX } } },
	{ C_ARRAYS, 10, 12, 1001,
	  { { ARR(1, 2, 3) }, { ARR(UINT64_MAX, 0, 42) }, { ARR(9) }, { ARR(4, 3, 2, 1) }, { .u = 0, .s = 77 } } },
	{ C_ARRAYS, 10, 12, 1002,
	  { { .n = 0 }, { ARR(5) }, { .n = 0 }, { ARR(1) }, { .u = 1, .str = "option one" } } },
	{ C_EMPTY, 11, 13, 1003, { { 0 } } },
	{ C_SAMPLE, 11, 13, 1004, { { .u = 6 }, { ARR(0xde, 0xad) } } },
	{ C_SCALARS, 12, 14, 1005,
	  { { .u = 0 }, { .s = 0 }, { .str = "" }, { .u = 0 }, { .d = 0 }, { .u = 0 }, { .u = 0 }, { .u = 0 } } },
};
#define NEVENTS (sizeof(events) / sizeof(events[0]))
#define NCLASSES_OK 4 /* every class but the option */

/* ---- the tests ------------------------------------------------------------------ */

START_TEST(t_every_field_kind)
{
	struct fx_script const s = { classes, NCLASSES_OK, events, NEVENTS, 0, 0, 0 };
	struct flt_opts o = { 0 };
	struct expect x;
	ck_assert_int_eq(run_copy(&s, &o, &x), 0);
	ck_assert_int_eq(x.stream_begin, 1);
	ck_assert_int_eq(x.stream_end, 1);
	ck_assert_int_eq(x.packet_begin, 0);
	ck_assert_int_eq(x.events, (int)NEVENTS);
	ck_assert_uint_eq(x.next_event, NEVENTS);
	ck_assert_int_eq(x.callstacks, 0);
	/* Without an extension every tag is 0. */
	ck_assert_int_eq(seen.n_tags, (int)NEVENTS);
	for (int i = 0; i < seen.n_tags; i++)
		ck_assert_int_eq(seen.tags[i], 0);
}
END_TEST

START_TEST(t_packets_and_discarded)
{
	struct fx_script const s = { classes, NCLASSES_OK, events, NEVENTS, 0, 1, 5 };
	struct flt_opts o = { 0 };
	struct expect x;
	ck_assert_int_eq(run_copy(&s, &o, &x), 0);
	ck_assert_int_eq(x.packet_begin, (int)NEVENTS);
	ck_assert_int_eq(x.packet_end, (int)NEVENTS);
	ck_assert_int_eq(x.events, (int)NEVENTS);
	ck_assert_uint_eq(x.discarded, 5);
	ck_assert_int_eq(x.stream_end, 1);
}
END_TEST

START_TEST(t_no_common_context)
{
	struct fx_script const s = { classes, NCLASSES_OK, events, NEVENTS, 1, 0, 0 };
	struct flt_opts o = { 0 };
	struct expect x;
	ck_assert_int_eq(run_copy(&s, &o, &x), 0);
	ck_assert_int_eq(x.events, (int)NEVENTS);
}
END_TEST

/* The extension: called once per event class, its member appended after
 * the copied ones, its tag returned with every event of the class. */
START_TEST(t_extend)
{
	struct fx_script const s = { classes, NCLASSES_OK, events, NEVENTS, 0, 1, 0 };
	struct flt_opts o = { .extend = 1 };
	struct expect x;
	ck_assert_int_eq(run_copy(&s, &o, &x), 0);
	ck_assert_int_eq(seen.extend_calls, 4); /* one per event class, t:empty (no payload) too */
	ck_assert_int_eq(x.callstacks, 1);
	ck_assert_int_eq(x.events, (int)NEVENTS);
	for (size_t i = 0; i < NEVENTS; i++)
		ck_assert_int_eq(seen.tags[i], events[i].cls == C_SAMPLE ? 7 : 0);
}
END_TEST

START_TEST(t_extend_error)
{
	struct fx_script const s = { classes, NCLASSES_OK, events, NEVENTS, 0, 0, 0 };
	struct flt_opts o = { .extend_fails = 1 };
	struct expect x;
	ck_assert_int_eq(run_copy(&s, &o, &x), -1);
	ck_assert_int_eq(x.events, 0);
	ck_assert_str_eq(seen.err, "cannot copy event class 't:scalars'");
}
END_TEST

/* An option field (CTF 2 only): refused with a message, nothing copied. */
START_TEST(t_option_refused)
{
	struct fx_event const ev[] = { { C_OPTION, 1, 1, 5, { { .u = 3 } } } };
	struct fx_script const s = { classes, C_OPTION + 1, ev, 1, 0, 0, 0 };
	struct flt_opts o = { 0 };
	struct expect x;
	ck_assert_int_eq(run_copy(&s, &o, &x), -1);
	ck_assert_int_eq(x.events, 0);
	ck_assert_msg(strstr(seen.err, "options are CTF 2 only") != NULL, "error: %s", seen.err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ir-copy");
	TCase *tc = tcase_create("copy");
	tcase_add_test(tc, t_every_field_kind);
	tcase_add_test(tc, t_packets_and_discarded);
	tcase_add_test(tc, t_no_common_context);
	tcase_add_test(tc, t_extend);
	tcase_add_test(tc, t_extend_error);
	tcase_add_test(tc, t_option_refused);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(suite)
