/* Text safe to print (escape.h). */
#include <stdint.h>

#include "symbolize/escape.h"

/* The length of the well-formed UTF-8 sequence at P (RFC 3629: no
 * overlong form, no surrogate, at most U+10FFFF), 0 when there is none;
 * *CP its code point. */
static size_t utf8_seq(const unsigned char *p, uint32_t *cp)
{
	size_t n;
	uint32_t c, min;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	} else if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2, c = p[0] & 0x1f, min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3, c = p[0] & 0x0f, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4, c = p[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* the NUL ends a cut sequence here too */
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* The bytes at P printed as they are (0: escape *P). */
static size_t clean_run(const unsigned char *p)
{
	uint32_t cp;
	size_t const n = utf8_seq(p, &cp);
	if (!n || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
		return 0;
	return n;
}

int su_text_needs_escape(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		if (*p >= 0x20 && *p < 0x7f) {
			p++;
			continue;
		}
		size_t const n = clean_run(p);
		if (!n)
			return 1;
		p += n;
	}
	return 0;
}

size_t su_text_escape(char *dst, size_t cap, const char *s)
{
	size_t len = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = clean_run(p);
		char hex[4];
		const char *src = (const char *)p;
		if (!n) {
			hex[0] = '\\', hex[1] = 'x';
			hex[2] = "0123456789abcdef"[*p >> 4];
			hex[3] = "0123456789abcdef"[*p & 15];
			src = hex;
			p++;
			n = 4;
		} else {
			p += n;
		}
		for (size_t i = 0; i < n; i++, len++)
			if (len + 1 < cap)
				dst[len] = src[i];
	}
	if (cap)
		dst[len < cap ? len : cap - 1] = 0;
	return len;
}
