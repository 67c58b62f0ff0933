/* SPDX-License-Identifier: MIT */
/*
 * grow.h: the one growable-array helper: room for NEED elements, the
 * capacity doubling, the new elements zeroed.
 */
#ifndef STACKCAP_COMMON_GROW_H
#define STACKCAP_COMMON_GROW_H

#include <stddef.h>

/* Make the zeroed array *ARR of *CAP elements of ELEM bytes hold at least
 * NEED: the capacity doubles (from 8) until NEED fits, and the elements
 * past the old capacity are zeroed.  On failure (out of memory, or a size
 * past SIZE_MAX) *ARR and *CAP are unchanged.  @return 0 or -ENOMEM. */
int su_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* su_grow for an array ARR (a T * lvalue) and its size_t capacity CAP;
 * no call while NEED fits (per-sample callers: a call each was 1-2% of
 * stackunwind stacks).  CAP and NEED are read twice: no side effects. */
#define SU_GROW(arr, cap, need) \
	((need) <= (cap) ? 0 : su_grow((void **)&(arr), &(cap), (need), sizeof(*(arr))))

#endif
