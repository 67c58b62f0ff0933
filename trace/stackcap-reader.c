/* Reading a stackcap trace through babeltrace2 (docs/trace-format.md).
 *
 * Two passes over a private staging directory:
 *  1. the process streams (small): process sections, every maps generation,
 *     drops, ends;
 *  2. the sample streams, in time order (babeltrace2's muxer), decoded with
 *     the maps of their generation.
 * Two passes because the writer stamps a maps event when it writes it, which
 * can be after the first samples encoded against it.
 *
 * The staging directory holds symlinks to intact stream files, inflated
 * copies of .zst files and cut copies of files that end inside a packet, so
 * babeltrace2 reads every complete packet and never sees a partial one. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <babeltrace2/babeltrace.h>

#include "trace/stackcap-reader.h"
#include "ctf-writer.h"

#define PACKET_HEADER_SIZE 32u
#define PACKET_CONTEXT_SIZE 48u
#define PACKET_MAGIC 0xC1FC1FC1u

/* ---- the model being built ----------------------------------------------- */

struct section {
	struct su_process p;
	uint64_t start_ts;
	uint64_t stream_id;      /* bt stream id of its process stream */
	struct su_maps **maps;   /* sorted by generation */
	size_t n_maps, cap_maps;
};

struct thread_drops {
	uint32_t pid, tid;
	uint64_t total;
};

struct thread_state {
	uint64_t key;            /* pid << 32 | tid; 0: empty slot */
	struct stackcap_image img[2];
	int cur;                 /* img[cur] is the last decoded image */
	int has_ref;
	struct stackcap_image full; /* unfiltered copy of the next sample */
	uint64_t full_ts;
	int full_pending;
	struct stackcap_image seg;  /* second stack segment of the next sample */
	uint64_t seg_ts;
	int seg_pending;
};

struct reader {
	const struct su_reader_opts *opts;
	const struct su_reader_callbacks *cb;
	struct su_reader_stats *st;
	char *err;
	size_t errlen;

	struct section *sections;
	size_t n_sections, cap_sections;
	struct thread_drops *drops;
	size_t n_drops, cap_drops;
	struct thread_state *threads;
	size_t cap_threads, n_threads; /* open addressing, power of two */

	uint8_t *blob;
	size_t blob_cap;
	int pass;
	int cb_rc;               /* a callback's nonzero return */
	int fatal;               /* -errno */
};

static void set_err(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(struct reader *r, const char *fmt, ...)
{
	va_list ap;
	if (!r->err || !r->errlen || r->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stackunwind: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
	*arr = p;
	*cap = n;
	return 0;
}

static void free_maps(struct su_maps *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->count; i++)
		free(m->entries[i].path);
	free(m->entries);
	free(m->range_list);
	free(m);
}

static void reader_free(struct reader *r)
{
	for (size_t i = 0; i < r->n_sections; i++) {
		struct section *s = &r->sections[i];
		for (size_t j = 0; j < s->n_maps; j++)
			free_maps(s->maps[j]);
		free(s->maps);
		free(s->p.comm);
		free(s->p.exe);
	}
	free(r->sections);
	free(r->drops);
	for (size_t i = 0; i < r->cap_threads; i++) {
		free(r->threads[i].img[0].words);
		free(r->threads[i].img[0].kept);
		free(r->threads[i].img[1].words);
		free(r->threads[i].img[1].kept);
		free(r->threads[i].full.words);
		free(r->threads[i].full.kept);
		free(r->threads[i].seg.words);
		free(r->threads[i].seg.kept);
	}
	free(r->threads);
	free(r->blob);
}

/* The section of PID that was current at TS: the latest started at or
 * before TS, else the earliest (clock skew between streams). */
static struct section *section_at(struct reader *r, uint32_t pid, uint64_t ts)
{
	struct section *best = NULL, *first = NULL;
	for (size_t i = 0; i < r->n_sections; i++) {
		struct section *s = &r->sections[i];
		if (s->p.pid != pid)
			continue;
		if (!first || s->start_ts < first->start_ts)
			first = s;
		if (s->start_ts <= ts && (!best || s->start_ts >= best->start_ts))
			best = s;
	}
	return best ? best : first;
}

static struct su_maps *section_maps(struct section *s, uint32_t generation)
{
	size_t lo = 0, hi = s->n_maps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->maps[mid]->generation == generation)
			return s->maps[mid];
		if (s->maps[mid]->generation < generation)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- field access -------------------------------------------------------- */

static const bt_field *member(const bt_field *st, const char *name)
{
	return st ? bt_field_structure_borrow_member_field_by_name_const(st, name) : NULL;
}

static uint64_t member_u64(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	if (!f)
		return 0;
	if (bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)
		return (uint64_t)bt_field_integer_signed_get_value(f);
	return bt_field_integer_unsigned_get_value(f);
}

static char *member_str(const bt_field *st, const char *name)
{
	const bt_field *f = member(st, name);
	const char *s = f ? bt_field_string_get_value(f) : NULL;
	return strdup(s ? s : "");
}

/* Copy a u8 array field into BUF (at most CAP bytes).  @return its length. */
static uint64_t member_bytes(const bt_field *st, const char *name, uint8_t *buf, uint64_t cap)
{
	const bt_field *f = member(st, name);
	if (!f)
		return 0;
	uint64_t n = bt_field_array_get_length(f);
	for (uint64_t i = 0; i < n && i < cap; i++)
		buf[i] = (uint8_t)bt_field_integer_unsigned_get_value(
			bt_field_array_borrow_element_field_by_index_const(f, i));
	return n;
}

/* ---- pass 1: process streams --------------------------------------------- */

static struct section *section_of_stream(struct reader *r, uint64_t stream_id, uint32_t pid)
{
	for (size_t i = r->n_sections; i-- > 0;)
		if (r->sections[i].stream_id == stream_id && r->sections[i].p.pid == pid)
			return &r->sections[i];
	return NULL;
}

static int on_process_start(struct reader *r, const bt_field *pl, uint64_t ts, uint64_t stream_id)
{
	if (grow((void **)&r->sections, &r->cap_sections, r->n_sections + 1, sizeof(*r->sections)))
		return -ENOMEM;
	struct section *s = &r->sections[r->n_sections++];
	memset(s, 0, sizeof(*s));
	s->start_ts = ts;
	s->stream_id = stream_id;
	s->p.pid = (uint32_t)member_u64(pl, "pid");
	s->p.ppid = (uint32_t)member_u64(pl, "ppid");
	s->p.comm = member_str(pl, "comm");
	s->p.exe = member_str(pl, "exe");
	s->p.clock_offset_ns = (int64_t)member_u64(pl, "clock_offset_ns");
	s->p.frequency_hz = (uint32_t)member_u64(pl, "frequency_hz");
	s->p.stack_cap = (uint32_t)member_u64(pl, "stack_cap");
	s->p.policy = (uint8_t)member_u64(pl, "policy");
	s->p.codec_version = (uint8_t)member_u64(pl, "codec_version");
	for (size_t i = 0; i + 1 < r->n_sections; i++)
		if (r->sections[i].p.pid == s->p.pid)
			s->p.seq++;
	if (!s->p.comm || !s->p.exe)
		return -ENOMEM;
	r->st->processes++;
	if (s->p.codec_version != STACKCAP_CODEC_VERSION) {
		warn("process %u: stack codec version %u not supported (this reader knows %u); its samples are skipped",
		     s->p.pid, s->p.codec_version, STACKCAP_CODEC_VERSION);
	}
	return 0;
}

static int on_maps(struct reader *r, const bt_field *pl, uint32_t pid, uint64_t stream_id)
{
	struct section *s = section_of_stream(r, stream_id, pid);
	if (!s) {
		warn("maps event of pid %u without process_start: ignored", pid);
		return 0;
	}
	const bt_field *arr = member(pl, "entries");
	uint64_t n = arr ? bt_field_array_get_length(arr) : 0;
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->generation = (uint32_t)member_u64(pl, "generation");
	m->count = (uint32_t)n;
	m->entries = calloc(n ? n : 1, sizeof(*m->entries));
	m->range_list = calloc(n ? n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		free_maps(m);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		const bt_field *e = bt_field_array_borrow_element_field_by_index_const(arr, i);
		struct su_map_entry *me = &m->entries[i];
		me->start = member_u64(e, "start");
		me->end = member_u64(e, "end");
		me->offset = member_u64(e, "offset");
		me->bias = member_u64(e, "bias");
		me->flags = (uint32_t)member_u64(e, "flags");
		uint64_t bl = member_bytes(e, "build_id", me->build_id, SU_BUILD_ID_MAX);
		me->build_id_len = (uint8_t)(bl <= SU_BUILD_ID_MAX ? bl : 0);
		me->path = member_str(e, "path");
		if (!me->path) {
			free_maps(m);
			return -ENOMEM;
		}
		m->range_list[i] = (struct stackcap_code_range){ me->start, me->end, (uint32_t)i };
	}
	if (stackcap_code_ranges_init(&m->ranges, m->range_list, m->count)) {
		warn("pid %u: maps generation %u has unsorted or overlapping ranges: ignored", pid, m->generation);
		free_maps(m);
		return 0;
	}
	if (section_maps(s, m->generation)) {
		warn("pid %u: maps generation %u recorded twice: the first is kept", pid, m->generation);
		free_maps(m);
		return 0;
	}
	if (grow((void **)&s->maps, &s->cap_maps, s->n_maps + 1, sizeof(*s->maps))) {
		free_maps(m);
		return -ENOMEM;
	}
	size_t at = s->n_maps;
	while (at > 0 && s->maps[at - 1]->generation > m->generation) {
		s->maps[at] = s->maps[at - 1];
		at--;
	}
	s->maps[at] = m;
	s->n_maps++;
	return 0;
}

static int on_drops(struct reader *r, const bt_field *pl, uint32_t pid)
{
	uint32_t tid = (uint32_t)member_u64(pl, "tid");
	uint64_t total = member_u64(pl, "ring_full") + member_u64(pl, "nested") +
			 member_u64(pl, "no_stack_bounds") + member_u64(pl, "other");
	for (size_t i = 0; i < r->n_drops; i++)
		if (r->drops[i].pid == pid && r->drops[i].tid == tid) {
			if (total > r->drops[i].total)
				r->drops[i].total = total; /* cumulative: latest wins */
			return 0;
		}
	if (grow((void **)&r->drops, &r->cap_drops, r->n_drops + 1, sizeof(*r->drops)))
		return -ENOMEM;
	r->drops[r->n_drops++] = (struct thread_drops){ pid, tid, total };
	return 0;
}

/* ---- pass 2: samples ----------------------------------------------------- */

static struct thread_state *thread_get(struct reader *r, uint32_t pid, uint32_t tid)
{
	uint64_t const key = (uint64_t)pid << 32 | tid | (1ull << 63);
	if ((r->n_threads + 1) * 2 > r->cap_threads) {
		size_t ncap = r->cap_threads ? r->cap_threads * 2 : 64;
		struct thread_state *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return NULL;
		for (size_t i = 0; i < r->cap_threads; i++) {
			if (!r->threads[i].key)
				continue;
			size_t h = (size_t)(r->threads[i].key * 0x9E3779B97F4A7C15ull >> 40) & (ncap - 1);
			while (nt[h].key)
				h = (h + 1) & (ncap - 1);
			nt[h] = r->threads[i];
		}
		free(r->threads);
		r->threads = nt;
		r->cap_threads = ncap;
	}
	size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull >> 40) & (r->cap_threads - 1);
	while (r->threads[h].key && r->threads[h].key != key)
		h = (h + 1) & (r->cap_threads - 1);
	if (!r->threads[h].key) {
		r->threads[h].key = key;
		r->n_threads++;
	}
	return &r->threads[h];
}

static int image_reserve(struct stackcap_image *img, uint64_t nwords)
{
	if (nwords <= img->capacity && img->words)
		return 0;
	uint64_t cap = img->capacity ? img->capacity : 512;
	while (cap < nwords)
		cap *= 2;
	uint64_t *w = realloc(img->words, cap * sizeof(*w));
	if (!w)
		return -ENOMEM;
	img->words = w;
	uint8_t *k = realloc(img->kept, (cap + 7) / 8);
	if (!k)
		return -ENOMEM;
	img->kept = k;
	img->capacity = cap;
	return 0;
}

/* What a samples-stream event carries. */
enum { EV_SAMPLE, EV_FULL, EV_SEGMENT };

static int on_sample(struct reader *r, const bt_field *pl, uint32_t pid, uint32_t tid, uint64_t ts,
		     int kind)
{
	int const full = kind != EV_SAMPLE;
	if (r->opts && r->opts->pid && r->opts->pid != pid)
		return 0;
	if (r->opts && r->opts->tid && r->opts->tid != tid)
		return 0;
	uint32_t const generation = (uint32_t)member_u64(pl, "generation");
	const bt_field *bf = member(pl, "blob");
	uint64_t const len = bf ? bt_field_array_get_length(bf) : 0;
	if (grow((void **)&r->blob, &r->blob_cap, len + 1, 1))
		return -ENOMEM;
	member_bytes(pl, "blob", r->blob, len);

	struct section *sec = section_at(r, pid, ts);
	if (!sec)
		r->st->no_process++;
	if (sec && sec->p.codec_version != STACKCAP_CODEC_VERSION) {
		r->st->bad_blobs++;
		return 0;
	}
	struct su_maps *maps = sec ? section_maps(sec, generation) : NULL;
	struct thread_state *t = thread_get(r, pid, tid);
	if (!t)
		return -ENOMEM;
	if (!maps) {
		/* Without the ranges of its generation a blob's code words
		 * cannot be decoded, and the next samples may refer to it. */
		if (!full) {
			r->st->no_maps++;
			t->has_ref = 0;
		}
		return 0;
	}
	struct stackcap_codec_header hdr;
	if (stackcap_codec_is_error(stackcap_codec_peek(r->blob, len, &hdr)) ||
	    hdr.nwords > (64u << 20) / 8) {
		r->st->bad_blobs++;
		if (!full)
			t->has_ref = 0;
		return 0;
	}
	if (full) {
		/* Held until the sample of the same time that follows it. */
		struct stackcap_image *img = kind == EV_FULL ? &t->full : &t->seg;
		int *pending = kind == EV_FULL ? &t->full_pending : &t->seg_pending;
		*pending = 0;
		if (image_reserve(img, hdr.nwords))
			return -ENOMEM;
		if (stackcap_codec_is_error(stackcap_codec_decode(r->blob, len, &maps->ranges, NULL, img))) {
			r->st->bad_blobs++;
			return 0;
		}
		*pending = 1;
		if (kind == EV_FULL)
			t->full_ts = ts;
		else
			t->seg_ts = ts;
		return 0;
	}
	struct stackcap_image *dst = &t->img[!t->cur];
	struct stackcap_image *ref = t->has_ref ? &t->img[t->cur] : NULL;
	if (image_reserve(dst, hdr.nwords))
		return -ENOMEM;
	size_t rc = stackcap_codec_decode(r->blob, len, &maps->ranges, ref, dst);
	if (stackcap_codec_is_error(rc)) {
		r->st->bad_blobs++;
		t->has_ref = 0;
		return 0;
	}
	t->cur = !t->cur;
	t->has_ref = 1;

	if (r->opts && (ts < r->opts->time_begin || (r->opts->time_end && ts > r->opts->time_end)))
		return 0;
	r->st->samples++;
	r->st->blob_bytes += len;
	r->st->raw_stack_bytes += dst->nwords * 8;
	int const has_full = t->full_pending && t->full_ts == ts;
	int const has_seg = t->seg_pending && t->seg_ts == ts;
	t->full_pending = 0;
	t->seg_pending = 0;
	if (has_full)
		r->st->full_samples++;
	if (!r->cb->sample)
		return 0;
	struct su_sample s = {
		.time_ns = ts,
		.pid = pid,
		.tid = tid,
		.process = sec ? &sec->p : NULL,
		.maps = maps,
		.image = dst,
		.stack_capped = sec && sec->p.stack_cap &&
				(dst->nwords + (has_seg ? t->seg.nwords : 0)) * 8 + 8 > sec->p.stack_cap,
		.full_image = has_full ? &t->full : NULL,
		.segment = has_seg ? &t->seg : NULL,
	};
	int const crc = r->cb->sample(r->cb->arg, &s);
	if (crc)
		r->cb_rc = crc;
	return 0;
}

/* ---- the babeltrace2 graph ----------------------------------------------- */

static int handle_event(struct reader *r, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	const bt_field *pl = bt_event_borrow_payload_field_const(ev);
	const bt_packet *pkt = bt_event_borrow_packet_const(ev);
	const bt_field *ctx = pkt ? bt_packet_borrow_context_field_const(pkt) : NULL;
	uint32_t const pid = (uint32_t)member_u64(ctx, "pid");
	uint32_t const tid = (uint32_t)member_u64(ctx, "tid");
	uint64_t const ts = bt_clock_snapshot_get_value(
		bt_message_event_borrow_default_clock_snapshot_const(msg));
	uint64_t const stream_id = bt_stream_get_id(bt_event_borrow_stream_const(ev));

	if (!name)
		return 0;
	if (r->pass == 2)
		return strcmp(name, "sample") == 0	    ? on_sample(r, pl, pid, tid, ts, EV_SAMPLE)
		       : strcmp(name, "sample_full") == 0    ? on_sample(r, pl, pid, tid, ts, EV_FULL)
		       : strcmp(name, "sample_segment") == 0 ? on_sample(r, pl, pid, tid, ts, EV_SEGMENT)
							    : 0;
	if (strcmp(name, "process_start") == 0) {
		int rc = on_process_start(r, pl, ts, stream_id);
		if (rc == 0 && r->cb->process_start)
			r->cb_rc = r->cb->process_start(r->cb->arg, &r->sections[r->n_sections - 1].p);
		return rc;
	}
	if (strcmp(name, "maps") == 0)
		return on_maps(r, pl, pid, stream_id);
	if (strcmp(name, "drops") == 0)
		return on_drops(r, pl, pid);
	if (strcmp(name, "process_end") == 0) {
		struct section *s = section_of_stream(r, stream_id, pid);
		if (s && !s->p.ended) {
			s->p.ended = 1;
			r->st->ended++;
		}
	}
	return 0;
}

static bt_graph_simple_sink_component_initialize_func_status
sink_init(bt_message_iterator *it, void *data)
{
	(void)it;
	(void)data;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status
sink_consume(bt_message_iterator *it, void *data)
{
	struct reader *r = data;
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
		const bt_message *m = msgs[i];
		if (rc == 0 && !r->cb_rc) {
			switch (bt_message_get_type(m)) {
			case BT_MESSAGE_TYPE_EVENT:
				rc = handle_event(r, m);
				break;
			case BT_MESSAGE_TYPE_DISCARDED_EVENTS: {
				uint64_t n = 0;
				if (r->pass == 2 &&
				    bt_message_discarded_events_get_count(m, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
					r->st->discarded += n;
				break;
			}
			default:
				break;
			}
		}
		bt_message_put_ref(m);
	}
	if (rc) {
		r->fatal = rc;
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	if (r->cb_rc)
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* The first cause of babeltrace2's current error, into R's message. */
static void take_bt_error(struct reader *r, const char *what)
{
	const bt_error *e = bt_current_thread_take_error();
	const char *cause = NULL;
	if (e && bt_error_get_cause_count(e) > 0)
		cause = bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0));
	set_err(r, "%s%s%s", what, cause ? ": " : "", cause ? cause : "");
	if (e)
		bt_error_release(e);
}

/* A reference to component class CLS of plugin PLUGIN_NAME, or NULL. */
static const bt_plugin *find_plugin(const char *plugin_name)
{
	const bt_plugin *plugin = NULL;
	if (bt_plugin_find(plugin_name, BT_TRUE, BT_FALSE, BT_TRUE, BT_TRUE, BT_FALSE, &plugin) !=
	    BT_PLUGIN_FIND_STATUS_OK)
		return NULL;
	return plugin;
}

/* Run one graph src.ctf.fs(DIR) -> flt.utils.muxer -> our sink. */
static int run_graph(struct reader *r, const char *dir)
{
	int rc = -1;
	bt_graph *g = bt_graph_create(0);
	bt_value *params = bt_value_map_create();
	bt_value *inputs = NULL;
	const bt_plugin *ctf = find_plugin("ctf");
	const bt_plugin *utils = find_plugin("utils");
	const bt_component_class_source *src_cls =
		ctf ? bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs") : NULL;
	const bt_component_class_filter *mux_cls =
		utils ? bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer") : NULL;
	const bt_component_source *src = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;

	if (!src_cls || !mux_cls) {
		set_err(r, "babeltrace2 plugins ctf and utils not found (apt-get install babeltrace2)");
		goto out;
	}
	if (!g || !params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ||
	    bt_value_array_append_string_element(inputs, dir)) {
		set_err(r, "out of memory");
		goto out;
	}
	if (bt_graph_add_source_component(g, src_cls,
					  "src", params, BT_LOGGING_LEVEL_NONE, &src) ||
	    bt_graph_add_filter_component(g, mux_cls,
					  "mux", NULL, BT_LOGGING_LEVEL_NONE, &mux) ||
	    bt_graph_add_simple_sink_component(g, "sink", sink_init, sink_consume, NULL, r, &sink)) {
		take_bt_error(r, "cannot open the trace with babeltrace2");
		goto out;
	}
	uint64_t const nout = bt_component_source_get_output_port_count(src);
	for (uint64_t i = 0; i < nout; i++) {
		const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(
			mux, bt_component_filter_get_input_port_count(mux) - 1);
		if (bt_graph_connect_ports(g, bt_component_source_borrow_output_port_by_index_const(src, i),
					   in, NULL)) {
			take_bt_error(r, "cannot connect babeltrace2 ports");
			goto out;
		}
	}
	if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL)) {
		take_bt_error(r, "cannot connect babeltrace2 ports");
		goto out;
	}
	for (;;) {
		bt_graph_run_status s = bt_graph_run(g);
		if (s == BT_GRAPH_RUN_STATUS_AGAIN)
			continue;
		if (s == BT_GRAPH_RUN_STATUS_OK)
			rc = 0;
		else if (r->fatal)
			rc = r->fatal;
		else
			take_bt_error(r, "babeltrace2 could not read the trace");
		break;
	}
out:
	if (rc && r->fatal == -ENOMEM)
		set_err(r, "out of memory");
	bt_graph_put_ref(g);
	bt_value_put_ref(params);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return rc;
}

/* ---- staging ------------------------------------------------------------- */

/* Bytes of the complete packets at the start of FD (a plain stream file of
 * SIZE bytes); stops at the first packet that is cut or malformed. */
static uint64_t complete_packets(int fd, uint64_t size)
{
	uint64_t off = 0;
	uint8_t h[PACKET_HEADER_SIZE + PACKET_CONTEXT_SIZE];
	while (off + sizeof(h) <= size) {
		if (pread(fd, h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
			break;
		uint32_t magic;
		uint64_t bits;
		memcpy(&magic, h, 4);
		memcpy(&bits, h + PACKET_HEADER_SIZE + 24, 8); /* packet_size */
		uint64_t const bytes = bits / 8;
		if (magic != PACKET_MAGIC || bits % 8 || bytes < sizeof(h) || bytes > size - off)
			break;
		off += bytes;
	}
	return off;
}

/* Copy the first LEN bytes of SRC into the new file DST. */
static int copy_prefix(const char *src, const char *dst, uint64_t len)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	char buf[65536];
	int rc = 0;
	while (len > 0) {
		ssize_t n = read(in, buf, len < sizeof(buf) ? len : sizeof(buf));
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			rc = -errno ? -errno : -EIO;
			break;
		}
		len -= (uint64_t)n;
	}
	close(in);
	if (close(out) && !rc)
		rc = -errno;
	return rc;
}

struct staging {
	char root[4096];
	char proc[4200];
	char samples[4200];
	int n_proc, n_samples;
};

static int rm_rf_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	char p[8192];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (e->d_type == DT_DIR)
			rm_rf_dir(p);
		else
			unlink(p);
	}
	closedir(d);
	return rmdir(path) ? -errno : 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Stage one stream file NAME of DIR into TO (proc or samples dir). */
static int stage_file(struct reader *r, const char *dir, const char *name, const char *to)
{
	char src[8192], dst[8192];
	snprintf(src, sizeof(src), "%s/%s", dir, name);
	int const zst = has_suffix(name, ".zst");
	snprintf(dst, sizeof(dst), "%s/%.*s", to, (int)(strlen(name) - (zst ? 4 : 0)), name);
	if (zst) {
		int rc = ctf_zstd_inflate_file(src, dst);
		if (rc == -EBADMSG) {
			warn("%s: corrupt or truncated zstd frame: only the packets before it are read", src);
			r->st->truncated_files++;
		} else if (rc) {
			warn("%s: cannot inflate: %s: file skipped", src, strerror(-rc));
			r->st->truncated_files++;
			unlink(dst);
			return 0;
		}
		src[0] = 0;
		snprintf(src, sizeof(src), "%s", dst); /* validate the inflated copy in place */
	}
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		warn("%s: %s: file skipped", src, strerror(errno));
		r->st->truncated_files++;
		return 0;
	}
	struct stat sb;
	uint64_t good = 0, size = 0;
	if (fstat(fd, &sb) == 0) {
		size = (uint64_t)sb.st_size;
		good = complete_packets(fd, size);
	}
	close(fd);
	if (good < size) {
		warn("%s/%s: cut or malformed packet at byte %llu of %llu: only the packets before it are read",
		     dir, name, (unsigned long long)good, (unsigned long long)size);
		r->st->truncated_files++;
	}
	if (zst) {
		if (good < size && truncate(dst, (off_t)good))
			return -errno;
		return 0;
	}
	if (good == size)
		return symlink(src, dst) ? -errno : 0;
	return copy_prefix(src, dst, good);
}

static int stage(struct reader *r, const char *dir, struct staging *sg)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(sg->root, sizeof(sg->root), "%s/stackunwind.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sg->root)) {
		set_err(r, "cannot create a staging directory in %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
		sg->root[0] = 0;
		return -errno;
	}
	snprintf(sg->proc, sizeof(sg->proc), "%s/proc", sg->root);
	snprintf(sg->samples, sizeof(sg->samples), "%s/samples", sg->root);
	char meta[8192], link_to[8192];
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	if (mkdir(sg->proc, 0700) || mkdir(sg->samples, 0700))
		return -errno;
	snprintf(link_to, sizeof(link_to), "%s/metadata", sg->proc);
	if (symlink(meta, link_to))
		return -errno;
	snprintf(link_to, sizeof(link_to), "%s/metadata", sg->samples);
	if (symlink(meta, link_to))
		return -errno;

	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		const char *n = e->d_name;
		if (n[0] == '.' || strcmp(n, "metadata") == 0)
			continue;
		if (strncmp(n, "proc-", 5) == 0) {
			rc = stage_file(r, dir, n, sg->proc);
			sg->n_proc++;
		} else if (strncmp(n, "samples-", 8) == 0) {
			rc = stage_file(r, dir, n, sg->samples);
			sg->n_samples++;
		} else {
			warn("%s/%s: not a stackcap stream file: ignored", dir, n);
		}
	}
	closedir(d);
	if (rc)
		set_err(r, "cannot stage the trace in %s: %s", sg->root, strerror(-rc));
	return rc;
}

/* ---- entry points -------------------------------------------------------- */

/* Read DIR/metadata and check it names a stackcap trace of a version we
 * know.  @return 0, or -1 with a message. */
static int check_metadata(const char *dir, char *msg, size_t msglen)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(msg, msglen, "%s is not a stackcap trace: %s: %s", dir, path, strerror(errno));
		return -1;
	}
	char line[1024];
	int tracer = 0;
	long version = -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "tracer_name = \"stackcap\";", 25) == 0)
			tracer = 1;
		else if (strncmp(p, "stackcap_trace_version = ", 25) == 0)
			version = strtol(p + 25, NULL, 10);
	}
	fclose(f);
	if (!tracer) {
		snprintf(msg, msglen, "%s is not a stackcap trace (its metadata does not name tracer \"stackcap\")", dir);
		return -1;
	}
	if (version != 1) {
		snprintf(msg, msglen, "%s: stackcap trace format version %ld not supported (this reader knows 1)",
			 dir, version);
		return -1;
	}
	return 0;
}

int su_stackcap_trace_probe(const char *dir)
{
	char msg[16];
	return check_metadata(dir, msg, sizeof(msg)) == 0;
}

static uint64_t dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	uint64_t total = 0;
	struct dirent *e;
	struct stat sb;
	while ((e = readdir(d)))
		if (fstatat(dirfd(d), e->d_name, &sb, 0) == 0 && S_ISREG(sb.st_mode))
			total += (uint64_t)sb.st_size;
	closedir(d);
	return total;
}

int su_stackcap_trace_read(const char *dir, const struct su_reader_opts *opts,
			   const struct su_reader_callbacks *cb,
			   struct su_reader_stats *stats,
			   char *err, size_t errlen)
{
	struct reader r = { .opts = opts, .cb = cb, .st = stats, .err = err, .errlen = errlen };
	struct staging sg = { 0 };
	int rc;

	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	struct stat sb;
	if (stat(dir, &sb)) {
		set_err(&r, "%s: %s", dir, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(sb.st_mode)) {
		set_err(&r, "%s is not a trace directory", dir);
		return -ENOTDIR;
	}
	if (check_metadata(dir, err, errlen))
		return -EINVAL;
	/* Staged symlinks must point at absolute paths. */
	char *abs_dir = realpath(dir, NULL);
	if (!abs_dir) {
		set_err(&r, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	dir = abs_dir;
	stats->bytes_on_disk = dir_bytes(dir);

	rc = stage(&r, dir, &sg);
	if (rc)
		goto out;
	if (sg.n_samples == 0)
		warn("%s: no sample streams", dir);
	r.pass = 1;
	if (sg.n_proc && (rc = run_graph(&r, sg.proc)) != 0)
		goto out;
	if (r.cb_rc) {
		rc = r.cb_rc;
		goto out;
	}
	if (!r.n_sections)
		warn("%s: no process_start event: samples cannot be decoded", dir);
	for (size_t i = 0; i < r.n_sections; i++)
		if (cb->maps)
			for (size_t j = 0; j < r.sections[i].n_maps && !r.cb_rc; j++)
				r.cb_rc = cb->maps(cb->arg, &r.sections[i].p, r.sections[i].maps[j]);
	r.pass = 2;
	if (!r.cb_rc && sg.n_samples && (rc = run_graph(&r, sg.samples)) != 0)
		goto out;
	rc = r.cb_rc;
	if (!rc && cb->end)
		rc = cb->end(cb->arg);
	for (size_t i = 0; i < r.n_drops; i++)
		stats->drops += r.drops[i].total;
	if (!rc && (stats->truncated_files || stats->bad_blobs || stats->no_maps))
		rc = 1;
out:
	if (sg.root[0])
		rm_rf_dir(sg.root);
	reader_free(&r);
	free(abs_dir);
	return rc;
}
