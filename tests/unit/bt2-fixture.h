/* SPDX-License-Identifier: MIT */
/* A babeltrace2 graph built in the test: a source that emits scripted
 * event messages (event classes with the payload members the test names,
 * the vpid/vtid common context LTTng sessions add), an optional filter
 * component class of the test's own, and a sink that hands every message
 * to a callback.  What the unit tests of code fed babeltrace2 messages
 * (trace/lttng-join.c, plugin/ir-copy.c) run on, without a trace on disk. */
#ifndef STACKCAP_TESTS_BT2_FIXTURE_H
#define STACKCAP_TESTS_BT2_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <babeltrace2/babeltrace.h>

enum fx_type {
	FX_END = 0,    /* ends a member list */
	FX_U8, FX_U32, FX_U64, FX_S32, FX_S64,
	FX_STR,
	FX_BOOL,
	FX_DOUBLE,
	FX_ENUM,       /* unsigned 8-bit enumeration, mapping "zero" = 0, "one" = 1 */
	FX_U8_SEQ,     /* dynamic array of u8 with a length member "_NAME_length" before it (CTF 1.8) */
	FX_U64_SEQ,    /* the same of u64 */
	FX_U8_DYN,     /* dynamic array of u8 without a length field */
	FX_U8_ARR4,    /* static array of 4 u8 */
	FX_VARIANT,    /* variant without a selector: option 0 "n" (u64), option 1 "s" (string) */
	FX_OPTION,     /* an option of u8 (CTF 2 only: what ir-copy refuses) */
};

struct fx_member {
	const char *name;
	enum fx_type type;
};

#define FX_MAX_MEMBERS 8

struct fx_class {
	const char *name;
	struct fx_member members[FX_MAX_MEMBERS + 1]; /* ended by FX_END */
};

/* One member's value: u (integers, bool, enum, the variant's selected
 * option), s (signed), d (double), str (strings; the variant's option 1),
 * arr/n (arrays). */
struct fx_value {
	uint64_t u;
	int64_t s;
	double d;
	const char *str;
	const uint64_t *arr;
	size_t n;
};

struct fx_event {
	size_t cls;                    /* index in fx_script.classes */
	uint32_t vpid, vtid;
	uint64_t ts;
	struct fx_value v[FX_MAX_MEMBERS];
};

struct fx_script {
	const struct fx_class *classes;
	size_t n_classes;
	const struct fx_event *events;
	size_t n_events;
	int no_ids;                    /* no vpid/vtid common context */
	int packets;                   /* the stream class has packets (one around every event) */
	uint64_t discarded;            /* nonzero: a discarded-events message of this count before the end */
};

/* The callback of the sink: 0 to go on, nonzero to stop the graph (fx_run
 * returns it). */
typedef int (*fx_msg_fn)(void *arg, const bt_message *msg);

/* Run SCRIPT's source -> FILTER (when not NULL: a filter class with an
 * input port "in" and an output port "out"; FILTER_DATA its initialize
 * method data) -> sink(FN).  @return 0 when the graph ran to its end, FN's
 * nonzero return, or -1 when the graph failed (the error is cleared). */
int fx_run(const struct fx_script *script, const bt_component_class_filter *filter, void *filter_data,
	   fx_msg_fn fn, void *arg);

#endif
