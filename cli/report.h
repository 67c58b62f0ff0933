/* SPDX-License-Identifier: MIT */
/* `stackunwind report`: perf report's table from the folded counts.
 *
 * The report reads nothing of its own: `stackunwind report` runs the
 * pipeline of `folded` (the same resolver and folded line builder, each
 * frame followed by FOLDED_MODSEP and its module, as the flamegraph's
 * input) and this turns the counted lines into
 *  - a table, one row per function (module and name) or per module:
 *    Self, the share of samples whose innermost frame it is, and Children,
 *    the share of samples whose stack holds it anywhere (once per sample,
 *    however often recursion repeats it), as perf report --children;
 *  - or (TREE) the call tree, caller first (perf report -g caller, the
 *    order of a flamegraph): each node the share of samples through that
 *    path, its callees below it, hottest first.
 * Percentages are of all samples counted (or of all microseconds when the
 * counts are off-CPU time). */
#ifndef STACKCAP_CLI_REPORT_H
#define STACKCAP_CLI_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include "export/folded.h"

enum report_sort { REPORT_SORT_CHILDREN = 0, REPORT_SORT_SELF };

struct report_opts {
	enum report_sort sort;   /* the table's order (the other column breaks ties) */
	int per_module;          /* rows per module (DSO) rather than per function */
	int tree;                /* the call tree instead of the table */
	double min_pct;          /* rows (tree: nodes) under this share are left out */
	size_t limit;            /* at most this many rows (tree: callees per node); 0: all */
	const char *unit;        /* NULL: samples; "us": the counts are microseconds */
	const char *title;       /* the first line's subject (the trace) */
};

/* The report of C (lines "root[;[end]];frame...", frames with their
 * modules) to OUT.  @return 0 or -ENOMEM (write errors are OUT's). */
int report_print(const struct folded_counts *c, const struct report_opts *o, FILE *out);

#endif
