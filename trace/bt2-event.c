/* babeltrace2 event messages -> raw events (trace/bt2-event.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "trace/bt2-event.h"

const bt_field *su_bt2_member(const bt_field *st, const char *name)
{
	return st && bt_field_get_class_type(st) == BT_FIELD_CLASS_TYPE_STRUCTURE
		? bt_field_structure_borrow_member_field_by_name_const(st, name) : NULL;
}

int su_bt2_u64(const bt_field *st, const char *name, uint64_t *out)
{
	const bt_field *f = su_bt2_member(st, name);
	if (!f)
		return -ENOENT;
	bt_field_class_type const t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		*out = (uint64_t)bt_field_integer_signed_get_value(f);
	else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		*out = bt_field_integer_unsigned_get_value(f);
	else
		return -EINVAL;
	return 0;
}

uint64_t su_bt2_u64_or(const bt_field *st, const char *name, uint64_t dflt)
{
	uint64_t v;
	return su_bt2_u64(st, name, &v) ? dflt : v;
}

const char *su_bt2_str(const bt_field *st, const char *name)
{
	const bt_field *f = su_bt2_member(st, name);
	return f && bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_STRING ? bt_field_string_get_value(f) : NULL;
}

const bt_field *su_bt2_array(const bt_field *st, const char *name, uint64_t *n)
{
	const bt_field *f = su_bt2_member(st, name);
	if (!f || !bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_ARRAY))
		return NULL;
	*n = bt_field_array_get_length(f);
	return f;
}

/* Are the elements of array F unsigned integers?  Their class asked once,
 * not each element's (a blob is ~200 of them: asking each its class was a
 * tenth of reading an LTTng trace). */
static int elements_unsigned(const bt_field *f)
{
	const bt_field_class *ec =
		bt_field_class_array_borrow_element_field_class_const(bt_field_borrow_class_const(f));
	return bt_field_class_type_is(bt_field_class_get_type(ec), BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER);
}

/* The first N elements of the unsigned integer array F as bytes into BUF. */
static void elements_as_bytes(const bt_field *f, uint64_t n, uint8_t *buf)
{
	for (uint64_t i = 0; i < n; i++)
		buf[i] = (uint8_t)bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(f, i));
}

uint64_t su_bt2_bytes(const bt_field *st, const char *name, uint8_t *buf, uint64_t cap)
{
	uint64_t n = 0;
	const bt_field *f = su_bt2_array(st, name, &n);
	if (!f || !elements_unsigned(f))
		return 0;
	elements_as_bytes(f, n < cap ? n : cap, buf);
	return n;
}

int64_t su_bt2_copy_bytes(const bt_field *st, const char *name, uint8_t **buf, size_t *cap)
{
	uint64_t n = 0;
	const bt_field *f = su_bt2_array(st, name, &n);
	if (!f)
		return -ENOENT;
	if (n >= SIZE_MAX || SU_GROW(*buf, *cap, n + 1))
		return -ENOMEM;
	if (!elements_unsigned(f))
		return 0;
	elements_as_bytes(f, n, *buf);
	return (int64_t)n;
}

int64_t su_bt2_copy_blob(const bt_field *st, uint8_t **buf, size_t *cap)
{
	uint64_t n = 0, len;
	const bt_field *w = su_bt2_array(st, "blob_words", &n);
	if (!w)
		return su_bt2_copy_bytes(st, "blob", buf, cap);
	if (n > (SIZE_MAX - 1) / 8 || su_bt2_u64(st, "blob_bytes", &len) || len > 8 * n || 8 * n - len >= 8 ||
	    !elements_unsigned(w))
		return -EINVAL;
	if (SU_GROW(*buf, *cap, 8 * n + 1))
		return -ENOMEM;
	uint8_t *p = *buf;
	for (uint64_t i = 0; i < n; i++, p += 8) {
		uint64_t const v = bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(w, i));
		for (unsigned k = 0; k < 8; k++)
			p[k] = (uint8_t)(v >> (8 * k));
	}
	return (int64_t)len;
}

uint64_t su_bt2_event_ts(const bt_message *msg)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const bt_stream_class *sc = bt_stream_borrow_class_const(bt_event_borrow_stream_const(e));
	return bt_stream_class_borrow_default_clock_class_const(sc)
		? bt_clock_snapshot_get_value(bt_message_event_borrow_default_clock_snapshot_const(msg)) : 0;
}

/* ---- stackcap traces ------------------------------------------------------ */

static const struct {
	const char *name;
	enum raw_kind kind;
} stackcap_events[] = {
	{ "sample", RAW_SAMPLE },
	{ "event_sample", RAW_SAMPLE }, /* version 4: with its event's index */
	{ "sample_full", RAW_SAMPLE_FULL },
	{ "sample_segment", RAW_SAMPLE_SEGMENT },
	{ "process_start", RAW_PROCESS_START },
	{ "maps", RAW_MAPS },
	{ "drops", RAW_DROPS },
	{ "process_end", RAW_PROCESS_END },
	{ "kernel_chain", RAW_KERNEL_CHAIN },
	{ "kernel_symbols", RAW_KERNEL_SYMBOLS },
	{ "off_cpu", RAW_OFF_CPU },
	{ "runtime", RAW_RUNTIME },
	{ "runtime_code", RAW_RUNTIME_CODE },
	{ "runtime_frames", RAW_RUNTIME_FRAMES },
};

int su_bt2_stackcap_kind(const char *name)
{
	for (size_t i = 0; name && i < sizeof(stackcap_events) / sizeof(stackcap_events[0]); i++)
		if (!strcmp(stackcap_events[i].name, name))
			return (int)stackcap_events[i].kind;
	return -1;
}

static char *dup_str(const bt_field *st, const char *name)
{
	const char *s = su_bt2_str(st, name);
	return strdup(s ? s : "");
}

static int maps_of(const bt_field *pl, struct raw_event *ev)
{
	uint64_t n = 0;
	const bt_field *arr = su_bt2_array(pl, "entries", &n);
	if (!arr)
		n = 0;
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->generation = (uint32_t)su_bt2_u64_or(pl, "generation", 0);
	m->entries = calloc(n ? n : 1, sizeof(*m->entries));
	m->range_list = calloc(n ? n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		su_maps_free(m);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		const bt_field *e = bt_field_array_borrow_element_field_by_index_const(arr, i);
		struct su_map_entry *me = &m->entries[i];
		me->start = su_bt2_u64_or(e, "start", 0);
		me->end = su_bt2_u64_or(e, "end", 0);
		me->offset = su_bt2_u64_or(e, "offset", 0);
		me->bias = su_bt2_u64_or(e, "bias", 0);
		me->flags = (uint32_t)su_bt2_u64_or(e, "flags", 0);
		uint64_t const bl = su_bt2_bytes(e, "build_id", me->build_id, SU_BUILD_ID_MAX);
		me->build_id_len = (uint8_t)(bl <= SU_BUILD_ID_MAX ? bl : 0);
		m->count = (uint32_t)i + 1;
		if (!(me->path = dup_str(e, "path"))) {
			su_maps_free(m);
			return -ENOMEM;
		}
		m->range_list[i] = (struct stackcap_code_range){ me->start, me->end, (uint32_t)i };
	}
	ev->maps = m;
	return 0;
}

/* kernel_chain's addresses as little-endian bytes in *BLOB (as the native
 * source hands them over). */
static int kernel_chain_of(const bt_field *pl, struct raw_event *ev, uint8_t **blob, size_t *cap)
{
	uint64_t n = 0;
	const bt_field *arr = su_bt2_array(pl, "ips", &n);
	if (!arr)
		n = 0;
	if (8 * n + 1 > *cap) {
		uint8_t *nb = realloc(*blob, 8 * n + 1);
		if (!nb)
			return -ENOMEM;
		*blob = nb;
		*cap = 8 * n + 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t const v = bt_field_integer_unsigned_get_value(bt_field_array_borrow_element_field_by_index_const(arr, i));
		for (int b = 0; b < 8; b++)
			(*blob)[8 * i + (uint64_t)b] = (uint8_t)(v >> (8 * b));
	}
	ev->blob = *blob;
	ev->blob_len = 8 * n;
	return 0;
}

static int kernel_symbols_of(const bt_field *pl, struct raw_event *ev)
{
	uint64_t n = 0;
	const bt_field *arr = su_bt2_array(pl, "symbols", &n);
	if (!arr)
		n = 0;
	struct su_kernel *k = calloc(1, sizeof(*k));
	if (!k || !(k->syms = calloc(n ? n : 1, sizeof(*k->syms)))) {
		free(k);
		return -ENOMEM;
	}
	uint64_t const bl = su_bt2_bytes(pl, "build_id", k->build_id, SU_BUILD_ID_MAX);
	k->build_id_len = (uint8_t)(bl <= SU_BUILD_ID_MAX ? bl : 0);
	for (uint64_t i = 0; i < n; i++) {
		const bt_field *e = bt_field_array_borrow_element_field_by_index_const(arr, i);
		struct su_ksym *y = &k->syms[i];
		y->start = su_bt2_u64_or(e, "start", 0);
		y->end = su_bt2_u64_or(e, "end", 0);
		k->n = i + 1;
		if (!(y->name = dup_str(e, "name")) || !(y->module = dup_str(e, "module"))) {
			su_kernel_free(k);
			return -ENOMEM;
		}
		if (y->end <= y->start || (i && y->start < k->syms[i - 1].end)) {
			su_kernel_free(k); /* not sorted: not ours to trust */
			return 0;
		}
	}
	ev->kernel = k;
	return 0;
}

int su_bt2_stackcap_event(const bt_message *msg, enum raw_kind kind, struct raw_event *ev, uint8_t **blob,
			  size_t *cap)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const bt_stream *stream = bt_event_borrow_stream_const(e);
	const bt_field *pl = bt_event_borrow_payload_field_const(e);
	const bt_packet *pkt = bt_stream_class_supports_packets(bt_stream_borrow_class_const(stream))
		? bt_event_borrow_packet_const(e) : NULL;
	const bt_field *ctx = pkt ? bt_packet_borrow_context_field_const(pkt) : NULL;
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->pid = (uint32_t)su_bt2_u64_or(ctx, "pid", 0);
	ev->tid = (uint32_t)su_bt2_u64_or(ctx, "tid", 0);
	ev->ts = su_bt2_event_ts(msg);
	ev->stream_id = bt_stream_get_id(stream);
	switch (kind) {
	case RAW_SAMPLE:
	case RAW_SAMPLE_FULL:
	case RAW_SAMPLE_SEGMENT: {
		int64_t const n = su_bt2_copy_bytes(pl, "blob", blob, cap);
		if (n == -ENOMEM)
			return -ENOMEM;
		ev->blob_len = n > 0 ? (size_t)n : 0;
		ev->blob = *blob;
		ev->generation = (uint32_t)su_bt2_u64_or(pl, "generation", 0);
		ev->event = (uint32_t)su_bt2_u64_or(pl, "event_index", 0);
		return 0;
	}
	case RAW_PROCESS_START:
		ev->proc.pid = (uint32_t)su_bt2_u64_or(pl, "pid", 0);
		ev->proc.ppid = (uint32_t)su_bt2_u64_or(pl, "ppid", 0);
		ev->proc.comm = dup_str(pl, "comm");
		ev->proc.exe = dup_str(pl, "exe");
		ev->proc.clock_offset_ns = (int64_t)su_bt2_u64_or(pl, "clock_offset_ns", 0);
		ev->proc.frequency_hz = (uint32_t)su_bt2_u64_or(pl, "frequency_hz", 0);
		ev->proc.stack_cap = (uint32_t)su_bt2_u64_or(pl, "stack_cap", 0);
		ev->proc.policy = (uint8_t)su_bt2_u64_or(pl, "policy", 0);
		ev->proc.codec_version = (uint8_t)su_bt2_u64_or(pl, "codec_version", 0);
		if (!ev->proc.comm || !ev->proc.exe) {
			free(ev->proc.comm);
			free(ev->proc.exe);
			return -ENOMEM;
		}
		return 0;
	case RAW_MAPS:
		return maps_of(pl, ev);
	case RAW_KERNEL_CHAIN:
		return kernel_chain_of(pl, ev, blob, cap);
	case RAW_KERNEL_SYMBOLS:
		return kernel_symbols_of(pl, ev);
	case RAW_OFF_CPU:
		ev->off_cpu_ns = su_bt2_u64_or(pl, "duration", 0);
		return 0;
	case RAW_RUNTIME:
		/* The strings stay the field's, valid during the call. */
		ev->runtime.kind = (uint8_t)su_bt2_u64_or(pl, "runtime", 0);
		ev->runtime.version = (uint32_t)su_bt2_u64_or(pl, "version", 0);
		ev->runtime.eval_start = su_bt2_u64_or(pl, "eval_start", 0);
		ev->runtime.eval_end = su_bt2_u64_or(pl, "eval_end", 0);
		ev->runtime.chains = su_bt2_u64_or(pl, "chains", 0);
		ev->runtime.dropped = su_bt2_u64_or(pl, "dropped", 0);
		ev->runtime.stale = su_bt2_u64_or(pl, "stale", 0);
		ev->runtime.name = (char *)(uintptr_t)su_bt2_str(pl, "name");
		return 0;
	case RAW_RUNTIME_CODE: {
		ev->rt_code.code = su_bt2_u64_or(pl, "code", 0);
		ev->rt_code.fp = (uint32_t)su_bt2_u64_or(pl, "fingerprint", 0);
		ev->rt_code.first_line = (uint32_t)su_bt2_u64_or(pl, "first_line", 0);
		ev->rt_code.name = (char *)(uintptr_t)su_bt2_str(pl, "name");
		ev->rt_code.file = (char *)(uintptr_t)su_bt2_str(pl, "file");
		int64_t const n = su_bt2_copy_bytes(pl, "line_table", blob, cap);
		if (n == -ENOMEM)
			return -ENOMEM;
		ev->rt_code.line_table = *blob;
		ev->rt_code.line_table_len = n > 0 ? (uint32_t)n : 0;
		if (!ev->rt_code.name || !ev->rt_code.file)
			ev->rt_code.fp = 0; /* not one of ours: never named */
		return 0;
	}
	case RAW_RUNTIME_FRAMES: {
		int64_t const n = su_bt2_copy_bytes(pl, "blob", blob, cap);
		if (n == -ENOMEM)
			return -ENOMEM;
		ev->blob_len = n > 0 ? (size_t)n : 0;
		ev->blob = *blob;
		return 0;
	}
	case RAW_DROPS:
		ev->drop_tid = (uint32_t)su_bt2_u64_or(pl, "tid", 0);
		ev->drops_total = su_bt2_u64_or(pl, "ring_full", 0) + su_bt2_u64_or(pl, "nested", 0) +
				  su_bt2_u64_or(pl, "no_stack_bounds", 0) + su_bt2_u64_or(pl, "other", 0);
		return 0;
	default:
		return 0;
	}
}

int su_bt2_event_table(const bt_trace *trace, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	const bt_value *cv = trace ? bt_trace_borrow_environment_entry_value_by_name_const(trace, "stackcap_events") : NULL;
	int64_t count = !cv ? 0 : bt_value_is_signed_integer(cv) ? bt_value_integer_signed_get(cv)
			 : bt_value_is_unsigned_integer(cv) ? (int64_t)bt_value_integer_unsigned_get(cv) : 0;
	if (count <= 0 || count > 65536)
		return 0;
	char **v = calloc((size_t)count, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int64_t i = 0; i < count; i++) {
		char key[32];
		snprintf(key, sizeof(key), "stackcap_event_%" PRId64, i);
		const bt_value *nv = bt_trace_borrow_environment_entry_value_by_name_const(trace, key);
		if (nv && bt_value_is_string(nv))
			v[i] = strdup(bt_value_string_get(nv));
		else if (asprintf(&v[i], "event%" PRId64, i) < 0)
			v[i] = NULL;
		if (!v[i]) {
			for (int64_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return -ENOMEM;
		}
	}
	*out = v;
	*n = (size_t)count;
	return 0;
}
