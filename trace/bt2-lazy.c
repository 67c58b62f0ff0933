/* libbabeltrace2 loaded at its first use, not at start (issue 20): a
 * program that reads perf.data or our own traces never maps it nor glib
 * behind it (0.3 ms of every run's start-up on a 2-core VM, 2026-11-27).
 *
 * Each babeltrace2 function the trace readers call is a stub here, a jump
 * through a pointer that su_bt2_load sets with dlsym (the lazy binding of
 * a PLT, for these few): the readers call bt_* as ever and this object
 * stands in for the library in the programs that link it (stackunwind,
 * stackcap), hidden, so libbabeltrace2 and its plugins still bind to
 * their own.  The babeltrace2 plugin and the tests that link
 * libbabeltrace2 itself do not link this (bt2-graph.c's weak
 * su_bt2_load: nothing to load).  x86-64, as the rest of stackcap. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace/bt2-graph.h"

/* Every function of libbabeltrace2 the trace readers call (`nm -u` of
 * libsutrace: a missing one fails the link of stackunwind). */
#define SU_BT2_FUNCS(X) \
	X(bt_clock_snapshot_get_value) \
	X(bt_component_filter_borrow_input_port_by_index_const) \
	X(bt_component_filter_borrow_output_port_by_index_const) \
	X(bt_component_filter_get_input_port_count) \
	X(bt_component_sink_borrow_input_port_by_index_const) \
	X(bt_component_source_borrow_output_port_by_index_const) \
	X(bt_component_source_get_output_port_count) \
	X(bt_current_thread_take_error) \
	X(bt_error_borrow_cause_by_index) \
	X(bt_error_cause_get_message) \
	X(bt_error_get_cause_count) \
	X(bt_error_release) \
	X(bt_event_borrow_class_const) \
	X(bt_event_borrow_common_context_field_const) \
	X(bt_event_borrow_packet_const) \
	X(bt_event_borrow_payload_field_const) \
	X(bt_event_borrow_stream_const) \
	X(bt_event_class_get_name) \
	X(bt_field_array_borrow_element_field_by_index_const) \
	X(bt_field_array_get_length) \
	X(bt_field_borrow_class_const) \
	X(bt_field_class_array_borrow_element_field_class_const) \
	X(bt_field_class_get_type) \
	X(bt_field_get_class_type) \
	X(bt_field_integer_signed_get_value) \
	X(bt_field_integer_unsigned_get_value) \
	X(bt_field_string_get_value) \
	X(bt_field_structure_borrow_member_field_by_name_const) \
	X(bt_graph_add_filter_component) \
	X(bt_graph_add_simple_sink_component) \
	X(bt_graph_add_source_component) \
	X(bt_graph_connect_ports) \
	X(bt_graph_create) \
	X(bt_graph_put_ref) \
	X(bt_graph_run) \
	X(bt_message_discarded_events_borrow_stream_const) \
	X(bt_message_discarded_events_get_count) \
	X(bt_message_event_borrow_default_clock_snapshot_const) \
	X(bt_message_event_borrow_event_const) \
	X(bt_message_get_type) \
	X(bt_message_iterator_next) \
	X(bt_message_put_ref) \
	X(bt_packet_borrow_context_field_const) \
	X(bt_plugin_borrow_filter_component_class_by_name_const) \
	X(bt_plugin_borrow_source_component_class_by_name_const) \
	X(bt_plugin_find) \
	X(bt_plugin_put_ref) \
	X(bt_stream_borrow_class_const) \
	X(bt_stream_class_borrow_default_clock_class_const) \
	X(bt_stream_class_supports_packets) \
	X(bt_stream_get_id) \
	X(bt_trace_borrow_environment_entry_value_by_name_const) \
	X(bt_value_array_append_string_element) \
	X(bt_value_get_type) \
	X(bt_value_integer_signed_get) \
	X(bt_value_integer_unsigned_get) \
	X(bt_value_map_create) \
	X(bt_value_map_insert_empty_array_entry) \
	X(bt_value_put_ref) \
	X(bt_value_string_get)

/* Called through a stub before su_bt2_load: a reader that forgot it. */
__attribute__((noreturn, used)) static void unloaded(void)
{
	fputs("stackcap: internal error: libbabeltrace2 called before it was loaded\n", stderr);
	abort();
}

#define SU_BT2_STUB(name)                                                                         \
	__attribute__((visibility("hidden"), used)) void *su_bt2_p_##name = (void *)unloaded;     \
	__asm__(".text\n\t.p2align 4\n\t.globl " #name "\n\t.hidden " #name "\n\t.type " #name \
		", @function\n" #name ":\n\tjmp *su_bt2_p_" #name "(%rip)\n\t.size " #name        \
		", .-" #name "\n\t.previous");
SU_BT2_FUNCS(SU_BT2_STUB)

int su_bt2_load(char *err, size_t errlen)
{
	static int state; /* 0: not tried; 1: loaded; -1: failed (ERR said why) */
	static char why[200];
	if (state == 0) {
		void *h = dlopen("libbabeltrace2.so.0", RTLD_NOW | RTLD_LOCAL);
		state = h ? 1 : -1;
		if (!h)
			snprintf(why, sizeof(why), "cannot load libbabeltrace2 (apt-get install libbabeltrace2-0): %s",
				 dlerror());
#define SU_BT2_SYM(name)                                                                          \
	if (state == 1 && !(su_bt2_p_##name = dlsym(h, #name))) {                                 \
		state = -1;                                                                       \
		snprintf(why, sizeof(why), "libbabeltrace2 has no %s: version 2.0 or later needed", #name); \
	}
		SU_BT2_FUNCS(SU_BT2_SYM)
	}
	if (state < 0 && err && errlen)
		snprintf(err, errlen, "%s", why);
	return state > 0 ? 0 : -1;
}
