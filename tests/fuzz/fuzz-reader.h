/* SPDX-License-Identifier: MIT */
/* fuzz-reader.h: what the reader fuzz targets (native-source, perf-data)
 * share: touching every part of a delivered sample, and silencing the
 * reader's warnings under libFuzzer. */
#ifndef STACKCAP_FUZZ_READER_H
#define STACKCAP_FUZZ_READER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/asan.h"
#include "trace/stackcap-reader.h"

#if SU_ASAN
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#endif

/* Sample callback: reads what a consumer would (so the sanitizers see a
 * bad pointer or length), summed into *(uint64_t *)ARG. */
static inline int fuzz_touch_sample(void *arg, const struct su_sample *s)
{
	uint64_t *sum = arg;
	for (uint64_t i = 0; i < s->image->nwords; i++)
		*sum += s->image->words[i];
	if (s->full_image)
		*sum += s->full_image->nwords;
	if (s->segment)
		*sum += s->segment->nwords;
	for (uint32_t i = 0; i < s->n_user_chain; i++)
		*sum += s->user_chain[i];
	if (s->maps)
		for (uint32_t i = 0; i < s->maps->count; i++)
			*sum += s->maps->entries[i].start + strlen(s->maps->entries[i].path);
	if (s->process && s->process->comm)
		*sum += strlen(s->process->comm);
	if (s->process && s->process->exe)
		*sum += strlen(s->process->exe);
	return 0;
}

/* Under libFuzzer the reader's warnings would flood the log: stderr goes
 * to /dev/null between fuzz_quiet(1) and fuzz_quiet(0), while sanitizer
 * reports keep the real stderr.  Replays (no sanitizer) print them. */
static inline void fuzz_quiet(int on)
{
#if SU_ASAN
	static int real_stderr = -1, devnull = -1;
	if (real_stderr < 0) {
		real_stderr = dup(2);
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		__sanitizer_set_report_fd((void *)(intptr_t)real_stderr);
	}
	fflush(stderr);
	dup2(on ? devnull : real_stderr, 2);
#else
	(void)on;
#endif
}

#endif
