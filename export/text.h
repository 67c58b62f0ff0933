/* SPDX-License-Identifier: MIT */
/* A growable text buffer for outputs built in memory (a batch of samples,
 * a folded line), with the number formats they print by hand: printf was
 * 70% of `stackunwind stacks`.  Out of memory sets OOM and drops the rest;
 * the caller checks OOM once at the end. */
#ifndef STACKCAP_EXPORT_TEXT_H
#define STACKCAP_EXPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct text {
	char *buf;
	size_t len, cap;
	int oom;
	uint64_t gen;   /* which contents: the owner changes it when it empties BUF to
			 * fill it anew (stackunwind folded merges repeated lines of one) */
};

/* Room for N more bytes (and a NUL).  @return 0, or -1 with OOM set. */
int text_reserve(struct text *t, size_t n);
void text_put(struct text *t, const char *s, size_t n);
void text_puts(struct text *t, const char *s);
void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* V in decimal, at least MIN_DIGITS digits (zeros in front). */
void text_u64(struct text *t, uint64_t v, int min_digits);
/* A pid or tid as perf prints it: signed, so the kernel's "no task any
 * more" (a task sampled after release_task) is -1, not 4294967295; so is
 * a signed -1 read as 64 bits (LTTng's vpid). */
void text_id(struct text *t, uint64_t id);

#endif
