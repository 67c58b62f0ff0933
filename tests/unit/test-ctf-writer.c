/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of capture/ctf-writer: every trace written here is read back
 * by the real babeltrace2 CLI, whose output must show exactly the events,
 * field values and timestamps written.  A test that needs babeltrace2 and
 * does not find it fails (never skips): apt-get install babeltrace2.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "capture/ctf-writer.h"
#include "common/zstd-frame.h"
#include "tests/unit/check-main.h"

#define TS27 (UINT64_C(1) << 27)
#define SAMPLE_BYTES(len) (4u + 3u + 3u + (len)) /* compact header + fields */
#define PKT_HDR 80u

/* ---- small helpers ------------------------------------------------------- */

struct sb { char *p; size_t n, cap; }; /* growable string */

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		ck_assert_int_ge(n, 0);
		if (b->p && (size_t)n < b->cap - b->n) {
			b->n += (size_t)n;
			return;
		}
		b->cap = 2 * (b->cap + (size_t)n + 64);
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	return s;
}

static char *new_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *t = xasprintf("%s/stackcap-ctf-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_msg(mkdtemp(t) != NULL, "mkdtemp: %s", strerror(errno));
	return t;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	remove(path);
	return 0;
}

static void rm_rf(char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
	struct sb b = { 0 };
	char chunk[65536];
	size_t n;
	sb_printf(&b, "%s", "");
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (b.n + n + 1 > b.cap) {
			b.cap = 2 * (b.n + n + 1);
			b.p = realloc(b.p, b.cap);
			ck_assert_ptr_nonnull(b.p);
		}
		memcpy(b.p + b.n, chunk, n);
		b.n += n;
		b.p[b.n] = 0;
	}
	fclose(f);
	*len = b.n;
	return b.p;
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	ck_assert_msg(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	return (uint64_t)st.st_size;
}

/* Run a shell command, return its stdout; *status gets the exit code. */
static char *run(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	ck_assert_msg(p != NULL, "popen %s: %s", cmd, strerror(errno));
	struct sb b = { 0 };
	sb_printf(&b, "%s", "");
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
		sb_printf(&b, "%.*s", (int)n, chunk);
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return b.p;
}

static void need_babeltrace(void)
{
	int st;
	free(run("babeltrace2 --version 2>&1", &st));
	ck_assert_msg(st == 0, "babeltrace2 CLI not found: apt-get install babeltrace2");
}

/* ---- babeltrace2 output -------------------------------------------------- */

struct ev {
	uint64_t ts;            /* clock value in cycles = ns */
	char name[32];
	uint32_t pid, tid;      /* packet context */
	const char *payload;    /* "{ ... }", points into bt.out */
};

struct bt {
	char *out, *err;
	struct ev *ev;
	size_t n;
};

/* Run babeltrace2's pretty printer with raw clock values, demand exit 0,
 * parse one event per line:
 *   [00000000000000001000] name: { pid = 1, tid = 0 }, { payload } */
static void bt_read(const char *dir, struct bt *bt)
{
	need_babeltrace();
	memset(bt, 0, sizeof *bt);
	char *errpath = xasprintf("%s.stderr", dir);
	char *cmd = xasprintf("babeltrace2 --clock-cycles --no-delta '%s' 2>'%s'", dir, errpath);
	int st;
	bt->out = run(cmd, &st);
	size_t len;
	bt->err = read_file(errpath, &len);
	unlink(errpath);
	ck_assert_msg(st == 0, "babeltrace2 exit %d on %s: %s", st, dir, bt->err);
	size_t cap = 0;
	for (char *line = bt->out, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		struct ev e = { 0 };
		int off = 0;
		ck_assert_msg(sscanf(line, "[%" SCNu64 "] %31[^:]: { pid = %" SCNu32 ", tid = %" SCNu32 " }, %n",
				     &e.ts, e.name, &e.pid, &e.tid, &off) == 4 && off > 0,
			      "unexpected babeltrace2 line: %.200s", line);
		e.payload = line + off;
		if (bt->n == cap) {
			cap = cap ? 2 * cap : 64;
			bt->ev = realloc(bt->ev, cap * sizeof *bt->ev);
			ck_assert_ptr_nonnull(bt->ev);
		}
		bt->ev[bt->n++] = e;
	}
	free(cmd);
	free(errpath);
}

static void bt_free(struct bt *bt)
{
	free(bt->out);
	free(bt->err);
	free(bt->ev);
}

/* The events called `name` of one (pid, tid), in stream order. */
static size_t bt_select(const struct bt *bt, const char *name, uint32_t pid, uint32_t tid,
			const struct ev **out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < bt->n; i++)
		if (!strcmp(bt->ev[i].name, name) && bt->ev[i].pid == pid && bt->ev[i].tid == tid) {
			if (k < max)
				out[k] = &bt->ev[i];
			k++;
		}
	return k;
}

struct pkt { unsigned cls; uint32_t pid, tid; };

/* The packets babeltrace2 sees (sink.text.details), in message order. */
static size_t bt_packets(const char *dir, struct pkt *out, size_t max)
{
	need_babeltrace();
	char *cmd = xasprintf("babeltrace2 '%s' -c sink.text.details --params="
			      "'with-metadata=no,color=\"never\",with-trace-name=no,"
			      "with-stream-name=no,with-uuid=no' 2>&1", dir);
	int st;
	char *o = run(cmd, &st);
	ck_assert_msg(st == 0, "babeltrace2 details exit %d: %s", st, o);
	size_t k = 0;
	unsigned cls = 99;
	for (char *p = o; (p = strstr(p, "Stream class ID ")); p++) {
		cls = (unsigned)strtoul(p + 16, NULL, 10);
		char *nl = strchr(p, '\n');
		if (!nl || strncmp(nl + 1, "Packet beginning:", 17))
			continue;
		struct pkt pk = { cls, 0, 0 };
		char *c = strstr(nl, "    pid: "), *t = strstr(nl, "    tid: ");
		ck_assert(c && t);
		pk.pid = (uint32_t)strtoul(c + 9, NULL, 10);
		pk.tid = (uint32_t)strtoul(t + 9, NULL, 10);
		if (k < max)
			out[k] = pk;
		k++;
	}
	free(o);
	free(cmd);
	return k;
}

/* ---- expected payload text ----------------------------------------------- */

static void blob_fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void bytes_text(struct sb *b, const uint8_t *p, size_t len)
{
	if (!len) {
		sb_printf(b, "[ ]");
		return;
	}
	sb_printf(b, "[ ");
	for (size_t i = 0; i < len; i++)
		sb_printf(b, "%s[%zu] = %u", i ? ", " : "", i, p[i]);
	sb_printf(b, " ]");
}

static char *sample_text(uint32_t gen, const uint8_t *blob, size_t len)
{
	struct sb b = { 0 };
	sb_printf(&b, "{ generation = %" PRIu32 ", blob_length = %zu, blob = ", gen, len);
	bytes_text(&b, blob, len);
	sb_printf(&b, " }");
	return b.p;
}

static char *maps_text(uint32_t gen, const struct ctf_map_entry *e, size_t n)
{
	struct sb b = { 0 };
	sb_printf(&b, "{ generation = %" PRIu32 ", entries_length = %zu, entries = %s", gen, n, n ? "[ " : "[ ]");
	for (size_t i = 0; i < n; i++) {
		sb_printf(&b, "%s[%zu] = { start = %" PRIu64 ", end = %" PRIu64 ", offset = %" PRIu64
			  ", bias = %" PRIu64 ", flags = %u, build_id_length = %u, build_id = ",
			  i ? ", " : "", i, e[i].start, e[i].end, e[i].offset, e[i].bias,
			  e[i].flags, e[i].build_id_len);
		bytes_text(&b, e[i].build_id, e[i].build_id_len);
		sb_printf(&b, ", path = \"%s\" }", e[i].path);
	}
	sb_printf(&b, "%s }", n ? " ]" : "");
	return b.p;
}

#define ck_payload(ev, expected)                                                  \
	do {                                                                      \
		char *exp_ = (expected);                                          \
		ck_assert_msg(!strcmp((ev)->payload, exp_),                       \
			      "payload mismatch:\n got %.300s\nwant %.300s", (ev)->payload, exp_); \
		free(exp_);                                                       \
	} while (0)

/* ---- a reference trace ----------------------------------------------------- */

static const uint8_t test_uuid[16] = { 0x5c, 0x1f, 0xc0, 0xde, 1, 2, 0x43, 4, 0x85, 6, 7, 8, 9, 10, 11, 12 };
#define TEST_OFFSET_NS INT64_C(1700000000123456789)

static struct ctf_writer *open_writer(const char *dir, int zstd, size_t packet_size)
{
	struct ctf_writer_opts o = { .sz = sizeof o, .zstd = zstd, .zstd_level = 3,
				     .packet_size = packet_size, .clock_offset_ns = TEST_OFFSET_NS };
	memcpy(o.uuid, test_uuid, 16);
	struct ctf_writer *w = NULL;
	int rc = ctf_writer_open(dir, &o, &w);
	ck_assert_msg(rc == 0, "ctf_writer_open(%s): %s", dir, strerror(-rc));
	return w;
}

static const uint8_t bid_a[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xff };
static const uint8_t bid_b[8] = { 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89 };
static const struct ctf_map_entry ref_maps[3] = {
	{ 0x555555554000ull, 0x555555580000ull, 0x1000, 0x555555553000ull, CTF_MAP_MAIN, 20, bid_a, "/usr/bin/demo" },
	{ 0x7f0000100000ull, 0x7f0000300000ull, 0x28000, 0x7f00000d8000ull, 0, 8, bid_b, "/usr/lib/x86_64-linux-gnu/libc.so.6" },
	{ 0x7ffff7fc1000ull, 0x7ffff7fc3000ull, 0, 0x7ffff7fc1000ull, CTF_MAP_VDSO, 0, NULL, "[vdso]" },
};
static const struct ctf_process_info ref_info = {
	.pid = 4242, .ppid = 1, .comm = "demo", .exe = "/usr/bin/demo",
	.clock_offset_ns = TEST_OFFSET_NS, .frequency_hz = 99, .stack_cap = 65536,
	.policy = 2, .codec_version = 1,
};
/* Samples of the reference trace: tid 11 x5, tid 12 x5, tid 11 x2. */
#define REF_SAMPLES 12
static uint32_t ref_tid(int i) { return i < 5 ? 11 : i < 10 ? 12 : 11; }
static uint64_t ref_ts(int i) { return 5000000 + (uint64_t)i * 10101010; }
static size_t ref_len(int i) { return (size_t)(i * 13) % 90; }

static void copy_file(const char *from, const char *to)
{
	int st;
	char *cmd = xasprintf("cp '%s' '%s'", from, to);
	free(run(cmd, &st));
	ck_assert_int_eq(st, 0);
	free(cmd);
}

/* The reference trace; with SNAP, the sample stream synced after every
 * sample and its file copied into directory SNAP (with the metadata)
 * after the third, while its packet is still open. */
static void write_ref_trace_synced(const char *dir, int zstd, size_t packet_size, const char *snap)
{
	struct ctf_writer *w = open_writer(dir, zstd, packet_size);
	struct ctf_stream *p, *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_PROCESS, "proc-4242-0", 4242, &p), 0);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-4242-0", 4242, &s), 0);
	ck_assert_int_eq(ctf_stream_process_start(p, 1000, &ref_info), 0);
	ck_assert_int_eq(ctf_stream_maps(p, 2000, 1, ref_maps, 3), 0);
	for (int i = 0; i < REF_SAMPLES; i++) {
		uint8_t blob[100];
		blob_fill(blob, ref_len(i), (unsigned)i);
		ck_assert_int_eq(ctf_stream_sample(s, ref_ts(i), ref_tid(i), (uint32_t)i % 3, blob, ref_len(i)), 0);
		if (snap)
			ck_assert_int_eq(ctf_stream_sync(s), 0);
		if (snap && i == 2) {
			const char *z = zstd ? ".zst" : "";
			ck_assert_int_eq(mkdir(snap, 0755), 0);
			char *a = xasprintf("%s/samples-4242-0%s", dir, z), *b = xasprintf("%s/samples-4242-0%s", snap, z);
			char *ma = xasprintf("%s/metadata", dir), *mb = xasprintf("%s/metadata", snap);
			copy_file(a, b);
			copy_file(ma, mb);
			free(a);
			free(b);
			free(ma);
			free(mb);
		}
	}
	struct ctf_drops d = { .tid = 12, .ring_full = 5, .nested = 6, .no_stack_bounds = 7, .other = UINT64_MAX };
	ck_assert_int_eq(ctf_stream_drops(p, ref_ts(REF_SAMPLES), &d), 0);
	ck_assert_int_eq(ctf_stream_process_end(p, ref_ts(REF_SAMPLES) + 1, REF_SAMPLES, 18), 0);
	ck_assert_int_eq(ctf_stream_close(s), 0);
	ck_assert_int_eq(ctf_writer_close(w), 0); /* closes p */
}

static void write_ref_trace(const char *dir, int zstd, size_t packet_size)
{
	write_ref_trace_synced(dir, zstd, packet_size, NULL);
}

static void check_ref_trace(const char *dir)
{
	struct bt bt;
	const struct ev *e[64];
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, 4 + REF_SAMPLES);

	ck_assert_uint_eq(bt_select(&bt, "process_start", 4242, 0, e, 64), 1);
	ck_assert_uint_eq(e[0]->ts, 1000);
	ck_payload(e[0], xasprintf("{ pid = 4242, ppid = 1, comm = \"demo\", exe = \"/usr/bin/demo\", "
				   "clock_offset_ns = %" PRId64 ", frequency_hz = 99, stack_cap = 65536, "
				   "policy = 2, codec_version = 1 }", TEST_OFFSET_NS));
	ck_assert_uint_eq(bt_select(&bt, "maps", 4242, 0, e, 64), 1);
	ck_assert_uint_eq(e[0]->ts, 2000);
	ck_payload(e[0], maps_text(1, ref_maps, 3));
	ck_assert_uint_eq(bt_select(&bt, "drops", 4242, 0, e, 64), 1);
	ck_assert_uint_eq(e[0]->ts, ref_ts(REF_SAMPLES));
	ck_payload(e[0], xasprintf("{ tid = 12, ring_full = 5, nested = 6, no_stack_bounds = 7, other = %" PRIu64 " }", UINT64_MAX));
	ck_assert_uint_eq(bt_select(&bt, "process_end", 4242, 0, e, 64), 1);
	ck_assert_uint_eq(e[0]->ts, ref_ts(REF_SAMPLES) + 1);
	ck_payload(e[0], xasprintf("{ samples = %d, drops = 18 }", REF_SAMPLES));

	size_t n11 = bt_select(&bt, "sample", 4242, 11, e, 64);
	size_t n12 = bt_select(&bt, "sample", 4242, 12, e + n11, 64 - n11);
	ck_assert_uint_eq(n11, 7);
	ck_assert_uint_eq(n12, 5);
	/* e[] holds tid 11's samples then tid 12's: map back to write order. */
	const int order[REF_SAMPLES] = { 0, 1, 2, 3, 4, 10, 11, 5, 6, 7, 8, 9 };
	for (int k = 0; k < REF_SAMPLES; k++) {
		int i = order[k];
		uint8_t blob[100];
		blob_fill(blob, ref_len(i), (unsigned)i);
		ck_assert_uint_eq(e[k]->ts, ref_ts(i));
		ck_payload(e[k], sample_text((uint32_t)i % 3, blob, ref_len(i)));
	}
	bt_free(&bt);
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(reference_trace_reads_back)
{
	char *dir = new_tmpdir();
	write_ref_trace(dir, 0, 0);
	check_ref_trace(dir);

	/* The clock offset is applied: seconds since the epoch. */
	char *cmd = xasprintf("babeltrace2 --clock-seconds --no-delta '%s' 2>&1 | head -n 1", dir);
	int st;
	char *o = run(cmd, &st);
	ck_assert_msg(!strncmp(o, "[1700000000.123457789] process_start", 36), "got %s", o);
	free(o);
	free(cmd);

	/* The metadata names our format version for readers to check. */
	char *meta = xasprintf("%s/metadata", dir);
	size_t len;
	char *text = read_file(meta, &len);
	ck_assert_ptr_nonnull(strstr(text, "stackcap_trace_version = 1;"));
	ck_assert_ptr_nonnull(strstr(text, "uuid = \"5c1fc0de-0102-4304-8506-0708090a0b0c\";"));
	free(text);
	free(meta);
	rm_rf(dir);
}
END_TEST

START_TEST(tid_switch_starts_packet)
{
	char *dir = new_tmpdir();
	write_ref_trace(dir, 0, 0);
	struct pkt pk[16];
	size_t n = bt_packets(dir, pk, 16);
	/* Process stream: one packet (pid, tid 0).  Samples: 11, 12, 11. */
	ck_assert_uint_eq(n, 4);
	uint32_t want_tid[3] = { 11, 12, 11 };
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(pk[i].pid, 4242);
		if (pk[i].cls == 0) {
			ck_assert_uint_eq(pk[i].tid, 0);
		} else {
			ck_assert_uint_eq(pk[i].cls, 1);
			ck_assert_uint_eq(pk[i].tid, want_tid[k++]);
		}
	}
	ck_assert_uint_eq(k, 3);
	rm_rf(dir);
}
END_TEST

/* Gaps of every kind, in small packets so that many packets start: each
 * timestamp must come back exactly, whatever header it got. */
START_TEST(timestamps_exact)
{
	char *dir = new_tmpdir();
	struct ctf_writer *w = open_writer(dir, 0, 256);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-7-0", 7, &s), 0);
	enum { N = 3000 };
	static uint64_t ts[N];
	static const uint64_t special[] = {
		0, TS27 - 1, TS27, TS27 + 1, 2 * TS27, (UINT64_C(1) << 32) + 3,
		(UINT64_C(1) << 40) + 17, TS27 - 1, TS27 - 1, TS27 - 1, 1,
	};
	uint64_t t = TS27 - 50; /* start near a 27-bit wrap */
	uint32_t rng = 12345;
	for (int i = 0; i < N; i++) {
		if ((size_t)(i % 97) < sizeof special / sizeof special[0])
			t += special[i % 97];
		else {
			rng = rng * 1103515245u + 12345u;
			t += (rng >> 8) % 5000; /* many small gaps, some 0 */
		}
		ts[i] = t;
		uint8_t b = (uint8_t)i;
		ck_assert_int_eq(ctf_stream_sample(s, t, 9, 1, &b, 1), 0);
	}
	ck_assert_int_eq(ctf_writer_close(w), 0);

	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, N);
	for (int i = 0; i < N; i++) {
		ck_assert_msg(bt.ev[i].ts == ts[i], "event %d: ts %" PRIu64 ", wrote %" PRIu64, i, bt.ev[i].ts, ts[i]);
		ck_assert_uint_eq(bt.ev[i].tid, 9);
	}
	bt_free(&bt);
	rm_rf(dir);
}
END_TEST

/* Extended headers only where a 27-bit delta cannot say it, including a
 * packet spanning more than 2^27 ns with compact headers only. */
START_TEST(compact_header_rule)
{
	char *dir = new_tmpdir();
	struct ctf_writer *w = open_writer(dir, 0, 0);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-7-0", 7, &s), 0);
	const uint64_t gaps[] = { 0, 10, TS27 - 1, TS27, 5, TS27 + 1, TS27 - 1, TS27 - 1, 0 };
	const int extended = 2;
	uint64_t t = 123456789;
	for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
		t += gaps[i];
		ck_assert_int_eq(ctf_stream_sample(s, t, 3, 2, NULL, 0), 0);
	}
	/* The first event of a packet is compact whatever the gap: the
	 * packet's timestamp_begin is its timestamp. */
	ck_assert_int_eq(ctf_stream_flush(s), 0);
	ck_assert_int_eq(ctf_stream_sample(s, t + (UINT64_C(1) << 40), 3, 2, NULL, 0), 0);
	ck_assert_int_eq(ctf_writer_close(w), 0);
	char *path = xasprintf("%s/samples-7-0", dir);
	ck_assert_uint_eq(file_size(path), 2 * PKT_HDR + 10 * SAMPLE_BYTES(0) + extended * 9);
	free(path);

	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, 10);
	t = 123456789;
	for (size_t i = 0; i < 9; i++) {
		t += gaps[i];
		ck_assert_uint_eq(bt.ev[i].ts, t);
	}
	ck_assert_uint_eq(bt.ev[9].ts, t + (UINT64_C(1) << 40));
	bt_free(&bt);
	rm_rf(dir);
}
END_TEST

START_TEST(back_in_time_and_bad_args_rejected)
{
	char *dir = new_tmpdir();
	struct ctf_writer *w = open_writer(dir, 0, 256);
	struct ctf_stream *s, *p, *x;
	uint8_t b[4] = { 1, 2, 3, 4 };
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-1-0", 1, &s), 0);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_PROCESS, "proc-1-0", 1, &p), 0);
	ck_assert_int_eq(ctf_stream_sample(s, 1000, 5, 0, b, 4), 0);
	ck_assert_int_eq(ctf_stream_sample(s, 999, 5, 0, b, 4), -EINVAL);
	ck_assert_int_eq(ctf_stream_sample(s, 999, 6, 0, b, 4), -EINVAL); /* no packet switch either */
	ck_assert_int_eq(ctf_stream_sample(s, 1000, 5, 0, b, 4), 0);
	ck_assert_int_eq(ctf_stream_flush(s), 0);
	ck_assert_int_eq(ctf_stream_sample(s, 500, 5, 0, b, 4), -EINVAL); /* across packets */
	ck_assert_int_eq(ctf_stream_sample(s, 2000, 5, 1u << 24, b, 4), -EINVAL);
	ck_assert_int_eq(ctf_stream_sample(s, 2000, 5, 0, b, 1u << 24), -EINVAL);
	ck_assert_int_eq(ctf_stream_sample(p, 2000, 5, 0, b, 4), -EINVAL);     /* wrong kind */
	ck_assert_int_eq(ctf_stream_process_end(s, 2000, 0, 0), -EINVAL);
	struct ctf_map_entry m[2] = { ref_maps[1], ref_maps[0] };              /* unsorted */
	ck_assert_int_eq(ctf_stream_maps(p, 2000, 1, m, 2), -EINVAL);
	ck_assert_int_eq(ctf_stream_process_end(p, 3000, 2, 0), 0);
	ck_assert_int_eq(ctf_stream_process_end(p, 2999, 2, 0), -EINVAL);
	/* Names: plain, unused file names only. */
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-1-0", 1, &x), -EEXIST);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "metadata", 1, &x), -EINVAL);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "../x", 1, &x), -EINVAL);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, ".hidden", 1, &x), -EINVAL);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "", 1, &x), -EINVAL);
	ck_assert_int_eq(ctf_writer_close(w), 0);

	struct ctf_writer_opts o = { .sz = sizeof o, .packet_size = 16 };
	ck_assert_int_eq(ctf_writer_open(dir, &o, &w), -EINVAL);
	ck_assert_int_eq(ctf_zstd_inflate_file("/nonexistent/x.zst", "/nonexistent/x"), -ENOENT);

	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, 3); /* two samples, one process_end */
	bt_free(&bt);
	rm_rf(dir);
}
END_TEST

START_TEST(blob_larger_than_packet)
{
	char *dir = new_tmpdir();
	struct ctf_writer *w = open_writer(dir, 0, 1024);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-2-0", 2, &s), 0);
	static uint8_t big[74000];
	const size_t lens[4] = { 100, sizeof big, 900, sizeof big };
	for (int i = 0; i < 4; i++) {
		blob_fill(big, lens[i], (unsigned)i);
		ck_assert_int_eq(ctf_stream_sample(s, 1000 + (uint64_t)i, 1, 77, big, lens[i]), 0);
	}
	ck_assert_int_eq(ctf_writer_close(w), 0);
	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, 4);
	for (int i = 0; i < 4; i++) {
		blob_fill(big, lens[i], (unsigned)i);
		ck_assert_uint_eq(bt.ev[i].ts, 1000 + (uint64_t)i);
		ck_payload(&bt.ev[i], sample_text(77, big, lens[i]));
	}
	bt_free(&bt);
	rm_rf(dir);
}
END_TEST

START_TEST(maps_with_300_entries)
{
	char *dir = new_tmpdir();
	struct ctf_writer *w = open_writer(dir, 0, 4096);
	struct ctf_stream *p;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_PROCESS, "proc-3-0", 3, &p), 0);
	enum { N = 300 };
	static struct ctf_map_entry e[N];
	static uint8_t bids[N][20];
	static char paths[N][64];
	for (int i = 0; i < N; i++) {
		blob_fill(bids[i], 20, (unsigned)i);
		snprintf(paths[i], sizeof paths[i], "/usr/lib/x86_64-linux-gnu/libtest-%03d.so.1", i);
		e[i] = (struct ctf_map_entry){
			.start = 0x7f0000000000ull + (uint64_t)i * 0x200000, .end = 0x7f0000000000ull + (uint64_t)i * 0x200000 + 0x1000 * (uint64_t)(i + 1),
			.offset = (uint64_t)i * 0x1000, .bias = 0x7f0000000000ull + (uint64_t)i * 0x1ff000,
			.flags = (uint8_t)(i % 8), .build_id_len = (uint8_t)(i % 5 ? 20 : 0),
			.build_id = i % 5 ? bids[i] : NULL, .path = paths[i],
		};
	}
	ck_assert_int_eq(ctf_stream_process_start(p, 10, &ref_info), 0);
	ck_assert_int_eq(ctf_stream_maps(p, 20, 1, e, N), 0);
	ck_assert_int_eq(ctf_stream_maps(p, 30, 2, NULL, 0), 0);
	ck_assert_int_eq(ctf_stream_maps(p, 40, 3, e, 2), 0);
	ck_assert_int_eq(ctf_writer_close(w), 0);

	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, 4);
	ck_assert_uint_eq(bt.ev[1].ts, 20);
	ck_payload(&bt.ev[1], maps_text(1, e, N));
	ck_payload(&bt.ev[2], maps_text(2, NULL, 0));
	ck_payload(&bt.ev[3], maps_text(3, e, 2));
	bt_free(&bt);
	rm_rf(dir);
}
END_TEST

/* Several processes of one recording share the directory and metadata. */
START_TEST(several_writers_share_a_trace)
{
	char *dir = new_tmpdir();
	char *tdir = xasprintf("%s/trace/sub", dir); /* parents created too */
	enum { NPROC = 4, NS = 50 };
	pid_t kids[NPROC];
	for (int k = 0; k < NPROC; k++) {
		kids[k] = fork();
		ck_assert_int_ge(kids[k], 0);
		if (kids[k] == 0) { /* racing writers: each opens its own streams */
			struct ctf_writer_opts o = { .sz = sizeof o, .clock_offset_ns = TEST_OFFSET_NS };
			memcpy(o.uuid, test_uuid, 16);
			struct ctf_writer *w;
			struct ctf_stream *p, *s;
			char name[64];
			uint32_t pid = 100 + (uint32_t)k;
			int rc = ctf_writer_open(tdir, &o, &w);
			snprintf(name, sizeof name, "proc-%u-0", pid);
			rc = rc ? rc : ctf_writer_open_stream(w, CTF_STREAM_PROCESS, name, pid, &p);
			snprintf(name, sizeof name, "samples-%u-0", pid);
			rc = rc ? rc : ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, name, pid, &s);
			struct ctf_process_info info = ref_info;
			info.pid = pid;
			rc = rc ? rc : ctf_stream_process_start(p, 1, &info);
			for (int i = 0; i < NS && !rc; i++) {
				uint8_t b[3] = { (uint8_t)k, (uint8_t)i, 0 };
				rc = ctf_stream_sample(s, 100 + (uint64_t)i * 1000, pid + 1, 0, b, 3);
			}
			rc = rc ? rc : ctf_writer_close(w);
			_exit(rc ? 1 : 0);
		}
	}
	for (int k = 0; k < NPROC; k++) {
		int st;
		ck_assert_int_eq(waitpid(kids[k], &st, 0), kids[k]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", k);
	}
	/* One more writer in this process, then one whose metadata differs. */
	struct ctf_writer *w = open_writer(tdir, 0, 0);
	ck_assert_int_eq(ctf_writer_close(w), 0);
	struct ctf_writer_opts o = { .sz = sizeof o, .clock_offset_ns = TEST_OFFSET_NS + 1 };
	memcpy(o.uuid, test_uuid, 16);
	ck_assert_int_eq(ctf_writer_open(tdir, &o, &w), -EEXIST);

	struct bt bt;
	const struct ev *e[NS + 1];
	bt_read(tdir, &bt);
	ck_assert_uint_eq(bt.n, NPROC * (NS + 1));
	for (uint32_t k = 0; k < NPROC; k++) {
		ck_assert_uint_eq(bt_select(&bt, "process_start", 100 + k, 0, e, NS), 1);
		ck_assert_uint_eq(bt_select(&bt, "sample", 100 + k, 101 + k, e, NS), NS);
		for (int i = 0; i < NS; i++) {
			uint8_t b[3] = { (uint8_t)k, (uint8_t)i, 0 };
			ck_assert_uint_eq(e[i]->ts, 100 + (uint64_t)i * 1000);
			ck_payload(e[i], sample_text(0, b, 3));
		}
	}
	bt_free(&bt);
	/* No temporary metadata file left behind. */
	int st;
	char *cmd = xasprintf("ls -A '%s' | grep -c tmp", tdir);
	char *o2 = run(cmd, &st);
	ck_assert_str_eq(o2, "0\n");
	free(o2);
	free(cmd);
	free(tdir);
	rm_rf(dir);
}
END_TEST

/* Inflate every .zst stream of src into dst (plain), copying metadata. */
static int inflate_trace(const char *src, const char *dst, const char **names, size_t n)
{
	ck_assert_int_eq(mkdir(dst, 0755), 0);
	int st;
	char *cmd = xasprintf("cp '%s/metadata' '%s/metadata'", src, dst);
	free(run(cmd, &st));
	ck_assert_int_eq(st, 0);
	free(cmd);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		char *a = xasprintf("%s/%s.zst", src, names[i]);
		char *b = xasprintf("%s/%s", dst, names[i]);
		int r = ctf_zstd_inflate_file(a, b);
		if (r && !rc)
			rc = r;
		free(a);
		free(b);
	}
	return rc;
}

static void assert_same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *pa = read_file(a, &la), *pb = read_file(b, &lb);
	ck_assert_msg(la == lb && !memcmp(pa, pb, la), "%s and %s differ", a, b);
	free(pa);
	free(pb);
}

START_TEST(zstd_inflates_to_plain_trace)
{
	char *dir = new_tmpdir();
	char *plain = xasprintf("%s/plain", dir), *z = xasprintf("%s/z", dir), *c = xasprintf("%s/c", dir);
	write_ref_trace(plain, 0, 256);
	write_ref_trace(z, 1, 256);
	const char *names[2] = { "proc-4242-0", "samples-4242-0" };
	ck_assert_int_eq(inflate_trace(z, c, names, 2), 0);
	for (int i = 0; i < 2; i++) {
		char *a = xasprintf("%s/%s", plain, names[i]), *b = xasprintf("%s/%s", c, names[i]);
		assert_same_file(a, b); /* packets are byte-identical */
		free(a);
		free(b);
	}
	char *ma = xasprintf("%s/metadata", plain), *mb = xasprintf("%s/metadata", z);
	assert_same_file(ma, mb); /* metadata stays plain text */
	free(ma);
	free(mb);
	check_ref_trace(c);
	free(plain);
	free(z);
	free(c);
	rm_rf(dir);
}
END_TEST

/* Each zstd frame's first block holds the packet header and context alone
 * (a part of stackunwind -j N skipping another part's packet inflates
 * that block only): the decoder given the frame up to the end of its first
 * block (RFC 8878: frame header, 3-byte block header) gives exactly the
 * packet's first CTF_PACKET_PREAMBLE bytes. */
START_TEST(zstd_header_block)
{
	char *dir = new_tmpdir();
	char *plain = xasprintf("%s/plain", dir), *z = xasprintf("%s/z", dir);
	write_ref_trace(plain, 0, 256);
	write_ref_trace(z, 1, 256);
	char *pp = xasprintf("%s/samples-4242-0", plain), *zp = xasprintf("%s/samples-4242-0.zst", z);
	size_t plen, zlen;
	uint8_t *pb = (uint8_t *)read_file(pp, &plen), *zb = (uint8_t *)read_file(zp, &zlen);
	ZSTD_DCtx *d = ZSTD_createDCtx();
	size_t frames = 0, poff = 0;
	for (size_t off = 0; off < zlen; frames++) {
		size_t const flen = ZSTD_findFrameCompressedSize(zb + off, zlen - off);
		ck_assert(!ZSTD_isError(flen));
		const uint8_t *fr = zb + off;
		uint8_t const fhd = fr[4];
		unsigned const single = fhd >> 5 & 1, fcs = fhd >> 6;
		size_t const hs = 5 + !single + (fhd & 3 ? 1u << ((fhd & 3) - 1) : 0) + (fcs ? 1u << fcs : single);
		uint32_t const bh = fr[hs] | fr[hs + 1] << 8 | (uint32_t)fr[hs + 2] << 16;
		size_t const in = hs + 3 + ((bh >> 1 & 3) == 1 ? 1 : bh >> 3);
		uint8_t out[4096];
		ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
		ZSTD_inBuffer ib = { fr, in, 0 };
		ZSTD_outBuffer ob = { out, sizeof(out), 0 };
		for (int k = 0; k < 8 && ib.pos < ib.size; k++)
			ck_assert(!ZSTD_isError(ZSTD_decompressStream(d, &ob, &ib)));
		ck_assert_msg(ob.pos == CTF_PACKET_PREAMBLE, "frame %zu: its first block holds %zu bytes", frames, ob.pos);
		ck_assert(poff + ob.pos <= plen && memcmp(out, pb + poff, ob.pos) == 0);
		/* The plain packet's size, from its context. */
		const uint8_t *ctx = pb + poff + CTF_PACKET_HEADER_SIZE;
		uint64_t bits = 0;
		for (int i = 7; i >= 0; i--)
			bits = bits << 8 | ctx[CTF_PC_PACKET_SIZE + i];
		poff += bits / 8;
		off += flen;
	}
	ck_assert_uint_eq(poff, plen);
	ck_assert_uint_gt(frames, 2);
	ZSTD_freeDCtx(d);
	free(pb);
	free(zb);
	free(pp);
	free(zp);
	free(plain);
	free(z);
	rm_rf(dir);
}
END_TEST

/* ctf_stream_sync: the open packet is on disk (a reader sees the samples
 * so far), and the trace written in the end is byte for byte the one
 * written without syncs: packets are not cut. */
START_TEST(sync_keeps_packet_open)
{
	for (int zstd = 0; zstd < 2; zstd++) {
		char *dir = new_tmpdir();
		char *ref = xasprintf("%s/ref", dir), *syn = xasprintf("%s/sync", dir);
		char *snap = xasprintf("%s/snap", dir), *plain = xasprintf("%s/snap-plain", dir);
		write_ref_trace(ref, zstd, 0);
		write_ref_trace_synced(syn, zstd, 0, snap);
		const char *z = zstd ? ".zst" : "";
		const char *names[2] = { "proc-4242-0", "samples-4242-0" };
		for (int i = 0; i < 2; i++) {
			char *a = xasprintf("%s/%s%s", ref, names[i], z), *b = xasprintf("%s/%s%s", syn, names[i], z);
			assert_same_file(a, b);
			free(a);
			free(b);
		}
		if (zstd)
			ck_assert_int_eq(inflate_trace(snap, plain, names + 1, 1), 0);
		struct bt bt;
		const struct ev *e[8];
		bt_read(zstd ? plain : snap, &bt);
		ck_assert_uint_eq(bt.n, 3);
		ck_assert_uint_eq(bt_select(&bt, "sample", 4242, 11, e, 8), 3);
		for (int i = 0; i < 3; i++) {
			uint8_t blob[100];
			blob_fill(blob, ref_len(i), (unsigned)i);
			ck_assert_uint_eq(e[i]->ts, ref_ts(i));
			ck_payload(e[i], sample_text((uint32_t)i % 3, blob, ref_len(i)));
		}
		bt_free(&bt);
		free(ref);
		free(syn);
		free(snap);
		free(plain);
		rm_rf(dir);
	}
}
END_TEST

/* A crash mid-frame loses only that packet. */
START_TEST(zstd_truncated_keeps_complete_packets)
{
	char *dir = new_tmpdir();
	char *z = xasprintf("%s/z", dir);
	struct ctf_writer *w = open_writer(z, 1, 1024);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-5-1", 5, &s), 0);
	enum { N = 200 };
	for (int i = 0; i < N; i++) {
		uint8_t b[40];
		blob_fill(b, 40, (unsigned)i);
		ck_assert_int_eq(ctf_stream_sample(s, 1000 * (uint64_t)i, 6, 1, b, 40), 0);
	}
	ck_assert_int_eq(ctf_writer_close(w), 0);

	/* Find the frames; cut the file in the middle of the third. */
	char *zf = xasprintf("%s/samples-5-1.zst", z);
	size_t len;
	char *data = read_file(zf, &len);
	size_t off = 0, frame_end[3], events_before = 0;
	for (int f = 0; f < 3; f++) {
		size_t fs = ZSTD_findFrameCompressedSize(data + off, len - off);
		ck_assert(!ZSTD_isError(fs));
		unsigned long long cs = ZSTD_getFrameContentSize(data + off, fs);
		ck_assert(cs != ZSTD_CONTENTSIZE_UNKNOWN && cs != ZSTD_CONTENTSIZE_ERROR);
		if (f < 2)
			events_before += (cs - PKT_HDR) / SAMPLE_BYTES(40);
		off += fs;
		frame_end[f] = off;
	}
	ck_assert_int_eq(truncate(zf, (off_t)(frame_end[1] + (frame_end[2] - frame_end[1]) / 2)), 0);
	const char *names[1] = { "samples-5-1" };
	char *c = xasprintf("%s/c", dir);
	ck_assert_int_eq(inflate_trace(z, c, names, 1), -EBADMSG);

	struct bt bt;
	bt_read(c, &bt);
	ck_assert_uint_gt(events_before, 0);
	ck_assert_uint_eq(bt.n, events_before);
	for (size_t i = 0; i < bt.n; i++) {
		uint8_t b[40];
		blob_fill(b, 40, (unsigned)i);
		ck_assert_uint_eq(bt.ev[i].ts, 1000 * (uint64_t)i);
		ck_payload(&bt.ev[i], sample_text(1, b, 40));
	}
	bt_free(&bt);

	/* A flipped byte inside the second frame: only the first survives. */
	FILE *f = fopen(zf, "r+b");
	ck_assert_ptr_nonnull(f);
	data[frame_end[0] + (frame_end[1] - frame_end[0]) / 2] ^= 0x5a;
	ck_assert_uint_eq(fwrite(data, 1, frame_end[1], f), frame_end[1]);
	fclose(f);
	char *c2 = xasprintf("%s/c2", dir);
	ck_assert_int_eq(inflate_trace(z, c2, names, 1), -EBADMSG);
	char *out = xasprintf("%s/samples-5-1", c2);
	ck_assert_uint_eq(file_size(out), ZSTD_getFrameContentSize(data, frame_end[0]));
	bt_read(c2, &bt);
	ck_assert_uint_eq(bt.n, (ZSTD_getFrameContentSize(data, frame_end[0]) - PKT_HDR) / SAMPLE_BYTES(40));
	bt_free(&bt);
	free(out);
	free(c2);
	free(c);
	free(data);
	free(zf);
	free(z);
	rm_rf(dir);
}
END_TEST

/* A packet bigger than a zstd block (128 KiB) is a frame of several
 * blocks: cut inside it, the decoder has already produced part of the
 * packet, which must not reach the inflated file. */
START_TEST(zstd_truncated_multiblock_frame)
{
	char *dir = new_tmpdir();
	char *z = xasprintf("%s/z", dir);
	struct ctf_writer *w = open_writer(z, 1, 0);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-5-2", 5, &s), 0);
	static uint8_t big[600000];
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof big; i++) { /* incompressible */
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		big[i] = (uint8_t)x;
	}
	ck_assert_int_eq(ctf_stream_sample(s, 10, 1, 0, big, 100), 0);
	ck_assert_int_eq(ctf_stream_flush(s), 0);
	ck_assert_int_eq(ctf_stream_sample(s, 20, 1, 0, big, sizeof big), 0);
	ck_assert_int_eq(ctf_writer_close(w), 0);

	char *zf = xasprintf("%s/samples-5-2.zst", z);
	size_t len;
	char *data = read_file(zf, &len);
	size_t f0 = ZSTD_findFrameCompressedSize(data, len);
	ck_assert(!ZSTD_isError(f0) && f0 < len);
	ck_assert_int_eq(truncate(zf, (off_t)(f0 + (len - f0) * 3 / 4)), 0);
	const char *names[1] = { "samples-5-2" };
	char *c = xasprintf("%s/c", dir);
	ck_assert_int_eq(inflate_trace(z, c, names, 1), -EBADMSG);
	char *out = xasprintf("%s/samples-5-2", c);
	ck_assert_uint_eq(file_size(out), PKT_HDR + SAMPLE_BYTES(100));
	struct bt bt;
	bt_read(c, &bt);
	ck_assert_uint_eq(bt.n, 1);
	ck_payload(&bt.ev[0], sample_text(0, big, 100));
	bt_free(&bt);
	free(out);
	free(c);
	free(data);
	free(zf);
	free(z);
	rm_rf(dir);
}
END_TEST

/* ---- a sample's group in one packet ------------------------------------------ */

static uint64_t ld(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

struct group_walk {
	size_t packets, samples, fulls, chains, off_cpus;
	size_t left_at_end;   /* packets ending with side events after their last sample */
	size_t big_packets;   /* packets over the packet size */
	size_t bad_ts;        /* events whose time is not their group's */
};

/* Walk the plain samples stream PATH as a reader does (packets, event
 * headers with the compact clock rule, payload sizes): count events, and
 * the packets that end on a side event not followed by its sample. */
static void walk_samples(const char *path, size_t packet_size, struct group_walk *g)
{
	size_t len;
	uint8_t *f = (uint8_t *)read_file(path, &len);
	memset(g, 0, sizeof(*g));
	const uint64_t mask = (1ull << CTF_EV_TS_BITS) - 1;
	for (size_t off = 0; off < len;) {
		ck_assert_uint_ge(len - off, CTF_PACKET_PREAMBLE);
		const uint8_t *ctx = f + off + CTF_PACKET_HEADER_SIZE;
		size_t const content = ld(ctx + CTF_PC_CONTENT_SIZE, 8) / 8, psize = ld(ctx + CTF_PC_PACKET_SIZE, 8) / 8;
		ck_assert(content <= psize && psize <= len - off);
		uint64_t ts = ld(ctx + CTF_PC_TS_BEGIN, 8);
		size_t side = 0;
		g->packets++;
		g->big_packets += psize > packet_size;
		for (size_t pos = CTF_PACKET_PREAMBLE; pos < content;) {
			const uint8_t *p = f + off + pos;
			uint32_t const v = (uint32_t)ld(p, 4);
			unsigned id;
			if ((v & 31) != CTF_EV_EXTENDED_MARK) {
				id = v & 31;
				uint64_t const low = v >> 5;
				if (low < (ts & mask))
					ts += mask + 1;
				ts = (ts & ~mask) | low;
				p += CTF_EV_COMPACT_SIZE;
			} else {
				id = (unsigned)ld(p + 1, 4);
				ts = ld(p + 5, 8);
				p += CTF_EV_EXTENDED_SIZE;
			}
			size_t n;
			switch (id) {
			case CTF_EV_SAMPLE:
			case CTF_EV_SAMPLE_FULL:
				n = 6 + ld(p + 3, 3);
				break;
			case CTF_EV_KERNEL_CHAIN:
				n = 4 + 8 * ld(p, 4);
				break;
			case CTF_EV_OFF_CPU:
				n = 8;
				break;
			default:
				ck_abort_msg("unexpected event id %u", id);
			}
			/* Every event of group I is at 1000 + 10 * I. */
			g->bad_ts += ts < 1000 || (ts - 1000) % 10 != 0;
			if (id == CTF_EV_SAMPLE) {
				g->samples++;
				side = 0;
			} else {
				side++;
				g->fulls += id == CTF_EV_SAMPLE_FULL;
				g->chains += id == CTF_EV_KERNEL_CHAIN;
				g->off_cpus += id == CTF_EV_OFF_CPU;
			}
			pos = (size_t)(p - (f + off)) + n;
		}
		g->left_at_end += side != 0;
		off += psize;
	}
	free(f);
}

/* Both writers put a sample and the events it comes with in one packet
 * (ctf_stream_group_begin, docs/trace-format.md "Stream class 1"): a read
 * in parts skips another part's packet whole.  Groups of every size
 * around a small packet's, a group bigger than a packet, threads
 * changing, groups cancelled half-way. */
START_TEST(sample_group_in_one_packet)
{
	char *dir = new_tmpdir();
	size_t const psize = 512;
	struct ctf_writer_opts o = { .sz = sizeof o, .packet_size = psize, .clock_offset_ns = TEST_OFFSET_NS,
				     .kernel_frames = 1, .off_cpu = 1 };
	struct ctf_writer *w = NULL;
	ck_assert_int_eq(ctf_writer_open(dir, &o, &w), 0);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-3-0", 3, &s), 0);
	static uint8_t blob[3000];
	uint64_t ips[40];
	for (size_t k = 0; k < 40; k++)
		ips[k] = 0xffffffff81000000ull + 16 * k;
	size_t want_samples = 0, want_fulls = 0, want_chains = 0, want_off = 0;
	for (unsigned i = 0; i < 400; i++) {
		uint64_t const ts = 1000 + 10 * (uint64_t)i;
		uint32_t const tid = 20 + i / 7 % 2;
		size_t const full = i % 3 == 0 ? 40 + (i * 37) % 300 : i == 200 ? sizeof blob : 0;
		size_t const nkc = 1 + i % 40;
		int const off_cpu = i % 5 == 0, cancel = i % 17 == 0;
		memset(blob, (int)(i % 251), sizeof blob);
		ck_assert_int_eq(ctf_stream_group_begin(s, tid), 0);
		if (full)
			ck_assert_int_eq(ctf_stream_sample_full(s, ts, tid, 1, blob, full), 0);
		ck_assert_int_eq(ctf_stream_kernel_chain(s, ts, tid, ips, nkc), 0);
		if (off_cpu)
			ck_assert_int_eq(ctf_stream_off_cpu(s, ts, tid, 12345), 0);
		if (cancel) {
			ctf_stream_group_cancel(s);
			continue;
		}
		ck_assert_int_eq(ctf_stream_sample(s, ts, tid, 1, blob, 10 + (i * 13) % 90), 0);
		want_samples++;
		want_fulls += full != 0;
		want_chains++;
		want_off += off_cpu;
	}
	ck_assert_int_eq(ctf_writer_close(w), 0);
	char *path = xasprintf("%s/samples-3-0", dir);
	struct group_walk g;
	walk_samples(path, psize, &g);
	ck_assert_msg(g.left_at_end == 0, "%zu of %zu packets end on side events whose sample is in the next one",
		      g.left_at_end, g.packets);
	ck_assert_uint_eq(g.samples, want_samples);
	ck_assert_uint_eq(g.fulls, want_fulls);
	ck_assert_uint_eq(g.chains, want_chains);
	ck_assert_uint_eq(g.off_cpus, want_off);
	ck_assert_uint_eq(g.bad_ts, 0);
	ck_assert_msg(g.packets > 100, "%zu packets: the groups should fill many", g.packets);
	ck_assert_msg(g.big_packets >= 1, "the 3000-byte group grows its packet");
	char *mpath = xasprintf("%s/metadata", dir);
	size_t mlen;
	char *meta = read_file(mpath, &mlen);
	ck_assert_ptr_nonnull(strstr(meta, "\tstackcap_packets_whole = 1;\n"));
	free(meta);
	free(mpath);
	/* babeltrace2 reads the moved groups' times as we do. */
	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, want_samples + want_fulls + want_chains + want_off);
	for (size_t i = 0; i < bt.n; i++)
		ck_assert_msg((bt.ev[i].ts - 1000) % 10 == 0 && (i == 0 || bt.ev[i].ts >= bt.ev[i - 1].ts),
			      "event %zu at %" PRIu64, i, bt.ev[i].ts);
	bt_free(&bt);
	free(path);
	rm_rf(dir);
}
END_TEST

/* The size goal: headers must stay tiny (compact header + 6 bytes). */
START_TEST(bytes_per_sample)
{
	char *dir = new_tmpdir();
	struct ctf_writer *w = open_writer(dir, 0, 0);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-8-0", 8, &s), 0);
	enum { N = 10000, LEN = 40 };
	uint8_t b[LEN];
	for (int i = 0; i < N; i++) {
		blob_fill(b, LEN, (unsigned)i);
		/* 100 Hz: 10 ms apart, with some jitter */
		ck_assert_int_eq(ctf_stream_sample(s, 1000000000ull + (uint64_t)i * 10000000 + (uint64_t)(i % 7) * 1000,
						   8, 3, b, LEN), 0);
	}
	ck_assert_int_eq(ctf_stream_close(s), 0);
	struct ctf_writer_stats st;
	ctf_writer_get_stats(w, &st);
	uint64_t total = ctf_writer_bytes_written(w);
	ck_assert_int_eq(ctf_writer_close(w), 0);
	char *path = xasprintf("%s/samples-8-0", dir);
	uint64_t sz = file_size(path);
	ck_assert_uint_eq(sz, st.stream_bytes);
	ck_assert_uint_eq(st.events, N);
	ck_assert_uint_lt(sz, N * (LEN + 12));
	fprintf(stderr, "# %d samples of %d-byte blobs: stream %" PRIu64 " B = %.3f B/sample; "
		"with metadata %" PRIu64 " B = %.3f B/sample\n",
		N, LEN, sz, (double)sz / N, total, (double)total / N);
	struct bt bt;
	bt_read(dir, &bt);
	ck_assert_uint_eq(bt.n, N);
	bt_free(&bt);
	free(path);
	rm_rf(dir);
}
END_TEST

START_TEST(negative_clock_offset)
{
	char *dir = new_tmpdir();
	struct ctf_writer_opts o = { .sz = sizeof o, .clock_offset_ns = -1500000000 };
	struct ctf_writer *w;
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open(dir, &o, &w), 0);
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-1-0", 1, &s), 0);
	ck_assert_int_eq(ctf_stream_sample(s, 10000000000ull, 1, 0, NULL, 0), 0);
	ck_assert_int_eq(ctf_writer_close(w), 0);
	need_babeltrace();
	char *cmd = xasprintf("babeltrace2 --clock-seconds --no-delta '%s' 2>&1", dir);
	int st;
	char *out = run(cmd, &st);
	ck_assert_int_eq(st, 0);
	ck_assert_msg(!strncmp(out, "[8.500000000] sample", 20), "got %s", out);
	free(out);
	free(cmd);
	rm_rf(dir);
}
END_TEST

/* Enter a private mount namespace (a user namespace too if not root) and
 * mount a tiny tmpfs: the only honest way to get a real ENOSPC. */
static void mount_tiny_tmpfs(const char *mnt, const char *size)
{
	int rc = 0;
	if (geteuid() != 0) {
		uid_t uid = geteuid();
		gid_t gid = getegid();
		rc = unshare(CLONE_NEWUSER | CLONE_NEWNS);
		if (!rc) {
			char m[64];
			FILE *f;
			if ((f = fopen("/proc/self/setgroups", "w"))) { fputs("deny", f); fclose(f); }
			snprintf(m, sizeof m, "0 %u 1", (unsigned)uid);
			if ((f = fopen("/proc/self/uid_map", "w"))) { fputs(m, f); fclose(f); }
			snprintf(m, sizeof m, "0 %u 1", (unsigned)gid);
			if ((f = fopen("/proc/self/gid_map", "w"))) { fputs(m, f); fclose(f); }
		}
	} else {
		rc = unshare(CLONE_NEWNS);
	}
	if (!rc)
		rc = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	char *opts = xasprintf("size=%s", size);
	if (!rc)
		rc = mount("tmpfs", mnt, "tmpfs", 0, opts);
	free(opts);
	ck_assert_msg(rc == 0, "the ENOSPC test mounts a %s tmpfs in a private mount namespace "
		      "and that was refused (%s): run it as root or allow user namespaces",
		      size, strerror(errno));
}

START_TEST(enospc_keeps_trace_valid)
{
	char *dir = new_tmpdir();
	char *mnt = xasprintf("%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	mount_tiny_tmpfs(mnt, "64k");
	char *tdir = xasprintf("%s/trace", mnt), *filler = xasprintf("%s/filler", mnt);
	int fd = open(filler, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	static uint8_t zero[16384];
	ck_assert_int_eq(write(fd, zero, sizeof zero), (ssize_t)sizeof zero);
	close(fd);

	struct ctf_writer *w = open_writer(tdir, 0, 4096);
	struct ctf_stream *s;
	ck_assert_int_eq(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-9-0", 9, &s), 0);
	int rc = 0, accepted = 0;
	uint64_t t = 1000;
	uint8_t b[40];
	for (int i = 0; i < 100000 && !rc; i++) {
		blob_fill(b, 40, (unsigned)i);
		rc = ctf_stream_sample(s, t += 1000, 9, 0, b, 40);
		accepted += !rc;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	struct ctf_writer_stats st;
	ctf_writer_get_stats(w, &st);
	uint64_t lost = (uint64_t)accepted - st.events; /* the packet that failed */
	ck_assert_uint_gt(st.events, 0);
	ck_assert_uint_gt(lost, 0);
	/* What is on disk is a valid trace of exactly the packets written. */
	struct bt bt;
	bt_read(tdir, &bt);
	ck_assert_uint_eq(bt.n, st.events);
	bt_free(&bt);

	/* Space comes back: the stream goes on and reports the loss. */
	ck_assert_int_eq(unlink(filler), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(ctf_stream_sample(s, t += 1000, 9, 0, b, 40), 0);
	ck_assert_int_eq(ctf_writer_close(w), 0);
	bt_read(tdir, &bt);
	ck_assert_uint_eq(bt.n, st.events + 10);
	char *msg = xasprintf("discarded %" PRIu64 " events", lost);
	ck_assert_msg(strstr(bt.err, msg) != NULL, "no \"%s\" in: %s", msg, bt.err);
	free(msg);
	bt_free(&bt);

	/* A full disk at open: an error, and no torn metadata left behind. */
	fd = open(filler, O_WRONLY | O_CREAT, 0644);
	while (write(fd, zero, sizeof zero) > 0)
		;
	close(fd);
	char *t2 = xasprintf("%s/trace2", mnt);
	ck_assert_int_eq(ctf_writer_open(t2, NULL, &w), -ENOSPC);
	char *m2 = xasprintf("%s/metadata", t2);
	ck_assert_int_eq(access(m2, F_OK), -1);
	int sst;
	char *cmd = xasprintf("ls -A '%s'", t2);
	char *o = run(cmd, &sst);
	ck_assert_str_eq(o, "");
	free(o);
	free(cmd);
	free(m2);
	free(t2);
	umount2(mnt, MNT_DETACH);
	free(tdir);
	free(filler);
	free(mnt);
	rm_rf(dir);
}
END_TEST

static Suite *ctf_writer_suite(void)
{
	Suite *s = suite_create("ctf-writer");
	TCase *tc = tcase_create("ctf-writer");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reference_trace_reads_back);
	tcase_add_test(tc, tid_switch_starts_packet);
	tcase_add_test(tc, timestamps_exact);
	tcase_add_test(tc, compact_header_rule);
	tcase_add_test(tc, back_in_time_and_bad_args_rejected);
	tcase_add_test(tc, blob_larger_than_packet);
	tcase_add_test(tc, maps_with_300_entries);
	tcase_add_test(tc, several_writers_share_a_trace);
	tcase_add_test(tc, zstd_inflates_to_plain_trace);
	tcase_add_test(tc, zstd_truncated_keeps_complete_packets);
	tcase_add_test(tc, zstd_header_block);
	tcase_add_test(tc, sync_keeps_packet_open);
	tcase_add_test(tc, zstd_truncated_multiblock_frame);
	tcase_add_test(tc, sample_group_in_one_packet);
	tcase_add_test(tc, bytes_per_sample);
	tcase_add_test(tc, negative_clock_offset);
	tcase_add_test(tc, enospc_keeps_trace_valid);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(ctf_writer_suite)
