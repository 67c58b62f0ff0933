/* SPDX-License-Identifier: MIT */
/* A progress line for long runs, on stderr only when it is a terminal:
 * "stackunwind: N samples (P% of the trace), R samples/s", redrawn at most
 * four times a second and erased at the end.  The percent is the reader's
 * bytes read against the trace's bytes on disk (left out when the reader
 * does not count them). */
#ifndef STACKCAP_PROGRESS_H
#define STACKCAP_PROGRESS_H

#include <stdint.h>
#include <time.h>

struct progress {
	int on;                       /* stderr is a terminal (and not silenced) */
	int shown;                    /* a line is on the screen */
	uint64_t samples;
	uint64_t interval_ns;         /* between redraws (250 ms) */
	struct timespec start, last;
	const uint64_t *bytes_read, *bytes_total;  /* may be NULL */
};

/* Start: ON only when stderr is a terminal and QUIET is 0.  The interval
 * may be set by STACKUNWIND_PROGRESS_MS (tests). */
void progress_init(struct progress *p, int quiet, const uint64_t *bytes_read, const uint64_t *bytes_total);

void progress_draw(struct progress *p);

/* One more sample: cheap (the clock is read every 64 samples). */
static inline void progress_sample(struct progress *p)
{
	if (p->on && (++p->samples & 63) == 0)
		progress_draw(p);
}

/* Erase the line. */
void progress_end(struct progress *p);

#endif
