/* hostile-gen: crafted inputs for tests/hostile-input.sh (issue 16): small
 * traces that claimed unbounded memory or time, or named files the tools
 * must not read.  Written at test time, so nothing binary is committed.
 *
 *   hostile-gen trace DIR BINPATH      one sample, its module at BINPATH
 *                                      ("anon": anonymous code, a perf map's)
 *   hostile-gen bigsample DIR THREADS  stack cap 8 KiB, samples claiming 64 MiB
 *   hostile-gen bigcap DIR THREADS     stack cap 64 MiB, a file a thread, two 64 MiB samples each, interleaved
 *   hostile-gen bigseq DIR THREADS     stack cap 64 MiB, one file, one 64 MiB sample a thread in turn
 *   hostile-gen maps DIR N             N one-entry maps generations
 *   hostile-gen procs DIR N            N process_start events
 *   hostile-gen zst DIR FILES          FILES .zst streams of one 64 MiB packet
 *   hostile-gen perf-ids FILE ATTRS    perf.data: ATTRS attributes, one id section
 *   hostile-gen perf-z FILE RECORDS [MIB]  perf.data -z: RECORDS compressed records
 *                                      of MIB (48) MiB of samples, no FINISHED_ROUND
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "capture/ctf-writer.h"
#include "compress/stack-codec.h"

#define CODE_LO 0x400000ull
#define SP 0x7ffd00100000ull

static void die(const char *what, int rc)
{
	fprintf(stderr, "hostile-gen: %s failed (%d)\n", what, rc);
	exit(1);
}
#define CK(call) do { int rc_ = (call); if (rc_) die(#call, rc_); } while (0)

/* A blob of NWORDS stack words (all zero but a return address) with rip
 * in the first code range. */
static size_t make_blob(uint8_t **out, uint64_t nwords)
{
	static struct stackcap_code_range r = { CODE_LO, CODE_LO + 0x1000, 0 };
	static struct stackcap_code_ranges set;
	stackcap_code_ranges_init(&set, &r, 1);
	uint64_t *words = calloc(nwords, 8);
	uint64_t regs[STACKCAP_NREGS] = { 0 };
	size_t const cap = STACKCAP_CODEC_BOUND(nwords);
	*out = malloc(cap);
	if (!words || !*out)
		die("malloc", -1);
	words[0] = CODE_LO + 0x123;
	regs[STACKCAP_REG_RIP] = CODE_LO + 0x100;
	regs[STACKCAP_REG_RSP] = SP;
	struct stackcap_codec_input in = { .words = words, .nwords = nwords, .sp = SP, .regs = regs,
		.ranges = &set, .policy = STACKCAP_POLICY_F2, .encoding = STACKCAP_WORDS_RELATIVE };
	size_t const n = stackcap_codec_encode(*out, cap, &in);
	free(words);
	if (stackcap_codec_is_error(n))
		die("encode", -1);
	return n;
}

static uint32_t stack_cap = 8192;

static struct ctf_process_info proc_info(uint32_t pid)
{
	return (struct ctf_process_info){ .pid = pid, .ppid = 1, .comm = "victim", .exe = "/victim",
		.frequency_hz = 99, .stack_cap = stack_cap, .policy = STACKCAP_POLICY_F2,
		.codec_version = STACKCAP_CODEC_VERSION };
}

static struct ctf_map_entry map_at(uint64_t start, const char *path)
{
	return (struct ctf_map_entry){ .start = start, .end = start + 0x1000, .offset = 0, .bias = start - CODE_LO,
		.flags = CTF_MAP_MAIN, .path = path };
}

/* ---- perf.data ---------------------------------------------------------- */

#define ATTR_SIZE 144u /* perf_event_attr (128) + ids {offset, size} */
#define HDR_SIZE 104u

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Header and NATTRS attributes (software event, IP|TID|TIME|CALLCHAIN,
 * all with the id section IDS_OFF/IDS_SIZE) into BUF; data at DATA_OFF. */
static void perf_head(uint8_t *buf, uint32_t nattrs, uint64_t ids_off, uint64_t ids_size,
		      uint64_t data_off, uint64_t data_size)
{
	memcpy(buf, "PERFILE2", 8);
	put64(buf + 8, HDR_SIZE);
	put64(buf + 16, ATTR_SIZE);
	put64(buf + 24, HDR_SIZE);
	put64(buf + 32, (uint64_t)nattrs * ATTR_SIZE);
	put64(buf + 40, data_off);
	put64(buf + 48, data_size);
	for (uint32_t i = 0; i < nattrs; i++) {
		uint8_t *a = buf + HDR_SIZE + (size_t)i * ATTR_SIZE;
		put32(a, 1);                       /* PERF_TYPE_SOFTWARE */
		put32(a + 4, 128);
		put64(a + 16, 1000);
		put64(a + 24, 0x1 | 0x2 | 0x4 | 0x20 | 0x40); /* IP TID TIME CALLCHAIN ID */
		put64(a + 128, ids_off);
		put64(a + 136, ids_size);
	}
}

static void write_all(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die("write", -1);
}

/* 4,096 attributes sharing one id section of NIDS ids in descending order
 * (insertion sort's worst case): 82 M ids to sort from a 750 KB file. */
static int perf_ids(const char *path, uint32_t nattrs, uint32_t nids)
{
	size_t const ids_off = HDR_SIZE + (size_t)nattrs * ATTR_SIZE, len = ids_off + 8u * nids;
	uint8_t *buf = calloc(1, len);
	if (!buf)
		die("calloc", -1);
	perf_head(buf, nattrs, ids_off, 8u * nids, len, 0);
	for (uint32_t k = 0; k < nids; k++)
		put64(buf + ids_off + 8u * k, (uint64_t)(nids - k));
	write_all(path, buf, len);
	return 0;
}

/* RECORDS PERF_RECORD_COMPRESSED records, each MIB MiB of 48-byte samples
 * once inflated, and no FINISHED_ROUND: every sample waits to be sorted. */
static int perf_z(const char *path, uint32_t records, size_t mib)
{
	size_t const raw = mib << 20, zcap = ZSTD_compressBound(raw);
	uint8_t *in = malloc(raw), *z = malloc(zcap);
	size_t const off = HDR_SIZE + ATTR_SIZE + 8;
	uint8_t *file = calloc(1, off + (size_t)records * 65536);
	if (!in || !z || !file)
		die("malloc", -1);
	for (size_t p = 0; p + 48 <= raw; p += 48) {
		put32(in + p, 9);                      /* PERF_RECORD_SAMPLE */
		memcpy(in + p + 4, "\x02\x00\x30\x00", 4); /* misc user, size 48 */
		put64(in + p + 8, CODE_LO + 0x100);   /* ip */
		put32(in + p + 16, 100);
		put32(in + p + 20, 100);               /* pid, tid */
		put64(in + p + 24, 1000);              /* time */
		put64(in + p + 32, 7);                 /* id */
		put64(in + p + 40, 0);                 /* callchain: nr 0 */
	}
	size_t const zn = ZSTD_compress(z, zcap, in, raw, 3); /* the same frame each time */
	if (ZSTD_isError(zn) || zn + 8 > 65535)
		die("ZSTD_compress", (int)zn);
	size_t pos = off;
	for (uint32_t i = 0; i < records; i++) {
		put32(file + pos, 81);                 /* PERF_RECORD_COMPRESSED */
		put32(file + pos + 4, (uint32_t)(zn + 8) << 16);
		memcpy(file + pos + 8, z, zn);
		pos += zn + 8;
	}
	perf_head(file, 1, HDR_SIZE + ATTR_SIZE, 8, off, pos - off);
	put64(file + HDR_SIZE + ATTR_SIZE, 7);
	write_all(path, file, pos);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: hostile-gen trace|bigsample|bigcap|bigseq|maps|procs|zst DIR ARG\n");
		return 2;
	}
	const char *mode = argv[1], *dir = argv[2];
	if (!strcmp(mode, "bigcap") || !strcmp(mode, "bigseq"))
		stack_cap = 64u << 20; /* declared: the samples are within it */
	long const n = strtol(argv[3], NULL, 10);
	if (!strcmp(mode, "perf-ids"))
		return perf_ids(dir, (uint32_t)n, 20000);
	if (!strcmp(mode, "perf-z"))
		return perf_z(dir, (uint32_t)n, argc > 4 ? (size_t)strtoul(argv[4], NULL, 10) : 48);
	struct ctf_writer_opts o = { .sz = sizeof(o), .clock_offset_ns = 0 };
	struct ctf_writer *w;
	struct ctf_stream *ps, *ss;
	CK(ctf_writer_open(dir, &o, &w));
	uint8_t *blob;
	if (!strcmp(mode, "procs")) {
		/* N processes (one exec image each) in one process stream. */
		CK(ctf_writer_open_stream(w, CTF_STREAM_PROCESS, "proc-1-0", 1, &ps));
		struct ctf_map_entry e = map_at(CODE_LO, "/victim");
		for (long i = 0; i < n; i++) {
			struct ctf_process_info pi = proc_info((uint32_t)(1000 + i));
			CK(ctf_stream_process_start(ps, 1000 + (uint64_t)i * 2, &pi));
			CK(ctf_stream_maps(ps, 1001 + (uint64_t)i * 2, 1, &e, 1));
		}
		CK(ctf_stream_close(ps));
		return ctf_writer_close(w) != 0;
	}
	CK(ctf_writer_open_stream(w, CTF_STREAM_PROCESS, "proc-100-0", 100, &ps));
	struct ctf_process_info pi = proc_info(100);
	CK(ctf_stream_process_start(ps, 1000, &pi));
	if (!strcmp(mode, "maps")) {
		/* Generations of one distinct entry each: 0x30 bytes on disk, and
		 * a 128 KiB lookup table each in the reader before the fix. */
		for (long i = 0; i < n; i++) {
			struct ctf_map_entry e = map_at(CODE_LO + (uint64_t)i * 0x10000, "");
			CK(ctf_stream_maps(ps, 1001 + (uint64_t)i, (uint32_t)(i + 1), &e, 1));
		}
		CK(ctf_stream_close(ps));
		return ctf_writer_close(w) != 0;
	}
	struct ctf_map_entry e = map_at(CODE_LO, !strcmp(mode, "trace") ? argv[3] : "/victim");
	if (!strcmp(e.path, "anon")) { /* JIT code: named from /tmp/perf-PID.map */
		e.path = "";
		e.flags = CTF_MAP_ANON;
	}
	CK(ctf_stream_maps(ps, 1001, 1, &e, 1));
	CK(ctf_stream_close(ps));
	if (!strcmp(mode, "bigsample") || !strcmp(mode, "bigcap") || !strcmp(mode, "bigseq")) {
		/* One sample per thread claiming 8 M words (64 MiB) under a cap
		 * of 8 KiB: zeros run-length-encoded, a few bytes each. */
		size_t const len = make_blob(&blob, 8u << 20);
		if (!strcmp(mode, "bigcap")) {
			/* A file per thread, two samples each, every thread's
			 * first before any second: read in time order, each
			 * thread holds its image (its next sample's reference)
			 * while the others decode theirs. */
			struct ctf_stream **th = calloc((size_t)n, sizeof(*th));
			if (!th)
				die("calloc", -1);
			for (long t = 0; t < n; t++) {
				char name[64];
				snprintf(name, sizeof(name), "samples-100-%ld", 100 + t);
				CK(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, name, 100, &th[t]));
			}
			for (int k = 0; k < 2; k++)
				for (long t = 0; t < n; t++)
					CK(ctf_stream_sample(th[t], 2000 + (uint64_t)k * 1000 + (uint64_t)t,
							     (uint32_t)(100 + t), 1, blob, len));
			for (long t = 0; t < n; t++)
				CK(ctf_stream_close(th[t]));
			free(th);
		} else {
			CK(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, "samples-100-100", 100, &ss));
			for (long t = 0; t < n; t++)
				CK(ctf_stream_sample(ss, 2000 + (uint64_t)t, (uint32_t)(100 + t), 1, blob, len));
			CK(ctf_stream_close(ss));
		}
	} else {
		size_t const len = make_blob(&blob, 16);
		long const files = !strcmp(mode, "zst") ? n : 1;
		for (long i = 0; i < files; i++) {
			char name[64];
			snprintf(name, sizeof(name), "samples-100-%ld", 100 + i);
			CK(ctf_writer_open_stream(w, CTF_STREAM_SAMPLES, name, 100, &ss));
			CK(ctf_stream_sample(ss, 2000 + (uint64_t)i, (uint32_t)(100 + i), 1, blob, len));
			CK(ctf_stream_close(ss));
		}
	}
	CK(ctf_writer_close(w));
	if (strcmp(mode, "zst"))
		return 0;
	/* Each samples file becomes one zstd frame of one 64 MiB packet: the
	 * event as written, then zeros (packet_size says 64 MiB). */
	size_t const big = 64u << 20;
	uint8_t *pkt = calloc(1, big);
	size_t const zcap = ZSTD_compressBound(big);
	uint8_t *z = malloc(zcap);
	if (!pkt || !z)
		die("malloc", -1);
	for (long i = 0; i < n; i++) {
		char path[4096], zpath[4200];
		snprintf(path, sizeof(path), "%s/samples-100-%ld", dir, 100 + i);
		FILE *f = fopen(path, "rb");
		if (!f)
			die("fopen", -1);
		size_t const got = fread(pkt, 1, 65536, f);
		fclose(f);
		if (got < 80)
			die("read packet", -1);
		/* packet_size (bits) at context offset 24. */
		uint64_t const bits = (uint64_t)big * 8;
		memcpy(pkt + 32 + 24, &bits, 8);
		memset(pkt + got, 0, 65536 - got);
		size_t const zn = ZSTD_compress(z, zcap, pkt, big, 19);
		if (ZSTD_isError(zn))
			die("ZSTD_compress", -1);
		snprintf(zpath, sizeof(zpath), "%s.zst", path);
		f = fopen(zpath, "wb");
		if (!f || fwrite(z, 1, zn, f) != zn || fclose(f))
			die("write", -1);
		remove(path);
	}
	return 0;
}
