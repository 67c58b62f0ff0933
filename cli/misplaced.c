/* SPDX-License-Identifier: MIT */
/* What a command line without its command first meant (misplaced.h). */
#include <string.h>

#include "cli/misplaced.h"

void cli_shell_word(FILE *out, const char *arg)
{
	if (*arg && strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./,:=@%+") ==
			    strlen(arg)) {
		fputs(arg, out);
		return;
	}
	fputc('\'', out);
	for (const char *p = arg; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", out);
		else
			fputc(*p, out);
	}
	fputc('\'', out);
}

int cli_misplaced_command(FILE *out, const char *prog, int argc, char *const *argv,
			  int (*is_command)(const char *word))
{
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return 0; /* a traced command's own words from here */
		if (!is_command(argv[i]))
			continue;
		fprintf(out, "%s: the command comes first, its options after it: %s %s", prog, prog, argv[i]);
		for (int j = 1; j < argc; j++) {
			if (j == i)
				continue;
			fputc(' ', out);
			cli_shell_word(out, argv[j]);
		}
		fputc('\n', out);
		return 1;
	}
	return 0;
}
