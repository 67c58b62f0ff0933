/* SPDX-License-Identifier: MIT */
/* Test helpers for the debuginfo and symbolize suites: build-ids and
 * symbols read straight from the ELF with libelf (not through the code
 * under test), temp dirs, shell commands.  They fail the running Check
 * test on error. */
#ifndef STACKCAP_TESTS_ELF_UTIL_H
#define STACKCAP_TESTS_ELF_UTIL_H

#include <stddef.h>
#include <stdint.h>

char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* $top_builddir/REL (top_builddir from the environment, else "."). */
char *build_path(const char *rel);

/* The GNU build-id note of PATH into ID (SU_BUILD_ID_MAX bytes): its length. */
size_t elf_build_id(const char *path, uint8_t *id);

/* st_value and st_size of function NAME in PATH's .symtab; 0 if absent. */
uint64_t elf_func_addr(const char *path, const char *name, uint64_t *size);

/* e_type of PATH. */
int elf_type(const char *path);

char *new_tmpdir(void);
void rm_rf(char *dir); /* and free DIR */

/* Run CMD under sh; its stdout (malloc'ed), *STATUS its exit code. */
char *run_cmd(const char *cmd, int *status);

#endif
