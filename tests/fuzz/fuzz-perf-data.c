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

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FUZZ_SANITIZED)
#define FUZZ_SANITIZED 1
#endif
#ifdef FUZZ_SANITIZED
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_sample(void *arg, const struct su_sample *s)
{
	uint64_t *sum = arg;
	for (uint64_t i = 0; i < s->image->nwords; i++)
		*sum += s->image->words[i];
	if (s->maps)
		for (uint32_t i = 0; i < s->maps->count; i++)
			*sum += s->maps->entries[i].start + strlen(s->maps->entries[i].path);
	*sum += strlen(s->process->comm) + strlen(s->process->exe);
	return 0;
}

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
	struct su_reader_callbacks cb = { .arg = &sum, .sample = on_sample };
	char err[512];
#ifdef FUZZ_SANITIZED
	/* Under libFuzzer the reader's warnings would flood the log. */
	static int real_stderr = -1, devnull = -1;
	if (real_stderr < 0) {
		real_stderr = dup(2);
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		__sanitizer_set_report_fd((void *)(intptr_t)real_stderr);
	}
	fflush(stderr);
	dup2(devnull, 2);
#endif
	int const rc = su_perf_data_read_fd(fd, "fuzz.data", NULL, &cb, &st, err, sizeof(err));
#ifdef FUZZ_SANITIZED
	fflush(stderr);
	dup2(real_stderr, 2);
#endif
	close(fd);
	/* A refusal always says why. */
	if (rc < 0 && rc != -ENOMEM && !err[0])
		abort();
	return 0;
}
