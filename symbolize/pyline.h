/* CPython code positions -> source lines: the line table of a code object
 * (co_linetable) as a runtime_code event records it (docs/trace-format.md).
 * Used by the resolver for SU_FRAME_RUNTIME frames of CPython. */
#ifndef STACKCAP_SYMBOLIZE_PYLINE_H
#define STACKCAP_SYMBOLIZE_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/* The line of instruction POS (code units; -1: the frame had not started)
 * of a code object whose first line is FIRST_LINE and whose 3.11 location
 * table (the format of 3.12 and 3.13 too) is TABLE[0..LEN).  POS -1 gives FIRST_LINE; 0 when the table says
 * "no location" there or is malformed or ends before POS. */
uint32_t su_pyline_311(const uint8_t *table, size_t len, uint32_t first_line, int32_t pos);

#endif
