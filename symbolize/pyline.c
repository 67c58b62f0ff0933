/* CPython 3.11's location table (Objects/locations.md in CPython's source,
 * read to learn the format).  Entries, each starting with a byte whose bit
 * 7 is set: bits 3-6 a code, bits 0-2 the entry's length in code units
 * minus 1.  Code 15: no location; 14: long form (line delta as a signed
 * varint, then end line, start and end column as varints); 13: line delta
 * only; 10-12: line delta code-10, then two column bytes; 0-9: same line,
 * one column byte.  Varints are 6-bit groups, least significant first,
 * bit 6 set on all but the last; a signed varint keeps the sign in bit 0. */
#include "symbolize/pyline.h"

static int varint(const uint8_t *t, size_t len, size_t *i, uint32_t *out)
{
	uint32_t v = 0;
	for (unsigned shift = 0; shift < 32; shift += 6) {
		if (*i >= len)
			return -1;
		uint8_t const b = t[(*i)++];
		v |= (uint32_t)(b & 0x3f) << shift;
		if (!(b & 0x40)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

uint32_t su_pyline_311(const uint8_t *table, size_t len, uint32_t first_line, int32_t pos)
{
	if (pos < 0)
		return first_line;
	int64_t line = first_line;
	uint64_t addr = 0;
	size_t i = 0;
	while (i < len) {
		uint8_t const first = table[i++];
		if (!(first & 0x80))
			return 0;
		unsigned const code = (first >> 3) & 15;
		uint64_t const end = addr + (first & 7) + 1;
		int has_line = 1;
		uint32_t v;
		if (code == 15) {
			has_line = 0;
		} else if (code == 14) {
			if (varint(table, len, &i, &v))
				return 0;
			line += (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
			for (int k = 0; k < 3; k++)
				if (varint(table, len, &i, &v))
					return 0;
		} else if (code == 13) {
			if (varint(table, len, &i, &v))
				return 0;
			line += (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (code >= 10) {
			line += code - 10;
			i += 2;
		} else {
			i += 1;
		}
		if (i > len)
			return 0;
		if ((uint64_t)pos < end)
			return has_line && line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0;
		addr = end;
	}
	return 0;
}
