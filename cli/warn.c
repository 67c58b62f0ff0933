/* SPDX-License-Identifier: MIT */
/* The tools' printer of the libraries' warnings (cli/warn.h). */
#include <stdio.h>

#include "cli/warn.h"

void cli_warn_stderr(void *prog, const char *msg)
{
	/* One write: stderr is unbuffered. */
	fprintf(stderr, "%s: warning: %s\n", (const char *)prog, msg);
}

void cli_print_stderr(void *prog, const char *line)
{
	fprintf(stderr, "%s: %s\n", (const char *)prog, line);
}
