/* SPDX-License-Identifier: MIT */
/*
 * hash.h: the one hash function, 64-bit FNV-1a (header-only: the capture
 * side uses it too).  Its values are part of the trace format where a
 * writer stores them (capture/ctf-writer.c: stream_instance_id), so they
 * never change.
 */
#ifndef STACKCAP_COMMON_HASH_H
#define STACKCAP_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SU_FNV_SEED UINT64_C(0xcbf29ce484222325) /* FNV-1a 64-bit offset basis */
#define SU_FNV_PRIME UINT64_C(0x100000001b3)

/* One step: V (a byte, or a whole word where the caller hashes words)
 * into the running hash H. */
static inline uint64_t su_fnv1a_add(uint64_t h, uint64_t v)
{
	return (h ^ v) * SU_FNV_PRIME;
}

/* The N bytes at P into the running hash H. */
static inline uint64_t su_fnv1a_from(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = su_fnv1a_add(h, s[i]);
	return h;
}

/* FNV-1a of the N bytes at P. */
static inline uint64_t su_fnv1a(const void *p, size_t n)
{
	return su_fnv1a_from(SU_FNV_SEED, p, n);
}

/* FNV-1a of the N bytes at P a word (8 bytes) at a time, each step
 * folded so that the low bits depend on every byte: for long keys and
 * checksums, where one step per byte costs. */
static inline uint64_t su_fnv1a_words(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = SU_FNV_SEED;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, s + i, 8);
		h = su_fnv1a_add(h, v);
		h ^= h >> 32;
	}
	return su_fnv1a_from(h, s + i, n - i);
}

/* FNV-1a of the bytes of the string S (not its NUL). */
static inline uint64_t su_fnv1a_str(const char *s)
{
	uint64_t h = SU_FNV_SEED;
	for (; *s; s++)
		h = su_fnv1a_add(h, (unsigned char)*s);
	return h;
}

#endif
