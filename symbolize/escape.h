/* Text safe to print on a terminal: a control character (C0, DEL, a C1
 * control encoded in UTF-8) or a byte that is not part of well-formed
 * UTF-8 is written as the four characters \xHH (resolve.h says where). */
#ifndef STACKCAP_SYMBOLIZE_ESCAPE_H
#define STACKCAP_SYMBOLIZE_ESCAPE_H

#include <stddef.h>

/* Does S need escaping?  Its escaped form into DST, CAP bytes with the
 * NUL: @return the length it needs, as snprintf. */
int su_text_needs_escape(const char *s);
size_t su_text_escape(char *dst, size_t cap, const char *s);

#endif
