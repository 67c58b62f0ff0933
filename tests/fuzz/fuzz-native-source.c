/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: arbitrary stream files read by the whole reader through the
 * native source (su_stackcap_trace_read).  Input: one flags byte (bit 0:
 * zstd file names; bit 1: metadata text follows), a little-endian u16 N,
 * [bit 1: a u16 M and M bytes appended to the base metadata, which the
 * trace check and the uuid parser read], N bytes of proc-1-0, then the
 * rest as samples-1-0.  The base metadata names the format and no uuid, so
 * without bit 1 the first packet read sets it.  Without bit 1 a damaged
 * stream is never fatal; with it a refusal must say why.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/stackcap-reader.h"
#include "tests/fuzz/fuzz-reader.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096];

static void count_warning(void *arg, const char *msg)
{
	(void)msg;
	++*(size_t *)arg;
}

static void put(const char *name, const uint8_t *data, size_t len)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		abort();
}

static void drop(const char *name)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void cleanup(void)
{
	drop("proc-1-0");
	drop("proc-1-0.zst");
	drop("samples-1-0");
	drop("samples-1-0.zst");
	drop("metadata");
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char meta[] = "/* CTF 1.8 */\nenv {\n\tstackcap_trace_version = 1;\n"
				   "\ttracer_name = \"stackcap\";\n};\n";
	if (!dir[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/stackcap-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	if (size < 3)
		return 0;
	int const zst = data[0] & 1, with_meta = data[0] & 2;
	size_t n = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	size_t m = 0;
	const uint8_t *mtext = NULL;
	if (with_meta) {
		if (size < 2)
			return 0;
		m = (size_t)data[0] | (size_t)data[1] << 8;
		data += 2;
		size -= 2;
		if (m > size)
			m = size;
		mtext = data;
		data += m;
		size -= m;
	}
	/* The metadata: the base text, then the input's. */
	uint8_t *mbuf = malloc(sizeof(meta) - 1 + m);
	if (!mbuf)
		abort();
	memcpy(mbuf, meta, sizeof(meta) - 1);
	if (m)
		memcpy(mbuf + sizeof(meta) - 1, mtext, m);
	put("metadata", mbuf, sizeof(meta) - 1 + m);
	free(mbuf);
	if (n > size)
		n = size;
	drop(zst ? "proc-1-0" : "proc-1-0.zst");
	drop(zst ? "samples-1-0" : "samples-1-0.zst");
	put(zst ? "proc-1-0.zst" : "proc-1-0", data, n);
	put(zst ? "samples-1-0.zst" : "samples-1-0", data + n, size - n);
	struct su_reader_stats st;
	uint64_t sum = 0;
	struct su_reader_callbacks cb = { .arg = &sum, .sample = fuzz_touch_sample };
	char err[512];
	size_t warnings = 0;
	struct su_reader_opts o = { .warn = { count_warning, &warnings } };
	fuzz_quiet(1);
	int const rc = su_stackcap_trace_read(dir, &o, &cb, &st, err, sizeof(err));
	fuzz_quiet(0);
	if (rc < 0 && rc != -ENOMEM && (!with_meta || !err[0]))
		abort(); /* damaged streams are never fatal; a refused trace says why */
	/* Read in two parts (stackunwind -j 2 over our traces: each part
	 * decodes the packets it takes and skips through the others'): a
	 * trace read whole and in parts without a warning gives the same
	 * samples.  (A part may warn where the whole did not: a crafted
	 * packet whose first sample refers to the packet before, which the
	 * writers never write; stackunwind then reads the trace again
	 * whole.) */
	if (rc == 0 && !warnings) {
		uint64_t psum[2] = { 0, 0 };
		uint64_t samples = 0;
		for (unsigned k = 0; k < 2; k++) {
			struct su_reader_callbacks pcb = { .arg = &psum[k], .sample = fuzz_touch_sample };
			struct su_reader_opts po = { .part = k, .parts = 2, .warn = { count_warning, &warnings } };
			struct su_reader_stats pst;
			fuzz_quiet(1);
			int const prc = su_stackcap_trace_read(dir, &po, &pcb, &pst, err, sizeof(err));
			fuzz_quiet(0);
			if (prc != 0 || warnings)
				return 0;
			samples += pst.samples;
		}
		if (samples != st.samples || psum[0] + psum[1] != sum)
			abort(); /* the parts lost, doubled or changed a sample */
	}
	return 0;
}
