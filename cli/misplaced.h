/* SPDX-License-Identifier: MIT */
/* A command line whose first word is not a command: what was probably
 * meant, said as the line to type (git's "did you mean", for the two
 * mistakes people make with a tool shaped like perf): options before the
 * command (`stackunwind -j 2 folded T`), or no command at all
 * (`stackunwind T`, `stackcap ./prog`). */
#ifndef STACKCAP_CLI_MISPLACED_H
#define STACKCAP_CLI_MISPLACED_H

#include <stdio.h>

/* ARGV[1] is no command (IS_COMMAND says which words are).  When a later
 * argument is one, writes to OUT "PROG: the command comes first, its
 * options after it: PROG CMD ARGS..." (the line with CMD moved first)
 * and returns 1; else 0, nothing written. */
int cli_misplaced_command(FILE *out, const char *prog, int argc, char *const *argv,
			  int (*is_command)(const char *word));

/* Writes ARG to OUT as a shell word (single-quoted when it holds anything
 * but letters, digits and _-./,:=@%+). */
void cli_shell_word(FILE *out, const char *arg);

#endif
