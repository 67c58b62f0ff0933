/* SPDX-License-Identifier: MIT */
/* Reads the DWARF of a file with libdwarf and prints, one a line:
 *   F LOW HIGH NAME              a subprogram with an address range
 *   L ADDR END LINE COLUMN FILE  a line table row (END: end_sequence)
 * for tests/unit/oracle-client.c.  Usage: dwarf-oracle FILE */
#include <dwarf.h>
#include <inttypes.h>
#include <libdwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dwarf_oracle;
static void oracle_free(struct dwarf_oracle *o);

struct func { uint64_t low, high; char *name; };
struct row { uint64_t addr; char *file; unsigned line, column; int end; };

struct dwarf_oracle {
	struct func *funcs;
	size_t nfuncs, capfuncs;
	struct row *rows;
	size_t nrows, caprows;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t n = *cap ? 2 * *cap : 256;
	while (n < need)
		n *= 2;
	void *q = realloc(p, n * elem);
	if (q)
		*cap = n;
	return q;
}

/* A DIE's name, also through abstract_origin / specification. */
static char *die_name(Dwarf_Debug dbg, Dwarf_Die die, int depth)
{
	Dwarf_Error err = NULL;
	char *name = NULL;
	if (dwarf_diename(die, &name, &err) == DW_DLV_OK)
		return strdup(name);
	if (depth > 4)
		return NULL;
	static const Dwarf_Half refs[] = { DW_AT_abstract_origin, DW_AT_specification };
	for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
		Dwarf_Attribute attr;
		Dwarf_Off off;
		Dwarf_Die target;
		if (dwarf_attr(die, refs[i], &attr, &err) != DW_DLV_OK)
			continue;
		int ok = dwarf_global_formref(attr, &off, &err) == DW_DLV_OK &&
			 dwarf_offdie_b(dbg, off, 1, &target, &err) == DW_DLV_OK;
		dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
		if (ok) {
			char *s = die_name(dbg, target, depth + 1);
			dwarf_dealloc(dbg, target, DW_DLA_DIE);
			if (s)
				return s;
		}
	}
	return NULL;
}

static void add_subprogram(struct dwarf_oracle *o, Dwarf_Debug dbg, Dwarf_Die die)
{
	Dwarf_Error err = NULL;
	Dwarf_Addr low, high;
	Dwarf_Half form;
	enum Dwarf_Form_Class cls;
	if (dwarf_lowpc(die, &low, &err) != DW_DLV_OK ||
	    dwarf_highpc_b(die, &high, &form, &cls, &err) != DW_DLV_OK)
		return;
	if (cls == DW_FORM_CLASS_CONSTANT)
		high += low; /* DWARF 4+: high_pc is a length */
	struct func *f = grow(o->funcs, &o->capfuncs, o->nfuncs + 1, sizeof *f);
	if (!f)
		return;
	o->funcs = f;
	o->funcs[o->nfuncs++] = (struct func){ low, high, die_name(dbg, die, 0) };
}

/* Every subprogram at or under DIE (which this takes over). */
static void walk(struct dwarf_oracle *o, Dwarf_Debug dbg, Dwarf_Die die)
{
	Dwarf_Error err = NULL;
	while (die) {
		Dwarf_Half tag;
		if (dwarf_tag(die, &tag, &err) == DW_DLV_OK && tag == DW_TAG_subprogram)
			add_subprogram(o, dbg, die);
		Dwarf_Die child;
		if (dwarf_child(die, &child, &err) == DW_DLV_OK)
			walk(o, dbg, child);
		Dwarf_Die next;
		int res = dwarf_siblingof_b(dbg, die, 1, &next, &err);
		dwarf_dealloc(dbg, die, DW_DLA_DIE);
		die = res == DW_DLV_OK ? next : NULL;
	}
}

static void add_lines(struct dwarf_oracle *o, Dwarf_Debug dbg, Dwarf_Die cu)
{
	Dwarf_Error err = NULL;
	Dwarf_Unsigned version;
	Dwarf_Small tables;
	Dwarf_Line_Context ctx;
	Dwarf_Line *lines;
	Dwarf_Signed count;
	if (dwarf_srclines_b(cu, &version, &tables, &ctx, &err) != DW_DLV_OK)
		return;
	if (dwarf_srclines_from_linecontext(ctx, &lines, &count, &err) == DW_DLV_OK) {
		for (Dwarf_Signed i = 0; i < count; i++) {
			struct row r = { 0 };
			Dwarf_Addr a;
			Dwarf_Unsigned ln, col;
			Dwarf_Bool end;
			char *src;
			if (dwarf_lineaddr(lines[i], &a, &err) != DW_DLV_OK ||
			    dwarf_lineno(lines[i], &ln, &err) != DW_DLV_OK)
				continue;
			r.addr = a;
			r.line = (unsigned)ln;
			if (dwarf_lineoff_b(lines[i], &col, &err) == DW_DLV_OK)
				r.column = (unsigned)col;
			if (dwarf_lineendsequence(lines[i], &end, &err) == DW_DLV_OK)
				r.end = end != 0;
			if (dwarf_linesrc(lines[i], &src, &err) == DW_DLV_OK) {
				r.file = strdup(src);
				dwarf_dealloc(dbg, src, DW_DLA_STRING);
			}
			struct row *rows = grow(o->rows, &o->caprows, o->nrows + 1, sizeof *rows);
			if (!rows) {
				free(r.file);
				break;
			}
			o->rows = rows;
			o->rows[o->nrows++] = r;
		}
	}
	dwarf_srclines_dealloc_b(ctx);
}

static struct dwarf_oracle *oracle_read(const char *path)
{
	Dwarf_Debug dbg = NULL;
	Dwarf_Error err = NULL;
	if (dwarf_init_path(path, NULL, 0, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL,
			    &dbg, NULL, 0, NULL, &err) != DW_DLV_OK)
		return NULL;
	struct dwarf_oracle *o = calloc(1, sizeof *o);
	for (;;) {
		Dwarf_Unsigned len, typeoff, next;
		Dwarf_Half ver, asz, lsz, esz, cutype;
		Dwarf_Off abbr;
		Dwarf_Sig8 sig;
		if (dwarf_next_cu_header_d(dbg, 1, &len, &ver, &abbr, &asz, &lsz, &esz, &sig,
					   &typeoff, &next, &cutype, &err) != DW_DLV_OK)
			break;
		Dwarf_Die cu;
		if (dwarf_siblingof_b(dbg, NULL, 1, &cu, &err) != DW_DLV_OK)
			continue;
		if (o)
			add_lines(o, dbg, cu);
		Dwarf_Die child;
		if (o && dwarf_child(cu, &child, &err) == DW_DLV_OK)
			walk(o, dbg, child);
		dwarf_dealloc(dbg, cu, DW_DLA_DIE);
	}
	dwarf_finish(dbg, &err);
	if (o && !o->nfuncs && !o->nrows) {
		oracle_free(o);
		o = NULL;
	}
	return o;
}

void oracle_free(struct dwarf_oracle *o)
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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	struct dwarf_oracle *o = oracle_read(argv[1]);
	if (!o) {
		fprintf(stderr, "%s: no DWARF read\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < o->nfuncs; i++)
		printf("F %" PRIx64 " %" PRIx64 " %s\n", o->funcs[i].low, o->funcs[i].high,
		       o->funcs[i].name ? o->funcs[i].name : "");
	for (size_t i = 0; i < o->nrows; i++)
		printf("L %" PRIx64 " %d %u %u %s\n", o->rows[i].addr, o->rows[i].end,
		       o->rows[i].line, o->rows[i].column, o->rows[i].file ? o->rows[i].file : "");
	oracle_free(o);
	return fflush(stdout) == 0 ? 0 : 1;
}
