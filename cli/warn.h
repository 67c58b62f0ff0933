/* SPDX-License-Identifier: MIT */
/* The tools' printer of the libraries' warnings (the readers' su_warn_hook,
 * the recorder's messages): the libraries never print, the command does. */
#ifndef STACKCAP_CLI_WARN_H
#define STACKCAP_CLI_WARN_H

#include <stdint.h>
#include "trace/stackcap-reader.h"

/* "PROG: warning: MSG\n" on stderr in one write, PROG being ARG (a string). */
void cli_warn_stderr(void *prog, const char *msg);
/* "PROG: LINE\n" on stderr in one write (the recorder's say hook). */
void cli_print_stderr(void *prog, const char *line);

/* The hook printing as cli_warn_stderr with PROG. */
static inline struct su_warn_hook cli_warn_hook(const char *prog)
{
	return (struct su_warn_hook){ .fn = cli_warn_stderr, .arg = (void *)(uintptr_t)prog };
}

#endif
