/* SPDX-License-Identifier: MIT */
/*
 * rt-frames.h: the wire format of a runtime unwinder's frames (the blob of
 * a `runtime_frames` event, docs/trace-format.md), shared by the capture
 * hook (encode, in the signal handler: no malloc, bounded) and the readers
 * (decode).  Header-only so the handler inlines it.
 *
 * A runtime frame is what an interpreter knows of one of its frames:
 *   code   the address of its code object (CPython: the PyCodeObject);
 *   fp     a 32-bit fingerprint of that object's content taken at the
 *          sample, so that an object freed and another allocated at the
 *          same address is never given the first one's name (0: none);
 *   pos    the position in the code (CPython: the index of the last
 *          instruction started, in code units; -1: not started);
 *   entry  the frame a native call of the interpreter loop began with
 *          (CPython 3.11: _PyInterpreterFrame.is_entry): the frames up to
 *          and including an entry frame were run by one native
 *          interpreter-loop frame.
 *
 * Blob, version 1 (innermost frame first):
 *   u8      flags: RT_FRAMES_TRUNCATED (the depth or byte budget ended the
 *           chain), RT_FRAMES_UNREADABLE (a read failed: the chain goes on
 *           but was not read);
 *   varint  n, the number of frames;
 *   n times:
 *     varint  zigzag(code - previous frame's code; the first from 0)
 *     u32 LE  fp, only when that difference is not 0 (the same object has
 *             the same fingerprint)
 *     varint  (pos + 1) << 1 | entry
 */
#ifndef STACKCAP_RT_FRAMES_H
#define STACKCAP_RT_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/varint.h"

#define RT_FRAMES_TRUNCATED 0x1u
#define RT_FRAMES_UNREADABLE 0x2u

/* Bytes one frame can take, and a blob's header. */
#define RT_FRAME_BOUND (VARINT_MAX_BYTES + 4 + VARINT_MAX_BYTES)
#define RT_FRAMES_HEADER_BOUND (1 + VARINT_MAX_BYTES)

struct rt_frame {
	uint64_t code;
	uint32_t fp;
	int32_t pos;
	uint8_t entry;
};

/* Encoder state: frames are appended one at a time into [buf, buf+cap). */
struct rt_frames_enc {
	uint8_t *buf;
	size_t cap, len;
	uint8_t *count_at;       /* where n goes (a fixed 3-byte varint) */
	uint32_t n;
	uint64_t prev_code;
};

/* Start a blob.  The count is written as a 3-byte varint (room for 2^21
 * frames) so frames can be appended without knowing it.  @return 0, -1
 * when CAP cannot hold the header. */
static inline int rt_frames_begin(struct rt_frames_enc *e, uint8_t *buf, size_t cap)
{
	if (cap < 4)
		return -1;
	*e = (struct rt_frames_enc){ .buf = buf, .cap = cap, .len = 4, .count_at = buf + 1 };
	buf[0] = 0;
	return 0;
}

/* Append a frame.  @return 0, -1 when it does not fit (nothing written). */
static inline int rt_frames_add(struct rt_frames_enc *e, const struct rt_frame *f)
{
	uint8_t tmp[RT_FRAME_BOUND];
	size_t n = varint_put(tmp, zigzag_encode((int64_t)(f->code - e->prev_code)));
	if (f->code != e->prev_code || e->n == 0) {
		uint32_t const fp = f->fp;
		tmp[n++] = (uint8_t)fp, tmp[n++] = (uint8_t)(fp >> 8);
		tmp[n++] = (uint8_t)(fp >> 16), tmp[n++] = (uint8_t)(fp >> 24);
	}
	n += varint_put(tmp + n, ((uint64_t)(int64_t)(f->pos + 1) << 1) | (f->entry ? 1 : 0));
	if (e->len + n > e->cap || e->n >= (1u << 21) - 1)
		return -1;
	memcpy(e->buf + e->len, tmp, n);
	e->len += n;
	e->prev_code = f->code;
	e->n++;
	return 0;
}

/* Finish: flags and count.  @return the blob length. */
static inline size_t rt_frames_end(struct rt_frames_enc *e, uint8_t flags)
{
	e->buf[0] = flags;
	e->count_at[0] = (uint8_t)(e->n | 0x80);
	e->count_at[1] = (uint8_t)((e->n >> 7) | 0x80);
	e->count_at[2] = (uint8_t)(e->n >> 14);
	return e->len;
}

/* Decoder: the header, then one frame per call. */
struct rt_frames_dec {
	const uint8_t *p, *end;
	uint8_t flags;
	uint64_t n, done;
	uint64_t prev_code;
	uint32_t prev_fp;
};

/* @return 0, -1 when malformed. (The count may be a padded varint, so it is
 * read without varint_get's minimality rule.) */
static inline int rt_frames_open(struct rt_frames_dec *d, const uint8_t *blob, size_t len)
{
	*d = (struct rt_frames_dec){ .p = blob, .end = blob + len };
	if (len < 2)
		return -1;
	d->flags = blob[0];
	uint64_t n = 0;
	size_t i = 1;
	for (int k = 0;; k++, i++) {
		if (i >= len || k >= 4)
			return -1;
		n |= (uint64_t)(blob[i] & 0x7f) << (7 * k);
		if (!(blob[i] & 0x80))
			break;
	}
	d->n = n;
	d->p = blob + i + 1;
	return 0;
}

/* The next frame into *F.  @return 1, 0 at the end, -1 when malformed. */
static inline int rt_frames_next(struct rt_frames_dec *d, struct rt_frame *f)
{
	if (d->done >= d->n)
		return 0;
	uint64_t v;
	int r = varint_get(d->p, d->end, &v);
	if (r <= 0)
		return -1;
	d->p += r;
	int64_t const delta = zigzag_decode(v);
	f->code = d->prev_code + (uint64_t)delta;
	if (delta != 0 || d->done == 0) {
		if (d->end - d->p < 4)
			return -1;
		d->prev_fp = (uint32_t)d->p[0] | (uint32_t)d->p[1] << 8 | (uint32_t)d->p[2] << 16 |
			     (uint32_t)d->p[3] << 24;
		d->p += 4;
	}
	f->fp = d->prev_fp;
	r = varint_get(d->p, d->end, &v);
	if (r <= 0 || (v >> 1) > (uint64_t)INT32_MAX)
		return -1;
	d->p += r;
	f->pos = (int32_t)(v >> 1) - 1;
	f->entry = (uint8_t)(v & 1);
	d->prev_code = f->code;
	d->done++;
	return 1;
}

#endif /* STACKCAP_RT_FRAMES_H */
