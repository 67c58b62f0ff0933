/* SPDX-License-Identifier: MIT */
/* The export model and writers (cli/export-*.c) on records made by hand:
 * UTF-8 repair, JSON escaping, deduplication, the root of a stack that
 * stopped early, --no-inline, and a pprof file decoded back. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/unit/check-main.h"
#include "cli/export.h"
#include "cli/profile.pb-c.h"
#include "unwind/unwind.h"

/* ---- UTF-8 and JSON -------------------------------------------------------- */

static void expect_clean(const char *in, size_t len, const char *want)
{
	char *got = export_utf8_sanitize(in, len);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(utf8_valid_kept)
{
	expect_clean("main", 4, "main");
	expect_clean("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", 14, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
	expect_clean("", 0, "");
}
END_TEST

START_TEST(utf8_invalid_replaced)
{
#define FFFD "\xEF\xBF\xBD"
	expect_clean("a\xFF" "b", 3, "a" FFFD "b");                  /* never in UTF-8 */
	expect_clean("\x80", 1, FFFD);                                /* lone continuation */
	expect_clean("\xC0\x80", 2, FFFD FFFD);                       /* overlong NUL */
	expect_clean("\xE0\x80\xAF", 3, FFFD FFFD FFFD);              /* overlong '/' */
	expect_clean("\xED\xA0\x80", 3, FFFD FFFD FFFD);              /* surrogate */
	expect_clean("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);     /* past U+10FFFF */
	expect_clean("x\xE2\x82", 3, "x" FFFD FFFD);                  /* cut sequence */
	expect_clean("\xE2\x82" "A", 3, FFFD FFFD "A");
#undef FFFD
}
END_TEST

static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	export_json_string(f, s);
	fclose(f);
	return buf;
}

START_TEST(json_escapes)
{
	char *j = json_of("a\"b\\c\nd\te\x01\x1f\x7f/\xC3\xA9");
	ck_assert_str_eq(j, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u001f\\u007f/\xC3\xA9\"");
	free(j);
	j = json_of("");
	ck_assert_str_eq(j, "\"\"");
	free(j);
}
END_TEST

/* ---- records made by hand ----------------------------------------------------- */

struct recbuf {
	unsigned char b[65536];
	size_t len;
};

static void put(struct recbuf *r, const void *p, size_t n)
{
	ck_assert_uint_le(r->len + n, sizeof(r->b));
	memcpy(r->b + r->len, p, n);
	r->len += n;
}

static struct su_process proc = { .pid = 42, .comm = (char *)"weird\xFFname", .frequency_hz = 1000 };
static struct su_map_entry lib = {
	.start = 0x400000, .end = 0x500000, .offset = 0, .bias = 0x400000, .build_id_len = 2,
	.build_id = { 0xab, 0xcd }, .path = (char *)"/usr/lib/libx.so",
};

/* A sample of 2 frames: the leaf at 0x401000 (inlined g into f, "bad\x80"
 * file name), a caller at 0x402005 in main; END says how the unwind ended.
 * SLOT, VERSION: the worker's chain cache slot that kept the chain (NULL:
 * not kept). */
static void add_sample_as(struct recbuf *r, uint32_t tid, uint64_t t, int end, const void *slot, uint64_t version)
{
	struct export_rec_sample const s = { .time_ns = t, .process = &proc, .comm = proc.comm, .pid = 42, .tid = tid,
					     .nframes = 3, .end = (uint8_t)end, .chain_slot = slot,
					     .chain_version = version };
	put(r, &s, sizeof(s));
	struct export_rec_frame f = { .pc = 0x401000, .map = &lib, .module_name = "/usr/lib/libx.so", .activation = 1, .module_ok = 1, .nsym = 2 };
	put(r, &f, sizeof(f));
	struct su_symframe sf[2] = {
		{ .function = "g", .file = "bad\x80.c", .line = 7, .column = 3, .inlined = 1,
		  .decl_file = "bad\x80.c", .decl_line = 5 },
		{ .function = "f", .file = "f.c", .line = 20, .decl_file = "f.c", .decl_line = 18 },
	};
	put(r, sf, sizeof(sf));
	f = (struct export_rec_frame){ .pc = 0x402005, .map = &lib, .module_name = "/usr/lib/libx.so", .activation = 0, .module_ok = 1, .nsym = 1 };
	put(r, &f, sizeof(f));
	struct su_symframe const m = { .function = "main", .file = "m.c", .line = 3, .decl_file = "m.c",
				       .decl_line = 1 };
	put(r, &m, sizeof(m));
	/* A frame no symbol covers. */
	f = (struct export_rec_frame){ .pc = 0x4a0010, .map = &lib, .module_name = "/usr/lib/libx.so", .activation = 0, .module_ok = 1, .nsym = 0 };
	put(r, &f, sizeof(f));
}

static void add_sample(struct recbuf *r, uint32_t tid, uint64_t t, int end)
{
	add_sample_as(r, tid, t, end, NULL, 0);
}

/* A sample whose frames are those of the chain SLOT kept at VERSION. */
static void add_repeat(struct recbuf *r, uint32_t tid, uint64_t t, int end, const void *slot, uint64_t version)
{
	struct export_rec_sample const s = { .time_ns = t, .process = &proc, .comm = proc.comm, .pid = 42, .tid = tid,
					     .end = (uint8_t)end, .repeat = 1, .chain_slot = slot,
					     .chain_version = version };
	put(r, &s, sizeof(s));
}

static struct export_model *model_of(int no_inline)
{
	static struct recbuf r;
	r.len = 0;
	add_sample(&r, 42, 1000, SU_END_OUTERMOST);
	add_sample(&r, 43, 2000, SU_END_OUTERMOST);
	add_sample(&r, 42, 3000, SU_END_TRUNCATED);
	struct export_model *m = export_model_new(no_inline);
	ck_assert_ptr_nonnull(m);
	/* In two pieces, as batches arrive. */
	size_t const half = r.len / 3;  /* the first sample is one third */
	ck_assert_int_eq(export_model_add(m, r.b, half), 0);
	ck_assert_int_eq(export_model_add(m, r.b + half, r.len - half), 0);
	return m;
}

START_TEST(model_dedups)
{
	struct export_model *m = model_of(0);
	ck_assert_uint_eq(m->n_samples, 3);
	ck_assert_uint_eq(m->n_threads, 2);
	ck_assert_uint_eq(m->n_mappings, 1);
	/* leaf, caller, unknown, and the "[truncated]" root. */
	ck_assert_uint_eq(m->n_locations, 4);
	ck_assert_uint_eq(m->n_functions, 4); /* g f main [truncated] */
	ck_assert_str_eq(export_str(m, 0), "");
	ck_assert_str_eq(export_str(m, m->threads[0].comm), "weird\xEF\xBF\xBDname");
	ck_assert_uint_eq(m->threads[0].period_ns, 1000000);
	/* Leaf: its pc; caller: return address - 1. */
	ck_assert_uint_eq(m->locations[0].address, 0x401000);
	ck_assert_uint_eq(m->locations[1].address, 0x402004);
	ck_assert_uint_eq(m->locations[0].nlines, 2);
	const struct export_function *g = &m->functions[m->lines[m->locations[0].first_line].function];
	ck_assert_str_eq(export_str(m, g->name), "g");
	ck_assert_str_eq(export_str(m, g->filename), "bad\xEF\xBF\xBD.c");
	ck_assert_uint_eq(g->start_line, 5);
	/* The stack that stopped early ends in its pseudo root. */
	const struct export_sample *s = &m->samples[2];
	ck_assert_uint_eq(s->nlocs, 4);
	const struct export_location *root = &m->locations[m->locs[s->loc_off + 3]];
	ck_assert_int_eq(root->pseudo, 1);
	ck_assert_str_eq(export_str(m, m->functions[m->lines[root->first_line].function].name), "[truncated]");
	char name[64];
	export_unknown_name(m, &m->locations[2], name, sizeof(name));
	ck_assert_str_eq(name, "libx.so+0xa0010");
	export_model_free(m);
}
END_TEST

START_TEST(model_no_inline)
{
	struct export_model *m = model_of(1);
	ck_assert_uint_eq(m->locations[0].nlines, 1);
	ck_assert_str_eq(export_str(m, m->functions[m->lines[m->locations[0].first_line].function].name), "f");
	export_model_free(m);
}
END_TEST

START_TEST(speedscope_file)
{
	struct export_model *m = model_of(0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct export_info const info = { .name = "t\"race\xff", .exporter = "stackunwind test" };
	char err[256];
	ck_assert_int_eq(export_speedscope_write(m, &info, f, err, sizeof(err)), 0);
	fclose(f);
	/* Frames outermost first per sample: libx.so+0xa0010, main, f, g. */
	ck_assert_ptr_nonnull(strstr(buf, "\"name\":\"t\\\"race\xEF\xBF\xBD\""));
	ck_assert_ptr_nonnull(strstr(buf, "{\"name\":\"libx.so+0xa0010\",\"file\":\"/usr/lib/libx.so\"}"));
	ck_assert_ptr_nonnull(strstr(buf, "{\"name\":\"g\",\"file\":\"bad\xEF\xBF\xBD.c\",\"line\":5}"));
	ck_assert_ptr_nonnull(strstr(buf, "\"name\":\"weird\xEF\xBF\xBDname 42/42\",\"unit\":\"nanoseconds\","
					  "\"startValue\":1000,\"endValue\":1003000"));
	ck_assert_ptr_nonnull(strstr(buf, "\"samples\":[[0,1,2,3],[4,0,1,2,3]],\n\"weights\":[1000000,1000000]"));
	ck_assert_ptr_nonnull(strstr(buf, "\"activeProfileIndex\":0"));
	free(buf);
	export_model_free(m);
}
END_TEST

static Perftools__Profiles__Profile *pprof_of(struct export_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct export_info const info = { .name = "trace", .exporter = "stackunwind test" };
	char err[256];
	ck_assert_int_eq(export_pprof_write(m, &info, f, err, sizeof(err)), 0);
	fclose(f);
	static uint8_t out[1 << 20];
	z_stream zs = { 0 };
	ck_assert_int_eq(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (uint8_t *)buf;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = sizeof(out);
	ck_assert_int_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
	size_t const n = sizeof(out) - zs.avail_out;
	inflateEnd(&zs);
	free(buf);
	Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, n, out);
	ck_assert_ptr_nonnull(p);
	return p;
}

START_TEST(pprof_file)
{
	struct export_model *m = model_of(0);
	Perftools__Profiles__Profile *p = pprof_of(m);
	ck_assert_str_eq(p->string_table[0], "");
	/* Thread 42's two samples differ (one stopped early): 3 samples. */
	ck_assert_uint_eq(p->n_sample, 3);
	ck_assert_uint_eq(p->n_location, 4);
	ck_assert_uint_eq(p->n_mapping, 1);
	ck_assert_str_eq(p->string_table[p->mapping[0]->build_id], "abcd");
	ck_assert_str_eq(p->string_table[p->mapping[0]->filename], "/usr/lib/libx.so");
	ck_assert(p->mapping[0]->has_functions && p->mapping[0]->has_inline_frames);
	/* Leaf first, Lines innermost first. */
	const Perftools__Profiles__Sample *s = p->sample[0];
	ck_assert_uint_eq(s->n_location_id, 3);
	const Perftools__Profiles__Location *leaf = p->location[s->location_id[0] - 1];
	ck_assert_uint_eq(leaf->address, 0x401000);
	ck_assert_uint_eq(leaf->n_line, 2);
	ck_assert_int_eq(leaf->line[0]->line, 7);
	const Perftools__Profiles__Function *g = p->function[leaf->line[0]->function_id - 1];
	ck_assert_str_eq(p->string_table[g->name], "g");
	ck_assert_int_eq(g->start_line, 5);
	/* No symbol: a function of its own, named as folded names it (pprof
	 * would merge every such location into one "[libx.so]" node). */
	const Perftools__Profiles__Location *unk = p->location[s->location_id[2] - 1];
	ck_assert_uint_eq(unk->n_line, 1);
	const char *uname = p->string_table[p->function[unk->line[0]->function_id - 1]->name];
	ck_assert_msg(!strncmp(uname, "libx.so+0x", 10), "%s", uname);
	ck_assert_int_eq(s->value[0], 1);
	ck_assert_int_eq(s->value[1], 1000000);
	ck_assert_int_eq(p->period, 1000000);
	ck_assert_int_eq(p->duration_nanos, 2000);
	int labels = 0;
	for (size_t k = 0; k < s->n_label; k++) {
		const char *key = p->string_table[s->label[k]->key];
		labels += !strcmp(key, "pid") && s->label[k]->num == 42;
		labels += !strcmp(key, "tid") && s->label[k]->num == 42;
		labels += !strcmp(key, "comm") && !strcmp(p->string_table[s->label[k]->str], "weird\xEF\xBF\xBDname");
	}
	ck_assert_int_eq(labels, 3);
	perftools__profiles__profile__free_unpacked(p, NULL);
	export_model_free(m);
}
END_TEST

START_TEST(pprof_sums_identical_stacks)
{
	static struct recbuf r;
	r.len = 0;
	for (int i = 0; i < 5; i++)
		add_sample(&r, 42, 1000u * (unsigned)i, SU_END_OUTERMOST);
	struct export_model *m = export_model_new(0);
	ck_assert_int_eq(export_model_add(m, r.b, r.len), 0);
	Perftools__Profiles__Profile *p = pprof_of(m);
	ck_assert_uint_eq(p->n_sample, 1);
	ck_assert_int_eq(p->sample[0]->value[0], 5);
	ck_assert_int_eq(p->sample[0]->value[1], 5000000);
	perftools__profiles__profile__free_unpacked(p, NULL);
	export_model_free(m);
}
END_TEST

/* Records repeating a chain (a worker's chain cache): the samples share
 * the kept one's location list, or copy it when their root names why the
 * unwind stopped; a slot's next version is another chain; two threads'
 * samples of one list are two pprof samples with the same locations. */
START_TEST(model_repeats_share)
{
	static struct recbuf r;
	static int slot, other;
	r.len = 0;
	add_sample_as(&r, 42, 1000, SU_END_OUTERMOST, &slot, 1);
	add_repeat(&r, 43, 2000, SU_END_OUTERMOST, &slot, 1);
	add_repeat(&r, 42, 3000, SU_END_TRUNCATED, &slot, 1);
	add_sample_as(&r, 42, 4000, SU_END_OUTERMOST, &slot, 2);
	add_repeat(&r, 42, 5000, SU_END_OUTERMOST, &slot, 2);
	struct export_model *m = export_model_new(0);
	ck_assert_int_eq(export_model_add(m, r.b, r.len), 0);
	ck_assert_uint_eq(m->n_samples, 5);
	ck_assert_uint_eq(m->n_threads, 2);
	ck_assert_uint_eq(m->n_locations, 4); /* 3 frames, the [truncated] root */
	ck_assert_uint_eq(m->n_locs, 3 + 4 + 3);
	const struct export_sample *s = m->samples;
	ck_assert_uint_eq(s[1].loc_off, s[0].loc_off);
	ck_assert_uint_eq(s[1].nlocs, 3);
	ck_assert_uint_eq(s[1].thread, 1);
	ck_assert_uint_eq(s[2].nlocs, 4);
	ck_assert_uint_ne(s[2].loc_off, s[0].loc_off);
	ck_assert_int_eq(memcmp(&m->locs[s[2].loc_off], &m->locs[s[0].loc_off], 3 * sizeof(*m->locs)), 0);
	ck_assert_int_eq(m->locations[m->locs[s[2].loc_off + 3]].pseudo, 1);
	ck_assert_uint_eq(s[4].loc_off, s[3].loc_off);
	ck_assert_uint_ne(s[3].loc_off, s[0].loc_off);
	Perftools__Profiles__Profile *p = pprof_of(m);
	ck_assert_uint_eq(p->n_sample, 3); /* thread 42's chain (3 samples), 43's, 42's truncated */
	ck_assert_int_eq(p->sample[0]->value[0], 3);
	ck_assert_uint_eq(p->sample[1]->n_location_id, 3);
	ck_assert_int_eq(memcmp(p->sample[0]->location_id, p->sample[1]->location_id, 3 * sizeof(uint64_t)), 0);
	ck_assert_uint_eq(p->sample[2]->n_location_id, 4);
	perftools__profiles__profile__free_unpacked(p, NULL);
	/* The speedscope file: each sample's frames, shared or not. */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct export_info const info = { .name = "t", .exporter = "stackunwind test" };
	char err[256];
	ck_assert_int_eq(export_speedscope_write(m, &info, f, err, sizeof(err)), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\"samples\":[[0,1,2,3],[4,0,1,2,3],[0,1,2,3],[0,1,2,3]],"));
	ck_assert_ptr_nonnull(strstr(buf, "\"samples\":[[0,1,2,3]],"));
	free(buf);
	export_model_free(m);
	/* Four threads' samples of one kept chain: one list in the model,
	 * four in the pprof file. */
	r.len = 0;
	add_sample_as(&r, 42, 1000, SU_END_OUTERMOST, &slot, 7);
	for (uint32_t t = 43; t < 46; t++)
		add_repeat(&r, t, 1000 * t, SU_END_OUTERMOST, &slot, 7);
	m = export_model_new(0);
	ck_assert_int_eq(export_model_add(m, r.b, r.len), 0);
	ck_assert_uint_eq(m->n_locs, 3);
	p = pprof_of(m);
	ck_assert_uint_eq(p->n_sample, 4);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_uint_eq(p->sample[i]->n_location_id, 3);
		ck_assert_int_eq(memcmp(p->sample[0]->location_id, p->sample[i]->location_id, 3 * sizeof(uint64_t)), 0);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	export_model_free(m);
	/* A repeat of a chain the model never met: refused. */
	r.len = 0;
	add_repeat(&r, 42, 1, SU_END_OUTERMOST, &other, 1);
	m = export_model_new(0);
	ck_assert_int_eq(export_model_add(m, r.b, r.len), -EINVAL);
	export_model_free(m);
}
END_TEST

START_TEST(records_cut_rejected)
{
	static struct recbuf r;
	r.len = 0;
	add_sample(&r, 42, 1, SU_END_OUTERMOST);
	struct export_model *m = export_model_new(0);
	ck_assert_int_eq(export_model_add(m, r.b, r.len - 1), -EINVAL);
	export_model_free(m);
}
END_TEST

static Suite *export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("export");
	tcase_add_test(tc, utf8_valid_kept);
	tcase_add_test(tc, utf8_invalid_replaced);
	tcase_add_test(tc, json_escapes);
	tcase_add_test(tc, model_dedups);
	tcase_add_test(tc, model_no_inline);
	tcase_add_test(tc, speedscope_file);
	tcase_add_test(tc, pprof_file);
	tcase_add_test(tc, pprof_sums_identical_stacks);
	tcase_add_test(tc, model_repeats_share);
	tcase_add_test(tc, records_cut_rejected);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(export_suite)
