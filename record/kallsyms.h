/* SPDX-License-Identifier: MIT */
/*
 * kallsyms.h: the kernel symbols a recording needs, taken from this
 * machine at record time (/proc/kallsyms, /sys/kernel/notes) so that the
 * trace names its kernel frames on any machine (docs/trace-format.md,
 * "Kernel frames").
 */
#ifndef STACKCAP_RECORD_KALLSYMS_H
#define STACKCAP_RECORD_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>
#include "capture/ctf-writer.h"

/* May this process read kernel addresses (kallsyms shows them: root, or
 * kernel.kptr_restrict 0)?  1 yes, 0 no. */
int rec_kallsyms_readable(void);

struct rec_ksyms {
	struct ctf_kernel_symbol *syms; /* sorted, not overlapping */
	size_t n;
	char *names;                    /* the strings syms point into */
	uint8_t build_id[64];
	size_t build_id_len;            /* 0: none found */
};

/* The kernel text symbols covering the N addresses ADDRS (any order,
 * repeats allowed), each once, with its extent up to the next symbol,
 * and the kernel's build-id.  @return 0 or -errno (kallsyms unreadable:
 * -EACCES). */
int rec_ksyms_cover(const uint64_t *addrs, size_t n, struct rec_ksyms *out);
void rec_ksyms_free(struct rec_ksyms *k);

#endif
