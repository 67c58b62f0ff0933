/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: arbitrary bytes read as a perf.data file by the whole
 * perf.data reader (su_perf_data_read_fd) from a memfd.  A damaged file
 * is refused (< 0) or read in part (> 0), never a crash; every delivered
 * sample's stack words are readable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace/perf-data.h"
#include "tests/fuzz/fuzz-reader.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-perf-data", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	size_t done = 0;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	struct su_reader_stats st;
	uint64_t sum = 0;
	struct su_reader_callbacks cb = { .arg = &sum, .sample = fuzz_touch_sample };
	char err[512];
	fuzz_quiet(1);
	int const rc = su_perf_data_read_fd(fd, "fuzz.data", NULL, &cb, &st, err, sizeof(err));
	fuzz_quiet(0);
	close(fd);
	/* A refusal always says why. */
	if (rc < 0 && rc != -ENOMEM && !err[0])
		abort();
	return 0;
}
