/* SPDX-License-Identifier: MIT */
/* An independent answer to "which function, which line" for the
 * symbolizer tests, from libdwarf (not elfutils): every DW_TAG_subprogram
 * with a [low_pc, high_pc) range and every line table row.  libdwarf and
 * libdw export the same symbol names (dwarf_formstring...), so they cannot
 * share a process: the program tests/unit/dwarf-oracle (dwarf-oracle.c,
 * libdwarf only) prints them and dwarf_oracle_open (oracle-client.c) reads
 * its output. */
#ifndef STACKCAP_TESTS_DWARF_ORACLE_H
#define STACKCAP_TESTS_DWARF_ORACLE_H

#include <stdint.h>

struct dwarf_oracle;

/* NULL when PATH cannot be read or has no DWARF (fails the running
 * Check test when the oracle program cannot be run). */
struct dwarf_oracle *dwarf_oracle_open(const char *path);
void dwarf_oracle_close(struct dwarf_oracle *o);

/* Name of the (out-of-line) subprogram whose range holds ADDR, or NULL. */
const char *dwarf_oracle_function(const struct dwarf_oracle *o, uint64_t addr,
				  uint64_t *low_pc);

/* The line table row for ADDR: the last row at or below ADDR whose
 * successor in its sequence is above it.  0 when found. */
int dwarf_oracle_line(const struct dwarf_oracle *o, uint64_t addr,
		      const char **file, unsigned *line, unsigned *column);

#endif
