/* SPDX-License-Identifier: MIT */
/* Folded stacks, flamegraph.pl's input: one line per distinct stack,
 * "root;outermost;...;leaf COUNT", sorted by stack.
 *
 * The line: the root is the comm ("comm-PID", "comm-PID/TID" per process
 * or thread), then "[why]" when the unwind stopped before the outermost
 * frame (so such stacks group apart), then every frame, outermost first:
 * each function by name, inlined ones as frames of their own (unless
 * NO_INLINE), module+0xELFADDR where no function is known, [unknown] for a
 * pc in no module.  ';' inside a name becomes ':'.  With MODULES (the
 * flamegraph's input) each name is followed by FOLDED_MODSEP and its
 * module's base name.  Names are printed as given: the resolver
 * (symbolize/resolve.h) has made them safe.
 *
 * `stackunwind folded` builds lines from resolved frames, the babeltrace2
 * sink from the filter's callstack fields: both through these functions,
 * so their texts are the same. */
#ifndef STACKCAP_EXPORT_FOLDED_H
#define STACKCAP_EXPORT_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "common/hashmap.h"
#include "export/flamegraph.h"
#include "export/text.h"
#include "symbolize/resolve.h"

/* After each frame name of an off-CPU stack shown beside CPU stacks
 * (OFF_CPU_MARK): as flamegraph.pl's annotations (_[k], _[w]) are; our
 * flamegraph draws such frames blue. */
#define FOLDED_OFF_CPU_MARK FLAME_OFF_CPU_MARK

/* Between a frame's name and its module (MODULES): the flamegraph's. */
#define FOLDED_MODSEP FLAME_MODSEP

enum folded_root { FOLDED_ROOT_COMM = 0, FOLDED_ROOT_PROCESS, FOLDED_ROOT_THREAD };

struct folded_opts {
	enum folded_root root;
	int no_inline;            /* only the real function of each address */
	int modules;              /* each name followed by FOLDED_MODSEP and its module */
	int off_cpu_mark;         /* each frame name followed by FOLDED_OFF_CPU_MARK */
};

/* ---- the line, appended to a text --------------------------------------------- */

/* The root: COMM, PID and TID as O->root wants; END the reason the unwind
 * stopped, NULL when it reached the outermost frame. */
void folded_root(struct text *t, const struct folded_opts *o, const char *comm, uint64_t pid, uint64_t tid,
		 const char *end);
/* One function frame FN of module MODULE (a path; NULL: none). */
void folded_function(struct text *t, const struct folded_opts *o, const char *fn, const char *module);
/* A frame no symbol covers: MODULE's base name + 0xADDR. */
void folded_address(struct text *t, const struct folded_opts *o, const char *module, uint64_t addr);
/* A pc in no module. */
void folded_unknown(struct text *t);
/* Resolved frame R: its functions outermost first, or its address. */
void folded_resolved(struct text *t, const struct folded_opts *o, const struct su_resolved *r);

/* ---- counts: distinct line -> samples ----------------------------------------- */

struct folded_entry {
	char *stack;              /* the line without its '\n' */
	uint64_t count;
	size_t len;               /* strlen(stack) */
};

struct folded_counts {
	struct folded_entry *tab; /* the N distinct lines, first seen first (sorted: by stack) */
	size_t n, cap;
	struct su_hmap map;       /* line -> its entry in TAB */
	int sorted;               /* folded_counts_sort done (or the merge's): no line counted since */
};

/* Count the line S (LEN bytes, no '\n').  @return 0 or -ENOMEM. */
int folded_counts_add(struct folded_counts *c, const char *s, size_t len);
/* The same, N at once (a weight: off-CPU microseconds). */
int folded_counts_add_n(struct folded_counts *c, const char *s, size_t len, uint64_t n);
/* Each '\n'-terminated line "STACK N" of BUF counted N times (the
 * weighted lines of time: off-CPU).  @return 0, -ENOMEM or -EINVAL (a
 * line without its count). */
int folded_counts_add_weighted_lines(struct folded_counts *c, const char *buf, size_t len);
/* Count each '\n'-terminated line of BUF.  @return 0 or -ENOMEM. */
int folded_counts_add_lines(struct folded_counts *c, const char *buf, size_t len);
/* The entries sorted by stack, so the output is the same whatever the order
 * of samples; no line is counted after.  @return their number. */
size_t folded_counts_sort(struct folded_counts *c);
/* The sorted counts IN[0..N) (folded_counts_sort: each part of a read
 * sorted its own on its thread) into OUT, empty: one sorted table, the
 * counts of a line in several added; the lines moved, not copied (IN's
 * tables then hold nothing to print; folded_counts_free them).
 * @return 0, or -ENOMEM with nothing moved. */
int folded_counts_merge_sorted(struct folded_counts *out, struct folded_counts *const *in, size_t n);
/* Sorted "STACK COUNT" lines to OUT (write errors are OUT's). */
void folded_counts_print(struct folded_counts *c, FILE *out);
void folded_counts_free(struct folded_counts *c);

#endif
