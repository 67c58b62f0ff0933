/* The babeltrace2 graph of the event sources (trace/bt2-graph.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "trace/bt2-graph.h"
#include "trace/reader-internal.h"

struct run {
	su_bt2_message_fn fn;
	void *arg;
	int fatal;                /* FN's negative return */
	char *err;
	size_t errlen;
};

/* WHAT and the first cause of babeltrace2's current error. */
static void take_bt_error(struct run *r, const char *what)
{
	const bt_error *e = bt_current_thread_take_error();
	const char *cause = NULL;
	if (e && bt_error_get_cause_count(e) > 0)
		cause = bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0));
	su_set_err(r->err, r->errlen, "%s%s%s", what, cause ? ": " : "", cause ? cause : "");
	if (e)
		bt_error_release(e);
}

static bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator *it, void *data)
{
	(void)it;
	(void)data;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator *it, void *data)
{
	struct run *r = data;
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
		if (rc == 0)
			rc = r->fn(r->arg, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	if (rc < 0) {
		r->fatal = rc;
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	return rc ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END
		  : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

static const bt_plugin *find_plugin(const char *name)
{
	const bt_plugin *plugin = NULL;
	if (bt_plugin_find(name, BT_TRUE, BT_FALSE, BT_TRUE, BT_TRUE, BT_FALSE, &plugin) != BT_PLUGIN_FIND_STATUS_OK)
		return NULL;
	return plugin;
}

/* Linked with libbabeltrace2 itself: loaded already (trace/bt2-lazy.c
 * has the one that loads it). */
__attribute__((weak)) int su_bt2_load(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

int su_bt2_read_ctf(const char *const *dirs, size_t n, const char *what, su_bt2_message_fn fn, void *arg,
		    char *err, size_t errlen)
{
	if (su_bt2_load(err, errlen) != 0)
		return -ENOENT;
	struct run r = { .fn = fn, .arg = arg, .err = err, .errlen = errlen };
	char msg[160];
	int rc = -EIO;              /* babeltrace2 failed: its cause says why */
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
		su_set_err(r.err, r.errlen, "babeltrace2 plugins ctf and utils not found (apt-get install babeltrace2)");
		rc = -ENOENT;
		goto out;
	}
	if (!g) {
		su_set_err(r.err, r.errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (bt_graph_add_filter_component(g, mux_cls, "mux", NULL, BT_LOGGING_LEVEL_NONE, &mux) ||
	    bt_graph_add_simple_sink_component(g, "sink", sink_init, sink_consume, NULL, &r, &sink)) {
		take_bt_error(&r, "cannot set up babeltrace2");
		goto out;
	}
	for (size_t t = 0; t < n; t++) {
		const bt_component_source *src = NULL;
		bt_value *params = bt_value_map_create();
		bt_value *inputs = NULL;
		char name[32];
		snprintf(name, sizeof(name), "src%zu", t);
		if (!params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ||
		    bt_value_array_append_string_element(inputs, dirs[t])) {
			bt_value_put_ref(params);
			su_set_err(r.err, r.errlen, "out of memory");
			rc = -ENOMEM;
			goto out;
		}
		int const arc = bt_graph_add_source_component(g, src_cls, name, params, BT_LOGGING_LEVEL_NONE, &src);
		bt_value_put_ref(params);
		if (arc) {
			snprintf(msg, sizeof(msg), "cannot open %s with babeltrace2", what);
			take_bt_error(&r, msg);
			goto out;
		}
		uint64_t const nout = bt_component_source_get_output_port_count(src);
		for (uint64_t i = 0; i < nout; i++) {
			const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(
				mux, bt_component_filter_get_input_port_count(mux) - 1);
			if (bt_graph_connect_ports(g, bt_component_source_borrow_output_port_by_index_const(src, i),
						   in, NULL)) {
				take_bt_error(&r, "cannot connect babeltrace2 ports");
				goto out;
			}
		}
	}
	if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL)) {
		take_bt_error(&r, "cannot connect babeltrace2 ports");
		goto out;
	}
	for (;;) {
		bt_graph_run_status const st = bt_graph_run(g);
		if (st == BT_GRAPH_RUN_STATUS_AGAIN)
			continue;
		if (st == BT_GRAPH_RUN_STATUS_OK) {
			rc = 0;
		} else if (r.fatal) {
			rc = r.fatal;
		} else {
			snprintf(msg, sizeof(msg), "babeltrace2 could not read %s", what);
			take_bt_error(&r, msg);
		}
		break;
	}
out:
	if (rc && r.fatal == -ENOMEM)
		su_set_err(r.err, r.errlen, "out of memory");
	bt_graph_put_ref(g);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return rc;
}
