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

void progress_parts(struct progress *p, struct progress_sum *sum)
{
	p->sum = sum;
}

void progress_tick(struct progress *p)
{
	if (p->sum) {
		atomic_fetch_add_explicit(&p->sum->samples, 64, memory_order_relaxed);
		uint64_t const b = p->bytes_read ? *p->bytes_read : 0;
		if (b > p->bytes_added) {
			atomic_fetch_add_explicit(&p->sum->bytes, b - p->bytes_added, memory_order_relaxed);
			p->bytes_added = b;
		}
	}
	if (p->on)
		progress_draw(p);
}

void progress_draw(struct progress *p)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (ns_between(&p->last, &now) < p->interval_ns)
		return;
	p->last = now;
	uint64_t const el = ns_between(&p->start, &now);
	uint64_t const samples = p->sum ? atomic_load_explicit(&p->sum->samples, memory_order_relaxed) : p->samples;
	uint64_t read = p->bytes_read ? *p->bytes_read : 0;
	if (p->sum)
		read = atomic_load_explicit(&p->sum->bytes, memory_order_relaxed);
	double const rate = el ? (double)samples * 1e9 / (double)el : 0;
	/* \r and erase to the end of the line: one line, redrawn in place. */
	fprintf(stderr, "\rstackunwind: %llu samples", (unsigned long long)samples);
	if (p->bytes_total && *p->bytes_total && read) {
		uint64_t const done = read < *p->bytes_total ? read : *p->bytes_total;
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
