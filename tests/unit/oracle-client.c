/* SPDX-License-Identifier: MIT */
/* Reads what tests/unit/dwarf-oracle prints (see dwarf-oracle.h). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/dwarf-oracle.h"
#include "tests/unit/elf-util.h"

struct func { uint64_t low, high; char *name; };
struct row { uint64_t addr; char *file; unsigned line, column; int end; };

struct dwarf_oracle {
	struct func *funcs;
	size_t nfuncs;
	struct row *rows;
	size_t nrows;
};

struct dwarf_oracle *dwarf_oracle_open(const char *path)
{
	char *tool = build_path("tests/unit/dwarf-oracle");
	char *cmd = xasprintf("'%s' '%s'", tool, path);
	int st;
	char *out = run_cmd(cmd, &st);
	free(tool);
	free(cmd);
	if (st != 0) {
		free(out);
		return NULL;
	}
	struct dwarf_oracle *o = calloc(1, sizeof *o);
	ck_assert_ptr_nonnull(o);
	size_t lines = 1;
	for (char *p = out; *p; p++)
		lines += *p == '\n';
	o->funcs = calloc(lines, sizeof *o->funcs);
	o->rows = calloc(lines, sizeof *o->rows);
	ck_assert(o->funcs && o->rows);
	char *save = NULL;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int pos = 0;
		if (l[0] == 'F') {
			struct func *f = &o->funcs[o->nfuncs];
			if (sscanf(l, "F %" SCNx64 " %" SCNx64 " %n", &f->low, &f->high, &pos) == 2) {
				f->name = strdup(l + pos);
				o->nfuncs++;
			}
		} else if (l[0] == 'L') {
			struct row *r = &o->rows[o->nrows];
			if (sscanf(l, "L %" SCNx64 " %d %u %u %n", &r->addr, &r->end, &r->line,
				   &r->column, &pos) == 4) {
				r->file = strdup(l + pos);
				o->nrows++;
			}
		}
	}
	free(out);
	return o;
}

void dwarf_oracle_close(struct dwarf_oracle *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nfuncs; i++)
		free(o->funcs[i].name);
	for (size_t i = 0; i < o->nrows; i++)
		free(o->rows[i].file);
	free(o->funcs);
	free(o->rows);
	free(o);
}

const char *dwarf_oracle_function(const struct dwarf_oracle *o, uint64_t addr,
				  uint64_t *low_pc)
{
	for (size_t i = 0; o && i < o->nfuncs; i++) {
		if (o->funcs[i].low <= addr && addr < o->funcs[i].high) {
			if (low_pc)
				*low_pc = o->funcs[i].low;
			return o->funcs[i].name;
		}
	}
	return NULL;
}

int dwarf_oracle_line(const struct dwarf_oracle *o, uint64_t addr,
		      const char **file, unsigned *line, unsigned *column)
{
	/* Rows come in sequences closed by an end_sequence row. */
	for (size_t i = 0; o && i + 1 < o->nrows; i++) {
		const struct row *r = &o->rows[i];
		if (!r->end && r->addr <= addr && addr < o->rows[i + 1].addr) {
			*file = r->file;
			*line = r->line;
			*column = r->column;
			return 0;
		}
	}
	return -1;
}
