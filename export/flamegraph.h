/* SPDX-License-Identifier: MIT */
/* The SVG flamegraph writer: folded stacks, each frame with its module, in;
 * one self-contained interactive SVG out (inline style and script, no URL
 * but the xmlns), so it opens from file:// with no network.  It knows
 * nothing of traces or symbols: stackunwind feeds it its folded counts. */
#ifndef STACKCAP_FLAMEGRAPH_H
#define STACKCAP_FLAMEGRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* In a stack key, frames are separated by ';'; a frame's name is followed
 * by this byte and its module (none: the frame has no module, grey). */
#define FLAME_MODSEP '\x1f'
/* A frame name ending so is off-CPU time shown beside CPU time: blue. */
#define FLAME_OFF_CPU_MARK "_[o]"


struct flame_stack {
	const char *key;      /* "root;...;leaf", outermost first */
	uint64_t count;       /* samples with this stack */
};

struct flame_opts {
	const char *title;    /* NULL: "Flame Graph" */
	unsigned width;       /* image width in px (0: 1200) */
	double min_width;     /* frames narrower than this (px) are left out; < 0: 0.1 */
	int icicle;           /* the root at the top, stacks growing down */
	int reverse;          /* stacks merged from the leaf: callee-rooted */
	const char *unit;     /* what a count is (NULL: "samples"; "us": microseconds) */
};

struct flame_result {
	uint64_t samples;     /* the root's count */
	uint64_t frames;      /* frames drawn (the root included) */
	uint64_t omitted;     /* frames left out as too narrow */
};

/* Write the SVG of the N STACKS to OUT.  Identical input gives identical
 * bytes (siblings are sorted by name, then module).  @return 0, or -ENOMEM
 * (OUT holds nothing useful); write errors are OUT's (ferror). */
int flame_write(FILE *out, const struct flame_stack *stacks, size_t n, const struct flame_opts *o,
		struct flame_result *res);

#endif
