/* SPDX-License-Identifier: MIT */
/* Sorting 64-bit keys: a radix sort, for the tables built once per module
 * (symbol addresses, their cells).  glibc's qsort calls its comparison
 * function n log n times: sorting python3's symbols that way was a third
 * of a first run over its perf.data. */
#ifndef SU_SYMBOLIZE_SORT_H
#define SU_SYMBOLIZE_SORT_H

#include <stddef.h>
#include <stdint.h>

/* KEYS[0..N) ascending, stably: equal keys keep their order, and
 * PAYLOAD[i] (when PAYLOAD is not NULL) moves with KEYS[i].  Memory for a
 * copy of both is taken and given back.  @return 0, or -ENOMEM (nothing
 * moved). */
int su_sort_u64(uint64_t *keys, uint32_t *payload, size_t n);

#endif
