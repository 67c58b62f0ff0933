/* SPDX-License-Identifier: MIT */
/* stacks in parts (cli/ordered.c) on samples made here: sample stream
 * files whose samples interleave in time (equal times too, broken by
 * stream and file), cut into packets of 1 to 3000 samples, the packets
 * taken by 1, 2, 3 or 8 part threads; each part formats its samples as
 * the reader delivers them (in the whole read's order, its own only),
 * some text by reference.  What comes out is every sample once, in that
 * order, whatever the threads' speeds (a part made slow makes the others
 * wait on their chunks not written); cancelled, the output is the first
 * samples counted written, nothing else.  Given to a sink instead of a
 * file (export's records into its model), the same, one call at a time,
 * and no call with a part's text once that part has drained (its reader
 * then frees what the texts point to). */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check-main.h"
#include "cli/ordered.h"

#define FILES 5
#define MAX_SAMPLES 40000

struct sample {
	struct su_order_key key;
	unsigned part;
	unsigned idx;                /* in the whole read's order */
};

static struct sample samples[MAX_SAMPLES];
static size_t n_samples;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int key_cmp(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	return su_order_before(&x->key, &y->key) ? -1 : su_order_before(&y->key, &x->key) ? 1 : 0;
}

/* N samples over FILES files, each file's times never going back, ties
 * across files common; packets of 1..MAX_PKT samples, each given to a
 * part at random among PARTS (part EMPTY, if < PARTS, gets none). */
static void make(size_t n, unsigned parts, unsigned max_pkt, unsigned empty)
{
	uint64_t t[FILES] = { 0 }, pkt[FILES] = { 0 }, left[FILES] = { 0 }, at[FILES] = { 0 };
	unsigned owner[FILES] = { 0 };
	for (size_t i = 0; i < n; i++) {
		unsigned const f = (unsigned)(next_rand() % FILES);
		if (!left[f]) {
			pkt[f]++;
			left[f] = 1 + next_rand() % max_pkt;
			at[f] = 0;
			do
				owner[f] = (unsigned)(next_rand() % parts);
			while (parts > 1 && owner[f] == empty);
		}
		left[f]--;
		t[f] += next_rand() % 3; /* often the same time as another file's */
		samples[i] = (struct sample){ .key = { .time = t[f], .instance = f / 2, .file = f, .packet = pkt[f],
						       .at = 64 + 24 * at[f]++ },
					      .part = owner[f] };
	}
	qsort(samples, n, sizeof(*samples), key_cmp);
	for (size_t i = 0; i < n; i++)
		samples[i].idx = (unsigned)i;
	n_samples = n;
}

struct part_arg {
	struct ordered *o;
	unsigned k;
	int slow;                    /* yields often: the others run ahead */
	size_t stop_at;              /* cancel when reaching this sample (0: never) */
	int drain;                   /* ordered_drain at the end, then "free" */
	struct text_shared *sh[4];
};

/* Sink runs: the parts gone (drained, their texts' memory freed as far
 * as the sink may know), calls at once, texts met of a part gone. */
static _Atomic int gone[8];
static _Atomic int in_sink, overlapped, after_gone;

static void *part_main(void *arg)
{
	struct part_arg *a = arg;
	for (unsigned j = 0; j < 4; j++) {
		char s[32];
		int const len = snprintf(s, sizeof(s), "  shared %u of part %u\n", j, a->k);
		a->sh[j] = text_shared_new(s, (size_t)len, (size_t)len);
	}
	for (size_t i = 0; i < n_samples; i++) {
		if (samples[i].part != a->k)
			continue;
		if (a->stop_at && i >= a->stop_at) {
			ordered_cancel(a->o);
			if (a->drain)
				ordered_drain(a->o);
			break;
		}
		struct text *t = ordered_text(a->o, a->k, &samples[i].key);
		if (!t)
			break;
		char line[64];
		int const len = snprintf(line, sizeof(line), "sample %u\n", samples[i].idx);
		text_put(t, line, (size_t)len);
		if (samples[i].idx % 3 == 0) /* a chain's lines, by reference */
			text_put_shared(t, a->sh[samples[i].idx % 4], a->sh[samples[i].idx % 4]->cap);
		if (samples[i].idx % 7 == 0)
			text_put(t, "  own line\n", 11);
		ordered_mark(a->o, a->k);
		if (a->slow && samples[i].idx % 5 == 0)
			sched_yield();
	}
	ordered_done(a->o, a->k);
	if (a->drain) {
		ordered_drain(a->o);
		atomic_store(&gone[a->k], 1);
	}
	for (unsigned j = 0; j < 4; j++)
		text_shared_drop(a->sh[j]);
	return NULL;
}

/* The sink: BUF's samples appended to OUT, each checked not of a part
 * gone. */
struct sink_out {
	char *buf;
	size_t len, cap;
};

static int sink(void *arg, const char *buf, size_t len)
{
	struct sink_out *o = arg;
	if (atomic_fetch_add(&in_sink, 1))
		atomic_store(&overlapped, 1);
	for (const char *p = buf; (p = memmem(p, (size_t)(buf + len - p), "sample ", 7)); p += 7) {
		unsigned const idx = (unsigned)strtoul(p + 7, NULL, 10);
		if (idx < n_samples && atomic_load(&gone[samples[idx].part]))
			atomic_store(&after_gone, 1);
	}
	if (o->len + len > o->cap) {
		o->cap = 2 * (o->len + len);
		char *const nb = realloc(o->buf, o->cap);
		if (!nb)
			abort();
		o->buf = nb;
	}
	memcpy(o->buf + o->len, buf, len);
	o->len += len;
	atomic_fetch_sub(&in_sink, 1);
	return 0;
}

/* What sample I's text is, as part_main writes it. */
static size_t expected(char *buf, size_t i)
{
	unsigned const idx = samples[i].idx, k = samples[i].part;
	size_t n = (size_t)sprintf(buf, "sample %u\n", idx);
	if (idx % 3 == 0)
		n += (size_t)sprintf(buf + n, "  shared %u of part %u\n", idx % 4, k);
	if (idx % 7 == 0)
		n += (size_t)sprintf(buf + n, "  own line\n");
	return n;
}

/* Run PARTS part threads into O (part SLOW yielding often, part STOPPER
 * cancelling at sample STOP_AT, each draining at its end when DRAIN),
 * O freed.  @return the samples counted written. */
static uint64_t run_parts(struct ordered *o, unsigned parts, unsigned slow, unsigned stopper, size_t stop_at,
			  int drain)
{
	ck_assert_ptr_nonnull(o);
	pthread_t th[8];
	struct part_arg args[8];
	for (unsigned k = 0; k < parts; k++) {
		args[k] = (struct part_arg){ .o = o, .k = k, .slow = k == slow, .drain = drain,
					     .stop_at = k == stopper ? stop_at : 0 };
		ck_assert_int_eq(pthread_create(&th[k], NULL, part_main, &args[k]), 0);
	}
	for (unsigned k = 0; k < parts; k++)
		pthread_join(th[k], NULL);
	int err = -1;
	uint64_t const written = ordered_finish(o, &err);
	ck_assert_int_eq(err, 0);
	ordered_free(o);
	return written;
}

/* Run PARTS part threads (part SLOW yielding often, part STOPPER
 * cancelling at sample STOP_AT) writing to a file; @return its bytes,
 * *WRITTEN the samples counted written. */
static char *run(unsigned parts, unsigned slow, unsigned stopper, size_t stop_at, uint64_t *written,
		 size_t *len)
{
	char path[] = "/tmp/test-ordered.XXXXXX";
	int const fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	*written = run_parts(ordered_new(parts, fd), parts, slow, stopper, stop_at, 0);
	off_t const size = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	*len = (size_t)size;
	return buf;
}

/* The first N samples' texts, in order, are BUF (LEN bytes) exactly. */
static void check_prefix(const char *buf, size_t len, size_t n)
{
	size_t at = 0;
	char e[128];
	for (size_t i = 0; i < n; i++) {
		size_t const el = expected(e, i);
		ck_assert_msg(at + el <= len && !memcmp(buf + at, e, el), "sample %zu of %zu not where it belongs (byte %zu)",
			      i, n, at);
		at += el;
	}
	ck_assert_msg(at == len, "%zu bytes after the %zu samples", len - at, n);
}

/* As run(), into a sink, each part draining at its end. */
static char *run_sink(unsigned parts, unsigned slow, unsigned stopper, size_t stop_at, uint64_t *written,
		      size_t *len)
{
	struct sink_out out = { 0 };
	for (unsigned k = 0; k < 8; k++)
		atomic_store(&gone[k], 0);
	atomic_store(&overlapped, 0);
	atomic_store(&after_gone, 0);
	*written = run_parts(ordered_new_sink(parts, sink, &out), parts, slow, stopper, stop_at, 1);
	ck_assert_msg(!atomic_load(&overlapped), "two sink calls at once");
	ck_assert_msg(!atomic_load(&after_gone), "a part's text given to the sink after that part drained");
	*len = out.len;
	return out.buf ? out.buf : calloc(1, 1);
}

static void whole(unsigned parts, size_t n, unsigned max_pkt, unsigned slow, unsigned empty)
{
	make(n, parts, max_pkt, empty);
	uint64_t written = 0;
	size_t len = 0;
	char *buf = run(parts, slow, UINT32_MAX, 0, &written, &len);
	ck_assert_uint_eq(written, n);
	check_prefix(buf, len, n);
	free(buf);
}

START_TEST(t_one_part)
{
	whole(1, 5000, 300, UINT32_MAX, UINT32_MAX);
}
END_TEST

START_TEST(t_two_parts)
{
	whole(2, 30000, 400, UINT32_MAX, UINT32_MAX);
}
END_TEST

/* Packets of up to 3000 samples: chunks full before their packet ends. */
START_TEST(t_big_packets)
{
	whole(3, 40000, 3000, UINT32_MAX, UINT32_MAX);
}
END_TEST

/* One packet a sample: samples of the files interleave one by one. */
START_TEST(t_tiny_packets)
{
	whole(3, 20000, 1, UINT32_MAX, UINT32_MAX);
}
END_TEST

/* A slow part: the others wait with their chunks not written. */
START_TEST(t_slow_part)
{
	whole(8, 40000, 50, 0, UINT32_MAX);
	whole(2, 40000, 20, 1, UINT32_MAX);
}
END_TEST

/* A part that takes no packet at all. */
START_TEST(t_empty_part)
{
	whole(3, 10000, 100, UINT32_MAX, 1);
}
END_TEST

/* ROUNDS runs by RUN (run or run_sink) of 3 parts, part 1 cancelling
 * midway: the first samples counted written, nothing else. */
static void cancel_rounds(char *(*run_fn)(unsigned, unsigned, unsigned, size_t, uint64_t *, size_t *),
			  unsigned rounds)
{
	for (unsigned round = 0; round < rounds; round++) {
		make(30000, 3, 200, UINT32_MAX);
		uint64_t written = 0;
		size_t len = 0;
		char *buf = run_fn(3, 2, 1, 10000 + round * 4000, &written, &len);
		ck_assert_uint_le(written, 10000 + round * 4000);
		check_prefix(buf, len, written);
		free(buf);
	}
}

/* Cancelled midway: the first samples counted written, nothing else. */
START_TEST(t_cancel)
{
	cancel_rounds(run, 5);
}
END_TEST

/* Into a sink: every sample once, in order, one call at a time, none of
 * a part after it drained; cancelled: the first samples, nothing else. */
START_TEST(t_sink)
{
	unsigned const parts[] = { 1, 2, 3, 8 };
	for (unsigned round = 0; round < 4; round++) {
		make(20000, parts[round], round == 2 ? 1 : 300, UINT32_MAX);
		uint64_t written = 0;
		size_t len = 0;
		char *buf = run_sink(parts[round], round % 2 ? 0 : UINT32_MAX, UINT32_MAX, 0, &written, &len);
		ck_assert_uint_eq(written, 20000);
		check_prefix(buf, len, 20000);
		free(buf);
	}
	cancel_rounds(run_sink, 3);
}
END_TEST

static Suite *ordered_suite(void)
{
	Suite *s = suite_create("ordered");
	TCase *tc = tcase_create("ordered");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_one_part);
	tcase_add_test(tc, t_two_parts);
	tcase_add_test(tc, t_big_packets);
	tcase_add_test(tc, t_tiny_packets);
	tcase_add_test(tc, t_slow_part);
	tcase_add_test(tc, t_empty_part);
	tcase_add_test(tc, t_cancel);
	tcase_add_test(tc, t_sink);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(ordered_suite)
