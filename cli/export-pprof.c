/* SPDX-License-Identifier: MIT */
/* pprof: profile.proto (google/pprof, from Debian's golang-github-google-
 * pprof-dev; the C code is generated at build time by protoc-c), packed by
 * protobuf-c and gzipped by zlib.  Mapping: docs/export.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli/export.h"
#include "cli/profile.pb-c.h"
#include "common/hash.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

/* Identical stacks of one thread become one pprof sample with summed
 * values (what pprof itself does when it merges). */
struct agg {
	uint32_t *slot;   /* aggregated sample + 1; open addressing */
	size_t cap;
};

static uint64_t stack_hash(const struct export_sample *s)
{
	/* The list's hash, made once per list by the model, and the thread. */
	return (s->locs_hash ^ s->thread) * 0x9E3779B97F4A7C15ull;
}

static int stack_eq(const struct export_model *m, const struct export_sample *a, const struct export_sample *b)
{
	return a->thread == b->thread && a->nlocs == b->nlocs && a->locs_hash == b->locs_hash &&
	       (a->loc_off == b->loc_off || /* one list, shared (a chain met again) */
		!memcmp(m->locs + a->loc_off, m->locs + b->loc_off, a->nlocs * sizeof(*m->locs)));
}

/* gzip BUF[LEN] to F. */
static int gzip_write(const uint8_t *buf, size_t len, FILE *f, char *err, size_t errlen)
{
	z_stream zs = { 0 };
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip */, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(err, errlen, "zlib: deflateInit2 failed");
		return -ENOMEM;
	}
	uint8_t out[65536];
	zs.next_in = (uint8_t *)buf;
	int rc = 0, zrc;
	size_t left = len;
	do {
		/* avail_in is 32 bits: feed at most 1 GiB at a time. */
		if (zs.avail_in == 0 && left) {
			uInt const chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
			zs.avail_in = chunk;
			left -= chunk;
		}
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		zrc = deflate(&zs, left || zs.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			snprintf(err, errlen, "zlib: deflate failed");
			rc = -EIO;
			break;
		}
		size_t const n = sizeof(out) - zs.avail_out;
		if (n && fwrite(out, 1, n, f) != n) {
			snprintf(err, errlen, "write error: %s", strerror(errno));
			rc = -EIO;
			break;
		}
	} while (zrc != Z_STREAM_END);
	deflateEnd(&zs);
	return rc;
}

int export_pprof_write(struct export_model *m, const struct export_info *info, FILE *f, char *err,
		       size_t errlen)
{
	int rc = -ENOMEM;
	uint32_t const s_samples = export_model_string(m, "samples"), s_count = export_model_string(m, "count"),
		       s_cpu = export_model_string(m, "cpu"), s_ns = export_model_string(m, "nanoseconds"),
		       s_off = m->n_off_cpu ? export_model_string(m, "off-cpu") : 0,
		       s_pid = export_model_string(m, "pid"), s_tid = export_model_string(m, "tid"),
		       s_comm = export_model_string(m, "comm"), s_thread = export_model_string(m, "thread"),
		       s_exporter = export_model_string(m, info->exporter),
		       s_name = export_model_string(m, info->name);
	Mapping *mappings = calloc(m->n_mappings + 1, sizeof(*mappings));
	Mapping **pmappings = calloc(m->n_mappings + 1, sizeof(*pmappings));
	/* A location no symbol covers gets a function of its own,
	 * "module+0xADDR" as folded and speedscope name it: pprof would
	 * merge them all into one "[module]" node. */
	Function *functions = calloc(m->n_functions + m->n_locations + 1, sizeof(*functions));
	Function **pfunctions = calloc(m->n_functions + m->n_locations + 1, sizeof(*pfunctions));
	Line *lines = calloc(m->n_lines + m->n_locations + 1, sizeof(*lines));
	Line **plines = calloc(m->n_lines + m->n_locations + 1, sizeof(*plines));
	uint32_t *map_pos = calloc(m->n_mappings + 1, sizeof(*map_pos));
	size_t n_functions = m->n_functions, n_lines = m->n_lines;
	Location *locations = calloc(m->n_locations + 1, sizeof(*locations));
	Location **plocations = calloc(m->n_locations + 1, sizeof(*plocations));
	Label *labels = calloc(4 * m->n_threads + 1, sizeof(*labels));
	Label **plabels = calloc(4 * m->n_threads + 1, sizeof(*plabels));
	Sample *samples = calloc(m->n_samples + 1, sizeof(*samples));
	Sample **psamples = calloc(m->n_samples + 1, sizeof(*psamples));
	uint64_t *loc_ids = NULL; /* the aggregated samples' location ids, once they are known */
	/* samples/count, cpu/nanoseconds, and off-cpu/nanoseconds when
	 * the trace has off-CPU stacks (their blocked time; 0 cpu). */
	size_t const nv = m->n_off_cpu ? 3 : 2;
	int64_t *values = calloc(nv * m->n_samples + 1, sizeof(*values));
	struct agg agg = { .cap = 2 };
	while (agg.cap < 2 * m->n_samples)
		agg.cap *= 2;
	agg.slot = calloc(agg.cap, sizeof(*agg.slot));
	uint8_t *packed = NULL;
	size_t n_samples = 0, n_ids = 0;
	if (s_samples == UINT32_MAX || s_count == UINT32_MAX || s_cpu == UINT32_MAX || s_ns == UINT32_MAX ||
	    s_off == UINT32_MAX ||
	    s_pid == UINT32_MAX || s_tid == UINT32_MAX || s_comm == UINT32_MAX || s_thread == UINT32_MAX ||
	    s_exporter == UINT32_MAX || s_name == UINT32_MAX || !mappings || !pmappings || !functions ||
	    !pfunctions || !lines || !plines || !locations || !plocations || !labels || !plabels || !samples ||
	    !psamples || !values || !agg.slot || !map_pos)
		goto oom;

	/* The main executable's mappings first: pprof takes the first
	 * mapping for the profile's binary (its "File:"). */
	size_t pos = 0;
	for (int main_pass = 1; main_pass >= 0; main_pass--)
		for (size_t i = 0; i < m->n_mappings; i++)
			if (!m->mappings[i].is_main == !main_pass)
				map_pos[i] = (uint32_t)pos++;

	for (size_t i = 0; i < m->n_mappings; i++) {
		const struct export_mapping *e = &m->mappings[i];
		Mapping *x = &mappings[map_pos[i]];
		perftools__profiles__mapping__init(x);
		x->id = map_pos[i] + 1;
		x->memory_start = e->start;
		x->memory_limit = e->limit;
		x->file_offset = e->offset;
		x->filename = e->filename;
		x->build_id = e->build_id;
		x->has_functions = e->has_functions;
		x->has_filenames = e->has_filenames;
		x->has_line_numbers = e->has_line_numbers;
		x->has_inline_frames = e->has_inline_frames;
		pmappings[map_pos[i]] = x;
	}
	for (size_t i = 0; i < m->n_functions; i++) {
		const struct export_function *e = &m->functions[i];
		Function *x = &functions[i];
		perftools__profiles__function__init(x);
		x->id = i + 1;
		x->name = e->name;
		/* symbolize/ gives demangled names only: the same string. */
		x->system_name = e->name;
		x->filename = e->filename;
		x->start_line = e->start_line;
		pfunctions[i] = x;
	}
	for (size_t i = 0; i < m->n_lines; i++) {
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = m->lines[i].function + 1;
		lines[i].line = m->lines[i].line;
		plines[i] = &lines[i];
	}
	for (size_t i = 0; i < m->n_locations; i++) {
		const struct export_location *e = &m->locations[i];
		Location *x = &locations[i];
		perftools__profiles__location__init(x);
		x->id = i + 1;
		x->mapping_id = e->mapping == EXPORT_NO_MAPPING ? 0 : map_pos[e->mapping] + 1;
		x->address = e->pseudo ? 0 : e->address;
		x->n_line = e->nlines;
		x->line = e->nlines ? plines + e->first_line : NULL;
		if (!e->nlines && !e->pseudo && e->mapping != EXPORT_NO_MAPPING) {
			char name[4200];
			export_unknown_name(m, e, name, sizeof(name));
			uint32_t const s_fn = export_model_string(m, name);
			if (s_fn == UINT32_MAX)
				goto oom;
			Function *fn = &functions[n_functions];
			perftools__profiles__function__init(fn);
			fn->id = n_functions + 1;
			fn->name = fn->system_name = s_fn;
			pfunctions[n_functions++] = fn;
			perftools__profiles__line__init(&lines[n_lines]);
			lines[n_lines].function_id = fn->id;
			plines[n_lines] = &lines[n_lines];
			x->n_line = 1;
			x->line = plines + n_lines++;
		}
		plocations[i] = x;
	}
	/* Per thread: pid, tid (numbers), comm and "comm pid/tid" (strings). */
	for (size_t t = 0; t < m->n_threads; t++) {
		const struct export_thread *th = &m->threads[t];
		char name[4200];
		snprintf(name, sizeof(name), "%s %" PRIu32 "/%" PRIu32, export_str(m, th->comm), th->pid, th->tid);
		uint32_t const s_tname = export_model_string(m, name);
		if (s_tname == UINT32_MAX)
			goto oom;
		Label *l = &labels[4 * t];
		for (int k = 0; k < 4; k++) {
			perftools__profiles__label__init(&l[k]);
			plabels[4 * t + (size_t)k] = &l[k];
		}
		l[0].key = s_pid;
		l[0].num = th->pid;
		l[1].key = s_tid;
		l[1].num = th->tid;
		l[2].key = s_comm;
		l[2].str = th->comm;
		l[3].key = s_thread;
		l[3].str = s_tname;
	}
	/* Samples, identical stacks of a thread summed, in order of first
	 * appearance. */
	uint32_t *first = calloc(m->n_samples + 1, sizeof(*first)); /* aggregated -> model sample */
	if (!first)
		goto oom;
	for (size_t i = 0; i < m->n_samples; i++) {
		const struct export_sample *s = &m->samples[i];
		const struct export_thread *th = &m->threads[s->thread];
		size_t h = (size_t)(stack_hash(s) >> 20) & (agg.cap - 1);
		while (agg.slot[h] && !stack_eq(m, &m->samples[first[agg.slot[h] - 1]], s))
			h = (h + 1) & (agg.cap - 1);
		if (!agg.slot[h]) {
			Sample *x = &samples[n_samples];
			perftools__profiles__sample__init(x);
			x->n_location_id = s->nlocs;
			n_ids += s->nlocs;
			x->n_value = nv;
			x->value = values + nv * n_samples;
			x->n_label = 4;
			x->label = plabels + 4 * s->thread;
			psamples[n_samples] = x;
			first[n_samples] = (uint32_t)i;
			agg.slot[h] = (uint32_t)++n_samples;
		}
		Sample *x = &samples[agg.slot[h] - 1];
		x->value[0] += 1;
		if (s->off_cpu_ns)
			x->value[2] += (int64_t)s->off_cpu_ns;
		else
			x->value[1] += (int64_t)th->period_ns;
	}
	/* Their location ids (samples may share one list in the model: two
	 * threads' samples of one chain are two pprof samples, each with its
	 * own copy). */
	if (!(loc_ids = calloc(n_ids + 1, sizeof(*loc_ids)))) {
		free(first);
		goto oom;
	}
	n_ids = 0;
	for (size_t a = 0; a < n_samples; a++) {
		const struct export_sample *s = &m->samples[first[a]];
		samples[a].location_id = loc_ids + n_ids;
		for (uint32_t k = 0; k < s->nlocs; k++)
			loc_ids[n_ids++] = m->locs[s->loc_off + k] + 1;
	}
	free(first);

	/* The profile's time: from the first sample to the last, wall clock
	 * (CLOCK_REALTIME through the recorded offset); the period: the
	 * busiest thread's. */
	uint64_t t0 = UINT64_MAX, t1 = 0, period = 0, most = 0;
	int64_t offset = 0;
	for (size_t t = 0; t < m->n_threads; t++) {
		const struct export_thread *th = &m->threads[t];
		if (th->first_ns < t0) {
			t0 = th->first_ns;
			offset = th->clock_offset_ns;
		}
		if (th->last_ns > t1)
			t1 = th->last_ns;
		if (th->samples > most) {
			most = th->samples;
			period = th->period_ns;
		}
	}
	ValueType vt_samples = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, vt_cpu = PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
		  vt_period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, vt_off = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	vt_samples.type = s_samples;
	vt_samples.unit = s_count;
	vt_cpu.type = s_cpu;
	vt_cpu.unit = s_ns;
	vt_period = vt_cpu;
	vt_off.type = s_off;
	vt_off.unit = s_ns;
	ValueType *sample_types[3] = { &vt_samples, &vt_cpu, &vt_off };
	int64_t comments[2] = { s_exporter, s_name };

	Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	p.n_sample_type = nv;
	p.sample_type = sample_types;
	p.n_sample = n_samples;
	p.sample = psamples;
	p.n_mapping = m->n_mappings;
	p.mapping = pmappings;
	p.n_location = m->n_locations;
	p.location = plocations;
	p.n_function = n_functions;
	p.function = pfunctions;
	p.n_string_table = m->n_strings;
	p.string_table = m->strings;
	p.time_nanos = m->n_samples ? (int64_t)t0 + offset : 0;
	p.duration_nanos = m->n_samples ? (int64_t)(t1 - t0) : 0;
	p.period_type = &vt_period;
	p.period = (int64_t)period;
	p.n_comment = 2;
	p.comment = comments;
	p.default_sample_type = s_cpu;

	size_t const size = perftools__profiles__profile__get_packed_size(&p);
	packed = malloc(size + 1);
	if (!packed)
		goto oom;
	if (perftools__profiles__profile__pack(&p, packed) != size) {
		snprintf(err, errlen, "protobuf-c: packed size differs");
		rc = -EIO;
		goto end;
	}
	rc = gzip_write(packed, size, f, err, errlen);
	goto end;
oom:
	snprintf(err, errlen, "out of memory");
end:
	free(packed);
	free(mappings);
	free(pmappings);
	free(functions);
	free(pfunctions);
	free(map_pos);
	free(lines);
	free(plines);
	free(locations);
	free(plocations);
	free(labels);
	free(plabels);
	free(samples);
	free(psamples);
	free(loc_ids);
	free(values);
	free(agg.slot);
	return rc;
}
