/* SPDX-License-Identifier: MIT */
/*
 * fuzz-kallsyms.c: the running kernel's symbols as the perf-data fuzz
 * target sees them, in place of trace/kallsyms.c.  The real reader parses
 * this machine's /proc/kallsyms (120,000 lines, 1.7 s a file under ASan),
 * which no input controls; here the kernel is always the one the committed
 * seeds were recorded on (its build-id below), with a small fixed symbol
 * table over the kernel text, so an input that names that kernel takes the
 * path that names kernel frames, the same on every machine and fast.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/kallsyms.h"

/* /sys/kernel/notes' NT_GNU_BUILD_ID of the kernel the perf-data seeds
 * (kernel-chain-*, tracepoint-*, context-switch-*) were recorded on. */
static const uint8_t seed_kernel_id[20] = {
	0x85, 0xc7, 0xe4, 0xe2, 0xed, 0x76, 0xf4, 0x41, 0x7e, 0x8a,
	0xaa, 0xd7, 0xc6, 0xb0, 0x40, 0xd2, 0xbb, 0x89, 0x7a, 0x26,
};

size_t su_kernel_build_id(uint8_t *id)
{
	memcpy(id, seed_kernel_id, sizeof(seed_kernel_id));
	return sizeof(seed_kernel_id);
}

#define NSYMS 256
#define TEXT 0xffffffff81000000ull
#define STEP 0x20000ull

int su_kallsyms_read(struct su_kernel **out)
{
	*out = NULL;
	struct su_kernel *k = calloc(1, sizeof(*k));
	if (!k || !(k->syms = calloc(NSYMS, sizeof(*k->syms)))) {
		free(k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < NSYMS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "ksym_%zu", i);
		k->syms[i] = (struct su_ksym){ .start = TEXT + STEP * i, .end = TEXT + STEP * (i + 1),
					       .name = strdup(name), .module = strdup(i % 16 == 15 ? "mod" : "") };
		k->n++;
		if (!k->syms[i].name || !k->syms[i].module) {
			su_kernel_free(k);
			return -ENOMEM;
		}
	}
	k->build_id_len = (uint8_t)su_kernel_build_id(k->build_id);
	*out = k;
	return 0;
}
