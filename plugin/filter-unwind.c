/* filter.stackcap.unwind: every message passes through (copied into our
 * own trace IR, plugin/ir-copy.c); each sample event gets three payload
 * fields: `comm`, `callstack` (innermost frame first, inlined functions as
 * entries of their own) and `unwind_end`.
 *
 * Two kinds of input, told apart by event class names:
 *  - a stackcap trace (`sample`, `maps`, ...): its events become the reader
 *    core's raw events through trace/bt2-event.h, the conversion the
 *    babeltrace2 event source uses;
 *  - an LTTng-UST trace (`stackcap:sample`, `stackcap:code_ranges`,
 *    LTTng's state dump and dl events): the LTTng join (trace/lttng-join.h,
 *    shared with stackunwind's LTTng source) turns modules and code ranges
 *    into process and maps events, each generation as soon as it is
 *    settled.  The user's own events of a channel that holds
 *    `stackcap:sample` get the same three fields: the stack of the
 *    `stackcap:sample` that comes next in their thread
 *    (stackcap_lttng_tracepoint records it right after the event), or an
 *    empty callstack with unwind_end "no-stack" when another event of the
 *    thread comes first.
 * A stackcap trace's samples also get `event_name` (the event that took
 * the sample, from the trace's event table: `stackcap record -e`; else
 * cpu-clock) and `off_cpu_ns` (`--off-cpu`: the time the thread stayed
 * blocked at this stack; 0 for an ordinary sample), and their kernel
 * frames (format version 3) come first in the callstack, innermost first,
 * in module "[kernel.kallsyms]" (or a module's "[name]"), named from the
 * trace's own kernel symbols.  Those are written at the end of the trace
 * (its kernel_symbols event), so from the first kernel_chain on every
 * sample, and every message after it, waits for them (or for the end of the input, or
 * MAX_QUEUE messages: then its kernel frames are "[unknown]").
 * Every other event passes through untouched.
 *
 * Events reach the reader core one at a time (trace/reader-push.h).  A
 * sample may come before the maps of its generation (the writer stamps a
 * snapshot when it writes it), a sample's runtime frames before the
 * runtime_code events that name them, a user's event before its sample: such a
 * message and every message after it wait in a queue until what they
 * wait for arrives, or until the trace time has moved WAIT_NS past them
 * (a sample waiting for its maps: twice that), or the queue holds
 * MAX_QUEUE messages, or the input ends; then a sample
 * still without maps leaves with an empty callstack (unwind_end
 * "not-decoded").  Messages leave in arrival order. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "plugin/plugin.h"
#include "plugin/ir-copy.h"
#include "trace/reader-push.h"
#include "trace/bt2-event.h"
#include "trace/lttng-join.h"
#include "debuginfo/module.h"
#include "debuginfo/inflate-cache.h"
#include "unwind/unwind.h"
#include "symbolize/resolve.h"

#define WAIT_NS (5ull * 1000000000u)
#define MAX_QUEUE (1u << 20)
#define DEFAULT_MAX_FRAMES 1024

/* Event class tags (ir-copy keeps one per class): a stackcap trace's
 * events are TAG_STACKCAP + their raw_kind, an LTTng trace's TAG_LTTNG +
 * their su_lttng_event (SU_LTTNG_OTHER: a user's event that gets a stack). */
enum { TAG_NONE = 0, TAG_STACKCAP = 1, TAG_LTTNG = 100 };

static int is_lttng_tag(int tag)
{
	return tag >= TAG_LTTNG;
}

struct unwind_comp {
	bt_self_component *self;
	bt_self_component_filter *filter;
	const char **debug_dirs;     /* NULL-terminated */
	char *symfs;
	char *jit_dir;               /* a trace's JIT maps (TRACE/jit), or NULL */
	struct su_debuginfo_opts di;
	int no_inline;
	size_t max_frames;
};

struct qitem {
	bt_message *msg;
	int pending;                 /* a sample waiting to be decoded */
	int await;                   /* a user's event waiting for its thread's next event */
	struct raw_event ev;         /* of a pending sample; blob malloc'ed */
	int has_seg;                 /* LTTng: its segment, pushed just before it */
	struct raw_event seg;        /* blob malloc'ed */
	int has_rt;                  /* LTTng: its runtime frames, pushed just before it */
	struct raw_event rt;         /* blob malloc'ed */
	int needs_ksyms;             /* a sample after a kernel_chain: waits for the kernel symbols */
	int has_partner;             /* LTTng: the user's event this sample belongs to */
	uint64_t partner;            /* its queue number */
};

/* A user's event waiting for the next event of its thread (LTTng). */
struct waiter {
	uint32_t vpid, vtid;
	uint64_t seq, ts;            /* queue number, time */
	int active;
};

struct unwind_iter {
	struct unwind_comp *comp;
	bt_self_message_iterator *self;
	bt_message_iterator *up;
	struct ir_copy *copy;
	struct su_reader *reader;
	struct su_modcache *modules;
	struct su_resolver *resolver; /* frames named as stackunwind names them */
	struct su_unwinder *unwinder;
	struct su_frame *frames;
	/* the queue: a ring of messages in arrival order */
	struct qitem *q;
	size_t qhead, qlen, qcap;
	uint64_t qseq;               /* queue number of the head (numbers never reused) */
	size_t n_pending;
	size_t n_await;
	struct waiter *waiters;
	size_t n_waiters, cap_waiters;
	struct su_lttng_join *join;
	uint64_t last_ts;
	int ended;
	/* stackcap traces: the event table read (from the first sample's trace) */
	int have_events;
	/* the kernel symbols arrived; a kernel_chain was seen */
	int have_ksyms;
	int kc_seen;
	/* the event whose sample is being decoded */
	bt_message *cur;
	bt_message *cur_partner;     /* and the user's event that gets the same stack */
	int cur_done;
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
	free(c->jit_dir);
	free(c);
}

/* Parameter NAME, when given, a string copied into *OUT.  0 or -errno. */
static int string_param(struct unwind_comp *c, const bt_value *params, const char *name, char **out)
{
	const bt_value *v = bt_value_map_borrow_entry_value_const(params, name);
	if (!v)
		return 0;
	if (!bt_value_is_string(v)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(c->self, "parameter %s: a string", name);
		return -EINVAL;
	}
	return (*out = strdup(bt_value_string_get(v))) ? 0 : -ENOMEM;
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
	int rc = string_param(c, params, "symfs", &c->symfs);
	if (!rc)
		rc = string_param(c, params, "jit-dir", &c->jit_dir);
	if (rc)
		return rc;
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
	/* Inflated debug files kept as stackunwind keeps them (STACKCAP_CACHE_DIR=
	 * empty turns it off). */
	c->di.inflate_cache_dir = su_inflate_default_dir();
	c->di.kept_dir = c->di.inflate_cache_dir;
	return 0;
}


bt_component_class_initialize_method_status unwind_init(bt_self_component_filter *self,
	bt_self_component_filter_configuration *config, const bt_value *params, void *init_data)
{
	static const char *const known[] = { "debug-dir", "symfs", "jit-dir", "no-debuginfod", "no-inline", "max-frames" };
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

/* Does the stream class of EC hold LTTng's stackcap:sample? */
static int stream_has_lttng_samples(const bt_event_class *ec)
{
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
	for (uint64_t i = 0; i < bt_stream_class_get_event_class_count(sc); i++)
		if (su_lttng_event_of(bt_event_class_get_name(bt_stream_class_borrow_event_class_by_index_const(sc, i))) ==
		    SU_LTTNG_SAMPLE)
			return 1;
	return 0;
}

static int has_member(const bt_field_class *st, const char *name)
{
	return st && bt_field_class_structure_borrow_member_by_name_const(st, name) != NULL;
}

/* The tag of event class EC (payload class PAYLOAD); *ADD: it gets the
 * callstack fields.  A sample without blob and generation is someone
 * else's and left alone, as is a user's event with a member of our names. */
static int payload_tag(const bt_event_class *ec, const bt_field_class *payload, int *add)
{
	const char *name = bt_event_class_get_name(ec);
	int const sk = su_bt2_stackcap_kind(name);
	/* (an LTTng sample's blob: blob_words and blob_bytes, docs/lttng.md;
	 * blob in ours and in LTTng traces recorded before) */
	int const ours = (has_member(payload, "blob") || (has_member(payload, "blob_words") &&
							   has_member(payload, "blob_bytes"))) &&
			 has_member(payload, "generation");
	*add = 0;
	if (sk >= 0) {
		if (sk == RAW_SAMPLE || sk == RAW_SAMPLE_FULL || sk == RAW_SAMPLE_SEGMENT) {
			if (!ours)
				return TAG_NONE;
			*add = sk == RAW_SAMPLE;
		}
		return TAG_STACKCAP + sk;
	}
	enum su_lttng_event const lk = su_lttng_event_of(name);
	if (lk == SU_LTTNG_SAMPLE || lk == SU_LTTNG_SEGMENT) {
		if (!ours)
			return TAG_NONE;
		*add = lk == SU_LTTNG_SAMPLE;
		return TAG_LTTNG + (int)lk;
	}
	if (lk != SU_LTTNG_OTHER)
		return TAG_LTTNG + (int)lk;
	if (!stream_has_lttng_samples(ec) || has_member(payload, SC_FIELD_COMM) ||
	    has_member(payload, SC_FIELD_CALLSTACK) || has_member(payload, SC_FIELD_UNWIND_END))
		return TAG_NONE;
	*add = 1;
	return TAG_LTTNG + (int)SU_LTTNG_OTHER;
}

/* ir-copy's hook: tag our event classes; a sample's payload (and a user's
 * LTTng event's: payload_tag) gets comm, callstack and unwind_end. */
static bt_field_class *extend_payload(void *arg, bt_trace_class *tc, const bt_event_class *in_ec,
				      bt_field_class *payload, int *tag, int *err)
{
	(void)arg;
	int add = 0;
	*tag = payload_tag(in_ec, payload, &add);
	if (!add)
		return payload;
	int const created = !payload;
	if (created && !(payload = bt_field_class_structure_create(tc))) {
		*err = 1;
		return NULL;
	}
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
	/* A stackcap trace's sample: its event and off-CPU time too. */
	int const stackcap = !is_lttng_tag(*tag);
	bt_field_class *evn = stackcap ? bt_field_class_string_create(tc) : NULL;
	bt_field_class *ocpu = stackcap ? bt_field_class_integer_unsigned_create(tc) : NULL;
	bt_field_class *arr = NULL;
	*err = 1;
	if (frame && ip && fn && mod && off && file && line && inl && comm && end && (!stackcap || (evn && ocpu))) {
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
		    !bt_field_class_structure_append_member(payload, SC_FIELD_UNWIND_END, end) &&
		    (!stackcap || (!bt_field_class_structure_append_member(payload, SC_FIELD_EVENT, evn) &&
				   !bt_field_class_structure_append_member(payload, SC_FIELD_OFF_CPU, ocpu))))
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
	bt_field_class_put_ref(evn);
	bt_field_class_put_ref(ocpu);
	bt_field_class_put_ref(arr);
	if (*err && created) {
		bt_field_class_put_ref(payload);
		return NULL;
	}
	return payload;
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
	const char *name = su_resolver_comm(it->resolver, s ? s->process : NULL);
	if (!name || bt_field_string_set_value(comm, name) ||
	    bt_field_string_set_value(endf, end) || bt_field_array_dynamic_set_length(arr, 0))
		return -ENOMEM;
	/* A stackcap sample's event and off-CPU time (an undecoded one: its
	 * event, as far as the reader core named it, is not known here). */
	bt_field *evf = bt_field_structure_borrow_member_field_by_name(pl, SC_FIELD_EVENT);
	bt_field *ocf = bt_field_structure_borrow_member_field_by_name(pl, SC_FIELD_OFF_CPU);
	if (evf && bt_field_string_set_value(evf, s ? su_sample_event(s) : ""))
		return -ENOMEM;
	if (ocf)
		bt_field_integer_unsigned_set_value(ocf, s ? s->off_cpu_ns : 0);
	uint64_t n = 0;
	for (size_t i = 0; i < nframes; i++) {
		struct su_resolved r;
		if (su_resolve(it->resolver, s->pid, s->maps, &frames[i], &r))
			return -ENOMEM;
		struct frame_out fo = { .ip = r.pc, .function = "", .module = "", .file = "" };
		if (r.kind == SU_RESOLVED_UNKNOWN || r.kind == SU_RESOLVED_MODULE) {
			if (r.kind == SU_RESOLVED_MODULE) {
				fo.module = r.module_name;
				fo.offset = r.elf_addr;
			}
			if (set_frame(arr, &n, &fo))
				return -ENOMEM;
			continue;
		}
		if (r.kind == SU_RESOLVED_KERNEL) {
			/* As stackunwind names it: the trace's kernel symbol, or
			 * [unknown]; module [kernel.kallsyms] or "[name]"; offset:
			 * the kernel address. */
			fo.function = r.nsym && r.sym[0].function ? r.sym[0].function : "[unknown]";
			fo.module = r.module_name;
			fo.offset = r.elf_addr;
			if (set_frame(arr, &n, &fo))
				return -ENOMEM;
			continue;
		}
		if (r.kind == SU_RESOLVED_JIT) {
			fo.function = r.sym[0].function;
			fo.module = r.jit_map;
			fo.offset = r.sym[0].func_offset;
			if (set_frame(arr, &n, &fo))
				return -ENOMEM;
			continue;
		}
		/* Innermost inlined function first; the real function last. */
		fo.module = r.module_name;
		fo.offset = r.elf_addr;
		for (size_t k = it->comp->no_inline ? r.nsym - 1 : 0; k < r.nsym; k++) {
			/* A runtime frame whose code object was never described
			 * is named as stackunwind folded names it. */
			fo.function = r.sym[k].function ? r.sym[k].function
				    : r.kind == SU_RESOLVED_PYTHON ? "[unknown python code]" : "[unknown]";
			fo.file = r.sym[k].file ? r.sym[k].file : "";
			fo.line = r.sym[k].line;
			fo.inlined = k + 1 < r.nsym;
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
	size_t n = su_unwind(it->unwinder, s, it->frames, it->comp->max_frames, &end);
	n = su_resolver_exec_end(it->resolver, s, it->frames, n, &end);
	int rc = fill_sample(it, it->cur, s, it->frames, n, su_unwind_end_name(end));
	if (!rc && it->cur_partner)
		rc = fill_sample(it, it->cur_partner, s, it->frames, n, su_unwind_end_name(end));
	it->cur_done = 1;
	return rc;
}

/* ---- the queue -------------------------------------------------------------------- */

static int blocked(const struct qitem *qi)
{
	return qi->pending || qi->await;
}

/* The item with queue number SEQ, or NULL when it has left. */
static struct qitem *q_at(struct unwind_iter *it, uint64_t seq)
{
	if (seq < it->qseq || seq - it->qseq >= it->qlen)
		return NULL;
	return &it->q[(it->qhead + (seq - it->qseq)) % it->qcap];
}

/* Append MSG (the queue takes it, even on error).  @return its item, NULL
 * on -ENOMEM. */
static struct qitem *q_push(struct unwind_iter *it, bt_message *msg)
{
	if (it->qlen == it->qcap) {
		size_t const n = it->qcap ? 2 * it->qcap : 256;
		struct qitem *nq = malloc(n * sizeof(*nq));
		if (!nq) {
			bt_message_put_ref(msg);
			return NULL;
		}
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
	it->qlen++;
	return qi;
}

static int copy_blob(struct raw_event *dst, const struct raw_event *src)
{
	*dst = *src;
	uint8_t *b = malloc(src->blob_len ? src->blob_len : 1);
	if (!b)
		return -ENOMEM;
	if (src->blob_len)
		memcpy(b, src->blob, src->blob_len);
	dst->blob = b;
	return 0;
}

/* QI waits to be decoded: sample EV (and segment SEG, runtime frames RT)
 * copied. */
static int q_hold(struct unwind_iter *it, struct qitem *qi, const struct raw_event *ev, const struct raw_event *seg,
		  const struct raw_event *rt)
{
	if (copy_blob(&qi->ev, ev))
		return -ENOMEM;
	if (seg && copy_blob(&qi->seg, seg)) {
		free((void *)qi->ev.blob);
		return -ENOMEM;
	}
	if (rt && copy_blob(&qi->rt, rt)) {
		free((void *)qi->ev.blob);
		if (seg)
			free((void *)qi->seg.blob);
		return -ENOMEM;
	}
	qi->has_seg = seg != NULL;
	qi->has_rt = rt != NULL;
	qi->pending = 1;
	it->n_pending++;
	return 0;
}

/* Decode sample EV (after its segment SEG and runtime frames RT) into MSG
 * now, and into the user's event PARTNER that it belongs to. */
static int decode_now(struct unwind_iter *it, bt_message *msg, const struct raw_event *ev, const struct raw_event *seg,
		      const struct raw_event *rt, struct qitem *partner)
{
	it->cur = NULL;
	it->cur_partner = NULL;
	int rc = seg ? su_reader_push(it->reader, seg) : 0;
	if (rc == 0 && rt)
		rc = su_reader_push(it->reader, rt);
	it->cur = ev->kind == RAW_SAMPLE ? msg : NULL;
	it->cur_partner = partner && it->cur ? partner->msg : NULL;
	it->cur_done = 0;
	if (rc == 0)
		rc = su_reader_push(it->reader, ev);
	if (rc == 0 && ev->kind == RAW_SAMPLE && !it->cur_done) {
		rc = fill_sample(it, msg, NULL, NULL, 0, SC_END_NOT_DECODED);
		if (rc == 0 && partner)
			rc = fill_sample(it, partner->msg, NULL, NULL, 0, SC_END_NOT_DECODED);
	}
	if (partner && partner->await) {
		partner->await = 0;
		it->n_await--;
	}
	it->cur = NULL;
	it->cur_partner = NULL;
	return rc;
}

/* Decode the waiting samples that can be, in order; FORCE: all of them. */
static int resolve(struct unwind_iter *it, int force)
{
	for (size_t i = 0; i < it->qlen && it->n_pending; i++) {
		struct qitem *qi = &it->q[(it->qhead + i) % it->qcap];
		if (!qi->pending)
			continue;
		int const ready = qi->ev.kind == RAW_RUNTIME_FRAMES ? su_reader_can_name_runtime(it->reader, &qi->ev)
				  : qi->ev.kind == RAW_KERNEL_CHAIN || qi->ev.kind == RAW_OFF_CPU ? 1
				  : su_reader_can_decode(it->reader, &qi->ev) &&
					    (!qi->has_rt || su_reader_can_name_runtime(it->reader, &qi->rt));
		/* Twice the join's wait: the generation's code_ranges may come
		 * after the sample (by a writer period), then wait WAIT_NS. */
		if (!force && !ready &&
		    it->last_ts < qi->ev.ts + 2 * WAIT_NS && it->qlen < MAX_QUEUE)
			break;
		/* Kernel symbols come at the end of the trace: no time limit. */
		if (!force && ready && qi->needs_ksyms && !it->have_ksyms && it->qlen < MAX_QUEUE)
			break;
		int rc = decode_now(it, qi->msg, &qi->ev, qi->has_seg ? &qi->seg : NULL, qi->has_rt ? &qi->rt : NULL,
				    qi->has_partner ? q_at(it, qi->partner) : NULL);
		free((void *)qi->ev.blob);
		if (qi->has_seg)
			free((void *)qi->seg.blob);
		if (qi->has_rt)
			free((void *)qi->rt.blob);
		qi->pending = 0;
		qi->has_seg = 0;
		qi->has_rt = 0;
		it->n_pending--;
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- LTTng: the user's events waiting for their stack --------------------------------- */

static struct waiter *waiter_find(struct unwind_iter *it, uint32_t vpid, uint32_t vtid)
{
	for (size_t i = 0; i < it->n_waiters; i++)
		if (it->waiters[i].active && it->waiters[i].vpid == vpid && it->waiters[i].vtid == vtid)
			return &it->waiters[i];
	return NULL;
}

static struct waiter *waiter_new(struct unwind_iter *it)
{
	for (size_t i = 0; i < it->n_waiters; i++)
		if (!it->waiters[i].active)
			return &it->waiters[i];
	if (SU_GROW(it->waiters, it->cap_waiters, it->n_waiters + 1))
		return NULL;
	return &it->waiters[it->n_waiters++];
}

/* W's event leaves without a stack: its thread went on without a sample. */
static int waiter_release(struct unwind_iter *it, struct waiter *w)
{
	struct qitem *qi = q_at(it, w->seq);
	w->active = 0;
	if (!qi || !qi->await)
		return 0;
	qi->await = 0;
	it->n_await--;
	return fill_sample(it, qi->msg, NULL, NULL, 0, SC_END_NO_STACK);
}

static int waiters_expire(struct unwind_iter *it, int force)
{
	for (size_t i = 0; i < it->n_waiters && it->n_await; i++) {
		struct waiter *w = &it->waiters[i];
		if (w->active && (force || it->last_ts >= w->ts + WAIT_NS || it->qlen >= MAX_QUEUE)) {
			int const rc = waiter_release(it, w);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The join's process and maps events go to the reader core at once. */
static int push_raw(void *arg, const struct raw_event *ev)
{
	struct unwind_iter *it = arg;
	return su_reader_push(it->reader, ev);
}

/* What waits and may go now: settled generations, then samples, then
 * the user's events; FORCE: everything (the input ended). */
static int settle(struct unwind_iter *it, int force)
{
	int rc = su_lttng_join_flush(it->join, it->last_ts, WAIT_NS, force, push_raw, it);
	if (!rc && it->n_pending)
		rc = resolve(it, force);
	if (!rc && it->n_await)
		rc = waiters_expire(it, force);
	return rc;
}

/* An event OUT (copy of IN) of an LTTng trace, tagged TAG. */
static int handle_lttng(struct unwind_iter *it, const bt_message *in, bt_message *out, int tag)
{
	enum su_lttng_event const lk = (enum su_lttng_event)(tag - TAG_LTTNG);
	uint32_t vpid = 0, vtid = 0;
	int const ids = su_lttng_event_ids(in, &vpid, &vtid) == 0;
	uint64_t const ts = su_bt2_event_ts(in);
	if (ts > it->last_ts)
		it->last_ts = ts;
	int rc = 0;
	if (!ids) {
		if (lk == SU_LTTNG_OTHER)
			rc = fill_sample(it, out, NULL, NULL, 0, SC_END_NO_STACK);
		else if (lk != SU_LTTNG_MODULES) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(it->self,
				"stackcap events without the vpid and vtid contexts: record with "
				"`lttng add-context -u -t vpid -t vtid` (docs/lttng.md)");
			rc = -EINVAL;
		}
		if (rc) {
			bt_message_put_ref(out);
			return rc;
		}
		return q_push(it, out) ? 0 : -ENOMEM;
	}
	/* This event comes next in its thread: a user's event waiting there
	 * gets this sample's stack, or none. */
	struct waiter *w = lk != SU_LTTNG_SEGMENT && lk != SU_LTTNG_RUNTIME_FRAMES ? waiter_find(it, vpid, vtid) : NULL;
	int has_partner = 0;
	uint64_t partner = 0;
	if (w && lk == SU_LTTNG_SAMPLE) {
		has_partner = 1;
		partner = w->seq;
		w->active = 0;
	} else if (w) {
		rc = waiter_release(it, w);
	}
	struct raw_event ev;
	struct su_lttng_extra x = { .has_seg = 0 };
	int got = 0;
	if (!rc && (lk == SU_LTTNG_MODULES || lk == SU_LTTNG_CODE_RANGES || lk == SU_LTTNG_RUNTIME))
		rc = su_lttng_join_add(it->join, in, lk, vpid, ts);
	else if (!rc && (lk == SU_LTTNG_SAMPLE || lk == SU_LTTNG_SEGMENT || lk == SU_LTTNG_RUNTIME_FRAMES))
		rc = got = su_lttng_join_sample(it->join, in, lk, vpid, vtid, ts, &ev, &x);
	if (rc < 0) {
		bt_message_put_ref(out);
		return rc;
	}
	rc = su_lttng_join_flush(it->join, it->last_ts, WAIT_NS, 0, push_raw, it);
	if (rc) {
		bt_message_put_ref(out);
		return rc;
	}
	uint64_t const seq = it->qseq + it->qlen;
	struct qitem *qi = q_push(it, out);
	if (!qi)
		return -ENOMEM;
	if (lk == SU_LTTNG_OTHER) {
		struct waiter *nw = waiter_new(it);
		if (!nw)
			return -ENOMEM;
		*nw = (struct waiter){ .vpid = vpid, .vtid = vtid, .seq = seq, .ts = ts, .active = 1 };
		qi->await = 1;
		it->n_await++;
	} else if (lk == SU_LTTNG_SAMPLE && got == 1) {
		if (!it->n_pending && su_reader_can_decode(it->reader, &ev) &&
		    (!x.has_rt || su_reader_can_name_runtime(it->reader, &x.rt))) {
			rc = decode_now(it, out, &ev, x.has_seg ? &x.seg : NULL, x.has_rt ? &x.rt : NULL,
					has_partner ? q_at(it, partner) : NULL);
		} else {
			rc = q_hold(it, qi, &ev, x.has_seg ? &x.seg : NULL, x.has_rt ? &x.rt : NULL);
			qi->has_partner = has_partner;
			qi->partner = partner;
		}
	} else if (lk == SU_LTTNG_SAMPLE) {
		/* No blob: not one of ours after all. */
		rc = fill_sample(it, out, NULL, NULL, 0, SC_END_NOT_DECODED);
		struct qitem *pq = has_partner ? q_at(it, partner) : NULL;
		if (!rc && pq && pq->await) {
			pq->await = 0;
			it->n_await--;
			rc = fill_sample(it, pq->msg, NULL, NULL, 0, SC_END_NO_STACK);
		}
	}
	if (!rc)
		rc = settle(it, 0);
	return rc;
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
		return q_push(it, out) ? 0 : -ENOMEM;
	if (is_lttng_tag(tag))
		return handle_lttng(it, in, out, tag);
	struct raw_event ev;
	int rc = su_bt2_stackcap_event(in, (enum raw_kind)(tag - TAG_STACKCAP), &ev, &it->blob, &it->blob_cap);
	if (rc) {
		bt_message_put_ref(out);
		return rc;
	}
	if (ev.ts > it->last_ts)
		it->last_ts = ev.ts;
	switch (ev.kind) {
	case RAW_SAMPLE:
	case RAW_SAMPLE_FULL:
	case RAW_SAMPLE_SEGMENT: {
		if (!it->have_events && ev.kind == RAW_SAMPLE) {
			/* The event table of the sample's trace (versions 4, 5). */
			char **names;
			size_t nn;
			if (su_bt2_event_table(bt_stream_borrow_trace_const(bt_event_borrow_stream_const(
				    bt_message_event_borrow_event_const(in))), &names, &nn)) {
				bt_message_put_ref(out);
				return -ENOMEM;
			}
			su_reader_set_events(it->reader, names, nn);
			it->have_events = 1;
		}
		/* After the first kernel_chain every sample waits for the
		 * kernel symbols (streams interleave: its own chain may be any
		 * of them; and the queue keeps order, so the samples after
		 * the first held one wait anyway). */
		int const ksyms = ev.kind == RAW_SAMPLE && it->kc_seen;
		struct qitem *qi = q_push(it, out);
		if (!qi)
			return -ENOMEM;
		qi->needs_ksyms = ksyms;
		if (it->n_pending || !su_reader_can_decode(it->reader, &ev) || (ksyms && !it->have_ksyms))
			return q_hold(it, qi, &ev, NULL, NULL);
		return decode_now(it, out, &ev, NULL, NULL, NULL);
	}
	case RAW_KERNEL_CHAIN:
	case RAW_OFF_CPU: {
		/* For the next sample of its thread: pushed just before it, in
		 * order with the samples held ahead of it. */
		if (ev.kind == RAW_KERNEL_CHAIN)
			it->kc_seen = 1;
		struct qitem *qi = q_push(it, out);
		if (!qi)
			return -ENOMEM;
		if (it->n_pending)
			return q_hold(it, qi, &ev, NULL, NULL);
		return su_reader_push(it->reader, &ev);
	}
	case RAW_RUNTIME_FRAMES: {
		/* The next sample of its thread's: it waits with the samples
		 * ahead of it, so that it reaches the core just before its own,
		 * and for the runtime_code events of the objects it names (the
		 * writer writes them after the sample: its process stream may
		 * be behind), so that its sample names them as stackunwind
		 * does. */
		struct qitem *qi = q_push(it, out);
		if (!qi)
			return -ENOMEM;
		if (it->n_pending || !su_reader_can_name_runtime(it->reader, &ev))
			return q_hold(it, qi, &ev, NULL, NULL);
		return decode_now(it, out, &ev, NULL, NULL, NULL);
	}
	default:
		/* The core takes process strings, maps and kernel symbols, even
		 * on error. */
		if (ev.kind == RAW_KERNEL_SYMBOLS)
			it->have_ksyms = 1;
		rc = su_reader_push(it->reader, &ev);
		if (rc) {
			bt_message_put_ref(out);
			return rc;
		}
		if (!q_push(it, out))
			return -ENOMEM;
		return it->n_pending ? resolve(it, 0) : 0;
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
		if (qi->has_seg)
			free((void *)qi->seg.blob);
		if (qi->has_rt)
			free((void *)qi->rt.blob);
	}
	free(it->q);
	free(it->waiters);
	su_lttng_join_free(it->join);
	bt_message_iterator_put_ref(it->up);
	ir_copy_free(it->copy);
	su_reader_free(it->reader);
	su_unwinder_free(it->unwinder);
	su_resolver_free(it->resolver);
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
	struct su_reader_opts const ro = { .warn = { .fn = sc_log_warning, .arg = sc } };
	it->reader = su_reader_new(&ro, &cb);
	it->join = su_lttng_join_new();
	it->modules = su_modcache_new(&it->comp->di);
	it->resolver = it->modules ? su_resolver_new(it->modules, it->comp->di.symfs, it->comp->jit_dir) : NULL;
	it->unwinder = it->modules ? su_unwinder_new(SU_UNWINDER_FAST, it->modules) : NULL;
	it->frames = calloc(it->comp->max_frames, sizeof(*it->frames));
	if (!it->copy || !it->reader || !it->join || !it->unwinder || !it->frames || !it->resolver) {
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
	while (!it->ended && (it->qlen == 0 || blocked(&it->q[it->qhead]))) {
		bt_message_array_const in;
		uint64_t n = 0;
		bt_message_iterator_next_status const st = bt_message_iterator_next(it->up, &in, &n);
		if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_END) {
			it->ended = 1;
			if (settle(it, 1))
				return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
			break;
		}
		if (st == BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN) {
			if (it->qlen && !blocked(&it->q[it->qhead]))
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
		if (!rc)
			rc = settle(it, 0); /* waited long enough? */
		if (rc == -ENOMEM)
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_MEMORY_ERROR;
		if (rc)
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	}
	uint64_t k = 0;
	while (k < capacity && it->qlen && !blocked(&it->q[it->qhead])) {
		msgs[k++] = it->q[it->qhead].msg;
		it->qhead = (it->qhead + 1) % it->qcap;
		it->qlen--;
		it->qseq++;
	}
	*count = k;
	if (k)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
}
