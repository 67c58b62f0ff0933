/* source.stackcap.trace: a stackcap trace directory (docs/trace-format.md),
 * plain or --zstd, read by our own parser (trace/native-file.h) so that
 * babeltrace2 users open zstd traces too, which src.ctf.fs cannot.
 *
 * It gives what src.ctf.fs gives for the plain trace: the same trace
 * class (stream classes 0 and 1, the packet context's pid and tid, the
 * seven event classes with their payloads; length fields kept without
 * their underscore), one stream per stream file (id = stream_instance_id,
 * named by its path) on an output port of its own, packets with their
 * time range, discarded events between packets.  The trace class is
 * built here for format versions 1 to 5 (version 2 adds the runtime
 * events, 3 the kernel ones, 4 event_sample, 5 off_cpu; the classes are
 * the ones the metadata declares, each known by stream, id and name; a
 * later version is refused), not parsed from TSDL.  Empty packets carry nothing but a
 * discarded count and are not announced as packets. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/grow.h"
#include "plugin/plugin.h"
#include "trace/stackcap-reader.h"
#include "trace/native-file.h"

struct trace_src {
	bt_self_component *self;
	char *dir;
	bt_trace_class *tc;
	bt_stream_class *sc[2];
	bt_event_class *ec[2][7];
	unsigned n_ec[2];
	bt_trace *trace;
	char **files;                /* stream file names, sorted; port i reads files[i] */
	size_t n_files;
};

struct trace_src_iter {
	struct trace_src *src;
	bt_self_message_iterator *self;
	struct su_native_file *file;
	char *path;
	bt_stream *stream;
	bt_packet *packet;
	uint64_t packet_no, packet_end;
	int state;                   /* 0 before the stream, 1 in it, 2 ended */
	/* messages made but not yet sent (an item makes up to 4) */
	const bt_message *pend[4];
	unsigned n_pend, pend_pos;
};

/* ---- the trace class (format version 1) ----------------------------------------- */

/* Unsigned integer field class of BITS bits, base 10. */
static bt_field_class *uint_fc(bt_trace_class *tc, unsigned bits)
{
	bt_field_class *fc = bt_field_class_integer_unsigned_create(tc);
	if (fc)
		bt_field_class_integer_set_field_value_range(fc, bits);
	return fc;
}

/* Append member NAME of class FC (our reference is taken over) to ST. */
static int add(bt_field_class *st, const char *name, bt_field_class *fc)
{
	int rc = fc ? bt_field_class_structure_append_member(st, name, fc) : -1;
	bt_field_class_put_ref(fc);
	return rc ? -1 : 0;
}

/* A u8 array whose length is member LEN_NAME just appended to ST. */
static bt_field_class *bytes_fc(bt_trace_class *tc, bt_field_class *st, const char *len_name)
{
	bt_field_class *len = bt_field_class_structure_member_borrow_field_class(
		bt_field_class_structure_borrow_member_by_name(st, len_name));
	bt_field_class *e = uint_fc(tc, 8);
	bt_field_class *a = e && len ? bt_field_class_array_dynamic_create(tc, e, len) : NULL;
	bt_field_class_put_ref(e);
	return a;
}

static bt_field_class *payload_fc(bt_trace_class *tc, int cls, unsigned id)
{
	bt_field_class *st = bt_field_class_structure_create(tc);
	int rc = !st;
	if (rc)
		return NULL;
	if (cls == 1 && id == 3) { /* runtime_frames (version 2) */
		rc |= add(st, "runtime", uint_fc(tc, 8));
		rc |= add(st, "blob_length", uint_fc(tc, 24));
		if (!rc)
			rc |= add(st, "blob", bytes_fc(tc, st, "blob_length"));
	} else if (cls == 1 && id == 5) { /* event_sample (version 4) */
		bt_field_class *u16 = uint_fc(tc, 16);
		rc |= add(st, "event_index", u16);
		rc |= add(st, "generation", uint_fc(tc, 24));
		rc |= add(st, "blob_length", uint_fc(tc, 24));
		if (!rc)
			rc |= add(st, "blob", bytes_fc(tc, st, "blob_length"));
	} else if (cls == 1 && id == 6) { /* off_cpu (version 5) */
		rc |= add(st, "duration", uint_fc(tc, 64));
	} else if (cls == 1 && id == 4) { /* kernel_chain (version 3) */
		rc |= add(st, "ips_length", uint_fc(tc, 32));
		if (!rc) {
			bt_field_class *len = bt_field_class_structure_member_borrow_field_class(
				bt_field_class_structure_borrow_member_by_name(st, "ips_length"));
			bt_field_class *e = uint_fc(tc, 64);
			rc |= add(st, "ips", e && len ? bt_field_class_array_dynamic_create(tc, e, len) : NULL);
			bt_field_class_put_ref(e);
		}
	} else if (cls == 1) { /* sample, sample_full, sample_segment */
		rc |= add(st, "generation", uint_fc(tc, 24));
		rc |= add(st, "blob_length", uint_fc(tc, 24));
		if (!rc)
			rc |= add(st, "blob", bytes_fc(tc, st, "blob_length"));
	} else if (id == 0) { /* process_start */
		rc |= add(st, "pid", uint_fc(tc, 32));
		rc |= add(st, "ppid", uint_fc(tc, 32));
		rc |= add(st, "comm", bt_field_class_string_create(tc));
		rc |= add(st, "exe", bt_field_class_string_create(tc));
		bt_field_class *s64 = bt_field_class_integer_signed_create(tc);
		if (s64)
			bt_field_class_integer_set_field_value_range(s64, 64);
		rc |= add(st, "clock_offset_ns", s64);
		rc |= add(st, "frequency_hz", uint_fc(tc, 32));
		rc |= add(st, "stack_cap", uint_fc(tc, 32));
		rc |= add(st, "policy", uint_fc(tc, 8));
		rc |= add(st, "codec_version", uint_fc(tc, 8));
	} else if (id == 1) { /* maps */
		bt_field_class *entry = bt_field_class_structure_create(tc);
		rc |= add(st, "generation", uint_fc(tc, 32));
		rc |= add(st, "entries_length", uint_fc(tc, 32));
		if (!entry)
			rc = 1;
		if (!rc) {
			rc |= add(entry, "start", uint_fc(tc, 64));
			rc |= add(entry, "end", uint_fc(tc, 64));
			rc |= add(entry, "offset", uint_fc(tc, 64));
			rc |= add(entry, "bias", uint_fc(tc, 64));
			rc |= add(entry, "flags", uint_fc(tc, 8));
			rc |= add(entry, "build_id_length", uint_fc(tc, 8));
			if (!rc)
				rc |= add(entry, "build_id", bytes_fc(tc, entry, "build_id_length"));
			rc |= add(entry, "path", bt_field_class_string_create(tc));
		}
		if (!rc) {
			bt_field_class *len = bt_field_class_structure_member_borrow_field_class(
				bt_field_class_structure_borrow_member_by_name(st, "entries_length"));
			rc |= add(st, "entries", bt_field_class_array_dynamic_create(tc, entry, len));
		}
		bt_field_class_put_ref(entry);
	} else if (id == 4) { /* runtime (version 2) */
		rc |= add(st, "runtime", uint_fc(tc, 8));
		rc |= add(st, "version", uint_fc(tc, 32));
		rc |= add(st, "eval_start", uint_fc(tc, 64));
		rc |= add(st, "eval_end", uint_fc(tc, 64));
		rc |= add(st, "chains", uint_fc(tc, 64));
		rc |= add(st, "dropped", uint_fc(tc, 64));
		rc |= add(st, "stale", uint_fc(tc, 64));
		rc |= add(st, "name", bt_field_class_string_create(tc));
	} else if (id == 5) { /* runtime_code (version 2) */
		rc |= add(st, "runtime", uint_fc(tc, 8));
		rc |= add(st, "code", uint_fc(tc, 64));
		rc |= add(st, "fingerprint", uint_fc(tc, 32));
		rc |= add(st, "first_line", uint_fc(tc, 32));
		rc |= add(st, "name", bt_field_class_string_create(tc));
		rc |= add(st, "file", bt_field_class_string_create(tc));
		rc |= add(st, "line_table_length", uint_fc(tc, 32));
		if (!rc)
			rc |= add(st, "line_table", bytes_fc(tc, st, "line_table_length"));
	} else if (id == 6) { /* kernel_symbols (version 3) */
		bt_field_class *sym = bt_field_class_structure_create(tc);
		rc |= add(st, "build_id_length", uint_fc(tc, 8));
		if (!rc)
			rc |= add(st, "build_id", bytes_fc(tc, st, "build_id_length"));
		rc |= add(st, "symbols_length", uint_fc(tc, 32));
		if (!sym)
			rc = 1;
		if (!rc) {
			rc |= add(sym, "start", uint_fc(tc, 64));
			rc |= add(sym, "end", uint_fc(tc, 64));
			rc |= add(sym, "name", bt_field_class_string_create(tc));
			rc |= add(sym, "module", bt_field_class_string_create(tc));
		}
		if (!rc) {
			bt_field_class *len = bt_field_class_structure_member_borrow_field_class(
				bt_field_class_structure_borrow_member_by_name(st, "symbols_length"));
			rc |= add(st, "symbols", bt_field_class_array_dynamic_create(tc, sym, len));
		}
		bt_field_class_put_ref(sym);
	} else if (id == 2) { /* drops */
		rc |= add(st, "tid", uint_fc(tc, 32));
		rc |= add(st, "ring_full", uint_fc(tc, 64));
		rc |= add(st, "nested", uint_fc(tc, 64));
		rc |= add(st, "no_stack_bounds", uint_fc(tc, 64));
		rc |= add(st, "other", uint_fc(tc, 64));
	} else { /* process_end */
		rc |= add(st, "samples", uint_fc(tc, 64));
		rc |= add(st, "drops", uint_fc(tc, 64));
	}
	if (rc) {
		bt_field_class_put_ref(st);
		return NULL;
	}
	return st;
}

/* The metadata's clock offset, uuid and env entries. */
struct meta {
	int64_t offset_s;
	uint64_t offset;
	uint8_t uuid[16];
	int have_uuid;
	long version;      /* env.stackcap_trace_version */
	/* The event classes the metadata declares, by stream class and id
	 * (a recording declares only those it has: kernel_chain only with
	 * kernel frames...); BAD_EVENT: one this source does not know. */
	unsigned char declared[2][7];
	int bad_event;
};

/* Event classes by stream class and id (docs/trace-format.md): version 2
 * adds the runtime events, 3 the kernel ones, 4 event_sample, 5 off_cpu. */
static const char *const event_names[2][7] = {
	{ "process_start", "maps", "drops", "process_end", "runtime", "runtime_code", "kernel_symbols" },
	{ "sample", "sample_full", "sample_segment", "runtime_frames", "kernel_chain", "event_sample", "off_cpu" },
};

/* The event declaration being read (name, id, stream_id) into M once its
 * fields start. */
static void declare(struct meta *m, const char *name, long id, long sid)
{
	if (sid < 0 || sid > 1 || id < 0 || id > 6 || strcmp(event_names[sid][id], name)) {
		m->bad_event = 1;
		return;
	}
	m->declared[sid][id] = 1;
}

static int parse_uuid(const char *p, uint8_t *u)
{
	for (int i = 0; i < 16; i++) {
		if (*p == '-')
			p++;
		unsigned v;
		if (sscanf(p, "%2x", &v) != 1)
			return -1;
		u[i] = (uint8_t)v;
		p += 2;
	}
	return 0;
}

/* Read DIR/metadata: clock offset and uuid into M, env entries onto TRACE. */
static int read_metadata(const char *dir, struct meta *m, bt_trace *trace)
{
	char path[8192], line[1024];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	int in_env = 0, in_event = 0;
	char ev_name[64] = "";
	long ev_id = -1, ev_sid = -1;
	memset(m, 0, sizeof(*m));
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, "event {", 7)) {
			in_event = 1;
			ev_name[0] = 0;
			ev_id = ev_sid = -1;
			continue;
		}
		if (in_event) {
			long v;
			if (sscanf(p, "name = \"%63[^\"]\";", ev_name) == 1)
				continue;
			if (sscanf(p, "id = %ld;", &v) == 1)
				ev_id = v;
			else if (sscanf(p, "stream_id = %ld;", &v) == 1)
				ev_sid = v;
			else if (!strncmp(p, "fields", 6)) {
				declare(m, ev_name, ev_id, ev_sid);
				in_event = 0;
			}
			continue;
		}
		if (!strncmp(p, "env {", 5)) {
			in_env = 1;
			continue;
		}
		if (in_env && *p == '}') {
			in_env = 0;
			continue;
		}
		char key[128], sval[512];
		long long ival;
		if (in_env && sscanf(p, "stackcap_trace_version = %lld;", &ival) == 1)
			m->version = ival;
		if (in_env && trace) {
			if (sscanf(p, "%127[a-z_0-9] = \"%511[^\"]\";", key, sval) == 2)
				bt_trace_set_environment_entry_string(trace, key, sval);
			else if (sscanf(p, "%127[a-z_0-9] = %lld;", key, &ival) == 2)
				bt_trace_set_environment_entry_integer(trace, key, ival);
			continue;
		}
		if (sscanf(p, "offset_s = %lld;", &ival) == 1)
			m->offset_s = ival;
		else if (sscanf(p, "offset = %lld;", &ival) == 1)
			m->offset = (uint64_t)ival;
		else if (!m->have_uuid && !strncmp(p, "uuid = \"", 8) && parse_uuid(p + 8, m->uuid) == 0)
			m->have_uuid = 1;
	}
	fclose(f);
	return 0;
}

static int build_ir(struct trace_src *s, const struct meta *m)
{
	bt_trace_class *tc = s->tc = bt_trace_class_create(s->self);
	bt_clock_class *cc = bt_clock_class_create(s->self);
	if (!tc || !cc)
		goto fail;
	bt_trace_class_set_assigns_automatic_stream_class_id(tc, BT_FALSE);
	if (bt_clock_class_set_name(cc, "monotonic") || bt_clock_class_set_description(cc, "CLOCK_MONOTONIC"))
		goto fail;
	bt_clock_class_set_frequency(cc, 1000000000u);
	bt_clock_class_set_precision(cc, 1);
	bt_clock_class_set_offset(cc, m->offset_s, m->offset);
	bt_clock_class_set_origin_is_unix_epoch(cc, BT_FALSE);
	if (m->have_uuid)
		bt_clock_class_set_uuid(cc, m->uuid);
	for (int cls = 0; cls < 2; cls++) {
		bt_stream_class *sc = s->sc[cls] = bt_stream_class_create_with_id(tc, (uint64_t)cls);
		if (!sc)
			goto fail;
		bt_stream_class_set_assigns_automatic_event_class_id(sc, BT_FALSE);
		bt_stream_class_set_assigns_automatic_stream_id(sc, BT_FALSE);
		if (bt_stream_class_set_default_clock_class(sc, cc))
			goto fail;
		bt_stream_class_set_supports_packets(sc, BT_TRUE, BT_TRUE, BT_TRUE);
		bt_stream_class_set_supports_discarded_events(sc, BT_TRUE, BT_TRUE);
		bt_field_class *ctx = bt_field_class_structure_create(tc);
		if (!ctx || add(ctx, "pid", uint_fc(tc, 32)) || add(ctx, "tid", uint_fc(tc, 32)) ||
		    bt_stream_class_set_packet_context_field_class(sc, ctx)) {
			bt_field_class_put_ref(ctx);
			goto fail;
		}
		bt_field_class_put_ref(ctx);
		for (unsigned id = 0; id < 7; id++) {
			if (!m->declared[cls][id])
				continue;
			bt_event_class *ec = s->ec[cls][id] = bt_event_class_create_with_id(sc, id);
			bt_field_class *pl = ec ? payload_fc(tc, cls, id) : NULL;
			if (!pl || bt_event_class_set_name(ec, event_names[cls][id]) ||
			    bt_event_class_set_payload_field_class(ec, pl)) {
				bt_field_class_put_ref(pl);
				goto fail;
			}
			bt_field_class_put_ref(pl);
			s->n_ec[cls] = id + 1;
		}
	}
	bt_clock_class_put_ref(cc);
	return 0;
fail:
	bt_clock_class_put_ref(cc);
	return -ENOMEM;
}

/* ---- payloads ----------------------------------------------------------------------- */

/* Decode the fields of F (of our classes: little-endian byte-aligned
 * integers, NUL-terminated strings, structures, arrays whose length is the
 * unsigned member just before them) from [*P, END).  *LAST is the last
 * unsigned value read.  @return 0, 1 when cut or malformed, -ENOMEM. */
static int decode_field(bt_field *f, const uint8_t **p, const uint8_t *end, uint64_t *last)
{
	bt_field_class_type const t = bt_field_get_class_type(f);
	const bt_field_class *fc = bt_field_borrow_class_const(f);
	if (t == BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER || t == BT_FIELD_CLASS_TYPE_SIGNED_INTEGER) {
		unsigned const n = (unsigned)bt_field_class_integer_get_field_value_range(fc) / 8;
		if ((size_t)(end - *p) < n)
			return 1;
		uint64_t v = 0;
		for (unsigned i = 0; i < n; i++)
			v |= (uint64_t)(*p)[i] << (8 * i);
		*p += n;
		if (t == BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER) {
			bt_field_integer_unsigned_set_value(f, v);
			*last = v;
		} else {
			bt_field_integer_signed_set_value(f, (int64_t)v); /* our signed fields are 64-bit */
		}
		return 0;
	}
	if (t == BT_FIELD_CLASS_TYPE_STRING) {
		const uint8_t *nul = memchr(*p, 0, (size_t)(end - *p));
		if (!nul)
			return 1;
		bt_field_string_clear(f);
		if (bt_field_string_append_with_length(f, (const char *)*p, (uint64_t)(nul - *p)))
			return -ENOMEM;
		*p = nul + 1;
		return 0;
	}
	if (t == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		uint64_t const n = bt_field_class_structure_get_member_count(fc);
		for (uint64_t i = 0; i < n; i++) {
			int rc = decode_field(bt_field_structure_borrow_member_field_by_index(f, i), p, end, last);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (t == BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY_WITH_LENGTH_FIELD) {
		uint64_t const n = *last;
		if (n > (uint64_t)(end - *p)) /* every element takes a byte at least */
			return 1;
		if (bt_field_array_dynamic_set_length(f, n))
			return -ENOMEM;
		for (uint64_t i = 0; i < n; i++) {
			int rc = decode_field(bt_field_array_borrow_element_field_by_index(f, i), p, end, last);
			if (rc)
				return rc;
		}
		return 0;
	}
	return 1;
}

/* ---- the component -------------------------------------------------------------------- */

static void src_free(struct trace_src *s)
{
	if (!s)
		return;
	for (int c = 0; c < 2; c++) {
		for (unsigned i = 0; i < s->n_ec[c]; i++)
			bt_event_class_put_ref(s->ec[c][i]);
		bt_stream_class_put_ref(s->sc[c]);
	}
	bt_trace_put_ref(s->trace);
	bt_trace_class_put_ref(s->tc);
	for (size_t i = 0; i < s->n_files; i++)
		free(s->files[i]);
	free(s->files);
	free(s->dir);
	free(s);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The stream files of S->dir, sorted by name. */
static int list_files(struct trace_src *s)
{
	DIR *d = opendir(s->dir);
	if (!d)
		return -errno;
	size_t cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		if (strncmp(n, "proc-", 5) && strncmp(n, "samples-", 8))
			continue;
		if (SU_GROW(s->files, cap, s->n_files + 1)) {
			rc = -ENOMEM;
			break;
		}
		if (!(s->files[s->n_files] = strdup(n))) {
			rc = -ENOMEM;
			break;
		}
		s->n_files++;
	}
	closedir(d);
	if (s->n_files)
		qsort(s->files, s->n_files, sizeof(*s->files), name_cmp);
	return rc;
}

bt_component_class_initialize_method_status trace_src_init(bt_self_component_source *self,
	bt_self_component_source_configuration *config, const bt_value *params, void *init_data)
{
	static const char *const known[] = { "inputs" };
	(void)config;
	(void)init_data;
	bt_self_component *sc = bt_self_component_source_as_self_component(self);
	if (sc_check_params(sc, params, known, 1))
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	const bt_value *in = bt_value_map_borrow_entry_value_const(params, "inputs");
	if (!in || !bt_value_is_array(in) || bt_value_array_get_length(in) != 1 ||
	    !bt_value_is_string(bt_value_array_borrow_element_by_index_const(in, 0))) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc,
			"parameter inputs: an array holding one stackcap trace directory, e.g. inputs=[\"DIR\"]");
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	const char *dir = bt_value_string_get(bt_value_array_borrow_element_by_index_const(in, 0));
	struct stat sb;
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc, "%s is not a trace directory", dir);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	struct meta m;
	if (!su_stackcap_trace_probe(dir) && read_metadata(dir, &m, NULL) == 0 && m.version > 5) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc,
			"%s: stackcap trace format version %ld is not read by this source (it reads 1 to 5): "
			"a newer stackcap wrote it", dir, m.version);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	if (!su_stackcap_trace_probe(dir)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc,
			"%s is not a stackcap trace of format version 1 to 5 (its metadata must name tracer "
			"\"stackcap\" and its stackcap_trace_version)", dir);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	struct trace_src *s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = realpath(dir, NULL)))
		goto nomem;
	s->self = sc;
	if (read_metadata(dir, &m, NULL))
		goto nomem;
	if (m.version < 1 || m.version > 5 || m.bad_event) {
		/* A later format: its event classes are not ours to guess. */
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc,
			"%s: stackcap trace format version %ld%s is not read by this source (it reads 1 to 5): "
			"a newer stackcap wrote it", dir, m.version,
			m.bad_event && m.version >= 1 && m.version <= 5 ? " with an event class it does not know" : "");
		src_free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	if (build_ir(s, &m) || !(s->trace = bt_trace_create(s->tc)))
		goto nomem;
	read_metadata(dir, &m, s->trace);
	bt_trace_set_name(s->trace, ""); /* as src.ctf.fs names it */
	if (m.have_uuid)
		bt_trace_set_uuid(s->trace, m.uuid);
	int rc = list_files(s);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(sc, "%s: %s", dir, strerror(-rc));
		src_free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	for (size_t i = 0; i < s->n_files; i++)
		if (bt_self_component_source_add_output_port(self, s->files[i], (void *)(uintptr_t)i, NULL))
			goto nomem;
	bt_self_component_set_data(sc, s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
nomem:
	src_free(s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
}

void trace_src_finalize(bt_self_component_source *self)
{
	src_free(bt_self_component_get_data(bt_self_component_source_as_self_component(self)));
}

/* ---- the message iterator: one stream file ------------------------------------------------ */

static void iter_free(struct trace_src_iter *it)
{
	if (!it)
		return;
	for (unsigned i = it->pend_pos; i < it->n_pend; i++)
		bt_message_put_ref(it->pend[i]);
	su_native_file_close(it->file);
	bt_packet_put_ref(it->packet);
	bt_stream_put_ref(it->stream);
	free(it->path);
	free(it);
}

bt_message_iterator_class_initialize_method_status trace_src_iter_init(bt_self_message_iterator *self,
	bt_self_message_iterator_configuration *config, bt_self_component_port_output *port)
{
	(void)config;
	struct trace_src *s = bt_self_component_get_data(bt_self_message_iterator_borrow_component(self));
	size_t const i = (size_t)(uintptr_t)bt_self_component_port_get_data(
		bt_self_component_port_output_as_self_component_port(port));
	struct trace_src_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	it->src = s;
	it->self = self;
	size_t const n = strlen(s->dir) + strlen(s->files[i]) + 2;
	it->path = malloc(n);
	struct su_warn_hook const warn = { .fn = sc_log_warning, .arg = s->self };
	it->file = su_native_file_open(s->dir, s->files[i], &warn);
	if (!it->path || !it->file) {
		iter_free(it);
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	snprintf(it->path, n, "%s/%s", s->dir, s->files[i]);
	bt_self_message_iterator_set_data(self, it);
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

void trace_src_iter_finalize(bt_self_message_iterator *self)
{
	iter_free(bt_self_message_iterator_get_data(self));
}

/* Messages for item NI of the file, appended to MSGS at *K (room for 4).
 * @return 0, -ENOMEM. */
static int item_messages(struct trace_src_iter *it, const struct su_native_item *ni,
			 bt_message_array_const msgs, uint64_t *k)
{
	struct trace_src *s = it->src;
	bt_self_message_iterator *self = it->self;
	bt_message *m;
	if (!it->stream) {
		it->stream = bt_stream_create_with_id(s->sc[ni->stream_class], s->trace, ni->instance_id);
		if (!it->stream || bt_stream_set_name(it->stream, it->path))
			return -ENOMEM;
		if (!(m = bt_message_stream_beginning_create(self, it->stream)))
			return -ENOMEM;
		msgs[(*k)++] = m;
	}
	if (it->packet && ni->packet != it->packet_no) {
		if (!(m = bt_message_packet_end_create_with_default_clock_snapshot(self, it->packet, it->packet_end)))
			return -ENOMEM;
		msgs[(*k)++] = m;
		bt_packet_put_ref(it->packet);
		it->packet = NULL;
	}
	if (ni->type == SU_NATIVE_DISCARDED) {
		m = bt_message_discarded_events_create_with_default_clock_snapshots(self, it->stream, ni->ts,
			ni->ts > ni->packet_begin ? ni->ts : ni->packet_begin);
		if (!m)
			return -ENOMEM;
		bt_message_discarded_events_set_count(m, ni->discarded);
		msgs[(*k)++] = m;
		return 0;
	}
	if (!it->packet) {
		it->packet = bt_packet_create(it->stream);
		if (!it->packet)
			return -ENOMEM;
		bt_field *ctx = bt_packet_borrow_context_field(it->packet);
		bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(ctx, 0), ni->pid);
		bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(ctx, 1), ni->tid);
		it->packet_no = ni->packet;
		it->packet_end = ni->packet_end;
		if (!(m = bt_message_packet_beginning_create_with_default_clock_snapshot(self, it->packet, ni->packet_begin)))
			return -ENOMEM;
		msgs[(*k)++] = m;
	}
	if (ni->id >= s->n_ec[ni->stream_class] || !s->ec[ni->stream_class][ni->id]) {
		su_native_file_defect(it->file, "unknown event id");
		return 0;
	}
	m = bt_message_event_create_with_packet_and_default_clock_snapshot(self, s->ec[ni->stream_class][ni->id],
									   it->packet, ni->ts);
	if (!m)
		return -ENOMEM;
	const uint8_t *p = ni->payload;
	uint64_t last = 0;
	int rc = decode_field(bt_event_borrow_payload_field(bt_message_event_borrow_event(m)), &p, ni->end, &last);
	if (rc) {
		bt_message_put_ref(m);
		if (rc < 0)
			return rc;
		su_native_file_defect(it->file, "malformed or cut event");
		return 0;
	}
	su_native_file_consumed(it->file, (size_t)(p - ni->payload));
	msgs[(*k)++] = m;
	return 0;
}

/* The messages of the file's next item (or of its end) into IT->pend.
 * @return 0, -ENOMEM. */
static int fill_pending(struct trace_src_iter *it)
{
	struct su_native_item ni;
	uint64_t k = 0;
	it->n_pend = it->pend_pos = 0;
	int rc = su_native_file_next(it->file, &ni);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		rc = item_messages(it, &ni, it->pend, &k);
		it->n_pend = (unsigned)k;
		return rc;
	}
	bt_message *m;
	if (it->packet) {
		if (!(m = bt_message_packet_end_create_with_default_clock_snapshot(it->self, it->packet, it->packet_end)))
			return -ENOMEM;
		it->pend[it->n_pend++] = m;
		bt_packet_put_ref(it->packet);
		it->packet = NULL;
	}
	if (it->stream) {
		if (!(m = bt_message_stream_end_create(it->self, it->stream)))
			return -ENOMEM;
		it->pend[it->n_pend++] = m;
	}
	it->state = 2;
	return 0;
}

bt_message_iterator_class_next_method_status trace_src_iter_next(bt_self_message_iterator *self,
	bt_message_array_const msgs, uint64_t capacity, uint64_t *count)
{
	struct trace_src_iter *it = bt_self_message_iterator_get_data(self);
	uint64_t k = 0;
	while (k < capacity) {
		if (it->pend_pos < it->n_pend) {
			msgs[k++] = it->pend[it->pend_pos++];
			continue;
		}
		if (it->state == 2)
			break;
		if (fill_pending(it)) {
			/* What this call made goes out; the error comes with the next. */
			if (k)
				break;
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_MEMORY_ERROR;
		}
	}
	*count = k;
	if (k)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
}
