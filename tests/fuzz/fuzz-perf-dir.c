/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: arbitrary bytes read as the directory `perf record
 * --threads` writes (su_perf_data_read on DIR): the header file DIR/data
 * and up to three DIR/data.N, merged in steps of time (perf-stream.c
 * perf_run_dir).  The input is the files one after the other, each a
 * 32-bit little-endian length then its bytes (the last one takes what is
 * left when its length runs past the end).  A damaged directory is
 * refused (< 0) or read in part (> 0), never a crash; every delivered
 * sample's stack words are readable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/perf-data.h"
#include "tests/fuzz/fuzz-reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = { "data", "data.0", "data.1", "data.2" };
#define N_FILES (sizeof(names) / sizeof(names[0]))

/* One directory for the whole run, under $TMPDIR (run-fuzzers.sh: tmpfs),
 * removed at the exit. */
static char dir[512];

static void remove_dir(void)
{
	char path[600];
	for (size_t i = 0; i < N_FILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static const char *dir_path(void)
{
	if (!dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/fuzz-perf-dir.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(remove_dir);
	}
	return dir;
}

static void put_file(const char *name, const uint8_t *p, size_t n)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int const fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	for (size_t done = 0; done < n;) {
		ssize_t const w = write(fd, p + done, n - done);
		if (w <= 0)
			abort();
		done += (size_t)w;
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *const d = dir_path();
	char path[600];
	size_t pos = 0, k = 0;
	for (; k < N_FILES && size - pos >= 4; k++) {
		uint32_t len;
		memcpy(&len, data + pos, 4);
		pos += 4;
		size_t const n = len < size - pos ? len : size - pos;
		put_file(names[k], data + pos, n);
		pos += n;
	}
	for (size_t i = k; i < N_FILES; i++) { /* none of the last input's left over */
		snprintf(path, sizeof(path), "%s/%s", d, names[i]);
		unlink(path);
	}
	struct su_reader_stats st;
	uint64_t sum = 0;
	struct su_reader_callbacks cb = { .arg = &sum, .sample = fuzz_touch_sample };
	char err[512];
	fuzz_quiet(1);
	int const rc = su_perf_data_read(d, NULL, &cb, &st, err, sizeof(err));
	fuzz_quiet(0);
	/* A refusal always says why. */
	if (rc < 0 && rc != -ENOMEM && !err[0])
		abort();
	return 0;
}
