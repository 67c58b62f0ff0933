/* SPDX-License-Identifier: MIT */
/* The growable text buffer (text.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
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

void text_id(struct text *t, uint64_t id)
{
	if (id == UINT32_MAX || id == UINT64_MAX)
		text_put(t, "-1", 2);
	else
		text_u64(t, id, 1);
}
