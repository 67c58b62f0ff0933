/* SPDX-License-Identifier: MIT */
/* fuzz-common.h: the fixed address space the codec fuzz targets use. */
#ifndef STACKCAP_FUZZ_COMMON_H
#define STACKCAP_FUZZ_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "compress/stack-codec.h"

static const struct stackcap_code_range fuzz_ranges_tab[] = {
	{ 0x0000555555554000ull, 0x0000555555580000ull, 0 },
	{ 0x00007f0000100000ull, 0x00007f0000300000ull, 1 },
	{ 0x00007f0000400000ull, 0x00007f0000410000ull, 2 },
};

static inline const struct stackcap_code_ranges *fuzz_ranges(void)
{
	static struct stackcap_code_ranges set;
	if (!set.count && stackcap_code_ranges_init(&set, fuzz_ranges_tab, 3) != 0)
		abort();
	return &set;
}

/* abort() rather than assert(): the check must hold in every build. */
#define FUZZ_CHECK(cond) do { if (!(cond)) abort(); } while (0)

#endif
