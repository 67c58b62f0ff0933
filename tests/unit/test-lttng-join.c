/* SPDX-License-Identifier: MIT */
/* The LTTng join (trace/lttng-join.c) on babeltrace2 event messages made
 * in the test (bt2-fixture.h): LTTng-UST's module events and our
 * stackcap:* events in, the reader core's process_start, maps and sample
 * events out; events it must ignore or refuse. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check-main.h"
#include "bt2-fixture.h"
#include "trace/lttng-join.h"

/* The event classes, as LTTng-UST and liblttng-stackcap declare them
 * (the members the join reads, in their types). */
enum {
	C_DUMP_START, C_BIN_INFO, C_BUILD_ID, C_DUMP_END, C_PROCNAME, C_DLOPEN, C_DLCLOSE,
	C_RANGES, C_SAMPLE, C_SEGMENT, C_USER, C_BIN_NOPATH, C_SAMPLE_NOBLOB, C_SAMPLE_NOGEN,
	C_SAMPLE_W, C_SEGMENT_W,
};
static const struct fx_class classes[] = {
	[C_DUMP_START] = { "lttng_ust_statedump:start", { { NULL, FX_END } } },
	[C_BIN_INFO] = { "lttng_ust_statedump:bin_info",
			 { { "baddr", FX_U64 }, { "memsz", FX_U64 }, { "path", FX_STR }, { "is_pic", FX_U8 } } },
	[C_BUILD_ID] = { "lttng_ust_statedump:build_id", { { "baddr", FX_U64 }, { "build_id", FX_U8_SEQ } } },
	[C_DUMP_END] = { "lttng_ust_statedump:end", { { NULL, FX_END } } },
	[C_PROCNAME] = { "lttng_ust_statedump:procname", { { "procname", FX_STR } } },
	[C_DLOPEN] = { "lttng_ust_dl:dlopen", { { "baddr", FX_U64 }, { "memsz", FX_U64 }, { "path", FX_STR } } },
	[C_DLCLOSE] = { "lttng_ust_dl:dlclose", { { "baddr", FX_U64 } } },
	[C_RANGES] = { "stackcap:code_ranges",
		       { { "generation", FX_U32 }, { "codec_version", FX_U8 }, { "policy", FX_U8 },
			 { "stack_cap", FX_U32 }, { "frequency_hz", FX_U32 }, { "vdso_build_id", FX_U8_SEQ },
			 { "ranges", FX_U64_SEQ } } },
	[C_SAMPLE] = { "stackcap:sample", { { "generation", FX_U32 }, { "blob", FX_U8_SEQ } } },
	[C_SEGMENT] = { "stackcap:sample_segment", { { "generation", FX_U32 }, { "blob", FX_U8_SEQ } } },
	[C_USER] = { "myapp:tick", { { "x", FX_U64 } } },
	[C_BIN_NOPATH] = { "lttng_ust_statedump:bin_info", { { "baddr", FX_U64 }, { "memsz", FX_U64 } } },
	[C_SAMPLE_NOBLOB] = { "stackcap:sample", { { "generation", FX_U32 } } },
	[C_SAMPLE_NOGEN] = { "stackcap:sample", { { "blob", FX_U8_SEQ } } },
	/* The blob as little-endian 64-bit words (docs/lttng.md). */
	[C_SAMPLE_W] = { "stackcap:sample",
			 { { "generation", FX_U32 }, { "blob_bytes", FX_U32 }, { "blob_words", FX_U64_SEQ } } },
	[C_SEGMENT_W] = { "stackcap:sample_segment",
			  { { "generation", FX_U32 }, { "blob_bytes", FX_U32 }, { "blob_words", FX_U64_SEQ } } },
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

#define ARR(...) .arr = (const uint64_t[]){ __VA_ARGS__ }, .n = sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)
#define BIN(pid, ts, baddr, memsz, path, pic) \
	{ C_BIN_INFO, pid, pid, ts, { { .u = baddr }, { .u = memsz }, { .str = path }, { .u = pic } } }
#define RANGES(pid, ts, gen, ...) \
	{ C_RANGES, pid, pid, ts, { { .u = gen }, { .u = 1 }, { .u = 2 }, { .u = 8192 }, { .u = 99 }, \
				    { ARR(0xaa, 0xbb) }, { ARR(__VA_ARGS__) } } }

/* ---- what the join says ------------------------------------------------------ */

#define MAX_OUT 16
#define MAX_SAMPLES 8

struct out_sample {
	struct raw_event ev, seg;
	int has_seg;
	uint8_t blob[16], seg_blob[16];
};

struct run {
	struct su_lttng_join *j;
	int other, no_ids, add_err;
	int n_samples, sample_zero;    /* samples delivered, calls that delivered none */
	struct out_sample samples[MAX_SAMPLES];
	int n_out;
	struct raw_event out[MAX_OUT]; /* what flush emitted (maps and strings owned here) */
};

/* As trace/source-lttng.c feeds it: each event message by its kind. */
static int feed(void *arg, const bt_message *msg)
{
	struct run *r = arg;
	if (bt_message_get_type(msg) != BT_MESSAGE_TYPE_EVENT)
		return 0;
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	enum su_lttng_event const kind = su_lttng_event_of(bt_event_class_get_name(bt_event_borrow_class_const(e)));
	if (kind == SU_LTTNG_OTHER) {
		r->other++;
		return 0;
	}
	uint32_t vpid, vtid;
	if (su_lttng_event_ids(msg, &vpid, &vtid)) {
		r->no_ids++;
		return 0;
	}
	uint64_t const ts = bt_clock_snapshot_get_value(bt_message_event_borrow_default_clock_snapshot_const(msg));
	if (kind != SU_LTTNG_SAMPLE && kind != SU_LTTNG_SEGMENT && kind != SU_LTTNG_RUNTIME_FRAMES) {
		if (su_lttng_join_add(r->j, msg, kind, vpid, ts))
			r->add_err++;
		return 0;
	}
	struct out_sample *s = &r->samples[r->n_samples];
	struct su_lttng_extra x;
	int const rc = su_lttng_join_sample(r->j, msg, kind, vpid, vtid, ts, &s->ev, &x);
	ck_assert_int_ge(rc, 0);
	s->seg = x.seg;
	s->has_seg = x.has_seg;
	if (rc == 0) {
		r->sample_zero++;
		return 0;
	}
	ck_assert_int_lt(r->n_samples, MAX_SAMPLES);
	ck_assert_uint_le(s->ev.blob_len, sizeof(s->blob));
	memcpy(s->blob, s->ev.blob, s->ev.blob_len);
	if (s->has_seg) {
		ck_assert_uint_le(s->seg.blob_len, sizeof(s->seg_blob));
		memcpy(s->seg_blob, s->seg.blob, s->seg.blob_len);
	}
	r->n_samples++;
	return 0;
}

static int collect(void *ctx, const struct raw_event *ev)
{
	struct run *r = ctx;
	ck_assert_int_lt(r->n_out, MAX_OUT);
	r->out[r->n_out++] = *ev;
	return 0;
}

static void run_script(struct run *r, const struct fx_event *events, size_t n, int no_ids)
{
	memset(r, 0, sizeof(*r));
	r->j = su_lttng_join_new();
	ck_assert_ptr_nonnull(r->j);
	struct fx_script const s = { classes, NCLASSES, events, n, no_ids, 0, 0 };
	ck_assert_int_eq(fx_run(&s, NULL, NULL, feed, r), 0);
	ck_assert_int_eq(r->add_err, 0);
}

static void run_free(struct run *r)
{
	for (int i = 0; i < r->n_out; i++) {
		if (r->out[i].kind == RAW_MAPS)
			su_maps_free(r->out[i].maps);
		if (r->out[i].kind == RAW_PROCESS_START) {
			free(r->out[i].proc.comm);
			free(r->out[i].proc.exe);
		}
	}
	su_lttng_join_free(r->j);
}

/* The maps event of generation GEN among what flush emitted. */
static const struct su_maps *maps_of(const struct run *r, uint32_t gen)
{
	for (int i = 0; i < r->n_out; i++)
		if (r->out[i].kind == RAW_MAPS && r->out[i].maps->generation == gen)
			return r->out[i].maps;
	return NULL;
}

/* ---- the tests ------------------------------------------------------------------ */

START_TEST(t_event_of)
{
	ck_assert_int_eq(su_lttng_event_of("stackcap:sample"), SU_LTTNG_SAMPLE);
	ck_assert_int_eq(su_lttng_event_of("stackcap:sample_segment"), SU_LTTNG_SEGMENT);
	ck_assert_int_eq(su_lttng_event_of("stackcap:code_ranges"), SU_LTTNG_CODE_RANGES);
	ck_assert_int_eq(su_lttng_event_of("lttng_ust_statedump:bin_info"), SU_LTTNG_MODULES);
	ck_assert_int_eq(su_lttng_event_of("lttng_ust_dl:dlopen"), SU_LTTNG_MODULES);
	ck_assert_int_eq(su_lttng_event_of("lttng_ust_lib:load"), SU_LTTNG_MODULES);
	/* Names that only look like ours are the user's own. */
	ck_assert_int_eq(su_lttng_event_of("stackcap:samples"), SU_LTTNG_OTHER);
	ck_assert_int_eq(su_lttng_event_of("stackcap:"), SU_LTTNG_OTHER);
	ck_assert_int_eq(su_lttng_event_of("lttng_ust_statedum:bin_info"), SU_LTTNG_OTHER);
	ck_assert_int_eq(su_lttng_event_of("myapp:tick"), SU_LTTNG_OTHER);
	ck_assert_int_eq(su_lttng_event_of(""), SU_LTTNG_OTHER);
	ck_assert_int_eq(su_lttng_event_of(NULL), SU_LTTNG_OTHER);
}
END_TEST

/* The vpid/vtid contexts are read; a session without them is told apart. */
START_TEST(t_ids)
{
	struct fx_event const ev[] = {
		{ C_SAMPLE, 4242, 4243, 5, { { .u = 1 }, { ARR(1) } } },
		{ C_USER, 7, 8, 6, { { .u = 3 } } },
	};
	struct run r;
	run_script(&r, ev, 2, 0);
	ck_assert_int_eq(r.no_ids, 0);
	ck_assert_int_eq(r.other, 1);
	ck_assert_int_eq(r.n_samples, 1);
	ck_assert_uint_eq(r.samples[0].ev.pid, 4242);
	ck_assert_uint_eq(r.samples[0].ev.tid, 4243);
	run_free(&r);

	run_script(&r, ev, 2, 1);
	ck_assert_int_eq(r.no_ids, 1);
	ck_assert_int_eq(r.n_samples, 0);
	run_free(&r);
}
END_TEST

/* A state dump and one generation: the process and each range joined to
 * its module (executable at bias 0, PIC library at its base, the vDSO
 * with the generation's build-id, anonymous code). */
START_TEST(t_join_modules)
{
	struct fx_event const ev[] = {
		{ C_DUMP_START, 100, 100, 10, { { 0 } } },
		{ C_PROCNAME, 100, 100, 11, { { .str = "app" } } },
		BIN(100, 12, 0x400000, 0x10000, "/usr/bin/app", 0),
		BIN(100, 13, 0x7f0000000000, 0x200000, "/lib/libc.so.6", 1),
		{ C_BUILD_ID, 100, 100, 14, { { .u = 0x7f0000000000 }, { ARR(0xab, 0xcd, 0xef) } } },
		BIN(100, 15, 0x7fff0000, 0, "[vdso]", 1),
		{ C_DUMP_END, 100, 100, 16, { { 0 } } },
		{ C_USER, 100, 100, 17, { { .u = 1 } } },
		RANGES(100, 20, 1, 0x401000, 0x402000, 0x7f0000001000, 0x7f0000002000, 0x7fff0000, 0x7fff1000,
		       0x90000000, 0x90001000),
	};
	struct run r;
	run_script(&r, ev, sizeof(ev) / sizeof(ev[0]), 0);
	ck_assert_int_eq(r.other, 1);
	ck_assert(su_lttng_join_has_generations(r.j));
	ck_assert_int_eq(su_lttng_join_flush(r.j, 20, 0, 1, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 2);
	const struct raw_event *p = &r.out[0];
	ck_assert_int_eq(p->kind, RAW_PROCESS_START);
	ck_assert_uint_eq(p->pid, 100);
	ck_assert_uint_eq(p->ts, 10); /* the process's first event */
	ck_assert_str_eq(p->proc.comm, "app");
	ck_assert_str_eq(p->proc.exe, "/usr/bin/app"); /* the module not named like a shared object */
	ck_assert_uint_eq(p->proc.frequency_hz, 99);
	ck_assert_uint_eq(p->proc.stack_cap, 8192);
	ck_assert_uint_eq(p->proc.policy, 2);
	ck_assert_uint_eq(p->proc.codec_version, 1);

	ck_assert_int_eq(r.out[1].kind, RAW_MAPS);
	ck_assert_uint_eq(r.out[1].ts, 20);
	const struct su_maps *m = r.out[1].maps;
	ck_assert_uint_eq(m->generation, 1);
	ck_assert_uint_eq(m->count, 4);
	ck_assert_str_eq(m->entries[0].path, "/usr/bin/app");
	ck_assert_uint_eq(m->entries[0].bias, 0);
	ck_assert_uint_eq(m->entries[0].start, 0x401000);
	ck_assert_uint_eq(m->entries[0].end, 0x402000);
	ck_assert_uint_eq(m->entries[0].build_id_len, 0);
	ck_assert_str_eq(m->entries[1].path, "/lib/libc.so.6");
	ck_assert_uint_eq(m->entries[1].bias, 0x7f0000000000);
	ck_assert_uint_eq(m->entries[1].build_id_len, 3);
	ck_assert_mem_eq(m->entries[1].build_id, "\xab\xcd\xef", 3);
	ck_assert_str_eq(m->entries[2].path, "[vdso]");
	ck_assert_uint_eq(m->entries[2].flags & SU_MAP_VDSO, SU_MAP_VDSO);
	ck_assert_uint_eq(m->entries[2].build_id_len, 2);
	ck_assert_mem_eq(m->entries[2].build_id, "\xaa\xbb", 2);
	ck_assert_str_eq(m->entries[3].path, "[anon:exec]");
	ck_assert_uint_eq(m->entries[3].flags & SU_MAP_ANON, SU_MAP_ANON);
	/* The range list the codec decodes against: every range, its entry. */
	for (uint32_t i = 0; i < 4; i++) {
		ck_assert_uint_eq(m->range_list[i].start, m->entries[i].start);
		ck_assert_uint_eq(m->range_list[i].end, m->entries[i].end);
	}
	/* Delivered once. */
	ck_assert_int_eq(su_lttng_join_flush(r.j, 1000, 0, 1, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 2);
	run_free(&r);
}
END_TEST

/* A generation goes out once nothing can change it: at once when every
 * range is in a sized module; a range in no module waits for a state dump
 * after it, or WAIT_NS. */
START_TEST(t_settled)
{
	struct fx_event const anon[] = {
		BIN(7, 10, 0x400000, 0x1000, "/bin/x", 0),
		RANGES(7, 100, 1, 0x400100, 0x400200, 0x90000000, 0x90001000),
	};
	struct run r;
	run_script(&r, anon, 2, 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 150, 1000, 0, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 1099, 1000, 0, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 1100, 1000, 0, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 2);
	ck_assert_ptr_nonnull(maps_of(&r, 1));
	run_free(&r);

	struct fx_event const sized[] = {
		BIN(7, 10, 0x400000, 0x1000, "/bin/x", 0),
		RANGES(7, 100, 1, 0x400100, 0x400200),
	};
	run_script(&r, sized, 2, 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 100, 1000000, 0, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 2);
	run_free(&r);

	struct fx_event const dumped[] = {
		RANGES(7, 100, 1, 0x90000000, 0x90001000),
		{ C_DUMP_END, 7, 7, 120, { { 0 } } },
	};
	run_script(&r, dumped, 2, 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 120, 1000000, 0, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 2);
	ck_assert_str_eq(maps_of(&r, 1)->entries[0].path, "[anon:exec]");
	run_free(&r);
}
END_TEST

/* Modules come and go: each generation is joined to the modules of its
 * time (dlclose, a library loaded again at the same address, a state
 * dump after exec, a module reported after the generation). */
START_TEST(t_generations_in_time)
{
	struct fx_event const ev[] = {
		RANGES(9, 5, 1, 0x400100, 0x400200), /* before the dump lists the executable */
		BIN(9, 10, 0x400000, 0x1000, "/bin/old", 0),
		{ C_DLOPEN, 9, 9, 11, { { .u = 0x7f0000005000 }, { .u = 0x1000 }, { .str = "/lib/libfoo.so" } } },
		RANGES(9, 20, 2, 0x7f0000005100, 0x7f0000005200),
		{ C_DLCLOSE, 9, 9, 30, { { .u = 0x7f0000005000 } } },
		{ C_DLOPEN, 9, 9, 40, { { .u = 0x7f0000005000 }, { .u = 0x1000 }, { .str = "/lib/libbar.so" } } },
		RANGES(9, 50, 3, 0x7f0000005100, 0x7f0000005200),
		{ C_DUMP_START, 9, 9, 60, { { 0 } } }, /* after exec: the old image is gone */
		BIN(9, 61, 0x400000, 0x1000, "/bin/new", 0),
		RANGES(9, 70, 4, 0x400100, 0x400200, 0x7f0000005100, 0x7f0000005200),
	};
	struct run r;
	run_script(&r, ev, sizeof(ev) / sizeof(ev[0]), 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 70, 0, 1, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 5); /* process_start + 4 maps */
	ck_assert_str_eq(maps_of(&r, 1)->entries[0].path, "/bin/old");
	ck_assert_str_eq(maps_of(&r, 2)->entries[0].path, "/lib/libfoo.so");
	ck_assert_uint_eq(maps_of(&r, 2)->entries[0].bias, 0x7f0000005000); /* dlopen'ed: PIC */
	ck_assert_str_eq(maps_of(&r, 3)->entries[0].path, "/lib/libbar.so");
	ck_assert_str_eq(maps_of(&r, 4)->entries[0].path, "/bin/new");
	/* The state dump unloaded libbar too: its range is anonymous now. */
	ck_assert_str_eq(maps_of(&r, 4)->entries[1].path, "[anon:exec]");
	run_free(&r);
}
END_TEST

/* What the join ignores: a repeated generation (the first is kept), an
 * odd number of range bounds, a module event without a path, a build-id
 * for no module; processes stay apart by vpid. */
START_TEST(t_bad_events)
{
	struct fx_event const ev[] = {
		{ C_BIN_NOPATH, 3, 3, 1, { { .u = 0x400000 }, { .u = 0x1000 } } },
		{ C_BUILD_ID, 3, 3, 2, { { .u = 0x123000 }, { ARR(1, 2, 3) } } },
		RANGES(3, 10, 1, 0x400100, 0x400200),
		RANGES(3, 11, 1, 0x500100, 0x500200, 0x600000, 0x600100),
		RANGES(3, 12, 2, 0x400100, 0x400200, 0x400300),
		BIN(4, 13, 0x400000, 0x1000, "/bin/four", 0),
		RANGES(4, 14, 1, 0x400100, 0x400200),
	};
	struct run r;
	run_script(&r, ev, sizeof(ev) / sizeof(ev[0]), 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 20, 0, 1, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 4); /* two processes, one generation each */
	int seen3 = 0, seen4 = 0;
	for (int i = 0; i < r.n_out; i++) {
		if (r.out[i].kind != RAW_MAPS)
			continue;
		const struct su_maps *m = r.out[i].maps;
		ck_assert_uint_eq(m->generation, 1);
		ck_assert_uint_eq(m->count, 1);
		if (r.out[i].pid == 3) {
			seen3 = 1;
			ck_assert_uint_eq(m->entries[0].start, 0x400100); /* the first record of generation 1 */
			ck_assert_str_eq(m->entries[0].path, "[anon:exec]"); /* the module without a path was dropped */
		} else {
			seen4 = 1;
			ck_assert_uint_eq(r.out[i].pid, 4);
			ck_assert_str_eq(m->entries[0].path, "/bin/four");
		}
	}
	ck_assert(seen3 && seen4);
	run_free(&r);

	/* Only malformed code_ranges: no generation at all. */
	struct fx_event const odd[] = { RANGES(3, 12, 2, 0x400100, 0x400200, 0x400300) };
	run_script(&r, odd, 1, 0);
	ck_assert(!su_lttng_join_has_generations(r.j));
	ck_assert_int_eq(su_lttng_join_flush(r.j, 20, 0, 1, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 0);
	run_free(&r);
}
END_TEST

/* Samples: vpid/vtid as pid/tid, the blob; a segment waits for its own
 * thread's next sample and is stamped with its time; a sample without a
 * generation or a blob is not delivered. */
START_TEST(t_samples)
{
	struct fx_event const ev[] = {
		{ C_SEGMENT, 1, 2, 100, { { .u = 3 }, { ARR(9, 8) } } },
		{ C_SAMPLE, 1, 5, 101, { { .u = 3 }, { ARR(7) } } },         /* another thread: no segment */
		{ C_SAMPLE, 1, 2, 102, { { .u = 3 }, { ARR(1, 2, 3) } } },   /* takes the segment */
		{ C_SAMPLE, 1, 2, 103, { { .u = 4 }, { ARR(4) } } },         /* the segment went with the last */
		{ C_SAMPLE_NOBLOB, 1, 2, 104, { { .u = 4 } } },
		{ C_SAMPLE_NOGEN, 1, 2, 105, { { ARR(5) } } },
		{ C_SAMPLE, 1, 2, 106, { { .u = 5 }, { .n = 0 } } },        /* an empty blob is a sample */
	};
	struct run r;
	run_script(&r, ev, sizeof(ev) / sizeof(ev[0]), 0);
	ck_assert_int_eq(r.n_samples, 4);
	ck_assert_int_eq(r.sample_zero, 3); /* the segment, and the two without a blob or generation */
	const struct out_sample *s = r.samples;
	ck_assert_int_eq(s[0].ev.kind, RAW_SAMPLE);
	ck_assert_uint_eq(s[0].ev.tid, 5);
	ck_assert_int_eq(s[0].has_seg, 0);
	ck_assert_uint_eq(s[0].ev.blob_len, 1);

	ck_assert_uint_eq(s[1].ev.ts, 102);
	ck_assert_uint_eq(s[1].ev.pid, 1);
	ck_assert_uint_eq(s[1].ev.tid, 2);
	ck_assert_uint_eq(s[1].ev.stream_id, 1);
	ck_assert_uint_eq(s[1].ev.generation, 3);
	ck_assert_uint_eq(s[1].ev.blob_len, 3);
	ck_assert_mem_eq(s[1].blob, "\x01\x02\x03", 3);
	ck_assert_int_eq(s[1].has_seg, 1);
	ck_assert_int_eq(s[1].seg.kind, RAW_SAMPLE_SEGMENT);
	ck_assert_uint_eq(s[1].seg.ts, 102);
	ck_assert_uint_eq(s[1].seg.tid, 2);
	ck_assert_uint_eq(s[1].seg.generation, 3);
	ck_assert_uint_eq(s[1].seg.blob_len, 2);
	ck_assert_mem_eq(s[1].seg_blob, "\x09\x08", 2);

	ck_assert_uint_eq(s[2].ev.generation, 4);
	ck_assert_int_eq(s[2].has_seg, 0);
	ck_assert_uint_eq(s[3].ev.blob_len, 0);
	ck_assert_uint_eq(s[3].ev.ts, 106);
	/* Samples alone make no generation. */
	ck_assert(!su_lttng_join_has_generations(r.j));
	run_free(&r);
}
END_TEST

/* Blobs as 64-bit words: BLOB_BYTES bytes of them, little-endian; a byte
 * count the words cannot hold (more, or 8 and more fewer) is a sample
 * whose blob is empty (said damaged when decoded), not a lost one. */
START_TEST(t_samples_words)
{
	struct fx_event const ev[] = {
		{ C_SEGMENT_W, 1, 2, 100, { { .u = 3 }, { .u = 2 }, { ARR(0x0809) } } },
		{ C_SAMPLE_W, 1, 2, 101, { { .u = 3 }, { .u = 11 }, { ARR(0x0807060504030201ull, 0x0b0a09) } } },
		{ C_SAMPLE_W, 1, 2, 102, { { .u = 3 }, { .u = 17 }, { ARR(1, 2) } } },  /* more than 2 words */
		{ C_SAMPLE_W, 1, 2, 103, { { .u = 3 }, { .u = 5 }, { ARR(1, 2) } } },   /* a word too many */
		{ C_SAMPLE_W, 1, 2, 104, { { .u = 3 }, { .u = 0 }, { .n = 0 } } },     /* empty */
		{ C_SAMPLE, 1, 2, 105, { { .u = 3 }, { ARR(6, 7) } } },                  /* bytes, as recorded before */
	};
	struct run r;
	run_script(&r, ev, sizeof(ev) / sizeof(ev[0]), 0);
	ck_assert_int_eq(r.n_samples, 5);
	const struct out_sample *s = r.samples;
	ck_assert_uint_eq(s[0].ev.blob_len, 11);
	ck_assert_mem_eq(s[0].blob, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b", 11);
	ck_assert_int_eq(s[0].has_seg, 1);
	ck_assert_uint_eq(s[0].seg.blob_len, 2);
	ck_assert_mem_eq(s[0].seg_blob, "\x09\x08", 2);
	ck_assert_uint_eq(s[1].ev.blob_len, 0);
	ck_assert_uint_eq(s[1].ev.ts, 102);
	ck_assert_uint_eq(s[2].ev.blob_len, 0);
	ck_assert_uint_eq(s[3].ev.blob_len, 0);
	ck_assert_uint_eq(s[4].ev.blob_len, 2);
	ck_assert_mem_eq(s[4].blob, "\x06\x07", 2);
	run_free(&r);
}
END_TEST

/* EMIT's nonzero return stops the flush and is returned; what was not
 * emitted goes out at the next flush. */
static int refuse_maps(void *ctx, const struct raw_event *ev)
{
	if (ev->kind == RAW_MAPS) {
		su_maps_free(ev->maps);
		return 42;
	}
	return collect(ctx, ev);
}

START_TEST(t_emit_error)
{
	struct fx_event const ev[] = {
		BIN(7, 10, 0x400000, 0x1000, "/bin/x", 0),
		RANGES(7, 100, 1, 0x400100, 0x400200),
		RANGES(7, 110, 2, 0x400100, 0x400200),
	};
	struct run r;
	run_script(&r, ev, 3, 0);
	ck_assert_int_eq(su_lttng_join_flush(r.j, 200, 0, 1, refuse_maps, &r), 42);
	ck_assert_int_eq(r.n_out, 1); /* the process start only */
	ck_assert_int_eq(su_lttng_join_flush(r.j, 200, 0, 1, collect, &r), 0);
	ck_assert_int_eq(r.n_out, 2); /* generation 2; generation 1 was handed over and refused */
	ck_assert_ptr_nonnull(maps_of(&r, 2));
	run_free(&r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lttng-join");
	TCase *tc = tcase_create("join");
	tcase_add_test(tc, t_event_of);
	tcase_add_test(tc, t_ids);
	tcase_add_test(tc, t_join_modules);
	tcase_add_test(tc, t_settled);
	tcase_add_test(tc, t_generations_in_time);
	tcase_add_test(tc, t_bad_events);
	tcase_add_test(tc, t_samples);
	tcase_add_test(tc, t_samples_words);
	tcase_add_test(tc, t_emit_error);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(suite)
