/* SPDX-License-Identifier: MIT */
/* pprof-check FILE SAMPLES PROGRAM CHAIN...: decode a pprof file written by
 * `stackunwind export --format pprof` (gunzip with zlib, unpack with
 * protobuf-c from the same profile.proto) and check it, one line per check,
 * "PASS: what" or "FAIL: what" (tests/export.sh turns them into TAP):
 * the sample count is SAMPLES, every id and string index resolves, and the
 * known call chain of PROGRAM (CHAIN, leaf first, inlined functions
 * included) leads the heaviest samples. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli/profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;

static int failed;

static void result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(ok ? "PASS: " : "FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	failed |= !ok;
}

static uint8_t *gunzip(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	uint8_t *in = malloc(cap);
	for (size_t k; in && (k = fread(in + n, 1, cap - n, f)) > 0;) {
		n += k;
		if (n == cap) {
			uint8_t *ni = realloc(in, cap *= 2);
			if (!ni) {
				free(in);
				in = NULL;
			}
			in = ni;
		}
	}
	fclose(f);
	if (!in)
		return NULL;
	z_stream zs = { 0 };
	size_t ocap = 4 * n + 4096, o = 0;
	uint8_t *out = malloc(ocap);
	int zrc = Z_DATA_ERROR;
	if (out && inflateInit2(&zs, 15 + 16 /* gzip only */) == Z_OK) {
		zs.next_in = in;
		zs.avail_in = (uInt)n;
		do {
			if (o == ocap) {
				uint8_t *no = realloc(out, ocap *= 2);
				if (!no)
					break;
				out = no;
			}
			zs.next_out = out + o;
			zs.avail_out = (uInt)(ocap - o);
			zrc = inflate(&zs, Z_NO_FLUSH);
			o = ocap - zs.avail_out;
		} while (zrc == Z_OK);
		inflateEnd(&zs);
	}
	free(in);
	if (zrc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	*len = o;
	return out;
}

static const Location *location(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	return NULL;
}

static const Function *function(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	return NULL;
}

static const Mapping *mapping(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id == id)
			return p->mapping[i];
	return NULL;
}

/* The function names of sample S, leaf first (each location's lines
 * innermost first), at most MAX. */
static size_t sample_names(const Profile *p, const Sample *s, const char **names, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_location_id; i++) {
		const Location *l = location(p, s->location_id[i]);
		if (!l)
			continue;
		if (!l->n_line && n < max)
			names[n++] = "?";
		for (size_t k = 0; k < l->n_line && n < max; k++) {
			const Function *f = function(p, l->line[k]->function_id);
			names[n++] = f && f->name >= 0 && (size_t)f->name < p->n_string_table
				? p->string_table[f->name] : "?";
		}
	}
	return n;
}

static int has_chain(const Profile *p, const Sample *s, char **chain, size_t nchain)
{
	const char *names[1024];
	size_t const n = sample_names(p, s, names, 1024);
	if (n < nchain)
		return 0;
	for (size_t i = 0; i < nchain; i++)
		if (strcmp(names[i], chain[i]))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: pprof-check FILE SAMPLES PROGRAM CHAIN...\n");
		return 2;
	}
	uint64_t const want = strtoull(argv[2], NULL, 10);
	const char *prog = argv[3];
	char **chain = argv + 4;
	size_t const nchain = (size_t)argc - 4;
	size_t len;
	uint8_t *raw = gunzip(argv[1], &len);
	result(raw != NULL, "pprof: the file gunzips (%s)", argv[1]);
	if (!raw)
		return 1;
	Profile *p = perftools__profiles__profile__unpack(NULL, len, raw);
	result(p != NULL, "pprof: profile.proto unpacks (%zu bytes)", len);
	if (!p)
		return 1;
	size_t const ns = p->n_string_table;
	result(ns > 0 && !strcmp(p->string_table[0], ""), "pprof: string_table[0] is \"\"");
#define STR_OK(i) ((i) >= 0 && (uint64_t)(i) < ns)
#define STR(i) (STR_OK(i) ? p->string_table[i] : "?")

	int types = p->n_sample_type == 2 && !strcmp(STR(p->sample_type[0]->type), "samples") &&
		    !strcmp(STR(p->sample_type[0]->unit), "count") && !strcmp(STR(p->sample_type[1]->type), "cpu") &&
		    !strcmp(STR(p->sample_type[1]->unit), "nanoseconds");
	result(types, "pprof: sample_type is [samples/count, cpu/nanoseconds]");
	result(p->period_type && !strcmp(STR(p->period_type->type), "cpu") &&
	       !strcmp(STR(p->period_type->unit), "nanoseconds") && p->period > 0 && p->time_nanos > 0 &&
	       p->duration_nanos >= 0,
	       "pprof: period_type cpu/nanoseconds, period %" PRId64 ", time_nanos and duration_nanos set",
	       p->period);

	/* Counts and ids. */
	uint64_t total = 0;
	int ids_ok = 1, values_ok = 1, labels_ok = 1;
	for (size_t i = 0; i < p->n_sample; i++) {
		const Sample *s = p->sample[i];
		values_ok &= s->n_value == 2 && s->value[0] > 0 && s->value[1] == s->value[0] * p->period;
		if (s->n_value)
			total += (uint64_t)s->value[0];
		ids_ok &= s->n_location_id > 0;
		for (size_t k = 0; k < s->n_location_id; k++)
			ids_ok &= s->location_id[k] != 0 && location(p, s->location_id[k]) != NULL;
		int pid = 0, tid = 0, comm = 0;
		for (size_t k = 0; k < s->n_label; k++) {
			const Perftools__Profiles__Label *l = s->label[k];
			pid |= !strcmp(STR(l->key), "pid") && l->num > 0;
			tid |= !strcmp(STR(l->key), "tid") && l->num > 0;
			comm |= !strcmp(STR(l->key), "comm") && l->str > 0 && STR_OK(l->str);
		}
		labels_ok &= pid && tid && comm;
	}
	result(total == want, "pprof: %" PRIu64 " samples counted, stackunwind unwound %" PRIu64, total, want);
	result(values_ok, "pprof: every sample has values [n, n * period]");
	result(ids_ok && p->n_sample > 0, "pprof: every location_id of %zu samples exists", p->n_sample);
	result(labels_ok, "pprof: every sample has pid, tid (numbers) and comm (string) labels");

	int fn_ok = 1, map_ok = 1, uniq = 1;
	for (size_t i = 0; i < p->n_location; i++) {
		const Location *l = p->location[i];
		uniq &= l->id == i + 1;
		map_ok &= l->mapping_id == 0 || mapping(p, l->mapping_id) != NULL;
		for (size_t k = 0; k < l->n_line; k++)
			fn_ok &= l->line[k]->function_id != 0 && function(p, l->line[k]->function_id) != NULL;
		/* One location per (mapping, address). */
		for (size_t j = 0; j < i && l->address; j++)
			uniq &= !(p->location[j]->mapping_id == l->mapping_id && p->location[j]->address == l->address);
	}
	result(fn_ok, "pprof: every function_id of %zu locations exists", p->n_location);
	result(map_ok, "pprof: every mapping_id exists");
	result(uniq, "pprof: location ids are 1..n and locations are not repeated");

	int str_ok = 1;
	for (size_t i = 0; i < p->n_function; i++) {
		const Function *f = p->function[i];
		str_ok &= STR_OK(f->name) && STR_OK(f->system_name) && STR_OK(f->filename) && f->name != 0;
	}
	for (size_t i = 0; i < p->n_mapping; i++)
		str_ok &= STR_OK(p->mapping[i]->filename) && STR_OK(p->mapping[i]->build_id);
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t k = 0; k < p->sample[i]->n_label; k++)
			str_ok &= STR_OK(p->sample[i]->label[k]->key) && STR_OK(p->sample[i]->label[k]->str);
	for (size_t i = 0; i < p->n_comment; i++)
		str_ok &= STR_OK(p->comment[i]);
	str_ok &= STR_OK(p->drop_frames) && STR_OK(p->keep_frames) && STR_OK(p->default_sample_type);
	result(str_ok, "pprof: every string index is in range (%zu strings)", ns);

	/* The heaviest sample carries the known chain; so do >= 99% of the
	 * samples whose leaf is the chain's leaf. */
	const Sample *heavy = NULL;
	for (size_t i = 0; i < p->n_sample; i++)
		if (!heavy || p->sample[i]->value[0] > heavy->value[0])
			heavy = p->sample[i];
	result(heavy && has_chain(p, heavy, chain, nchain), "pprof: the heaviest sample (%" PRId64 " of %" PRIu64
	       ") has %s's chain %s..%s", heavy ? heavy->value[0] : 0, total, prog, chain[0], chain[nchain - 1]);
	uint64_t leaf = 0, good = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *names[1];
		if (sample_names(p, p->sample[i], names, 1) == 1 && !strcmp(names[0], chain[0])) {
			leaf += (uint64_t)p->sample[i]->value[0];
			if (has_chain(p, p->sample[i], chain, nchain))
				good += (uint64_t)p->sample[i]->value[0];
		}
	}
	result(leaf >= 100 && good * 100 >= leaf * 99, "pprof: %s's chain in >= 99%% of the samples in %s (%" PRIu64
	       " of %" PRIu64 ")", prog, chain[0], good, leaf);

	/* The leaf of the heaviest sample: in PROGRAM's mapping, with its
	 * build-id, inside the mapped range, symbolized. */
	const Location *l = heavy && heavy->n_location_id ? location(p, heavy->location_id[0]) : NULL;
	const Mapping *m = l ? mapping(p, l->mapping_id) : NULL;
	const char *mname = m ? STR(m->filename) : "";
	size_t const pl = strlen(prog), ml = strlen(mname);
	int in_prog = m && ml >= pl && !strcmp(mname + ml - pl, prog) && strlen(STR(m->build_id)) >= 2 &&
		      strspn(STR(m->build_id), "0123456789abcdef") == strlen(STR(m->build_id)) &&
		      l->address >= m->memory_start && l->address < m->memory_limit && m->has_functions &&
		      m->has_filenames && m->has_line_numbers;
	result(in_prog, "pprof: the hot leaf is in %s's mapping (build-id %s), in range, with functions and lines",
	       prog, m ? STR(m->build_id) : "?");

	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	return failed;
}
