/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the two symbolizer parsers of bytes from outside that are
 * ours (the rest is elfutils'): CPython 3.11 line tables, as a trace's
 * runtime_code events carry them (symbolize/pyline.c), and JIT perf maps,
 * /tmp/perf-PID.map files anyone can write (symbolize/perfmap.c).  Input:
 * a byte whose bit 0 chooses.  0: u32 first line, i32 instruction, then the
 * table; the line of that instruction and of each of the first 512 is
 * asked, and instruction -1 must give the first line.  1: the rest is
 * SYMFS/tmp/perf-1.map; every start and end-1 written on a line, and a few
 * fixed addresses, are looked up: a name found is not empty and starts at
 * or below the address.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/perfmap.h"
#include "symbolize/pyline.h"

#define FUZZ_CHECK(cond) do { if (!(cond)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char symfs[4096], map[4200];

static void cleanup(void)
{
	unlink(map);
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s/tmp", symfs);
	rmdir(tmp);
	rmdir(symfs);
}

static void lookup(struct su_perfmaps *pm, uint64_t addr)
{
	uint64_t start = 0;
	const char *m = NULL;
	const char *name = su_perfmap_lookup(pm, 1, addr, &start, &m);
	if (name) {
		FUZZ_CHECK(*name && start <= addr);
		FUZZ_CHECK(m && strcmp(m, "/tmp/perf-1.map") == 0);
	}
}

static void perfmap(const uint8_t *data, size_t size)
{
	if (!symfs[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(symfs, sizeof(symfs), "%s/stackcap-fuzz-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(symfs))
			abort();
		char tmp[4200];
		snprintf(tmp, sizeof(tmp), "%s/tmp", symfs);
		if (mkdir(tmp, 0700))
			abort();
		snprintf(map, sizeof(map), "%s/tmp/perf-1.map", symfs);
		atexit(cleanup);
	}
	FILE *f = fopen(map, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
	struct su_perfmaps *pm = su_perfmaps_new(symfs, NULL);
	if (!pm)
		return;
	/* The addresses the file names, as its reader parses them. */
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *s = text; s && *s;) {
		char *end;
		uint64_t const start = strtoull(s, &end, 16);
		uint64_t const len = end > s ? strtoull(end, &end, 16) : 0;
		lookup(pm, start);
		lookup(pm, start + len - 1);
		s = strchr(s, '\n');
		s = s ? s + 1 : NULL;
	}
	free(text);
	static const uint64_t fixed[] = { 0, 1, 0x1000, 0x7f0000000000ull, UINT64_MAX };
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		lookup(pm, fixed[i]);
	su_perfmaps_free(pm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		perfmap(data + 1, size - 1);
		return 0;
	}
	if (size < 9)
		return 0;
	uint32_t first;
	int32_t pos;
	memcpy(&first, data + 1, 4);
	memcpy(&pos, data + 5, 4);
	/* The table alone in its own allocation, so that a read past it is
	 * ASan's to see. */
	size_t const len = size - 9;
	uint8_t *table = malloc(len ? len : 1);
	if (!table)
		abort();
	memcpy(table, data + 9, len);
	FUZZ_CHECK(su_pyline_311(table, len, first, -1) == first);
	uint32_t const line = su_pyline_311(table, len, first, pos);
	FUZZ_CHECK(su_pyline_311(table, len, first, pos) == line);
	for (int32_t i = 0; i < 512; i++)
		(void)su_pyline_311(table, len, first, i);
	free(table);
	return 0;
}
