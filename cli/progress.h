/* SPDX-License-Identifier: MIT */
/* A progress line for long runs, on stderr only when it is a terminal:
 * "stackunwind: N samples (P% of the trace), R samples/s", redrawn at most
 * four times a second and erased at the end.  The percent is the reader's
 * bytes read against the trace's bytes on disk (left out when the reader
 * does not count them). */
#ifndef STACKCAP_PROGRESS_H
#define STACKCAP_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* A read in parts (stackunwind -j N over our trace): each part adds its
 * samples and bytes read here as it goes, and the first part's line shows
 * the sums (each part reads only some files of a system-wide trace). */
struct progress_sum {
	_Atomic uint64_t samples, bytes;
};

struct progress {
	int on;                       /* stderr is a terminal (and not silenced) */
	int shown;                    /* a line is on the screen */
	uint64_t samples;
	uint64_t interval_ns;         /* between redraws (250 ms) */
	struct timespec start, last;
	const uint64_t *bytes_read, *bytes_total;  /* may be NULL */
	struct progress_sum *sum;     /* a read in parts: all parts' counts, or NULL */
	uint64_t bytes_added;         /* of *BYTES_READ, added to SUM so far */
};

/* Start: ON only when stderr is a terminal and QUIET is 0.  The interval
 * may be set by STACKUNWIND_PROGRESS_MS (tests). */
void progress_init(struct progress *p, int quiet, const uint64_t *bytes_read, const uint64_t *bytes_total);

void progress_draw(struct progress *p);

/* A part of a read in parts (PART of them, on their own threads): its
 * counts added to SUM, which the line (if P is on) shows instead. */
void progress_parts(struct progress *p, struct progress_sum *sum);
/* Every 64 samples: the counts to the parts' sum, the line drawn. */
void progress_tick(struct progress *p);
/* One more sample: cheap (the clock is read every 64 samples). */
static inline void progress_sample(struct progress *p)
{
	if ((p->on || p->sum) && (++p->samples & 63) == 0)
		progress_tick(p);
}

/* Erase the line. */
void progress_end(struct progress *p);

#endif
