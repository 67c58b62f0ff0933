/* The record stream of the perf.data reader (perf-data-internal.h): the
 * data section of a file, the compressed records of perf record -z, a
 * pipe-mode stream, the data.N files of a perf record --threads directory
 * (merged in steps of time), and the live stream record/ feeds ring after
 * ring (su_perf_stream).
 *
 * Events are delivered in perf's order (tools/perf/util/ordered-events.c):
 * events without a timestamp at once; the others queued and, at each
 * FINISHED_ROUND, those up to the highest timestamp seen before the
 * previous round flushed in (time, file order); the rest at the end. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "common/io.h"
#include "trace/perf-data-internal.h"

/* ---- ordering ------------------------------------------------------------------ */

static int qev_cmp(const void *a, const void *b)
{
	const struct qev *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static inline int qev_before(const struct qev *x, const struct qev *y)
{
	return x->ts < y->ts || (x->ts == y->ts && x->seq < y->seq);
}

/* Sort the queue by (time, file order).  It is a few runs in order
 * already (what the round before left, then each CPU's ring as this
 * round read it): a pass merges them two by two into q_merge, and the
 * two arrays swap, until one run is left.  qsort, a call per comparison
 * of its n log n, was 6% of the CPU reading a 1 GB perf.data. */
static void sort_queue(struct pr *r)
{
	size_t const n = r->nq;
	if (r->cap_merge < n && su_grow((void **)&r->q_merge, &r->cap_merge, n, sizeof(*r->q_merge))) {
		qsort(r->q, n, sizeof(*r->q), qev_cmp);
		return;
	}
	size_t runs;
	do {
		const struct qev *const src = r->q;
		struct qev *const dst = r->q_merge;
		runs = 0;
		for (size_t a = 0; a < n; runs++) {
			size_t m = a + 1, e;
			while (m < n && !qev_before(&src[m], &src[m - 1]))
				m++;
			for (e = m < n ? m + 1 : m; e < n && !qev_before(&src[e], &src[e - 1]); e++)
				;
			size_t i = a, j = m, k = a;
			while (i < m && j < e)
				dst[k++] = qev_before(&src[j], &src[i]) ? src[j++] : src[i++];
			memcpy(dst + k, src + i, (m - i) * sizeof(*dst));
			memcpy(dst + k + (m - i), src + j, (e - j) * sizeof(*dst));
			a = e;
		}
		struct qev *const t = r->q;
		size_t const cap = r->capq;
		r->q = r->q_merge;
		r->capq = r->cap_merge;
		r->q_merge = t;
		r->cap_merge = cap;
	} while (runs > 1);
}

/* How far ahead of the event delivered the next ones are fetched into the
 * cache.  A round queues megabytes of records (a sample with its stack is
 * ~8 KB), so each is cold again when delivered: without this a DRAM
 * latency per record read (header, registers, the stack's bottom, the
 * stack size at its end) was a third of a 1 GB perf.data's run. */
#define PREFETCH_FAR 6
#define PREFETCH_NEAR 3
#define PREFETCH_HEAD 512 /* header, sample fields, registers, the stack's first words */
#define PREFETCH_SCAN 4   /* records ahead of the one read in the file */

/* Deliver the queued events with ts <= LIMIT, in (ts, file order). */
static void flush_until(struct pr *r, uint64_t limit)
{
	if (!r->nq)
		return;
	/* One CPU's ring is already in time order: sorted only when not. */
	size_t k = 1;
	while (k < r->nq && qev_cmp(&r->q[k - 1], &r->q[k]) <= 0)
		k++;
	if (k < r->nq)
		sort_queue(r);
	size_t i = 0;
	for (; i < r->nq && r->q[i].ts <= limit && !r->cb_rc; i++) {
		if (i + PREFETCH_FAR < r->nq)
			for (unsigned b = 0; b < PREFETCH_HEAD; b += 64)
				__builtin_prefetch(r->q[i + PREFETCH_FAR].rec + b);
		if (i + PREFETCH_NEAR < r->nq) {
			/* Its header is in the cache by now: its end too. */
			const uint8_t *const rec = r->q[i + PREFETCH_NEAR].rec;
			uint16_t const size = su_ld16(rec + 6);
			if (size > PREFETCH_HEAD)
				__builtin_prefetch(rec + size - 8);
		}
		r->now = r->q[i].ts;
		perf_deliver(r, r->q[i].rec, su_ld16(r->q[i].rec + 6));
	}
	memmove(r->q, r->q + i, (r->nq - i) * sizeof(*r->q));
	r->nq -= i;
}

/* Queue or deliver one record (from the file or a decompressed chunk). */
static int handle_record(struct pr *r, const uint8_t *rec, uint16_t size)
{
	uint64_t const ts = perf_record_time(r, rec, size);
	if (!ts || ts == UINT64_MAX) {
		perf_deliver(r, rec, size);
		return 0;
	}
	if (r->nq == r->capq && su_grow((void **)&r->q, &r->capq, r->nq + 1, sizeof(*r->q))) {
		r->cb_rc = -ENOMEM;
		return -ENOMEM;
	}
	r->q[r->nq++] = (struct qev){ ts, r->seq++, rec };
	if (ts > r->max_ts) {
		r->max_ts = ts;
	} else if (r->dir_mode) {
		/* A directory's file out of time order (perf_run_dir). */
		if (r->max_ts - ts > r->dir_slack)
			r->dir_slack = r->max_ts - ts;
		if (ts <= r->dir_flushed)
			r->dir_late++;
	}
	return 0;
}

/* Chunk C, its events delivered: an inflated one is kept to inflate
 * into again. */
static void chunk_free(struct pr *r, struct chunk *c)
{
	if (!c->cap) { /* not inflated (a pipe's read, a live ring's copy) */
		free(c);
		return;
	}
	c->next = r->spare;
	r->spare = c;
}

/* Free the decompressed chunks no queued event points into any more. */
static void chunks_release(struct pr *r)
{
	uint64_t min_seq = UINT64_MAX;
	for (size_t i = 0; i < r->nq; i++)
		if (r->q[i].seq < min_seq)
			min_seq = r->q[i].seq;
	while (r->chunks && r->chunks->last_seq < min_seq) {
		struct chunk *c = r->chunks;
		r->chunks = c->next;
		if (!r->chunks)
			r->chunks_tail = NULL;
		r->chunk_bytes -= c->len;
		chunk_free(r, c);
	}
}

/* A FINISHED_ROUND (or a live stream's pass over its rings): the events
 * up to the highest time seen before the previous round go (perf's
 * rule), and the chunks nothing queued points into any more. */
static void round_end(struct pr *r)
{
	flush_until(r, r->next_flush);
	r->next_flush = r->max_ts;
	chunks_release(r);
}

/* Chunk C, whose events were queued from sequence SEQ0 on, joins the list
 * while a queued event points into it; freed at once if none does. */
static void chunk_keep(struct pr *r, struct chunk *c, uint64_t seq0)
{
	if (r->seq == seq0) {
		chunk_free(r, c);
		return;
	}
	c->last_seq = r->seq - 1;
	r->chunk_bytes += c->len;
	if (r->chunks_tail)
		r->chunks_tail->next = c;
	else
		r->chunks = c;
	r->chunks_tail = c;
}

/* Events wait for a FINISHED_ROUND to be sorted, and the chunks they lie
 * in with them (inflated -z records, a pipe's reads): a stream without
 * rounds would hold them all.  Past COMPRESSED_HELD_MAX, what is queued
 * goes, once said (WHAT: the chunks' kind).  A directory's events wait
 * for a step of the merge (perf_run_dir), longer where its files are out
 * of order: DIR_HELD_MAX for its -z records. */
#define DIR_HELD_MAX (1024u << 20)
static void chunks_bound(struct pr *r, const char *what)
{
	unsigned const max = r->dir_mode ? DIR_HELD_MAX : COMPRESSED_HELD_MAX;
	if (r->chunk_bytes <= max || r->cb_rc)
		return;
	if (!r->warned_chunks++)
		su_reader_warn(r->warn, "%s: more than %u MiB of %s without a FINISHED_ROUND: the events so far are "
			       "delivered, later ones may be out of time order", r->name, max >> 20, what);
	flush_until(r, UINT64_MAX);
	chunks_release(r);
}

/* Queue the whole records of chunk C (decompressed, or copied from a live
 * ring), C->len bytes; @return the bytes consumed (a record cut at the
 * end is left).  A record shorter than its header stops it (*DAMAGED). */
static size_t queue_chunk(struct pr *r, struct chunk *c, const char *what, int *damaged)
{
	c->next = NULL;
	c->last_seq = 0;
	size_t pos = 0;
	while (c->len - pos >= 8 && !r->cb_rc) {
		uint16_t const rsize = su_ld16(c->data + pos + 6);
		if (rsize < 8) {
			/* Events queued before the damage still point into C: it
			 * is kept by the caller, not freed here (a fuzzing finding). */
			su_reader_warn(r->warn, "%s: damaged record inside %s: the rest is ignored", r->name, what);
			r->malformed = 1;
			*damaged = 1;
			break;
		}
		if (rsize > c->len - pos)
			break;
		if (handle_record(r, c->data + pos, rsize))
			break;
		pos += rsize;
	}
	return pos;
}

/* ---- perf record -z ---------------------------------------------------------- */

/* perf writes one zstd stream across its COMPRESSED records, and an event
 * may go on in the next record (perf's decomp_last_rem): each record
 * inflates into a chunk of whole events, the cut one at its end starting
 * the next.  Chunks whose events were delivered are inflated into again
 * (chunk_free): fresh memory costs a page fault a page, a fifth of
 * the time of folded on a -z file.  @return the chunk; NULL when out of
 * memory (R->cb_rc) or at a defect (warned of, R->malformed). */
static struct chunk *inflate_record(struct pr *r, const uint8_t *rec, uint16_t size)
{
	struct perf_zstream *const z = &r->z;
	if ((!z->dctx && !(z->dctx = ZSTD_createDCtx())) || (!z->rem && !(z->rem = malloc(65536)))) {
		r->cb_rc = -ENOMEM;
		return NULL;
	}
	size_t cap = z->rem_len + 8 * (size_t)size + 65536;
	struct chunk *c = r->spare;
	if (c) {
		r->spare = c->next;
		if (c->cap < cap) {
			struct chunk *const n = realloc(c, sizeof(*c) + cap);
			if (!n) {
				free(c);
				r->cb_rc = -ENOMEM;
				return NULL;
			}
			c = n;
		} else {
			cap = c->cap;
		}
	} else if (!(c = malloc(sizeof(*c) + cap))) {
		r->cb_rc = -ENOMEM;
		return NULL;
	}
	memcpy(c->data, z->rem, z->rem_len);
	size_t len = z->rem_len;
	ZSTD_inBuffer in = { rec + 8, (size_t)size - 8, 0 };
	/* Until the input is consumed and the output was not filled: zstd
	 * may hold decoded bytes back when the output is full, even once it
	 * has taken all the input (the last samples of a file were lost so). */
	for (int full = 1; in.pos < in.size || full;) {
		if (len == cap) {
			if (cap * 2 > COMPRESSED_RECORD_MAX) {
				free(c);
				su_reader_warn(r->warn, "%s: a compressed record inflates past %u MiB: the rest is ignored", r->name,
					       COMPRESSED_RECORD_MAX >> 20);
				r->malformed = 1;
				return NULL;
			}
			struct chunk *n = realloc(c, sizeof(*c) + cap * 2);
			if (!n) {
				free(c);
				r->cb_rc = -ENOMEM;
				return NULL;
			}
			c = n;
			cap *= 2;
		}
		ZSTD_outBuffer o = { c->data, cap, len };
		size_t const zr = ZSTD_decompressStream(z->dctx, &o, &in);
		if (ZSTD_isError(zr)) {
			free(c);
			su_reader_warn(r->warn, "%s: compressed record does not decompress (%s): the rest is ignored",
				       r->name, ZSTD_getErrorName(zr));
			r->malformed = 1;
			return NULL;
		}
		len = o.pos;
		full = len == cap;
	}
	/* Whole events in C; the cut one at the end starts the next chunk.  At
	 * an event shorter than its header the rest stays in C, for the
	 * reader to find the damage where it is (nothing is carried). */
	size_t p = 0;
	int damaged = 0;
	while (len - p >= 8) {
		uint16_t const s = su_ld16(c->data + p + 6);
		if (s < 8) {
			damaged = 1;
			break;
		}
		if (s > len - p)
			break;
		p += s;
	}
	c->next = NULL;
	c->last_seq = 0;
	c->cap = cap;
	c->len = damaged ? len : p;
	z->rem_len = damaged ? 0 : len - p;
	memcpy(z->rem, c->data + p, z->rem_len);
	return c;
}

void perf_zstream_free(struct perf_zstream *z)
{
	ZSTD_freeDCtx(z->dctx);
	free(z->rem);
	*z = (struct perf_zstream){ 0 };
}

/* PERF_RECORD_COMPRESSED: inflated, its events queued. */
static int on_compressed(struct pr *r, const uint8_t *rec, uint16_t size)
{
	struct chunk *const c = inflate_record(r, rec, size);
	if (!c)
		return r->cb_rc ? r->cb_rc : -EINVAL;
	uint64_t const seq0 = r->seq;
	int damaged = 0;
	queue_chunk(r, c, "a compressed one", &damaged);
	chunk_keep(r, c, seq0);
	chunks_bound(r, "compressed records");
	return damaged ? -EINVAL : 0;
}

/* With a consumer holding words (su_reader_opts.holds_words), samples
 * delivered may still be read this far behind the reader: the -j
 * pipeline keeps pointers to their stack words in the mapping until a
 * worker unwinds them. */
#define RELEASE_BEHIND (64u << 20)

/* Give back the pages of the data section below FROM that no queued event
 * points into (less RELEASE_BEHIND when the consumer holds words): the
 * mapping is read once, front to back, so the resident part stays about
 * one round long instead of growing to the file's size.  (A page given
 * back and read again is only mapped again: the mapping is the file's,
 * never written.) */
static void release_consumed(struct pr *r, uint64_t from, uint64_t *released)
{
	const uint8_t *const base = r->map + r->data_off;
	uint64_t low = from;
	for (size_t i = 0; i < r->nq; i++)
		if (r->q[i].rec >= base && r->q[i].rec < base + from && (uint64_t)(r->q[i].rec - base) < low)
			low = (uint64_t)(r->q[i].rec - base);
	int const holding = r->opts && r->opts->holds_words && (!r->opts->holding || *r->opts->holding);
	if (!holding && r->ahead && perf_ahead_release(r->ahead, r->data_off + low) == 0) {
		/* The thread that maps ahead gives them back, on its core. */
		*released = low;
		return;
	}
	/* A directory's files share it: the samples in the workers' hands
	 * come from all of them (a page given back too soon is only mapped
	 * again when read). */
	uint64_t behind = holding ? RELEASE_BEHIND : 0;
	if (holding && r->n_stay > 1)
		behind = RELEASE_BEHIND / r->n_stay > (4u << 20) ? RELEASE_BEHIND / r->n_stay : (4u << 20);
	if (low < behind)
		return;
	low -= behind;
	uint64_t const start = (r->data_off + *released + 4095) & ~4095ull;
	uint64_t const end = (r->data_off + low) & ~4095ull;
	if (end >= start + (8u << 20)) {
		madvise((void *)(uintptr_t)(r->map + start), end - start, MADV_DONTNEED);
		*released = end - r->data_off;
	}
}

/* Read R's data section from POS on: to its end, or (a directory's file,
 * perf_run_dir) until a record later than HORIZON has been queued.
 * @return where it stopped; *MORE 1 when records are left after it (not
 * at the end, no damage, no stop). */
static uint64_t run_records(struct pr *r, uint64_t pos, uint64_t horizon, uint64_t *released, int *more)
{
	const uint8_t *const base = r->map + r->data_off;
	*more = 0;
	/* The pages are mapped by faults (a fault maps up to 16 cached pages
	 * around it): as records are read, or up to 8 MB ahead by the thread
	 * of perf-ahead.c (su_reader_opts.map_ahead).  Not populated with
	 * MADV_POPULATE_READ: on kernel 6.18 (page by page, through
	 * get_user_pages) it cost 6-12% more CPU than the faults on 15-270 MB
	 * files. */
	uint64_t ahead_next = 0;
	while (pos < r->data_size && !r->cb_rc) {
		if (r->ahead && pos >= ahead_next) { /* tell it where we are, each megabyte */
			perf_ahead_at(r->ahead, r->data_off + pos);
			ahead_next = pos + (1u << 20);
		}
		if (r->data_size - pos < 8) {
			r->malformed = 1;
			su_reader_warn(r->warn, "%s: data section ends inside a record header at offset %" PRIu64
				       ": the rest is ignored", r->name, r->data_off + pos);
			return pos;
		}
		const uint8_t *rec = base + pos;
		uint32_t const type = su_ld32(rec);
		uint16_t const size = su_ld16(rec + 6);
		r->st->bytes_read = r->read_base + r->data_off + pos; /* how far: the progress line, stackunwind -j */
		if (size < 8 || size > r->data_size - pos) {
			r->malformed = 1;
			su_reader_warn(r->warn, "%s: damaged record (type %u, size %u) at offset %" PRIu64
				       ": the rest of the data section is ignored",
				       r->name, type, size, r->data_off + pos);
			return pos;
		}
		/* Records of one size follow one another (samples with their
		 * stack): the header a few records on is fetched on that guess;
		 * a wrong guess costs one cache line. */
		__builtin_prefetch(rec + (size_t)size * PREFETCH_SCAN);
		pos += size;
		if (type == R_AUXTRACE && size >= 16) {
			uint64_t const aux = su_ld64(rec + 8);
			if (aux > r->data_size - pos) {
				r->malformed = 1;
				return pos;
			}
			pos += aux;
			continue;
		}
		if (type == R_COMPRESSED) {
			if (on_compressed(r, rec, size))
				return pos;
		} else if (type == R_FINISHED_ROUND) {
			if (r->dir_mode) /* a file's round says nothing of the others' */
				continue;
			round_end(r);
			release_consumed(r, pos, released);
			continue;
		} else if (handle_record(r, rec, size)) {
			return pos;
		}
		if (r->max_ts > horizon)
			break;
	}
	*more = pos < r->data_size && !r->cb_rc;
	return pos;
}

void perf_run_data(struct pr *r)
{
	uint64_t released = 0;
	int more;
	run_records(r, 0, UINT64_MAX, &released, &more);
	if (!r->cb_rc && !r->dir_mode)
		flush_until(r, UINT64_MAX);
}

/* ---- perf record --threads: DIR/data.N merged ----------------------------------- */

/* Each DIR/data.N holds what one thread of perf record wrote: by default
 * one CPU's rings, in time order, as perf's own reader assumes (session.c,
 * __perf_session__process_dir_events, which sorts them all at the end).
 * Here they are read in steps of trace time: every file up to its first
 * record past the step's horizon, then what is queued up to the horizon
 * delivered.  That is the order of one sort at the end, holding a step's
 * records (mapped pages, inflated -z chunks) instead of the recording's.
 * Where a file is out of order (several CPUs to a writer thread), the most
 * a record came before one ahead of it in its file is kept as a margin
 * behind the horizon; a record earlier than what went already is counted
 * and told (R->dir_late). */
struct dir_cursor {
	const struct perf_dir_file *f;
	uint64_t pos, released, max_ts;
	struct perf_zstream z;        /* perf record -z: each file its own zstd stream */
	int more;
};

#define DIR_FIRST_STEP 10000000ull  /* ns of trace time */
/* Kept behind the horizon even where no file was seen out of order: a
 * record a little earlier than the one before it in a CPU's ring (an
 * interrupt's sample written between another event's time and its
 * place) must not come after the horizon went past it. */
#define DIR_MIN_MARGIN 1000000ull   /* ns */
#define DIR_STEP_BYTES (16u << 20)   /* what a step aims to read: steps double or halve to it */

static void dir_in(struct pr *r, struct dir_cursor *c)
{
	r->map = c->f->map;
	r->file_size = r->data_size = c->f->size;
	r->data_off = 0;
	r->name = c->f->path;
	r->max_ts = c->max_ts;
	r->z = c->z;
}

static void dir_out(struct pr *r, struct dir_cursor *c)
{
	c->max_ts = r->max_ts;
	c->z = r->z;
}

void perf_run_dir(struct pr *r, const struct perf_dir_file *f, size_t n)
{
	struct dir_cursor *const c = calloc(n ? n : 1, sizeof(*c));
	if (!c) {
		r->cb_rc = -ENOMEM;
		return;
	}
	/* DIR/data's own state, back at the end. */
	struct pr const top = *r;
	r->ahead = NULL; /* it maps DIR/data only */
	size_t live = 0;
	r->stay = calloc(n + 1, sizeof(*r->stay));
	r->n_stay = 0;
	for (size_t i = 0; i < n; i++) {
		c[i].f = &f[i];
		c[i].more = f[i].map && f[i].size > 0;
		live += (size_t)c[i].more;
		if (c[i].more && r->stay) {
			size_t k = r->n_stay++;
			for (; k > 0 && r->stay[k - 1].lo > f[i].map; k--)
				r->stay[k] = r->stay[k - 1];
			r->stay[k] = (struct stay_range){ f[i].map, f[i].map + f[i].size };
		}
	}
	uint64_t horizon = 0, step = DIR_FIRST_STEP, done = 0;
	while (live && !r->cb_rc) {
		uint64_t frontier = UINT64_MAX, read = 0;
		for (size_t i = 0; i < n && !r->cb_rc; i++) {
			if (!c[i].more)
				continue;
			dir_in(r, &c[i]);
			r->read_base = top.file_size + done - c[i].pos; /* progress: all the files' bytes read */
			uint64_t const from = c[i].pos;
			size_t const held = r->chunk_bytes;
			c[i].pos = run_records(r, from, horizon, &c[i].released, &c[i].more);
			dir_out(r, &c[i]);
			done += c[i].pos - from;
			read += c[i].pos - from + (r->chunk_bytes > held ? r->chunk_bytes - held : 0);
			if (!c[i].more)
				live--;
			else if (c[i].max_ts < frontier)
				frontier = c[i].max_ts;
		}
		if (!live || r->cb_rc)
			break;
		/* Every file has been read past HORIZON: what is queued up to it
		 * (less the margin) goes, then the pages and chunks behind. */
		uint64_t const margin = r->dir_slack > UINT64_MAX / 4	    ? UINT64_MAX / 2
					: 2 * r->dir_slack > DIR_MIN_MARGIN ? 2 * r->dir_slack
									    : DIR_MIN_MARGIN;
		uint64_t const limit = horizon > margin ? horizon - margin : 0;
		flush_until(r, limit);
		if (limit > r->dir_flushed)
			r->dir_flushed = limit;
		chunks_release(r);
		for (size_t i = 0; i < n && !r->cb_rc; i++)
			if (c[i].more) {
				dir_in(r, &c[i]);
				release_consumed(r, c[i].pos, &c[i].released);
			}
		if (read < DIR_STEP_BYTES / 4 && step < (1ull << 40))
			step *= 2;
		else if (read > DIR_STEP_BYTES * 4 && step > 1000)
			step /= 2;
		uint64_t const from = frontier > horizon ? frontier : horizon;
		horizon = from > UINT64_MAX - step ? UINT64_MAX - 1 : from + step;
	}
	for (size_t i = 0; i < n; i++) {
		perf_zstream_free(&c[i].z);
	}
	free(c);
	r->map = top.map;
	r->file_size = top.file_size;
	r->data_off = top.data_off;
	r->data_size = top.data_size;
	r->name = top.name;
	r->ahead = top.ahead;
	r->max_ts = top.max_ts;
	r->z = top.z;
	r->read_base = top.file_size + done;
	if (!r->cb_rc)
		flush_until(r, UINT64_MAX);
	free(r->stay);
	r->stay = NULL;
	r->n_stay = 0;
	if (r->dir_late)
		su_reader_warn(r->warn, "%s: %" PRIu64 " events came after later ones had been delivered: its data.N "
			       "files are not each in time order (perf record --threads with several CPUs to a "
			       "thread?)", r->name, r->dir_late);
}

/* ---- pipe mode (perf record -o -) ------------------------------------------------ */

/* A pipe is read this much at a time into a chunk whose records are
 * queued where they lie; the chunk is freed once they are all delivered
 * (chunk_keep), and a record cut at its end begins the next one. */
#define PIPE_CHUNK (4u << 20)

/* Pipe mode's records in BUF[*POS, LEN), OFF the stream offset of BUF[0]:
 * the header's parts taken in, the others queued where they lie.  Stops
 * at a record LEN cuts (left at *POS for the next read) or, with *STOP
 * set, at damage; *SKIP: payload bytes still to pass over after LEN
 * (tracing data, AUX).  RELEASED: a mapped file's pages given back at
 * each round (NULL: a chunk, freed once delivered).  @return 0, or -errno
 * with a message (no attributes). */
static int pipe_records(struct pr *r, const uint8_t *buf, size_t len, size_t *pos_io, uint64_t off, uint64_t *skip,
			int *stop, uint64_t *released)
{
	size_t pos = *pos_io;
	int rc = 0;
	uint64_t ahead_next = 0;
	while (len - pos >= 8 && !r->cb_rc) {
		if (r->ahead && pos >= ahead_next) { /* a mapped file: where we are, each megabyte */
			perf_ahead_at(r->ahead, off + pos);
			ahead_next = pos + (1u << 20);
		}
		const uint8_t *const rec = buf + pos;
		uint32_t const type = su_ld32(rec);
		uint16_t const size = su_ld16(rec + 6);
		r->st->bytes_read = off + pos;
		if (size < 8) {
			su_reader_warn(r->warn, "%s: damaged record (type %u, size %u) at offset %" PRIu64
				       ": the rest is ignored", r->name, type, size, off + pos);
			r->malformed = 1;
			*stop = 1;
			break;
		}
		if (size > len - pos)
			break;
		pos += size;
		if (type == R_HEADER_TRACING_DATA || type == R_AUXTRACE) {
			/* Their payload follows the record (tracing data
			 * padded to 8 bytes), outside its size. */
			uint64_t const pay = size < 16 ? 0 : type == R_AUXTRACE ? su_ld64(rec + 8)
									: (su_ld32(rec + 8) + 7ull) & ~7ull;
			size_t const here = pay < len - pos ? (size_t)pay : len - pos;
			pos += here;
			*skip = pay - here;
			continue;
		}
		if (!r->attrs_done && type != R_HEADER_ATTR && (rc = perf_pipe_attrs_done(r)) != 0) {
			*stop = 1;
			break;
		}
		int const h = perf_pipe_header(r, rec, size);
		if (h < 0) {
			rc = h;
			*stop = 1;
			break;
		}
		if (h)
			continue;
		if (type == R_COMPRESSED) {
			if (on_compressed(r, rec, size))
				*stop = 1;
			continue;
		}
		if (type == R_FINISHED_ROUND) {
			round_end(r);
			if (released)
				release_consumed(r, pos, released);
			continue;
		}
		if (handle_record(r, rec, size))
			*stop = 1;
	}
	*pos_io = pos;
	return rc;
}

/* The end of a pipe-mode stream (CUT: inside a record, at offset AT):
 * said, the attributes checked if no record came after them, every event
 * delivered.  @return RC or the first error. */
static int pipe_end(struct pr *r, int rc, int cut, uint64_t at)
{
	if (cut) {
		su_reader_warn(r->warn, "%s: the stream ends inside a record at offset %" PRIu64 ": it is ignored", r->name,
			       at);
		r->malformed = 1;
	}
	if (!rc && !r->attrs_done)
		rc = perf_pipe_attrs_done(r);
	if (!rc && !r->cb_rc)
		flush_until(r, UINT64_MAX);
	return rc == -ENOMEM ? (r->cb_rc = -ENOMEM) : rc;
}

int perf_run_pipe(struct pr *r, int fd)
{
	struct chunk *c = malloc(sizeof(*c) + PIPE_CHUNK);
	if (!c)
		return -ENOMEM;
	uint64_t off = PIPE_HEADER_SIZE; /* of C's first byte in the stream */
	uint64_t skip = 0;               /* payload bytes after a record (tracing data, AUX) */
	size_t len = 0, pos = 0;
	int eof = 0, stop = 0, rc = 0, cut = 0;
	while (!stop && !r->cb_rc) {
		ssize_t const n = su_read_full(fd, c->data + len, PIPE_CHUNK - len, -1);
		if (n < 0) {
			su_reader_warn(r->warn, "%s: read error at offset %" PRIu64 " (%s): the rest is ignored", r->name,
				       off + len, strerror((int)-n));
			r->malformed = 1;
			eof = 1;
		} else {
			eof = (size_t)n < PIPE_CHUNK - len;
			len += (size_t)n;
		}
		pos = skip < len ? (size_t)skip : len;
		skip -= pos;
		uint64_t const seq0 = r->seq;
		rc = pipe_records(r, c->data, len, &pos, off, &skip, &stop, NULL);
		cut = eof && !stop && (len > pos || skip);
		struct chunk *next = NULL;
		if (!eof && !stop && !r->cb_rc) {
			if (!(next = malloc(sizeof(*next) + PIPE_CHUNK))) {
				rc = -ENOMEM;
				stop = 1;
			} else {
				memcpy(next->data, c->data + pos, len - pos);
			}
		}
		c->next = NULL;
		c->len = pos;
		c->cap = 0;
		chunk_keep(r, c, seq0);
		if (!next)
			break;
		c = next;
		off += pos;
		len -= pos;
		chunks_bound(r, "records");
	}
	rc = pipe_end(r, rc, cut, off + pos);
	r->st->bytes_read = off + len;
	return rc;
}

int perf_run_pipe_map(struct pr *r)
{
	size_t pos = 0;
	uint64_t skip = 0, released = 0;
	int stop = 0;
	int rc = pipe_records(r, r->map + r->data_off, r->data_size, &pos, r->data_off, &skip, &stop, &released);
	rc = pipe_end(r, rc, !stop && (pos < r->data_size || skip), r->data_off + pos);
	r->st->bytes_read = r->data_off + r->data_size;
	return rc;
}

/* ---- a live stream of records --------------------------------------------------- */

struct su_perf_stream {
	struct pr r;
	struct chunk *pending;       /* reserved, not committed yet */
};

int su_perf_stream_new(const void *attr, size_t attr_len, const struct su_reader_callbacks *cb,
		       const struct su_perf_stream_callbacks *live, struct su_reader_stats *stats,
		       struct su_perf_stream **out)
{
	*out = NULL;
	if (attr_len < 96)
		return -EINVAL;
	struct su_perf_stream *s = calloc(1, sizeof(*s));
	if (!s || !(s->r.attrs = calloc(1, sizeof(*s->r.attrs)))) {
		free(s);
		return -ENOMEM;
	}
	memset(stats, 0, sizeof(*stats));
	s->r.cb = cb;
	s->r.st = stats;
	s->r.live_cb = live;
	s->r.warn = live ? &live->warn : NULL;
	s->r.name = "live recording";
	s->r.n_attrs = 1;
	perf_attr_parse(&s->r.attrs[0], attr, attr_len);
	perf_id_positions(&s->r);
	struct utsname u;
	if (uname(&u) == 0) /* recorded here: our own vDSO's build-id applies */
		snprintf(s->r.osrelease, sizeof(s->r.osrelease), "%s", u.release);
	*out = s;
	return 0;
}

int su_perf_stream_add_event(struct su_perf_stream *s, const void *attr, size_t attr_len, const char *name)
{
	struct pr *r = &s->r;
	if (attr_len < 96)
		return -EINVAL;
	if (r->n_attrs == 1 && !r->attrs[0].name) { /* the first attr, named */
		r->attrs[0].name = name;
		return 0;
	}
	struct attr *na = realloc(r->attrs, (r->n_attrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	r->attrs = na;
	memset(&na[r->n_attrs], 0, sizeof(*na));
	perf_attr_parse(&na[r->n_attrs], attr, attr_len);
	na[r->n_attrs].name = name;
	return (int)r->n_attrs++;
}

int su_perf_stream_add_id(struct su_perf_stream *s, uint64_t id, size_t index)
{
	struct pr *r = &s->r;
	if (index >= r->n_attrs)
		return -EINVAL;
	if (su_grow((void **)&r->ids, &r->cap_ids, r->n_ids + 1, sizeof(*r->ids)))
		return -ENOMEM;
	size_t i = r->n_ids;
	while (i > 0 && r->ids[i - 1].id > id) { /* kept sorted */
		r->ids[i] = r->ids[i - 1];
		i--;
	}
	r->ids[i] = (struct id_attr){ .id = id, .attr = index };
	r->n_ids++;
	return 0;
}

uint8_t *su_perf_stream_reserve(struct su_perf_stream *s, size_t len)
{
	free(s->pending);
	s->pending = malloc(sizeof(*s->pending) + (len ? len : 1));
	if (!s->pending)
		return NULL;
	s->pending->len = len;
	s->pending->cap = 0;
	return s->pending->data;
}

int su_perf_stream_commit(struct su_perf_stream *s, size_t len)
{
	struct pr *r = &s->r;
	struct chunk *c = s->pending;
	s->pending = NULL;
	if (!c || len > c->len) {
		free(c);
		return -EINVAL;
	}
	if (r->cb_rc) {
		free(c);
		return r->cb_rc;
	}
	c->len = len;
	uint64_t const seq0 = r->seq;
	int damaged = 0;
	size_t const pos = queue_chunk(r, c, "a ring buffer", &damaged);
	chunk_keep(r, c, seq0);
	if (r->cb_rc)
		return r->cb_rc;
	return damaged || pos != len ? -EINVAL : 0;
}

int su_perf_stream_feed(struct su_perf_stream *s, const uint8_t *buf, size_t len)
{
	uint8_t *d = su_perf_stream_reserve(s, len);
	if (!d)
		return -ENOMEM;
	memcpy(d, buf, len);
	return su_perf_stream_commit(s, len);
}

int su_perf_stream_round(struct su_perf_stream *s)
{
	struct pr *r = &s->r;
	if (r->cb_rc)
		return r->cb_rc;
	round_end(r);
	return r->cb_rc;
}

uint32_t su_perf_stream_stack_cap(const struct su_perf_stream *s)
{
	return perf_attr_stack_cap(&s->r.attrs[0], 1);
}

uint64_t su_perf_stream_time(const struct su_perf_stream *s)
{
	return s->r.now;
}

int su_perf_stream_end(struct su_perf_stream *s)
{
	struct pr *r = &s->r;
	if (!r->cb_rc)
		flush_until(r, UINT64_MAX);
	chunks_release(r);
	if (r->cb_rc)
		return r->cb_rc;
	r->st->bad_blobs = r->bad_samples + r->unknown_ids;
	return r->cb->end ? r->cb->end(r->cb->arg) : 0;
}

void su_perf_stream_release(struct su_perf_stream *s, const struct su_process *p)
{
	/* The model's su_process is the head of its struct proc. */
	perf_proc_release(&s->r, (struct proc *)(void *)p);
}

void su_perf_stream_free(struct su_perf_stream *s)
{
	if (!s)
		return;
	perf_pr_free(&s->r);
	free(s->pending);
	free(s);
}
