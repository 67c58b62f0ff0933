/* SPDX-License-Identifier: MIT */
/*
 * stackcap convert PERF.DATA -o DIR [--zstd] [--force]
 *
 * Re-encodes the samples of a perf.data file (perf record --call-graph
 * dwarf) into a stackcap trace: perf's stack bytes classified against the
 * recorded maps with policy F2 and encoded with our codec (top-elided
 * delta against the previous sample of the thread), exactly as the
 * capture library's writer would have, so a user sees on their own data
 * what the codec saves.  Read back by stackunwind like any trace.
 *
 * Streams: per process section one process stream (process_start and each
 * maps generation, written when the first sample needing it comes, with
 * its timestamp) and one sample stream per thread, in time order.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/convert.h"
#include "capture/ctf-writer.h"
#include "trace/perf-data.h"
#include "trace/trace-read.h"

#define PROG "stackcap convert"

struct csection {
	const struct su_process *p;
	struct ctf_stream *proc;
	const struct su_maps *last_maps;  /* last generation written */
	uint64_t last_ts;
	uint32_t samples_streams;
};

struct cthread {
	uint32_t pid, tid;
	struct ctf_stream *s;
	struct stackcap_image prev, cur;
	int have_prev;
};

struct conv {
	struct ctf_writer *w;
	struct csection *sec;
	size_t n_sec, cap_sec;
	struct cthread *th;
	size_t n_th, cap_th;
	uint8_t *blob;
	size_t blob_cap;
	struct stackcap_code_ranges *set; /* the filter of set_maps, for the encoder */
	const struct su_maps *set_maps;
	uint64_t samples, blob_bytes, last_ts;
	uint64_t no_user;            /* samples without user state: not converted */
	uint64_t chain_only;         /* samples with a call chain but no stack (perf -g): not converted */
	struct su_reader_stats *st;
	int err;
};

static struct csection *section_of(struct conv *c, const struct su_process *p)
{
	for (size_t i = c->n_sec; i-- > 0;)
		if (c->sec[i].p == p)
			return &c->sec[i];
	return NULL;
}

/* The process stream of P, started at TS on first use. */
static struct csection *section_open(struct conv *c, const struct su_process *p, uint64_t ts)
{
	struct csection *s = section_of(c, p);
	if (s)
		return s;
	if (su_grow((void **)&c->sec, &c->cap_sec, c->n_sec + 1, sizeof(*c->sec))) {
		c->err = -ENOMEM;
		return NULL;
	}
	s = &c->sec[c->n_sec++];
	s->p = p;
	char name[64];
	snprintf(name, sizeof(name), "proc-%u-%u", p->pid, p->seq);
	int rc = ctf_writer_open_stream(c->w, CTF_STREAM_PROCESS, name, p->pid, &s->proc);
	if (rc == 0) {
		struct ctf_process_info info = {
			.pid = p->pid, .ppid = p->ppid, .comm = p->comm, .exe = p->exe,
			.frequency_hz = p->frequency_hz, .stack_cap = p->stack_cap,
			.policy = STACKCAP_POLICY_F2, .codec_version = STACKCAP_CODEC_VERSION,
		};
		rc = ctf_stream_process_start(s->proc, ts, &info);
	}
	if (rc) {
		c->err = rc;
		c->n_sec--;
		return NULL;
	}
	s->last_ts = ts;
	return s;
}

static int write_maps(struct conv *c, struct csection *s, const struct su_maps *m, uint64_t ts)
{
	struct ctf_map_entry *e = calloc(m->count ? m->count : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->count; i++) {
		const struct su_map_entry *x = &m->entries[i];
		e[i] = (struct ctf_map_entry){
			.start = x->start, .end = x->end, .offset = x->offset, .bias = x->bias,
			.flags = (uint8_t)((x->flags & SU_MAP_ANON ? CTF_MAP_ANON : 0) |
					   (x->flags & SU_MAP_MAIN ? CTF_MAP_MAIN : 0) |
					   (x->flags & SU_MAP_VDSO ? CTF_MAP_VDSO : 0)),
			.build_id_len = x->build_id_len, .build_id = x->build_id_len ? x->build_id : NULL,
			.path = x->path,
		};
	}
	int const rc = ctf_stream_maps(s->proc, ts, m->generation, e, m->count);
	free(e);
	if (rc == 0) {
		s->last_maps = m;
		s->last_ts = ts;
	}
	return rc;
}

static struct cthread *thread_of(struct conv *c, struct csection *sec, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < c->n_th; i++)
		if (c->th[i].pid == pid && c->th[i].tid == tid)
			return &c->th[i];
	if (su_grow((void **)&c->th, &c->cap_th, c->n_th + 1, sizeof(*c->th)))
		return NULL;
	struct cthread *t = &c->th[c->n_th];
	char name[64];
	snprintf(name, sizeof(name), "samples-%u-%u", pid, sec->samples_streams);
	if (ctf_writer_open_stream(c->w, CTF_STREAM_SAMPLES, name, pid, &t->s))
		return NULL;
	sec->samples_streams++;
	t->pid = pid;
	t->tid = tid;
	c->n_th++;
	return t;
}

static int image_copy(struct stackcap_image *dst, const struct stackcap_image *src)
{
	if (src->nwords > dst->capacity || !dst->words) {
		uint64_t cap = src->nwords ? src->nwords : 1;
		uint64_t *w = realloc(dst->words, cap * 8);
		if (!w)
			return -ENOMEM;
		dst->words = w;
		dst->capacity = cap;
	}
	uint64_t *const words = dst->words;
	uint64_t const capacity = dst->capacity;
	*dst = *src;
	dst->words = words;
	dst->capacity = capacity;
	dst->kept = NULL;
	memcpy(dst->words, src->words, src->nwords * 8);
	return 0;
}

static int on_sample(void *arg, const struct su_sample *s)
{
	struct conv *c = arg;
	if (!s->process || !s->maps)
		return 0;
	if (!(s->image->regs_kept >> STACKCAP_REG_RIP & 1)) {
		/* A kernel thread or an exiting task, or a call chain perf
		 * took without the stack (-g): no user stack to keep (a
		 * stackcap trace has no such samples). */
		if (s->user_chain)
			c->chain_only++;
		else
			c->no_user++;
		return 0;
	}
	struct csection *sec = section_open(c, s->process, s->time_ns);
	if (!sec)
		return c->err ? c->err : -ENOMEM;
	int rc;
	if (sec->last_maps != s->maps && (rc = write_maps(c, sec, s->maps, s->time_ns)) != 0)
		return rc;
	struct cthread *t = thread_of(c, sec, s->pid, s->tid);
	if (!t)
		return -ENOMEM;
	/* F2, as the signal handler would have filtered: code pointers and
	 * pointers into the copied stack survive, every other word is 0. */
	if ((rc = image_copy(&t->cur, s->image)) != 0)
		return rc;
	if (c->set_maps != s->maps) {
		if (!c->set && !(c->set = malloc(sizeof(*c->set))))
			return -ENOMEM;
		stackcap_code_ranges_init(c->set, s->maps->range_list, s->maps->count); /* checked by the reader */
		c->set_maps = s->maps;
	}
	const struct stackcap_code_ranges *ranges = c->set;
	uint64_t const hi = t->cur.sp + 8 * t->cur.nwords;
	for (uint64_t i = 0; i < t->cur.nwords; i++)
		if (!stackcap_codec_classify(t->cur.words[i], ranges, t->cur.sp, hi, STACKCAP_POLICY_F2))
			t->cur.words[i] = 0;
	t->cur.policy = STACKCAP_POLICY_F2;
	uint64_t const k = t->have_prev ? stackcap_image_common_top(&t->cur, &t->prev) : 0;
	struct stackcap_codec_input in = {
		.words = t->cur.words, .nwords = t->cur.nwords, .sp = t->cur.sp, .regs = t->cur.regs,
		.ranges = ranges, .policy = STACKCAP_POLICY_F2, .encoding = STACKCAP_WORDS_RELATIVE,
		.elide_top = k, .ref_sp = t->prev.sp, .has_ref = t->have_prev,
	};
	size_t const need = STACKCAP_CODEC_BOUND(t->cur.nwords);
	if (need > c->blob_cap) {
		uint8_t *nb = realloc(c->blob, need);
		if (!nb)
			return -ENOMEM;
		c->blob = nb;
		c->blob_cap = need;
	}
	size_t const out = stackcap_codec_encode(c->blob, c->blob_cap, &in);
	if (stackcap_codec_is_error(out))
		return -EINVAL;
	if ((rc = ctf_stream_sample(t->s, s->time_ns, s->tid, s->maps->generation, c->blob, out)) != 0)
		return rc;
	c->samples++;
	c->blob_bytes += out;
	c->last_ts = s->time_ns;
	struct stackcap_image const tmp = t->prev;
	t->prev = t->cur;
	t->cur = tmp;
	t->have_prev = 1;
	return 0;
}

/* Ends and perf's lost-event count, once every sample is written. */
static int on_end(void *arg)
{
	struct conv *c = arg;
	for (size_t i = 0; i < c->n_sec; i++) {
		struct csection *s = &c->sec[i];
		uint64_t const ts = c->last_ts > s->last_ts ? c->last_ts : s->last_ts;
		if (i == 0 && c->st->drops) {
			struct ctf_drops d = { .tid = s->p->pid, .other = c->st->drops };
			int const rc = ctf_stream_drops(s->proc, ts, &d);
			if (rc)
				return rc;
		}
		if (s->p->ended) {
			int const rc = ctf_stream_process_end(s->proc, ts, 0, 0);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " PERF.DATA -o DIR [--zstd] [--force]\n"
		   "  re-encodes the samples of a perf.data (perf record --call-graph dwarf)\n"
		   "  with stackcap's codec into the trace directory DIR\n");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int stackcap_convert(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "zstd", no_argument, NULL, 'z' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	int zstd = 0, force = 0, ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'o': out = optarg; break;
		case 'z': zstd = 1; break;
		case 'f': force = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc || !out) {
		usage(stderr);
		return 2;
	}
	const char *in = argv[optind];
	su_reader_set_prog(PROG);
	FILE *probe = fopen(in, "r");
	if (!probe) { /* missing or unreadable: say so, not "not a perf.data" */
		fprintf(stderr, PROG ": %s: %s\n", in, strerror(errno));
		return 1;
	}
	fclose(probe);
	if (su_trace_probe(in) != SU_TRACE_PERF) {
		fprintf(stderr, PROG ": %s is not a perf.data file\n", in);
		return 1;
	}
	struct stat sb;
	if (stat(out, &sb) == 0) {
		if (!force) {
			fprintf(stderr, PROG ": %s exists (--force replaces it)\n", out);
			return 1;
		}
		if (nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS)) {
			fprintf(stderr, PROG ": cannot remove %s: %s\n", out, strerror(errno));
			return 1;
		}
	}
	struct su_reader_stats st;
	struct conv c = { .st = &st };
	struct ctf_writer_opts wo = { .sz = sizeof(wo), .zstd = zstd };
	int rc = ctf_writer_open(out, &wo, &c.w);
	if (rc) {
		fprintf(stderr, PROG ": cannot create %s: %s\n", out, strerror(-rc));
		return 1;
	}
	struct su_reader_callbacks cb = { .arg = &c, .sample = on_sample, .end = on_end };
	char err[1024];
	int rrc = su_perf_data_read(in, NULL, &cb, &st, err, sizeof(err));
	for (size_t i = 0; i < c.n_th; i++) {
		int const r = ctf_stream_close(c.th[i].s);
		if (r && !rc)
			rc = r;
		free(c.th[i].prev.words);
		free(c.th[i].cur.words);
	}
	for (size_t i = 0; i < c.n_sec; i++) {
		int const r = ctf_stream_close(c.sec[i].proc);
		if (r && !rc)
			rc = r;
	}
	uint64_t const written = ctf_writer_bytes_written(c.w);
	int const crc = ctf_writer_close(c.w);
	if (crc && !rc)
		rc = crc;
	free(c.th);
	free(c.sec);
	free(c.blob);
	free(c.set);
	if (rrc >= 0 && !c.samples && c.chain_only) {
		snprintf(err, sizeof(err), "%s: recorded with call chains (perf record -g), not stacks: nothing to "
			 "re-encode; record with `perf record --call-graph dwarf` (stackunwind reads this file as it is)", in);
		rrc = -EINVAL;
	}
	if (rrc < 0) {
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rrc));
		/* Nothing usable was written: leave no half trace behind. */
		nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		return 1;
	}
	if (rc) {
		fprintf(stderr, PROG ": writing %s: %s\n", out, strerror(-rc));
		return 1;
	}
	fprintf(stderr,
		PROG ": %" PRIu64 " samples: %s %" PRIu64 " bytes -> %s %" PRIu64 " bytes (%.1fx smaller); "
		"stacks %" PRIu64 " -> %" PRIu64 " bytes (%.1fx)\n",
		c.samples, in, st.bytes_on_disk, out, written,
		written ? (double)st.bytes_on_disk / (double)written : 0,
		st.raw_stack_bytes, c.blob_bytes, c.blob_bytes ? (double)st.raw_stack_bytes / (double)c.blob_bytes : 0);
	if (c.no_user)
		fprintf(stderr, PROG ": %" PRIu64 " samples without user state (kernel threads, exiting tasks) not converted\n",
			c.no_user);
	if (c.chain_only)
		fprintf(stderr, PROG ": %" PRIu64 " samples with a call chain but no stack (perf record -g) not converted\n",
			c.chain_only);
	return rrc ? 3 : 0;
}
