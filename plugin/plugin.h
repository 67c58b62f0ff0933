/* The babeltrace2 plugin `stackcap` (plugin/stackcap-plugin.c declares it):
 *   filter.stackcap.unwind   sample events get their unwound, symbolized callstack
 *   sink.stackcap.folded     folded stacks (flamegraph.pl input) from those events
 *   source.stackcap.trace    stackcap traces, plain or --zstd, through our own parser
 * Each component class's methods, by file. */
#ifndef STACKCAP_PLUGIN_PLUGIN_H
#define STACKCAP_PLUGIN_PLUGIN_H

#include <string.h>
#include <babeltrace2/babeltrace.h>

/* Names of the fields the unwind filter appends to a sample's payload;
 * the folded sink reads them. */
#define SC_FIELD_COMM "comm"
#define SC_FIELD_CALLSTACK "callstack"
#define SC_FIELD_UNWIND_END "unwind_end"
/* A stackcap trace's samples only: the event that took the sample
 * (`stackcap record -e`; "cpu-clock" without an event table) and the
 * off-CPU time in ns (`--off-cpu`; 0: an ordinary sample). */
#define SC_FIELD_EVENT "event_name"
#define SC_FIELD_OFF_CPU "off_cpu_ns"
/* unwind_end of a sample that could not be decoded (no maps, bad blob):
 * an empty callstack, left out of folded stacks as stackunwind does. */
#define SC_END_NOT_DECODED "not-decoded"
/* unwind_end of a user's LTTng event no stackcap:sample followed in its
 * thread: an empty callstack. */
#define SC_END_NO_STACK "no-stack"
/* The sample events the folded sink counts (a user's event carrying the
 * stack of its sample is not counted again); event_sample: a sample of
 * `stackcap record -e`'s events after the first (format version 4). */
#define SC_IS_SAMPLE_EVENT(name)                                                                     \
	((name) && (!strcmp((name), "sample") || !strcmp((name), "event_sample") || !strcmp((name), "stackcap:sample")))

/* A boolean parameter NAME of PARAMS (absent: 0).  -1 when not a bool. */
int sc_param_bool(const bt_value *params, const char *name);

/* An error cause per key of PARAMS not in KNOWN (N names): -EINVAL, else 0. */
int sc_check_params(bt_self_component *self, const bt_value *params, const char *const *known, size_t n);

/* The trace readers' warnings (a su_warn_hook's fn; ARG: the
 * bt_self_component *) as the component's warning log: shown when its
 * logging level lets warnings through, as babeltrace2's log lines on
 * stderr ("MM-DD HH:MM:SS.mmm PID TID W PLUGIN/FLT.STACKCAP.UNWIND [NAME] MSG"). */
void sc_log_warning(void *self_component, const char *msg);

/* filter-unwind.c */
bt_component_class_initialize_method_status unwind_init(bt_self_component_filter *self,
	bt_self_component_filter_configuration *config, const bt_value *params, void *init_data);
void unwind_finalize(bt_self_component_filter *self);
bt_message_iterator_class_initialize_method_status unwind_iter_init(bt_self_message_iterator *self,
	bt_self_message_iterator_configuration *config, bt_self_component_port_output *port);
void unwind_iter_finalize(bt_self_message_iterator *self);
bt_message_iterator_class_next_method_status unwind_iter_next(bt_self_message_iterator *self,
	bt_message_array_const msgs, uint64_t capacity, uint64_t *count);

/* sink-folded.c */
bt_component_class_initialize_method_status folded_init(bt_self_component_sink *self,
	bt_self_component_sink_configuration *config, const bt_value *params, void *init_data);
void folded_finalize(bt_self_component_sink *self);
bt_component_class_sink_graph_is_configured_method_status folded_graph_is_configured(bt_self_component_sink *self);
bt_component_class_sink_consume_method_status folded_consume(bt_self_component_sink *self);

/* source-trace.c */
bt_component_class_initialize_method_status trace_src_init(bt_self_component_source *self,
	bt_self_component_source_configuration *config, const bt_value *params, void *init_data);
void trace_src_finalize(bt_self_component_source *self);
bt_message_iterator_class_initialize_method_status trace_src_iter_init(bt_self_message_iterator *self,
	bt_self_message_iterator_configuration *config, bt_self_component_port_output *port);
void trace_src_iter_finalize(bt_self_message_iterator *self);
bt_message_iterator_class_next_method_status trace_src_iter_next(bt_self_message_iterator *self,
	bt_message_array_const msgs, uint64_t capacity, uint64_t *count);

#endif
