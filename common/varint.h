/* SPDX-License-Identifier: MIT */
/*
 * varint.h: LEB128 unsigned varints and zigzag, shared by the codec and the
 * trace writers.  Header-only so the encode path inlines them.
 */
#ifndef STACKCAP_VARINT_H
#define STACKCAP_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX_BYTES 10

/* Bytes needed to write V. */
static inline size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Write V at P (room for VARINT_MAX_BYTES assumed); @return bytes written. */
static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Read a varint from [P, END) into *V.  Rejects truncation, more than 64
 * bits and non-minimal encodings (a last byte of 0 after a continuation),
 * so every value has exactly one encoding.  @return bytes read, 0 when the
 * input ends first, -1 when malformed. */
static inline int varint_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (int i = 0; i < VARINT_MAX_BYTES; i++) {
		if (p + i >= end)
			return 0;
		uint8_t const b = p[i];
		if (i == VARINT_MAX_BYTES - 1 && b > 1)
			return -1; /* more than 64 bits */
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (i > 0 && b == 0)
				return -1; /* non-minimal */
			*v = r;
			return i + 1;
		}
	}
	return -1;
}

static inline uint64_t zigzag_encode(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t zigzag_decode(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif /* STACKCAP_VARINT_H */
