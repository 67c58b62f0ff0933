/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the perf.data reader (trace/perf-data.h): small perf.data
 * images built here, byte by byte as perf's ABI lays them out (a header,
 * one attribute, COMM, MMAP2, SAMPLE with user registers and stack,
 * FINISHED_ROUND), read from a memfd; the test asserts what the reader
 * delivers: the process, its maps, each sample's registers and stack words,
 * perf's round order.  Damaged and cut images give a clear error or read
 * what is readable.  The live stream (su_perf_stream) is fed the same
 * records with a kernel call chain.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/perf-ahead.h"
#include "trace/perf-data.h"
#include "tests/unit/check-main.h"

/* ---- building images ----------------------------------------------------- */

struct buf {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t len)
{
	if (!len)
		return;
	if (b->n + len > b->cap) {
		b->cap = (b->n + len) * 2 + 256;
		b->b = realloc(b->b, b->cap);
		ck_assert_ptr_nonnull(b->b);
	}
	memcpy(b->b + b->n, p, len);
	b->n += len;
}

static void put64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void put16(struct buf *b, uint16_t v) { put(b, &v, 2); }
static void put32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void set16(struct buf *b, size_t at, uint16_t v) { memcpy(b->b + at, &v, 2); }

enum { S_IP = 1, S_TID = 2, S_TIME = 4, S_CALLCHAIN = 32, S_REGS_USER = 1 << 12, S_STACK_USER = 1 << 13 };
#define SAMPLE_ID_ALL (1ull << 18)
#define EXCLUDE_CALLCHAIN_USER (1ull << 22)
#define TYPICAL (S_IP | S_TID | S_TIME | S_REGS_USER | S_STACK_USER)
/* perf's x86 registers bp (6), sp (7), ip (8): in this order in a sample. */
#define REGS_MASK ((1ull << 6) | (1ull << 7) | (1ull << 8))
#define ATTR_BYTES 128u
static uint64_t attr_regs = REGS_MASK; /* the attrs' sample_regs_user */

/* A perf_event_attr (ATTR_BYTES). */
static void put_attr(struct buf *b, uint64_t sample_type, uint64_t flags)
{
	uint8_t a[ATTR_BYTES] = { 0 };
	uint32_t const size = ATTR_BYTES;
	uint64_t const period = 999, regs = attr_regs;
	uint32_t const stack = 4096;
	memcpy(a + 4, &size, 4);
	memcpy(a + 16, &period, 8);
	memcpy(a + 24, &sample_type, 8);
	memcpy(a + 40, &flags, 8);
	memcpy(a + 80, &regs, 8);
	memcpy(a + 88, &stack, 4);
	put(b, a, sizeof(a));
}

/* The sample_id trailer of TYPICAL with SAMPLE_ID_ALL: pid, tid, time. */
static void put_trailer(struct buf *b, uint32_t pid, uint64_t time)
{
	put32(b, pid);
	put32(b, pid);
	put64(b, time);
}

static size_t rec_begin(struct buf *b, uint32_t type, uint16_t misc)
{
	size_t const at = b->n;
	put32(b, type);
	uint16_t const m[2] = { misc, 0 };
	put(b, m, 4);
	return at;
}

static void rec_end(struct buf *b, size_t at)
{
	while ((b->n - at) % 8)
		put(b, "", 1);
	set16(b, at + 6, (uint16_t)(b->n - at));
}

static void put_str(struct buf *b, const char *s)
{
	put(b, s, strlen(s) + 1);
	while (b->n % 8)
		put(b, "", 1);
}

static void rec_comm(struct buf *b, uint32_t pid, const char *comm, uint64_t time)
{
	size_t const at = rec_begin(b, 3, 0);
	put32(b, pid);
	put32(b, pid);
	put_str(b, comm);
	put_trailer(b, pid, time);
	rec_end(b, at);
}

static void rec_mmap2(struct buf *b, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff, const char *path,
		      uint64_t time)
{
	size_t const at = rec_begin(b, 10, 2 /* user */);
	put32(b, pid);
	put32(b, pid);
	put64(b, addr);
	put64(b, len);
	put64(b, pgoff);
	put64(b, 0); /* maj, min */
	put64(b, 0); /* ino */
	put64(b, 0); /* ino_generation */
	put32(b, 5); /* PROT_READ | PROT_EXEC */
	put32(b, 2); /* MAP_PRIVATE */
	put_str(b, path);
	put_trailer(b, pid, time);
	rec_end(b, at);
}

/* A sample of TYPICAL (with a call chain of NCHAIN entries at CHAIN when
 * CHAIN is not NULL): pc PC, sp SP, 4 stack words W0+i. */
static void rec_sample_chain(struct buf *b, uint32_t pid, uint64_t time, uint64_t pc, uint64_t sp, uint64_t w0,
			     const uint64_t *chain, uint64_t nchain)
{
	size_t const at = rec_begin(b, 9, 2);
	put64(b, pc);
	put32(b, pid);
	put32(b, pid + 1); /* tid */
	put64(b, time);
	if (chain) {
		put64(b, nchain);
		put(b, chain, 8 * nchain);
	}
	put64(b, 2); /* PERF_SAMPLE_REGS_ABI_64 */
	put64(b, sp + 0x40); /* bp */
	put64(b, sp);
	put64(b, pc);
	put64(b, 32); /* stack size */
	for (uint64_t i = 0; i < 4; i++)
		put64(b, w0 + i);
	put64(b, 32); /* dyn_size */
	rec_end(b, at);
}

static void rec_sample(struct buf *b, uint32_t pid, uint64_t time, uint64_t pc, uint64_t sp, uint64_t w0)
{
	rec_sample_chain(b, pid, time, pc, sp, w0, NULL, 0);
}

static void rec_round(struct buf *b)
{
	size_t const at = rec_begin(b, 68, 0);
	rec_end(b, at);
}

/* A whole file: header, one attribute (no ids), the data section DATA. */
static struct buf file_of(const struct buf *data, uint64_t sample_type, uint64_t flags)
{
	struct buf f = { 0 };
	uint64_t const attr_size = ATTR_BYTES + 16, attr_off = 104, data_off = attr_off + attr_size;
	put64(&f, 0x32454c4946524550ull); /* "PERFILE2" */
	put64(&f, 104);
	put64(&f, attr_size);
	put64(&f, attr_off);
	put64(&f, attr_size);
	put64(&f, data_off);
	put64(&f, data->n);
	put64(&f, 0); /* event types */
	put64(&f, 0);
	uint8_t features[32] = { 0 };
	put(&f, features, sizeof(features));
	ck_assert_uint_eq(f.n, 104);
	put_attr(&f, sample_type, flags);
	put64(&f, 0); /* ids: none */
	put64(&f, 0);
	put(&f, data->b, data->n);
	return f;
}

/* ---- reading them ------------------------------------------------------------ */

struct got {
	int processes, maps, samples, ends;
	uint32_t pid[8];
	char comm[8][32];
	struct su_map_entry entry[8];
	char path[8][64];
	uint32_t n_entries[8];
	uint64_t time[16], pc[16], sp[16], bp[16], word0[16], nwords[16];
	uint32_t tid[16], n_kernel[16], regs_kept[16];
	uint64_t regs[16][STACKCAP_NREGS];
	uint64_t kernel[16][4];
	char event[16][32];          /* "(null)": none */
};

static int on_process(void *arg, const struct su_process *p)
{
	struct got *g = arg;
	if (g->processes < 8) {
		g->pid[g->processes] = p->pid;
		snprintf(g->comm[g->processes], sizeof(g->comm[0]), "%s", p->comm);
	}
	g->processes++;
	return 0;
}

static int on_maps(void *arg, const struct su_process *p, const struct su_maps *m)
{
	(void)p;
	struct got *g = arg;
	if (g->maps < 8) {
		g->n_entries[g->maps] = m->count;
		if (m->count) {
			g->entry[g->maps] = m->entries[0];
			snprintf(g->path[g->maps], sizeof(g->path[0]), "%s", m->entries[0].path);
		}
	}
	g->maps++;
	return 0;
}

static int on_sample(void *arg, const struct su_sample *s)
{
	struct got *g = arg;
	int const i = g->samples++;
	if (i >= 16)
		return 0;
	g->time[i] = s->time_ns;
	g->tid[i] = s->tid;
	g->pc[i] = s->image->regs[STACKCAP_REG_RIP];
	g->sp[i] = s->image->regs[STACKCAP_REG_RSP];
	g->bp[i] = s->image->regs[STACKCAP_REG_RBP];
	memcpy(g->regs[i], s->image->regs, sizeof(g->regs[i]));
	g->regs_kept[i] = s->image->regs_kept;
	g->nwords[i] = s->image->nwords;
	g->word0[i] = s->image->nwords ? s->image->words[0] : 0;
	g->n_kernel[i] = s->n_kernel_chain;
	snprintf(g->event[i], sizeof(g->event[0]), "%s", s->event ? s->event : "(null)");
	for (uint32_t k = 0; k < s->n_kernel_chain && k < 4; k++)
		g->kernel[i][k] = s->kernel_chain[k];
	return 0;
}

static int on_end(void *arg)
{
	((struct got *)arg)->ends++;
	return 0;
}

static int read_image_opts(const struct buf *f, const struct su_reader_opts *o, struct got *g,
			   struct su_reader_stats *st, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	int fd = memfd_create("test-perf-data", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, f->b, f->n), (ssize_t)f->n);
	struct su_reader_callbacks cb = { .arg = g, .process_start = on_process, .maps = on_maps, .sample = on_sample, .end = on_end };
	int const rc = su_perf_data_read_fd(fd, "img", o, &cb, st, err, errlen);
	close(fd);
	return rc;
}

static int read_image(const struct buf *f, struct got *g, struct su_reader_stats *st, char *err, size_t errlen)
{
	return read_image_opts(f, NULL, g, st, err, errlen);
}

/* The records of a typical short recording: COMM, MMAP2, samples. */
static void typical(struct buf *d)
{
	rec_comm(d, 100, "prog", 10);
	rec_mmap2(d, 100, 0x400000, 0x2000, 0x1000, "/nonexistent/prog", 20);
	rec_sample(d, 100, 300, 0x400100, 0x7ff000, 0xa0);
	rec_sample(d, 100, 200, 0x400200, 0x7fe000, 0xb0);
	rec_round(d);
	rec_sample(d, 100, 400, 0x400300, 0x7fd000, 0xc0);
}

/* F with a HEADER_EVENT_DESC feature section naming its one event NAME
 * (its body cut to CUT bytes when CUT is not 0). */
static void add_event_desc(struct buf *f, const char *name, size_t cut)
{
	f->b[72 + 12 / 8] |= 1u << (12 % 8); /* HEADER_EVENT_DESC */
	struct buf body = { 0 };
	put32(&body, 1);          /* nr */
	put32(&body, ATTR_BYTES); /* attr_size */
	uint8_t attr[ATTR_BYTES] = { 0 };
	put(&body, attr, sizeof(attr));
	put32(&body, 0);          /* nr_ids */
	char str[32] = { 0 };
	snprintf(str, sizeof(str), "%s", name);
	put32(&body, sizeof(str));
	put(&body, str, sizeof(str));
	size_t const n = cut ? cut : body.n;
	put64(f, f->n + 16); /* the section: after its header */
	put64(f, n);
	put(f, body.b, n);
	free(body.b);
}

/* F with a HEADER_BUILD_ID feature section (perf record's table of the
 * files its samples hit): N entries, file PATHS[i] with the 20-byte
 * build-id of bytes IDS[i]. */
static void add_build_ids(struct buf *f, const char *const *paths, const uint8_t *ids, size_t n)
{
	f->b[72 + 2 / 8] |= 1u << (2 % 8); /* HEADER_BUILD_ID */
	struct buf body = { 0 };
	for (size_t i = 0; i < n; i++) {
		char name[64] = { 0 };
		snprintf(name, sizeof(name), "%s", paths[i]);
		put32(&body, 0);                            /* type */
		put16(&body, 0);                            /* misc */
		put16(&body, (uint16_t)(8 + 4 + 24 + sizeof(name))); /* size */
		put32(&body, (uint32_t)-1);                 /* pid */
		uint8_t id[24] = { 0 };
		memset(id, ids[i], 20);
		put(&body, id, sizeof(id));
		put(&body, name, sizeof(name));
	}
	put64(f, f->n + 16);
	put64(f, body.n);
	put(f, body.b, body.n);
	free(body.b);
}

struct hits {
	struct got g;
	int calls, samples_before;
	size_t n;
	uint8_t first[8];
};

static int on_hits(void *arg, const uint8_t (*ids)[SU_BUILD_ID_MAX], const uint8_t *lens, size_t n)
{
	struct hits *h = arg;
	h->calls++;
	h->samples_before = h->g.samples;
	h->n = n;
	for (size_t i = 0; i < n && i < 8; i++)
		h->first[i] = lens[i] == 20 ? ids[i][0] : 0;
	return 0;
}

/* The files a perf.data's build-id table names (those perf record saw
 * samples in) go to the consumer once, before the first sample, so it may
 * prepare their debug files (debuginfo/inflate-ahead.h): user-space files
 * only, not [kernel.kallsyms] or [vdso]. */
START_TEST(t_hit_files)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	static const char *const paths[] = { "[kernel.kallsyms]", "/nonexistent/prog", "[vdso]", "/usr/lib/libfoo.so" };
	static const uint8_t ids[] = { 0x11, 0x22, 0x33, 0x44 };
	add_build_ids(&f, paths, ids, 4);
	struct hits h;
	memset(&h, 0, sizeof(h));
	int fd = memfd_create("test-perf-data", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, f.b, f.n), (ssize_t)f.n);
	struct su_reader_callbacks cb = { .arg = &h, .sample = on_sample, .hit_files = on_hits };
	struct su_reader_stats st;
	char err[256];
	int const rc = su_perf_data_read_fd(fd, "img", NULL, &cb, &st, err, sizeof(err));
	close(fd);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_int_eq(h.g.samples, 3);
	ck_assert_int_eq(h.calls, 1);
	ck_assert_int_eq(h.samples_before, 0);
	ck_assert_uint_eq(h.n, 2);
	ck_assert_msg((h.first[0] == 0x22 && h.first[1] == 0x44) || (h.first[0] == 0x44 && h.first[1] == 0x22),
		      "ids %02x %02x", h.first[0], h.first[1]);
	free(d.b);
	free(f.b);
}
END_TEST

/* perf.data's event names (HEADER_EVENT_DESC) on every sample; a file of
 * cpu-clock alone is unnamed, as a stackcap trace without -e; a cut table
 * names nothing and says so. */
START_TEST(t_event_desc)
{
	static const struct {
		const char *name, *want;
		size_t cut;
	} cases[] = { { "page-faults", "page-faults", 0 }, { "sched:sched_switch", "sched:sched_switch", 0 },
		      { "cpu-clock", "(null)", 0 }, { "page-faults", "(null)", 8 + ATTR_BYTES + 6 } };
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct buf d = { 0 };
		typical(&d);
		struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
		add_event_desc(&f, cases[c].name, cases[c].cut);
		struct got g;
		struct su_reader_stats st;
		char err[256];
		int const rc = read_image(&f, &g, &st, err, sizeof(err));
		ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
		ck_assert_int_eq(g.samples, 3);
		for (int i = 0; i < 3; i++)
			ck_assert_str_eq(g.event[i], cases[c].want);
		free(d.b);
		free(f.b);
	}
}
END_TEST

START_TEST(t_typical)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	int const rc = read_image(&f, &g, &st, err, sizeof(err));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_int_eq(g.processes, 1);
	ck_assert_uint_eq(g.pid[0], 100);
	ck_assert_str_eq(g.comm[0], "prog");
	ck_assert_int_eq(g.maps, 1);
	ck_assert_uint_eq(g.n_entries[0], 1);
	ck_assert_uint_eq(g.entry[0].start, 0x400000);
	ck_assert_uint_eq(g.entry[0].end, 0x402000);
	ck_assert_uint_eq(g.entry[0].offset, 0x1000);
	/* perf.data gives file offsets: the bias is debuginfo/'s to read from
	 * the file it finds (SU_MAP_FILE_BIAS), start - offset until then. */
	ck_assert_uint_eq(g.entry[0].bias, 0x400000 - 0x1000);
	ck_assert_uint_eq(g.entry[0].flags, SU_MAP_MAIN | SU_MAP_FILE_BIAS);
	ck_assert_str_eq(g.path[0], "/nonexistent/prog");
	ck_assert_int_eq(g.samples, 3);
	ck_assert_uint_eq(st.samples, 3);
	/* In time order, though the file holds 300 before 200. */
	uint64_t const times[3] = { 200, 300, 400 }, pcs[3] = { 0x400200, 0x400100, 0x400300 };
	uint64_t const sps[3] = { 0x7fe000, 0x7ff000, 0x7fd000 }, w0[3] = { 0xb0, 0xa0, 0xc0 };
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(g.time[i], times[i]);
		ck_assert_uint_eq(g.tid[i], 101);
		ck_assert_uint_eq(g.pc[i], pcs[i]);
		ck_assert_uint_eq(g.sp[i], sps[i]);
		ck_assert_uint_eq(g.bp[i], sps[i] + 0x40);
		ck_assert_uint_eq(g.nwords[i], 4);
		ck_assert_uint_eq(g.word0[i], w0[i]);
		ck_assert_uint_eq(g.n_kernel[i], 0);
	}
	ck_assert_int_eq(g.ends, 1);
	free(d.b);
	free(f.b);
}
END_TEST

/* A consumer that holds samples (the -j pipeline) and stops the read at
 * the second: su_reader_callbacks.stop is called once, before what the
 * held sample points to (its maps, its words in the file's mapping) is
 * freed (ASan: a use after free otherwise); a whole read never calls it. */
struct holder {
	const struct su_sample *first;
	struct su_sample held;
	struct stackcap_image img;    /* the image struct is the call's; its words stay */
	int samples, stops, ends, stay;
	uint64_t seen_start, seen_word, first_word;
};

static int hold_sample(void *arg, const struct su_sample *s)
{
	struct holder *h = arg;
	if (h->samples++ == 0) {
		h->held = *s;
		h->img = *s->image;
		h->stay = s->words_stay;
		h->first_word = s->image->nwords ? s->image->words[0] : 0;
		return 0;
	}
	return 7;
}

static void hold_stop(void *arg)
{
	struct holder *h = arg;
	h->stops++;
	h->seen_start = h->held.maps->entries[0].start;
	h->seen_word = h->img.nwords ? h->img.words[0] : 0;
}

static int hold_end(void *arg)
{
	((struct holder *)arg)->ends++;
	return 0;
}

START_TEST(t_stop_before_free)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	for (int whole = 0; whole < 2; whole++) {
		struct holder h = { 0 };
		int fd = memfd_create("test-perf-data", MFD_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, f.b, f.n), (ssize_t)f.n);
		struct su_reader_callbacks cb = { .arg = &h, .sample = whole ? NULL : hold_sample, .end = hold_end,
						  .stop = hold_stop };
		struct su_reader_stats st;
		char err[256];
		int const rc = su_perf_data_read_fd(fd, "img", NULL, &cb, &st, err, sizeof(err));
		close(fd);
		if (whole) {
			ck_assert_int_eq(rc, 0);
			ck_assert_int_eq(h.stops, 0);
			ck_assert_int_eq(h.ends, 1);
			continue;
		}
		ck_assert_int_eq(rc, 7);
		ck_assert_int_eq(h.samples, 2);
		ck_assert_int_eq(h.ends, 0);
		ck_assert_int_eq(h.stops, 1);
		ck_assert_int_eq(h.stay, 1); /* the words were the mapping's */
		ck_assert_uint_eq(h.seen_start, 0x400000);
		ck_assert_uint_ne(h.first_word, 0);
		ck_assert_uint_eq(h.seen_word, h.first_word);
	}
	free(d.b);
	free(f.b);
}
END_TEST

/* The records D (freed) as a file, read into *G: N samples. */
static void read_rounds(struct buf *d, struct got *g, int n)
{
	struct buf f = file_of(d, TYPICAL, SAMPLE_ID_ALL);
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_eq(read_image(&f, g, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(g->samples, n);
	free(d->b);
	free(f.b);
}

/* perf's order, not a sort: at a FINISHED_ROUND only the events up to the
 * highest time seen before the previous round are delivered; an event
 * later in the file with an earlier time comes after them. */
START_TEST(t_round_order)
{
	struct buf d = { 0 };
	rec_comm(&d, 7, "r", 1);
	rec_mmap2(&d, 7, 0x400000, 0x1000, 0, "/nonexistent/r", 2);
	rec_sample(&d, 7, 10, 0x400010, 0x1000, 1);
	rec_sample(&d, 7, 30, 0x400030, 0x1000, 3);
	rec_round(&d);
	rec_sample(&d, 7, 50, 0x400050, 0x1000, 5);
	rec_round(&d); /* delivers 10 and 30 */
	rec_sample(&d, 7, 20, 0x400020, 0x1000, 2);
	struct got g;
	read_rounds(&d, &g, 4);
	uint64_t const want[4] = { 10, 30, 20, 50 };
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(g.time[i], want[i]);
}
END_TEST

/* A round as perf writes it: each CPU's ring in time order, one after the
 * other, events of equal times on two CPUs; then a round of two more, out
 * of order.  Delivered merged (five runs in order: three passes), in time
 * order and, at equal times, in file order. */
START_TEST(t_round_runs)
{
	struct buf d = { 0 };
	rec_comm(&d, 7, "r", 1);
	rec_mmap2(&d, 7, 0x400000, 0x1000, 0, "/nonexistent/r", 2);
	static const uint64_t ts[] = { 10, 40, 70, 100, /* CPU 0 */ 20, 40, 90, /* CPU 1 */ 5, 60, 70, 110 /* CPU 2 */ };
	size_t const n = sizeof(ts) / sizeof(ts[0]);
	for (size_t i = 0; i < n; i++)
		rec_sample(&d, 7, ts[i], 0x400000 + i, 0x1000, 1); /* pc: its place in the file */
	rec_round(&d);
	rec_sample(&d, 7, 95, 0x400100, 0x1000, 1);
	rec_sample(&d, 7, 30, 0x400101, 0x1000, 1);
	rec_round(&d);
	struct got g;
	read_rounds(&d, &g, 13);
	/* The first FINISHED_ROUND delivers nothing (perf's rule: up to the
	 * highest time before the previous round), the second all of them
	 * (up to 110). */
	static const uint64_t want_t[] = { 5, 10, 20, 30, 40, 40, 60, 70, 70, 90, 95, 100, 110 };
	static const uint64_t want_pc[] = { 7, 0, 4, 0x101, 1, 5, 8, 2, 9, 6, 0x100, 3, 10 };
	for (int i = 0; i < 13; i++) {
		ck_assert_uint_eq(g.time[i], want_t[i]);
		ck_assert_uint_eq(g.pc[i], 0x400000 + want_pc[i]);
	}
}
END_TEST

/* With map_ahead (stackunwind -j N > 1) a thread maps the file ahead of
 * the reader: the same samples as without, in the same order (a 6 MB
 * file: past the 4 MB below which no thread starts). */
/* Each register from its place among a sample's values, whichever
 * registers the attr asks for: perf record --call-graph dwarf's 20 on
 * x86-64 (flags and segments among them, not ours), and the same less r15
 * and ss (every value after them one place earlier). */
START_TEST(t_regs_each)
{
	/* PERF_REG_X86_* -> ours, as perf's uapi numbers them. */
	static const struct {
		unsigned bit;
		int ours;
	} x86[] = { { 0, STACKCAP_REG_RAX }, { 1, STACKCAP_REG_RBX }, { 2, STACKCAP_REG_RCX }, { 3, STACKCAP_REG_RDX },
		    { 4, STACKCAP_REG_RSI }, { 5, STACKCAP_REG_RDI }, { 6, STACKCAP_REG_RBP }, { 7, STACKCAP_REG_RSP },
		    { 8, STACKCAP_REG_RIP }, { 16, STACKCAP_REG_R8 }, { 17, STACKCAP_REG_R9 }, { 18, STACKCAP_REG_R10 },
		    { 19, STACKCAP_REG_R11 }, { 20, STACKCAP_REG_R12 }, { 21, STACKCAP_REG_R13 },
		    { 22, STACKCAP_REG_R14 }, { 23, STACKCAP_REG_R15 } };
	static const uint64_t masks[] = { 0xff0fffull, 0xff0fffull & ~(1ull << 23) & ~(1ull << 11) };
	for (size_t c = 0; c < sizeof(masks) / sizeof(masks[0]); c++) {
		attr_regs = masks[c];
		struct buf d = { 0 };
		rec_comm(&d, 100, "prog", 10);
		rec_mmap2(&d, 100, 0x400000, 0x2000, 0x1000, "/nonexistent/prog", 20);
		size_t const at = rec_begin(&d, 9, 2);
		put64(&d, 0x400100); /* ip */
		put32(&d, 100);
		put32(&d, 101);
		put64(&d, 300);
		put64(&d, 2); /* PERF_SAMPLE_REGS_ABI_64 */
		uint64_t want[STACKCAP_NREGS] = { 0 };
		uint32_t want_kept = 0;
		for (unsigned b = 0; b < 64; b++) {
			if (!(masks[c] >> b & 1))
				continue;
			uint64_t const v = 0x7ff000 + 0x100 * b; /* rsp's a stack address too */
			put64(&d, v);
			for (size_t k = 0; k < sizeof(x86) / sizeof(x86[0]); k++)
				if (x86[k].bit == b) {
					want[x86[k].ours] = v;
					want_kept |= 1u << x86[k].ours;
				}
		}
		put64(&d, 16); /* stack size */
		put64(&d, 1);
		put64(&d, 2);
		put64(&d, 16); /* dyn_size */
		rec_end(&d, at);
		struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
		struct got g;
		struct su_reader_stats st;
		char err[256];
		ck_assert_int_eq(read_image(&f, &g, &st, err, sizeof(err)), 0);
		ck_assert_int_eq(g.samples, 1);
		ck_assert_uint_eq(g.regs_kept[0], want_kept);
		ck_assert_uint_eq(__builtin_popcount(want_kept), c == 0 ? 17 : 16);
		for (int r = 0; r < STACKCAP_NREGS; r++)
			ck_assert_msg(g.regs[0][r] == want[r], "mask %#" PRIx64 ": register %d is %#" PRIx64 ", not %#" PRIx64,
				      masks[c], r, g.regs[0][r], want[r]);
		free(d.b);
		free(f.b);
	}
	attr_regs = REGS_MASK;
}
END_TEST

START_TEST(t_map_ahead)
{
	struct buf d = { 0 };
	rec_comm(&d, 7, "r", 1);
	rec_mmap2(&d, 7, 0x400000, 0x1000, 0, "/nonexistent/r", 2);
	int n = 0;
	while (d.n < (6u << 20)) {
		/* each round in reverse time order: delivered sorted */
		rec_sample(&d, 7, 1000000 - (uint64_t)(n % 1000) + 1000 * (uint64_t)(n / 1000), 0x400000 + (uint64_t)(n & 0xfff),
			   0x1000, (uint64_t)n);
		if (++n % 1000 == 0)
			rec_round(&d);
	}
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	free(d.b);
	static struct got g0, g1;
	struct su_reader_stats st0, st1;
	char err[256];
	struct su_reader_opts o = { .map_ahead = 1 };
	ck_assert_int_eq(read_image_opts(&f, NULL, &g0, &st0, err, sizeof(err)), 0);
	ck_assert_int_eq(read_image_opts(&f, &o, &g1, &st1, err, sizeof(err)), 0);
	ck_assert_int_eq(g0.samples, n);
	ck_assert_int_eq(g1.samples, n);
	ck_assert_uint_eq(st1.samples, st0.samples);
	ck_assert_uint_eq(st1.raw_stack_bytes, st0.raw_stack_bytes);
	for (int i = 0; i < 16; i++) {
		ck_assert_uint_eq(g1.time[i], g0.time[i]);
		ck_assert_uint_eq(g1.word0[i], g0.word0[i]);
	}
	ck_assert_uint_eq(g0.time[0], 1000000 - 999); /* sorted: the round's last record first */
	free(f.b);
}
END_TEST

/* Is the page at P mapped (present in this process's page tables)?  From
 * /proc/self/pagemap (bit 63); -1 when it cannot be read. */
static int page_mapped(const void *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	uint64_t e = 0;
	off_t const off = (off_t)((uintptr_t)p / 4096u * 8u);
	ssize_t const n = pread(fd, &e, sizeof(e), off);
	close(fd);
	return n == (ssize_t)sizeof(e) ? (int)(e >> 63) : -1;
}

/* Wait up to 10 s for the page at P to be mapped (WANT 1) or not (0). */
static int wait_mapped(const void *p, int want)
{
	for (int i = 0; i < 10000; i++) {
		int const m = page_mapped(p);
		if (m < 0 || m == want)
			return m;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return !want;
}

/* The thread of perf-ahead.h maps ahead of where the reader says it is,
 * gives back what the reader says it is done with (whole 2 MB pieces
 * only), and everything when stopped.  Or, where the pages map cheaply
 * (cached in large folios), it leaves and says so. */
START_TEST(t_ahead_gives_back)
{
	char path[] = "/tmp/stackcap-ahead-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	size_t const size = 12u << 20;
	/* Written a page at a time: cached in single pages (as perf
	 * record's writes leave a perf.data), which map slowly enough for
	 * the thread to stay on most machines. */
	static char block[4096];
	memset(block, 1, sizeof(block));
	for (size_t off = 0; off < size; off += sizeof(block))
		ck_assert_int_eq(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
	const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	close(fd);
	ck_assert_msg(page_mapped(map) >= 0, "cannot read /proc/self/pagemap (a kernel without CONFIG_PROC_PAGE_MONITOR?)");
	ck_assert_msg(page_mapped(map) == 0, "a page mapped before anything read it");
	struct perf_ahead *a = perf_ahead_start(map, size, 0);
	ck_assert_ptr_nonnull(a);
	/* 8 MB ahead of offset 0, not further. */
	ck_assert_int_eq(wait_mapped(map + (7u << 20), 1), 1);
	ck_assert_int_eq(wait_mapped(map, 1), 1);
	ck_assert_int_eq(page_mapped(map + (10u << 20)), 0);
	/* Done with the first 5 MB: the pieces below go, the one holding
	 * 5 MB stays, and so does what is after it. */
	if (perf_ahead_release(a, 5u << 20) == 0) {
		ck_assert_int_eq(wait_mapped(map, 0), 0);
		ck_assert_int_eq(wait_mapped(map + (3u << 20) - 4096, 0), 0);
	} else {
		/* It left after mapping its first 8 MB: nothing given back
		 * before the stop, and nothing more mapped. */
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		ck_assert_int_eq(page_mapped(map), 1);
		perf_ahead_at(a, 4u << 20);
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		ck_assert_int_eq(page_mapped(map + (10u << 20)), 0);
	}
	ck_assert_int_eq(page_mapped(map + (6u << 20) + 4096), 1);
	ck_assert_int_eq(page_mapped(map + (7u << 20)), 1);
	perf_ahead_stop(a);
	for (size_t off = 0; off < size; off += 1u << 20)
		ck_assert_msg(page_mapped(map + off) == 0, "page at %zu MB still mapped after the stop", off >> 20);
	munmap((void *)map, size);
}
END_TEST

static int read_bytes(const void *p, size_t n, char *err, size_t errlen, struct got *g, struct su_reader_stats *st)
{
	struct buf f = { 0 };
	put(&f, p, n);
	int const rc = read_image(&f, g, st, err, errlen);
	free(f.b);
	return rc;
}

START_TEST(t_not_perf_data)
{
	struct got g;
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_lt(read_bytes("PERFILE", 7, err, sizeof(err), &g, &st), 0);
	ck_assert_msg(strstr(err, "img: not a perf.data file") != NULL, "%s", err);
	char zeros[200] = { 0 };
	ck_assert_int_lt(read_bytes(zeros, sizeof(zeros), err, sizeof(err), &g, &st), 0);
	ck_assert_msg(strstr(err, "no PERFILE2 magic") != NULL, "%s", err);
	ck_assert_int_eq(g.samples + g.processes + g.ends, 0);
}
END_TEST

/* perf record -o -: the 16-byte header, then the header's parts as
 * records -- HEADER_ATTR (the attribute and its ids: none), HEADER_FEATURE
 * (OSRELEASE; EVENT_DESC naming the event NAME when not NULL), tracing
 * data (TRACING_BYTES of payload after its record, outside its size) --
 * then DATA's records. */
static struct buf pipe_of(const struct buf *data, uint64_t sample_type, const char *name, uint32_t tracing_bytes)
{
	struct buf f = { 0 };
	put64(&f, 0x32454c4946524550ull); /* "PERFILE2" */
	put64(&f, 16);
	size_t at = rec_begin(&f, 64, 0); /* HEADER_ATTR */
	put_attr(&f, sample_type, SAMPLE_ID_ALL);
	rec_end(&f, at);
	at = rec_begin(&f, 80, 0); /* HEADER_FEATURE */
	put64(&f, 4);              /* HEADER_OSRELEASE */
	put32(&f, 16);
	put(&f, "6.1.0-test\0\0\0\0\0", 16);
	rec_end(&f, at);
	if (name) {
		/* A file's section (after a header and its 16-byte index entry). */
		struct buf e = { 0 };
		uint8_t header[104] = { 0 };
		put(&e, header, sizeof(header));
		add_event_desc(&e, name, 0);
		at = rec_begin(&f, 80, 0);
		put64(&f, 12); /* HEADER_EVENT_DESC */
		put(&f, e.b + 104 + 16, e.n - 104 - 16);
		rec_end(&f, at);
		free(e.b);
	}
	if (tracing_bytes) {
		at = rec_begin(&f, 66, 0); /* HEADER_TRACING_DATA: u32 size, then the data */
		put32(&f, tracing_bytes);
		rec_end(&f, at);
		for (uint32_t i = 0; i < (tracing_bytes + 7) / 8; i++)
			put64(&f, 0x0900000000000000ull | i); /* would read as records if not skipped */
	}
	put(&f, data->b, data->n);
	return f;
}

/* A pipe-mode perf.data read from a file: what the same records give in
 * file mode, in time order, the event named by its HEADER_FEATURE. */
START_TEST(t_pipe_mode)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = pipe_of(&d, TYPICAL, "page-faults", 100);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	int const rc = read_image(&f, &g, &st, err, sizeof(err));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_int_eq(g.processes, 1);
	ck_assert_str_eq(g.comm[0], "prog");
	ck_assert_int_eq(g.maps, 1);
	ck_assert_str_eq(g.path[0], "/nonexistent/prog");
	ck_assert_int_eq(g.samples, 3);
	uint64_t const times[3] = { 200, 300, 400 }, w0[3] = { 0xb0, 0xa0, 0xc0 };
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(g.time[i], times[i]);
		ck_assert_uint_eq(g.word0[i], w0[i]);
		ck_assert_uint_eq(g.nwords[i], 4);
		ck_assert_str_eq(g.event[i], "page-faults");
	}
	ck_assert_int_eq(g.ends, 1);
	ck_assert_int_eq(st.truncated_files, 0);
	/* No attribute before the records: not a stream perf wrote. */
	struct buf bare = { 0 };
	put64(&bare, 0x32454c4946524550ull);
	put64(&bare, 16);
	put(&bare, d.b, d.n);
	ck_assert_int_eq(read_image(&bare, &g, &st, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "img: no event attribute before the first record"), "%s", err);
	ck_assert_int_eq(g.samples, 0);
	/* An attribute record too short for its attr. */
	struct buf bad = { 0 };
	put(&bad, f.b, 16 + 8 + 64);
	set16(&bad, 16 + 6, 8 + 64);
	bad.b[16 + 8 + 4] = (uint8_t)ATTR_BYTES; /* attr.size says 128 */
	ck_assert_int_eq(read_image(&bad, &g, &st, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "damaged event attribute record"), "%s", err);
	free(bad.b);
	free(bare.b);
	free(d.b);
	free(f.b);
}
END_TEST

/* F written into a pipe by a child process, the reader at its other end
 * (as `perf record -o - | stackunwind folded -`). */
static int read_piped(const struct buf *f, struct got *g, struct su_reader_stats *st, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t const child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(p[0]);
		size_t off = 0;
		while (off < f->n) {
			/* Uneven writes: records cut across reads. */
			size_t const n = f->n - off < 4099 ? f->n - off : 4099;
			ssize_t const w = write(p[1], f->b + off, n);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(p[1]);
	struct su_reader_callbacks cb = { .arg = g, .process_start = on_process, .maps = on_maps, .sample = on_sample, .end = on_end };
	int const rc = su_perf_data_read_fd(p[0], "pipe", NULL, &cb, st, err, errlen);
	close(p[0]);
	int status;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	return rc;
}

/* From a pipe: more than one 4 MB read (records and the tracing data's
 * payload cut across them), rounds out of order, every sample delivered
 * in time order; a stream cut inside a record gives what came before and
 * says it was cut; a file-mode perf.data on a pipe is refused, saying why. */
START_TEST(t_pipe_stream)
{
	struct buf d = { 0 };
	rec_comm(&d, 100, "prog", 10);
	rec_mmap2(&d, 100, 0x400000, 0x2000, 0x1000, "/nonexistent/prog", 20);
	int n = 0;
	size_t last = 0;
	while (d.n < (9u << 20)) {
		/* each round of 100 in reverse time order */
		last = d.n;
		rec_sample(&d, 100, 1000000 + 1000 * (uint64_t)(n / 100) - (uint64_t)(n % 100), 0x400100, 0x7ff000,
			   (uint64_t)n);
		if (++n % 100 == 0)
			rec_round(&d);
	}
	struct buf f = pipe_of(&d, TYPICAL, NULL, (4u << 20) + 12345);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	int rc = read_piped(&f, &g, &st, err, sizeof(err));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_int_eq(g.samples, n);
	ck_assert_uint_eq(st.samples, (uint64_t)n);
	ck_assert_uint_eq(st.bytes_on_disk, f.n);
	for (int i = 1; i < 16; i++)
		ck_assert_uint_gt(g.time[i], g.time[i - 1]);
	ck_assert_uint_eq(g.word0[0], 99); /* the first round's last: its earliest */
	ck_assert_int_eq(g.ends, 1);
	/* Cut 20 bytes into the last sample. */
	struct buf cut = { 0 };
	put(&cut, f.b, f.n - d.n + last + 20);
	rc = read_piped(&cut, &g, &st, err, sizeof(err));
	ck_assert_int_gt(rc, 0);
	ck_assert_int_eq(g.samples, n - 1);
	ck_assert_int_eq(st.truncated_files, 1);
	free(cut.b);
	/* File mode cannot be read front to back. */
	struct buf small = { 0 };
	typical(&small);
	struct buf file = file_of(&small, TYPICAL, SAMPLE_ID_ALL);
	ck_assert_int_eq(read_piped(&file, &g, &st, err, sizeof(err)), -ESPIPE);
	ck_assert_msg(strstr(err, "pipe: a perf.data file (not pipe mode") && strstr(err, "path"), "%s", err);
	ck_assert_int_eq(g.samples, 0);
	free(small.b);
	free(file.b);
	free(d.b);
	free(f.b);
}
END_TEST

/* perf record --threads: DIR/data (header, attribute, its data section
 * with COMM and MMAP2, the HEADER_DIR_FORMAT feature bit) and DIR/data.0,
 * DIR/data.1 holding samples whose times interleave across the files (and
 * a FINISHED_ROUND in one, which must not flush the other's): every sample
 * delivered in time order; a data.N cut inside a record gives the rest and
 * says so. */
static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

/* DIR and the files the tests write in it. */
static void rm_dir(const char *dir)
{
	char path[512];
	for (const char *const *n = (const char *const[]){ "data", "data.0", "data.1", NULL }; *n; n++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *n);
		unlink(path);
	}
	rmdir(dir);
}

static int read_dir(const char *dir, struct got *g, struct su_reader_stats *st, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	struct su_reader_callbacks cb = { .arg = g, .process_start = on_process, .maps = on_maps, .sample = on_sample, .end = on_end };
	return su_perf_data_read(dir, NULL, &cb, st, err, errlen);
}

START_TEST(t_dir_format)
{
	char dir[] = "/tmp/test-perf-dir.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct buf d = { 0 }, d0 = { 0 }, d1 = { 0 };
	rec_comm(&d, 100, "prog", 10);
	rec_mmap2(&d, 100, 0x400000, 0x2000, 0x1000, "/nonexistent/prog", 20);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	f.b[72 + 24 / 8] |= 1u << (24 % 8); /* HEADER_DIR_FORMAT */
	put64(&f, f.n + 16);                 /* its section: a u64 version */
	put64(&f, 8);
	put64(&f, 1);
	static const uint64_t t0[] = { 300, 100, 500, 700 }, t1[] = { 200, 600, 400, 800 };
	for (int i = 0; i < 4; i++) {
		rec_sample(&d0, 100, t0[i], 0x400100, 0x7ff000, t0[i]);
		rec_sample(&d1, 100, t1[i], 0x400100, 0x7ff000, t1[i]);
		if (i == 1 || i == 2) /* the second would flush 100 and 300 before data.1's 200 */
			rec_round(&d0);
	}
	write_file(dir, "data", f.b, f.n);
	write_file(dir, "data.0", d0.b, d0.n);
	write_file(dir, "data.1", d1.b, d1.n);
	ck_assert(su_perf_data_probe(dir));
	struct got g;
	struct su_reader_stats st;
	char err[256];
	int rc = read_dir(dir, &g, &st, err, sizeof(err));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_int_eq(g.processes, 1);
	ck_assert_int_eq(g.samples, 8);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_eq(g.time[i], 100 * (uint64_t)(i + 1));
		ck_assert_uint_eq(g.word0[i], 100 * (uint64_t)(i + 1));
	}
	ck_assert_uint_eq(st.bytes_on_disk, f.n + d0.n + d1.n);
	ck_assert_int_eq(g.ends, 1);
	/* data.1 cut inside its last sample. */
	write_file(dir, "data.1", d1.b, d1.n - 20);
	rc = read_dir(dir, &g, &st, err, sizeof(err));
	ck_assert_int_gt(rc, 0);
	ck_assert_int_eq(g.samples, 7);
	ck_assert_int_eq(st.truncated_files, 1);
	/* perf killed before writing its features (data size 0, no
	 * HEADER_DIR_FORMAT): the data.N beside are read all the same. */
	write_file(dir, "data.1", d1.b, d1.n);
	memset(f.b + 48, 0, 8);
	f.n -= 16 + 8; /* no feature section */
	write_file(dir, "data", f.b, f.n);
	rc = read_dir(dir, &g, &st, err, sizeof(err));
	ck_assert_int_gt(rc, 0); /* "data size is 0": read to the end */
	ck_assert_int_eq(g.processes, 1);
	ck_assert_int_eq(g.samples, 8);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(g.time[i], 100 * (uint64_t)(i + 1));
	rm_dir(dir);
	free(d.b);
	free(d0.b);
	free(d1.b);
	free(f.b);
}
END_TEST

/* perf_run_dir: samples delivered as they are read, in time order. */
struct merged {
	const struct su_reader_stats *st;
	uint64_t n, last, backwards, read_at_first;
};

static int merged_sample(void *arg, const struct su_sample *s)
{
	struct merged *m = arg;
	if (m->n++ == 0)
		m->read_at_first = m->st->bytes_read;
	if (s->time_ns < m->last)
		m->backwards++;
	m->last = s->time_ns;
	return 0;
}

static void merged_warn(void *arg, const char *msg)
{
	snprintf(arg, 256, "%s", msg);
}

static int read_merged(const char *dir, struct merged *m, struct su_reader_stats *st, char *warned)
{
	memset(m, 0, sizeof(*m));
	m->st = st;
	warned[0] = 0;
	struct su_reader_opts o = { .warn = { merged_warn, warned } };
	struct su_reader_callbacks cb = { .arg = m, .sample = merged_sample };
	char err[256];
	int const rc = su_perf_data_read(dir, &o, &cb, st, err, sizeof(err));
	ck_assert_msg(rc >= 0, "rc %d: %s", rc, err);
	return rc;
}

/* A directory read in steps of time: two files of 3000 samples over 6 s
 * merged in time order, the first sample delivered before the files were
 * read to their end (the recording's events are not all held); a file a
 * little out of order (0.3 ms) still in order; one far out of order told. */
START_TEST(t_dir_merge_steps)
{
	char dir[] = "/tmp/test-perf-dir.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct buf d = { 0 }, d0 = { 0 }, d1 = { 0 }, d1s = { 0 }, d0f = { 0 };
	rec_comm(&d, 100, "prog", 10);
	rec_mmap2(&d, 100, 0x400000, 0x2000, 0x1000, "/nonexistent/prog", 20);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	uint64_t const ms = 1000000;
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t const t0 = (2 * i + 2) * ms, t1 = (2 * i + 1) * ms;
		rec_sample(&d0, 100, t0, 0x400100, 0x7ff000, i);
		rec_sample(&d1, 100, t1, 0x400100, 0x7ff000, i);
		/* One sample 0.3 ms before the one ahead of it. */
		rec_sample(&d1s, 100, i == 1500 ? t1 + 3 * ms / 2 : i == 1501 ? t1 - 8 * ms / 10 : t1, 0x400100,
			   0x7ff000, i);
		/* 3 s before it, long after that time was delivered. */
		rec_sample(&d0f, 100, i == 2000 ? t0 - 3000 * ms : t0, 0x400100, 0x7ff000, i);
	}
	write_file(dir, "data", f.b, f.n);
	write_file(dir, "data.0", d0.b, d0.n);
	write_file(dir, "data.1", d1.b, d1.n);
	struct merged m;
	struct su_reader_stats st;
	char warned[256];
	ck_assert_int_eq(read_merged(dir, &m, &st, warned), 0);
	ck_assert_uint_eq(m.n, 6000);
	ck_assert_uint_eq(m.backwards, 0);
	ck_assert_msg(m.read_at_first < (d0.n + d1.n) / 2, "first sample delivered at %" PRIu64 " of %zu bytes",
		      m.read_at_first, f.n + d0.n + d1.n);
	ck_assert_str_eq(warned, "");
	write_file(dir, "data.1", d1s.b, d1s.n);
	ck_assert_int_eq(read_merged(dir, &m, &st, warned), 0);
	ck_assert_uint_eq(m.n, 6000);
	ck_assert_uint_eq(m.backwards, 0);
	ck_assert_str_eq(warned, "");
	write_file(dir, "data.1", d1.b, d1.n);
	write_file(dir, "data.0", d0f.b, d0f.n);
	ck_assert_int_eq(read_merged(dir, &m, &st, warned), 0);
	ck_assert_uint_eq(m.n, 6000);
	ck_assert_uint_eq(m.backwards, 1);
	ck_assert_msg(strstr(warned, "1 events came after later ones had been delivered"), "%s", warned);
	rm_dir(dir);
	free(d.b);
	free(d0.b);
	free(d1.b);
	free(d1s.b);
	free(d0f.b);
	free(f.b);
}
END_TEST

/* A header cut inside: the file is shorter than its header. */
START_TEST(t_cut_header)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_lt(read_bytes(f.b, 60, err, sizeof(err), &g, &st), 0);
	ck_assert_msg(strstr(err, "bad perf.data header") != NULL, "%s", err);
	/* Attributes beyond the end of the file. */
	ck_assert_int_lt(read_bytes(f.b, 150, err, sizeof(err), &g, &st), 0);
	ck_assert_msg(strstr(err, "bad ") != NULL, "%s", err);
	free(d.b);
	free(f.b);
}
END_TEST

START_TEST(t_bad_attr_size)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	uint64_t const odd = 50; /* smaller than any perf_event_attr */
	memcpy(f.b + 16, &odd, 8);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_eq(read_image(&f, &g, &st, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "bad attribute section (entry size 50") != NULL, "%s", err);
	free(d.b);
	free(f.b);
}
END_TEST

START_TEST(t_no_call_graph)
{
	struct buf d = { 0 };
	struct buf f = file_of(&d, S_IP | S_TID | S_TIME, SAMPLE_ID_ALL);
	struct got g;
	struct su_reader_stats st;
	char err[512];
	ck_assert_int_eq(read_image(&f, &g, &st, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "recorded without call graphs: its samples hold IP|TID|TIME") &&
			      strstr(err, "--call-graph dwarf"),
		      "%s", err);
	free(f.b);
}
END_TEST

/* The data section cut in the last sample: the samples before it are
 * read, the file counted as cut, the return positive. */
START_TEST(t_cut_data)
{
	struct buf d = { 0 };
	typical(&d);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_gt(read_bytes(f.b, f.n - 20, err, sizeof(err), &g, &st), 0);
	ck_assert_int_eq(g.samples, 2);
	ck_assert_int_eq(st.truncated_files, 1);
	ck_assert_int_eq(g.ends, 1);
	free(d.b);
	free(f.b);
}
END_TEST

/* A record whose size is below its header's: the rest of the data section
 * is ignored, what came before is delivered. */
START_TEST(t_damaged_record)
{
	struct buf d = { 0 };
	rec_comm(&d, 100, "prog", 10);
	rec_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/prog", 20);
	rec_sample(&d, 100, 300, 0x400100, 0x7ff000, 0xa0);
	size_t const at = d.n;
	rec_sample(&d, 100, 400, 0x400200, 0x7ff000, 0xb0);
	set16(&d, at + 6, 4);
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_gt(read_image(&f, &g, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(g.samples, 1);
	ck_assert_uint_eq(g.time[0], 300);
	ck_assert_int_eq(st.truncated_files, 1);
	free(d.b);
	free(f.b);
}
END_TEST

/* A sample whose stack claims more bytes than the record holds: skipped
 * and counted, the others delivered. */
START_TEST(t_bad_sample)
{
	struct buf d = { 0 };
	typical(&d);
	size_t const at = d.n;
	rec_sample(&d, 100, 500, 0x400100, 0x7ff000, 0xd0);
	uint64_t const huge = 1u << 20;
	memcpy(d.b + at + 8 + 24 + 8 + 24, &huge, 8); /* the stack's size */
	struct buf f = file_of(&d, TYPICAL, SAMPLE_ID_ALL);
	struct got g;
	struct su_reader_stats st;
	char err[256];
	ck_assert_int_gt(read_image(&f, &g, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(g.samples, 3);
	ck_assert_uint_eq(st.bad_blobs, 1);
	free(d.b);
	free(f.b);
}
END_TEST

/* The live stream (stackcap record's kernel sampler): the same records fed
 * in memory, rounds told by the caller; a sample's kernel call chain
 * (exclude_callchain_user) is delivered innermost first. */
START_TEST(t_live_stream_kernel_chain)
{
	struct buf a = { 0 };
	put_attr(&a, TYPICAL | S_CALLCHAIN, SAMPLE_ID_ALL | EXCLUDE_CALLCHAIN_USER);
	struct buf d = { 0 };
	rec_comm(&d, 100, "prog", 10);
	rec_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/prog", 20);
	uint64_t const chain[4] = { (uint64_t)-128 /* PERF_CONTEXT_KERNEL */, 0xffffffff81000010ull,
				    0xffffffff81000020ull, 0xffffffff81000030ull };
	rec_sample_chain(&d, 100, 300, 0x400100, 0x7ff000, 0xa0, chain, 4);
	struct got g = { 0 };
	struct su_reader_callbacks cb = { .arg = &g, .process_start = on_process, .maps = on_maps, .sample = on_sample, .end = on_end };
	struct su_perf_stream_callbacks const live = { 0 };
	struct su_reader_stats st;
	struct su_perf_stream *s;
	ck_assert_int_eq(su_perf_stream_new(a.b, a.n, &cb, &live, &st, &s), 0);
	ck_assert_int_eq(su_perf_stream_feed(s, d.b, d.n), 0);
	ck_assert_int_eq(su_perf_stream_round(s), 0);
	ck_assert_int_eq(g.samples, 0); /* held for the next round */
	ck_assert_int_eq(su_perf_stream_end(s), 0);
	ck_assert_int_eq(g.samples, 1);
	ck_assert_uint_eq(g.pc[0], 0x400100);
	ck_assert_uint_eq(g.n_kernel[0], 3);
	for (int k = 0; k < 3; k++)
		ck_assert_uint_eq(g.kernel[0][k], chain[k + 1]);
	ck_assert_int_eq(g.ends, 1);
	/* A record cut short is refused. */
	ck_assert_int_eq(su_perf_stream_feed(s, d.b, 12), -EINVAL);
	su_perf_stream_free(s);
	free(a.b);
	free(d.b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("perf-data");
	TCase *tc = tcase_create("perf-data");
	tcase_add_test(tc, t_typical);
	tcase_add_test(tc, t_stop_before_free);
	tcase_add_test(tc, t_round_order);
	tcase_add_test(tc, t_round_runs);
	tcase_add_test(tc, t_map_ahead);
	tcase_add_test(tc, t_regs_each);
	tcase_add_test(tc, t_ahead_gives_back);
	tcase_add_test(tc, t_not_perf_data);
	tcase_add_test(tc, t_pipe_mode);
	tcase_add_test(tc, t_pipe_stream);
	tcase_add_test(tc, t_dir_format);
	tcase_add_test(tc, t_dir_merge_steps);
	tcase_add_test(tc, t_cut_header);
	tcase_add_test(tc, t_bad_attr_size);
	tcase_add_test(tc, t_no_call_graph);
	tcase_add_test(tc, t_cut_data);
	tcase_add_test(tc, t_damaged_record);
	tcase_add_test(tc, t_bad_sample);
	tcase_add_test(tc, t_live_stream_kernel_chain);
	tcase_add_test(tc, t_event_desc);
	tcase_add_test(tc, t_hit_files);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(suite)
