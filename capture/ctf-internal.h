/* SPDX-License-Identifier: MIT */
/* ctf-internal.h: helpers shared by the ctf-*.c files; not an API. */
#ifndef STACKCAP_CTF_INTERNAL_H
#define STACKCAP_CTF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Make sure dirfd holds our metadata for (uuid, clock offset, sampler
 * or NULL): write it
 * atomically if absent (*written = its size), accept an identical one
 * (*written = 0), else -EEXIST. */
int ctf_metadata_install(int dirfd, const uint8_t uuid[16], int64_t offset_ns, int version,
			 const char *sampler, int kernel, const char *const *events, size_t n_events,
			 int off_cpu, uint64_t *written);

#endif
