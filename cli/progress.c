/* SPDX-License-Identifier: MIT */
/* The progress line (progress.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/progress.h"

static uint64_t ns_between(const struct timespec *a, const struct timespec *b)
{
	return (uint64_t)(b->tv_sec - a->tv_sec) * 1000000000u + (uint64_t)b->tv_nsec - (uint64_t)a->tv_nsec;
}

void progress_init(struct progress *p, int quiet, const uint64_t *bytes_read, const uint64_t *bytes_total)
{
	*p = (struct progress){ .on = !quiet && isatty(STDERR_FILENO), .interval_ns = 250000000u,
				.bytes_read = bytes_read, .bytes_total = bytes_total };
	const char *ms = getenv("STACKUNWIND_PROGRESS_MS");
	if (ms && *ms)
		p->interval_ns = (uint64_t)strtoul(ms, NULL, 10) * 1000000u;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

void progress_draw(struct progress *p)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ns_between(&p->last, &now) < p->interval_ns)
		return;
	p->last = now;
	uint64_t const el = ns_between(&p->start, &now);
	double const rate = el ? (double)p->samples * 1e9 / (double)el : 0;
	/* \r and erase to the end of the line: one line, redrawn in place. */
	fprintf(stderr, "\rstackunwind: %llu samples", (unsigned long long)p->samples);
	if (p->bytes_read && p->bytes_total && *p->bytes_total && *p->bytes_read) {
		uint64_t const done = *p->bytes_read < *p->bytes_total ? *p->bytes_read : *p->bytes_total;
		fprintf(stderr, " (%.0f%% of the trace)", 100.0 * (double)done / (double)*p->bytes_total);
	}
	fprintf(stderr, ", %.0f samples/s\033[K", rate);
	fflush(stderr);
	p->shown = 1;
}

void progress_end(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = 0;
	p->on = 0;
}
