/* SPDX-License-Identifier: MIT */
/*
 * mem-ranges.h: a process's mappings of every kind (data too), as MMAP
 * records tell them, to learn where the stack a sample's sp points into
 * ends: the kernel copies a fixed window from sp, and above a thread's
 * stack lies whatever memory is mapped there (another thread's stack, a
 * heap), which costs the recorder time and tells the unwinder nothing.
 *
 * The records say what is mapped (each mmap, mprotect and brk: the whole
 * area the kernel made of it), never what is unmapped: a new range
 * replaces the parts of older ones it covers, and a range no longer mapped
 * stays until something is mapped over it.  Since nothing can run on
 * memory that no record announced, the end of the range holding sp is
 * always at or above the end of the stack sp is in.  The main thread's
 * stack ("[stack]") grows down past the range its record gave: an sp
 * below it, in no range, with nothing recorded in between, is in it.
 */
#ifndef STACKCAP_TRACE_MEM_RANGES_H
#define STACKCAP_TRACE_MEM_RANGES_H

#include <stddef.h>
#include <stdint.h>

struct su_mem_range {
	uint64_t start, end;
	int grows_down;               /* the main thread's stack */
};

struct su_mem_ranges {
	struct su_mem_range *v;       /* sorted, disjoint */
	size_t n, cap;
	int overflow;                 /* too many ranges: forgotten, now only newer ones */
};

/* [START, END) is mapped now (GROWS_DOWN: a main stack).  0 or -ENOMEM. */
int su_mem_ranges_map(struct su_mem_ranges *t, uint64_t start, uint64_t end, int grows_down);

/* The end of the mapping SP is in, or 0 when it is not known. */
uint64_t su_mem_ranges_stack_end(const struct su_mem_ranges *t, uint64_t sp);

/* DST (empty) made a copy of SRC (a fork).  0 or -ENOMEM. */
int su_mem_ranges_copy(struct su_mem_ranges *dst, const struct su_mem_ranges *src);

void su_mem_ranges_free(struct su_mem_ranges *t);

#endif
