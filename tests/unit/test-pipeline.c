/* SPDX-License-Identifier: MIT */
/* The -j pipeline (cli/pipeline.c) on samples made here: threads whose
 * stacks change from sample to sample, encoded as a recorder would (each
 * blob over its thread's previous image, some alone) and decoded as the
 * reader does, some samples left out as the time slices leave them out
 * (decoded, not passed on).  With any number of workers, each sample
 * reaches the unwinder with the very words, registers and sp the reader
 * decoded: a worker rebuilding an image on the wrong one (another
 * thread's, or one before a gap) shows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check-main.h"
#include "cli/pipeline.h"
#include "common/hash.h"
#include "compress/stack-codec.h"

#define THREADS 3
#define SAMPLES 3000
#define MAX_WORDS 1500

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* An image's fingerprint: what the unwinder would read. */
static uint64_t image_hash(const struct stackcap_image *img)
{
	uint64_t h = su_fnv1a(&img->sp, sizeof(img->sp));
	h = su_fnv1a_from(h, &img->nwords, sizeof(img->nwords));
	h = su_fnv1a_from(h, img->regs, sizeof(img->regs));
	return su_fnv1a_from(h, img->words, img->nwords * sizeof(*img->words));
}

/* The samples as a reader hands them over, and what each one's image is. */
struct made {
	struct su_sample s;
	struct stackcap_image image;
	uint8_t *blob;
	uint64_t hash;
	int passed;              /* passed on (not in a gap) */
};
static struct made made[SAMPLES];
static const struct su_maps maps = { 0 };
static const struct su_process proc = { .pid = 100, .comm = (char *)"made" };

static void make_samples(void)
{
	struct thread {
		uint64_t words[MAX_WORDS];
		uint64_t decodes;
		int last;                /* index of its last sample, or -1 */
	} th[THREADS];
	uint64_t const top[THREADS] = { 0x7ffff0000000ull, 0x7ffe00000000ull, 0x7ffd00000000ull };
	for (int k = 0; k < THREADS; k++)
		th[k] = (struct thread){ .last = -1 };
	for (int i = 0; i < SAMPLES; i++) {
		int const k = (int)(next_rand() % THREADS);
		struct thread *t = &th[k];
		const struct stackcap_image *prev = t->last >= 0 ? &made[t->last].image : NULL;
		/* The top of the stack stays as it was; below a point, words
		 * change (deeper or shallower than before). */
		uint64_t const n = 50 + next_rand() % (MAX_WORDS - 50);
		uint64_t const keep = next_rand() % n;
		for (uint64_t w = 0; w < n; w++) {
			uint64_t const from_top = n - 1 - w;
			if (prev && from_top < keep && from_top < prev->nwords)
				t->words[w] = prev->words[prev->nwords - 1 - from_top];
			else
				t->words[w] = next_rand() | 1;
		}
		uint64_t regs[STACKCAP_NREGS];
		for (int r = 0; r < STACKCAP_NREGS; r++)
			regs[r] = next_rand() | 1;
		/* One blob in eight alone, as after a dropped sample. */
		int const ref = prev && next_rand() % 8;
		uint64_t elide = 0;
		if (ref)
			while (elide < n && elide < prev->nwords &&
			       t->words[n - 1 - elide] == prev->words[prev->nwords - 1 - elide])
				elide++;
		struct stackcap_codec_input const in = {
			.words = t->words, .nwords = n, .sp = top[k] - 8 * n, .regs = regs,
			.policy = STACKCAP_POLICY_ALL, .encoding = STACKCAP_WORDS_RAW,
			.elide_top = elide, .ref_sp = prev ? prev->sp : 0, .has_ref = ref,
		};
		struct made *m = &made[i];
		size_t const bound = STACKCAP_CODEC_BOUND(n);
		m->blob = malloc(bound);
		ck_assert_ptr_nonnull(m->blob);
		size_t const len = stackcap_codec_encode(m->blob, bound, &in);
		ck_assert(!stackcap_codec_is_error(len));
		/* Decoded as the reader does, over the thread's last image. */
		m->image.words = malloc(n * sizeof(uint64_t));
		ck_assert_ptr_nonnull(m->image.words);
		m->image.capacity = n;
		size_t const rc = stackcap_codec_decode_list(m->blob, len, NULL, 0, ref ? prev : NULL, &m->image);
		ck_assert_uint_eq(rc, len);
		ck_assert_uint_eq(m->image.nwords, n);
		ck_assert(memcmp(m->image.words, t->words, n * sizeof(uint64_t)) == 0);
		m->hash = image_hash(&m->image);
		t->decodes++;
		t->last = i;
		/* One in eleven decoded but not passed on (a gap between time
		 * slices): the next blob's reference is missing downstream. */
		m->passed = next_rand() % 11 != 0;
		m->s = (struct su_sample){
			.time_ns = 1000u + (uint64_t)i, .pid = proc.pid, .tid = 200u + (uint32_t)k, .process = &proc,
			.maps = &maps, .image = &m->image, .decode_no = t->decodes,
		};
	}
}

/* A worker's context: the fingerprint of the image it last unwound. */
struct ctx {
	uint64_t hash;
};

static size_t unwind_made(void *arg, const struct su_sample *s, const struct su_frame **frames,
			  enum su_unwind_end *end)
{
	struct ctx *c = arg;
	c->hash = s->image ? image_hash(s->image) : 0;
	*frames = NULL;
	*end = SU_END_OUTERMOST;
	return 0;
}

static void format_made(void *arg, const struct pipeline_sample *s, const struct su_frame *frames, struct text *out)
{
	const struct ctx *c = arg;
	(void)frames;
	text_printf(out, "%u %llu %016llx\n", s->tid, (unsigned long long)s->time_ns, (unsigned long long)c->hash);
}

static int emit_made(void *arg, const struct text *t)
{
	text_put(arg, t->buf, t->len);
	return 0;
}

/* The text every pipeline must emit: each sample passed on, its image's
 * fingerprint as the reader decoded it. */
static void expected(struct text *out)
{
	for (int i = 0; i < SAMPLES; i++)
		if (made[i].passed)
			text_printf(out, "%u %llu %016llx\n", made[i].s.tid, (unsigned long long)made[i].s.time_ns,
				    (unsigned long long)made[i].hash);
}

START_TEST(deltas_rebuilt)
{
	make_samples();
	struct text want = { 0 };
	expected(&want);
	ck_assert(!want.oom && want.len > 0);
	/* The workers from the start, or after some samples worked alone
	 * (a delta whose previous image was worked alone is held whole), or
	 * never (a trace shorter than that). */
	static const uint64_t afters[] = { 0, 1, 777, SAMPLES + 1 };
	for (unsigned k = 0; k < 4 * 5; k++) {
		unsigned const workers = k / 4;
		uint64_t const after = afters[k % 4];
		struct ctx ctxs[5] = { { 0 } };
		void *wctx[4] = { &ctxs[1], &ctxs[2], &ctxs[3], &ctxs[4] };
		struct text got = { 0 };
		struct pipeline *p = pipeline_new(workers, wctx, &ctxs[0], unwind_made, format_made, emit_made, &got);
		ck_assert_ptr_nonnull(p);
		uint64_t added = 0;
		for (int i = 0; i < SAMPLES; i++) {
			if (!made[i].passed)
				continue;
			if (added++ == after)
				ck_assert_int_eq(pipeline_start(p), 0);
			ck_assert_int_eq(pipeline_add(p, &made[i].s), 0);
		}
		ck_assert_int_eq(pipeline_finish(p), 0);
		pipeline_free(p);
		ck_assert_msg(got.len == want.len && memcmp(got.buf, want.buf, want.len) == 0,
			      "%u workers after %llu samples: the images the unwinder saw differ from the reader's",
			      workers, (unsigned long long)after);
		free(got.buf);
	}
	free(want.buf);
	for (int i = 0; i < SAMPLES; i++) {
		free(made[i].blob);
		free(made[i].image.words);
	}
}
END_TEST

/* A read that stops early: samples whose words are the reader's (a
 * perf.data mapping: su_sample.words_stay), added faster than the workers
 * unwind them, then pipeline_abort() and the words freed at once, as the
 * reader unmaps the file.  No worker reads them after (ASan: a use after
 * free), nothing is emitted, and not every sample was unwound. */
static uint64_t slow_seen;
static size_t unwind_slow(void *arg, const struct su_sample *s, const struct su_frame **frames,
			  enum su_unwind_end *end)
{
	(void)arg;
	uint64_t sum = 0;
	for (uint64_t i = 0; i < s->image->nwords; i++)
		sum += s->image->words[i];
	__atomic_add_fetch(&slow_seen, sum ? 1 : 0, __ATOMIC_RELAXED);
	struct timespec const ts = { 0, 200000 };
	nanosleep(&ts, NULL);
	*frames = NULL;
	*end = SU_END_OUTERMOST;
	return 0;
}

START_TEST(abort_lets_go)
{
	enum { N = 4000, W = 64 };
	uint64_t *words = malloc(N * W * sizeof(uint64_t));
	ck_assert_ptr_nonnull(words);
	for (size_t i = 0; i < N * W; i++)
		words[i] = i + 1;
	struct stackcap_image *imgs = calloc(N, sizeof(*imgs));
	ck_assert_ptr_nonnull(imgs);
	struct ctx ctxs[3] = { { 0 } };
	void *wctx[2] = { &ctxs[1], &ctxs[2] };
	struct text got = { 0 };
	struct pipeline *p = pipeline_new(2, wctx, &ctxs[0], unwind_slow, format_made, emit_made, &got);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(pipeline_start(p), 0);
	for (int i = 0; i < N; i++) {
		imgs[i] = (struct stackcap_image){ .sp = 0x7ff000000000ull, .nwords = W, .words = words + (size_t)i * W,
						   .capacity = W };
		struct su_sample const s = { .time_ns = (uint64_t)i + 1, .pid = 1, .tid = 1, .process = &proc,
					     .maps = &maps, .image = &imgs[i], .words_stay = 1 };
		ck_assert_int_eq(pipeline_add(p, &s), 0);
		if (i == 600)
			break; /* the read stops here */
	}
	pipeline_abort(p);
	free(words); /* the mapping goes */
	uint64_t const seen = __atomic_load_n(&slow_seen, __ATOMIC_RELAXED);
	pipeline_free(p);
	ck_assert_uint_eq(__atomic_load_n(&slow_seen, __ATOMIC_RELAXED), seen);
	ck_assert_msg(seen < 601, "all %llu samples were unwound: nothing was left to discard", (unsigned long long)seen);
	free(imgs);
	free(got.buf);
}
END_TEST

/* stacks' chains by reference (text_put_shared): each context keeps two
 * shared texts, keyed by the sample's fingerprint, and puts one into
 * every sample's text; a key not in its slot replaces the text there as
 * cli/format.c does (in place only when no text holds it).  Emitted with
 * text_write into a file while the contexts replace texts that batches
 * not yet emitted refer to: the output is what copies would have made,
 * and no reference is left when all is done. */
struct shared_ctx {
	uint64_t hash;
	struct text_shared *slot[2];
	uint64_t key[2];
	uint32_t len[2];
};

static void shared_body(char *b, size_t n, uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)('a' + (key + i) % 26);
	b[n - 1] = '\n';
}

/* The chain of a fingerprint: its slot, key and text length. */
static void shared_chain(uint64_t hash, unsigned *slot, uint64_t *key, size_t *len)
{
	*slot = (unsigned)(hash & 1);
	*key = (hash >> 1) % 5;
	*len = 40 + (size_t)(*key * 997) % 3000;
}

static size_t unwind_shared(void *arg, const struct su_sample *s, const struct su_frame **frames,
			    enum su_unwind_end *end)
{
	return unwind_made(&((struct shared_ctx *)arg)->hash, s, frames, end);
}

static void format_shared(void *arg, const struct pipeline_sample *s, const struct su_frame *frames, struct text *out)
{
	(void)frames;
	struct shared_ctx *c = arg;
	unsigned slot;
	uint64_t key;
	size_t len;
	shared_chain(c->hash, &slot, &key, &len);
	text_printf(out, "%u %llu\n", s->tid, (unsigned long long)s->time_ns);
	if (!c->slot[slot] || c->key[slot] != key) {
		char body[4096];
		shared_body(body, len, key);
		c->slot[slot] = text_shared_set(c->slot[slot], body, len);
		ck_assert_ptr_nonnull(c->slot[slot]);
		c->key[slot] = key;
		c->len[slot] = (uint32_t)len;
	}
	text_put_shared(out, c->slot[slot], c->len[slot]);
}

static int emit_fd(void *arg, const struct text *t)
{
	ck_assert(t->by_ref);
	return text_write(t, *(int *)arg);
}

START_TEST(shared_by_reference)
{
	make_samples();
	struct text want = { 0 };
	for (int i = 0; i < SAMPLES; i++) {
		if (!made[i].passed)
			continue;
		unsigned slot;
		uint64_t key;
		size_t len;
		char body[4096];
		shared_chain(made[i].hash, &slot, &key, &len);
		shared_body(body, len, key);
		text_printf(&want, "%u %llu\n", made[i].s.tid, (unsigned long long)made[i].s.time_ns);
		text_put(&want, body, len);
	}
	ck_assert(!want.oom);
	for (unsigned workers = 0; workers <= 3; workers++) {
		struct shared_ctx ctxs[4] = { { 0 } };
		void *wctx[3] = { &ctxs[1], &ctxs[2], &ctxs[3] };
		FILE *f = tmpfile();
		ck_assert_ptr_nonnull(f);
		int fd = fileno(f);
		struct pipeline *p = pipeline_new(workers, wctx, &ctxs[0], unwind_shared, format_shared, emit_fd, &fd);
		ck_assert_ptr_nonnull(p);
		pipeline_emit_by_ref(p);
		uint64_t added = 0;
		for (int i = 0; i < SAMPLES; i++) {
			if (!made[i].passed)
				continue;
			if (added++ == 100)
				ck_assert_int_eq(pipeline_start(p), 0);
			ck_assert_int_eq(pipeline_add(p, &made[i].s), 0);
		}
		ck_assert_int_eq(pipeline_finish(p), 0);
		pipeline_free(p);
		for (unsigned k = 0; k < 4; k++)
			for (unsigned j = 0; j < 2; j++) {
				if (!ctxs[k].slot[j])
					continue;
				ck_assert_msg(text_shared_alone(ctxs[k].slot[j]), "a text still holds a shared text");
				text_shared_drop(ctxs[k].slot[j]);
			}
		struct stat sb;
		ck_assert_int_eq(fstat(fd, &sb), 0);
		ck_assert_uint_eq((uint64_t)sb.st_size, want.len);
		char *got = malloc(want.len);
		ck_assert_ptr_nonnull(got);
		ck_assert_int_eq(pread(fd, got, want.len, 0), (ssize_t)want.len);
		ck_assert_msg(memcmp(got, want.buf, want.len) == 0, "%u workers: the output by reference differs",
			      workers);
		free(got);
		fclose(f);
	}
	free(want.buf);
	for (int i = 0; i < SAMPLES; i++) {
		free(made[i].blob);
		free(made[i].image.words);
	}
}
END_TEST

/* text_write: more pieces than one writev takes (IOV_MAX), empty
 * references, own bytes before, between and after. */
START_TEST(text_write_pieces)
{
	struct text_shared *sh = text_shared_new("xyz", 3, 3);
	ck_assert_ptr_nonnull(sh);
	struct text t = { .by_ref = 1, .gen = 1 };
	struct text want = { 0 };
	for (int i = 0; i < 3000; i++) {
		if (i % 3) {
			text_printf(&t, "%d,", i);
			text_printf(&want, "%d,", i);
		}
		text_put_shared(&t, sh, (size_t)(i % 4));
		text_put(&want, "xyz", (size_t)(i % 4));
	}
	text_put(&t, "end", 3);
	text_put(&want, "end", 3);
	ck_assert_uint_eq(text_size(&t), want.len);
	ck_assert_uint_eq(t.n_holds, 1);
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(text_write(&t, fileno(f)), 0);
	char *got = malloc(want.len);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(pread(fileno(f), got, want.len, 0), (ssize_t)want.len);
	ck_assert(memcmp(got, want.buf, want.len) == 0);
	ck_assert(!text_shared_alone(sh));
	text_free(&t);
	ck_assert(text_shared_alone(sh));
	text_shared_drop(sh);
	free(got);
	free(want.buf);
	fclose(f);
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, deltas_rebuilt);
	tcase_add_test(tc, abort_lets_go);
	tcase_add_test(tc, shared_by_reference);
	tcase_add_test(tc, text_write_pieces);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(pipeline_suite)
