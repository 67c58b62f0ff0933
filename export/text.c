/* SPDX-License-Identifier: MIT */
/* The growable text buffer (text.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/grow.h"
#include "common/io.h"
#include "export/text.h"

int text_reserve(struct text *t, size_t n)
{
	if (t->len + n < t->cap)
		return 0;
	if (n > SIZE_MAX - t->len - 1 || SU_GROW(t->buf, t->cap, t->len + n + 1)) {
		t->oom = 1;
		return -1;
	}
	return 0;
}

void text_put(struct text *t, const char *s, size_t n)
{
	if (text_reserve(t, n))
		return;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

void text_puts(struct text *t, const char *s)
{
	text_put(t, s, strlen(s));
}

void text_printf(struct text *t, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (t->buf && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		if (text_reserve(t, (size_t)n))
			return;
	}
}

void text_u64(struct text *t, uint64_t v, int min_digits)
{
	char b[24];
	int i = (int)sizeof(b);
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v || (int)sizeof(b) - i < min_digits);
	text_put(t, b + i, sizeof(b) - (size_t)i);
}

void text_x64(struct text *t, uint64_t v)
{
	char b[18];
	int i = (int)sizeof(b);
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	b[--i] = 'x';
	b[--i] = '0';
	text_put(t, b + i, sizeof(b) - (size_t)i);
}

void text_id(struct text *t, uint64_t id)
{
	if (id == UINT32_MAX || id == UINT64_MAX)
		text_put(t, "-1", 2);
	else
		text_u64(t, id, 1);
}

/* ---- shared text, by reference ------------------------------------------ */

struct text_shared *text_shared_new(const char *s, size_t len, size_t cap)
{
	if (cap < len)
		cap = len;
	if (cap > UINT32_MAX)
		return NULL;
	struct text_shared *sh = malloc(sizeof(*sh) + (cap ? cap : 1));
	if (!sh)
		return NULL;
	atomic_init(&sh->refs, 1);
	sh->cap = (uint32_t)cap;
	sh->held_by = NULL;
	sh->held_gen = 0;
	memcpy(sh->s, s, len);
	return sh;
}

void text_shared_drop(struct text_shared *sh)
{
	/* acq_rel: the last one's free comes after every other holder's
	 * reads of the contents. */
	if (sh && atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) == 1)
		free(sh);
}

struct text_shared *text_shared_set(struct text_shared *sh, const char *s, size_t len)
{
	if (sh && sh->cap >= len && text_shared_alone(sh)) {
		memcpy(sh->s, s, len);
		return sh;
	}
	text_shared_drop(sh);
	return text_shared_new(s, len, len);
}

int text_shared_alone(struct text_shared *sh)
{
	/* acquire: the writer that let go of it last is done reading. */
	return atomic_load_explicit(&sh->refs, memory_order_acquire) == 1;
}

void text_put_shared(struct text *t, struct text_shared *sh, size_t len)
{
	if (!t->by_ref) {
		text_put(t, sh->s, len);
		return;
	}
	if (t->oom)
		return;
	if (sh->held_by != t || sh->held_gen != t->gen) {
		if (SU_GROW(t->holds, t->cap_holds, t->n_holds + 1)) {
			t->oom = 1;
			return;
		}
		/* relaxed: the owner's own count, let go by whoever writes T. */
		atomic_fetch_add_explicit(&sh->refs, 1, memory_order_relaxed);
		t->holds[t->n_holds++] = sh;
		sh->held_by = t;
		sh->held_gen = t->gen;
	}
	if (SU_GROW(t->refs, t->cap_refs, t->n_refs + 1)) {
		t->oom = 1;
		return;
	}
	t->refs[t->n_refs++] = (struct text_ref){ .at = t->len, .s = sh->s, .len = len };
	t->ref_bytes += len;
}

int text_iov_flush(struct text_iov *v, int fd)
{
	int const rc = v->n ? su_writev_all(fd, v->iov, v->n) : 0;
	v->n = 0;
	return rc;
}

int text_write_range(const struct text *t, size_t own_from, size_t own_to, size_t ref_from, size_t ref_to,
		     struct text_iov *v, int fd)
{
	/* The pieces in order: own bytes up to a reference, the reference,
	 * ..., the own bytes after the last. */
	size_t own = own_from, r = ref_from;
	while (r < ref_to || own < own_to) {
		if (v->n == IOV_MAX) {
			int const rc = text_iov_flush(v, fd);
			if (rc)
				return rc;
		}
		size_t const upto = r < ref_to ? t->refs[r].at : own_to;
		if (own < upto) {
			v->iov[v->n++] = (struct iovec){ t->buf + own, upto - own };
			own = upto;
		} else { /* own bytes done up to reference R */
			if (t->refs[r].len)
				v->iov[v->n++] = (struct iovec){ (void *)t->refs[r].s, t->refs[r].len };
			r++;
		}
	}
	return 0;
}

int text_write(const struct text *t, int fd)
{
	struct text_iov v;
	v.n = 0;
	int const rc = text_write_range(t, 0, t->len, 0, t->n_refs, &v, fd);
	return rc ? rc : text_iov_flush(&v, fd);
}

void text_clear(struct text *t)
{
	for (size_t i = 0; i < t->n_holds; i++)
		text_shared_drop(t->holds[i]);
	t->n_holds = t->n_refs = t->ref_bytes = 0;
	t->len = 0;
}

void text_free(struct text *t)
{
	text_clear(t);
	free(t->buf);
	free(t->refs);
	free(t->holds);
	t->buf = NULL;
	t->refs = NULL;
	t->holds = NULL;
	t->cap = t->cap_refs = t->cap_holds = 0;
}
