/* The babeltrace2 plugin `stackcap`: its component classes (plugin.h).
 * babeltrace2 finds them in this shared object's descriptor sections, so
 * every BT_PLUGIN_* declaration lives in this one file. */
#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <babeltrace2/babeltrace.h>

#include "plugin/plugin.h"

BT_PLUGIN_MODULE();

BT_PLUGIN(stackcap);
BT_PLUGIN_DESCRIPTION("stackcap: unwound, symbolized user-space call stacks for babeltrace2");
BT_PLUGIN_AUTHOR("stackcap");
BT_PLUGIN_LICENSE("MIT");

BT_PLUGIN_FILTER_COMPONENT_CLASS(unwind, unwind_iter_next);
BT_PLUGIN_FILTER_COMPONENT_CLASS_DESCRIPTION(unwind,
	"Add the unwound, symbolized call stack to every stackcap sample event");
BT_PLUGIN_FILTER_COMPONENT_CLASS_HELP(unwind,
	"Each `sample` event gets payload fields `comm` (process name), `callstack` (frames, "
	"innermost first: ip, function, module, offset, file, line, inlined) and `unwind_end` "
	"(why the unwind stopped).  Every message passes through.\n"
	"Parameters: debug-dir (string or array of strings), symfs (string), no-debuginfod (bool), "
	"no-inline (bool), max-frames (integer).  See docs/babeltrace2-plugin.md.");
BT_PLUGIN_FILTER_COMPONENT_CLASS_INITIALIZE_METHOD(unwind, unwind_init);
BT_PLUGIN_FILTER_COMPONENT_CLASS_FINALIZE_METHOD(unwind, unwind_finalize);
BT_PLUGIN_FILTER_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(unwind, unwind_iter_init);
BT_PLUGIN_FILTER_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(unwind, unwind_iter_finalize);

BT_PLUGIN_SINK_COMPONENT_CLASS(folded, folded_consume);
BT_PLUGIN_SINK_COMPONENT_CLASS_DESCRIPTION(folded,
	"Write folded stacks (flamegraph.pl input) of the samples filter.stackcap.unwind unwound");
BT_PLUGIN_SINK_COMPONENT_CLASS_HELP(folded,
	"One line per distinct stack, 'comm;outermost;...;leaf COUNT', sorted: the output of "
	"`stackunwind folded`.\n"
	"Parameters: path (string, default standard output), no-inline (bool), per-process (bool), "
	"per-thread (bool).");
BT_PLUGIN_SINK_COMPONENT_CLASS_INITIALIZE_METHOD(folded, folded_init);
BT_PLUGIN_SINK_COMPONENT_CLASS_FINALIZE_METHOD(folded, folded_finalize);
BT_PLUGIN_SINK_COMPONENT_CLASS_GRAPH_IS_CONFIGURED_METHOD(folded, folded_graph_is_configured);

BT_PLUGIN_SOURCE_COMPONENT_CLASS(trace, trace_src_iter_next);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_DESCRIPTION(trace,
	"Read a stackcap trace directory, plain or recorded with --zstd");
BT_PLUGIN_SOURCE_COMPONENT_CLASS_HELP(trace,
	"The events src.ctf.fs gives for a plain stackcap trace, read by stackcap's own parser, "
	"which also reads zstd-compressed stream files.\n"
	"Parameters: inputs (array with one trace directory).");
BT_PLUGIN_SOURCE_COMPONENT_CLASS_INITIALIZE_METHOD(trace, trace_src_init);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_FINALIZE_METHOD(trace, trace_src_finalize);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(trace, trace_src_iter_init);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(trace, trace_src_iter_finalize);


int sc_param_bool(const bt_value *params, const char *name)
{
	const bt_value *v = params ? bt_value_map_borrow_entry_value_const(params, name) : NULL;
	if (!v)
		return 0;
	if (!bt_value_is_bool(v))
		return -1;
	return bt_value_bool_get(v) ? 1 : 0;
}

/* Any key not in KNOWN: an error naming it. */
struct unknown_ctx {
	bt_self_component *self;
	const char *const *known;
	size_t n_known;
	int bad;
	char key[128];
};

static bt_value_map_foreach_entry_const_func_status check_key(const char *key, const bt_value *v, void *data)
{
	struct unknown_ctx *u = data;
	(void)v;
	for (size_t i = 0; i < u->n_known; i++)
		if (!strcmp(key, u->known[i]))
			return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_OK;
	snprintf(u->key, sizeof(u->key), "%s", key);
	u->bad = 1;
	return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_INTERRUPT;
}

int sc_check_params(bt_self_component *self, const bt_value *params, const char *const *known, size_t n)
{
	struct unknown_ctx u = { self, known, n, 0, "" };
	if (params && bt_value_is_map(params))
		bt_value_map_foreach_entry_const(params, check_key, &u);
	/* Not from inside the loop: babeltrace2 wants no error there. */
	if (u.bad)
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(self, "unknown parameter '%s'", u.key);
	return u.bad ? -EINVAL : 0;
}

void sc_log_warning(void *self_component, const char *msg)
{
	const bt_component *c = bt_self_component_as_component(self_component);
	if (bt_component_get_logging_level(c) > BT_LOGGING_LEVEL_WARNING)
		return;
	bt_component_class_type const t = bt_component_get_class_type(c);
	const char *const kind = t == BT_COMPONENT_CLASS_TYPE_SOURCE ? "SRC" :
				 t == BT_COMPONENT_CLASS_TYPE_FILTER ? "FLT" : "SINK";
	char cls[64];
	snprintf(cls, sizeof(cls), "%s", bt_component_class_get_name(bt_component_borrow_class_const(c)));
	for (char *p = cls; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	/* One write: stderr is unbuffered. */
	fprintf(stderr, "%02d-%02d %02d:%02d:%02d.%03ld %d %ld W PLUGIN/%s.STACKCAP.%s [%s] %s\n", tm.tm_mon + 1,
		tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, (int)getpid(),
		(long)syscall(SYS_gettid), kind, cls, bt_component_get_name(c), msg);
}
