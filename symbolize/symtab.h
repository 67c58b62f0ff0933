/* A module's symbol table, sorted once: the name libdwfl's
 * dwfl_module_addrinfo gives an address, found by a binary search instead
 * of its scan of every symbol (elfutils 0.188 reads each symbol through
 * gelf_getsymshndx at every call: most of symbolizing a big library).
 *
 * Same table as libdwfl's (dwfl_module_getsymtab picks .symtab, else
 * .dynsym, plus .gnu_debugdata's), same answers: the table answers every
 * address some sized symbol holds, with libdwfl's preferences among them
 * (globals before locals, the closest start, then binding, then the
 * smaller size, then table order); an address no sized symbol holds
 * is nameless unless a sizeless symbol (an assembly label) could name
 * it: that is left to libdwfl, whose rules for those depend on the
 * table's order and sections. */
#ifndef STACKCAP_SYMTAB_H
#define STACKCAP_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>

/* One symbol as libdwfl's search sees it. */
struct su_sym {
	uint64_t value;            /* its address in the module (biased) */
	uint64_t size;             /* st_size */
	const char *name;
	uint32_t index;            /* in libdwfl's table: its search order */
	unsigned char info;        /* st_info: binding and type */
	unsigned char defined;     /* st_shndx != SHN_UNDEF */
};

struct su_symtab;

/* A table of SYMS[N] (any order, copied; names are not), where symbols at
 * index FIRST_GLOBAL and above are searched first (libdwfl's
 * dwfl_module_getsymtab_first_global; 0: one table without locals).
 * NULL when out of memory. */
struct su_symtab *su_symtab_new(const struct su_sym *syms, size_t n, int first_global);

/* Can MOD's answers come from a table (x86-64, i386, aarch64; not
 * ET_REL)?  Elsewhere libdwfl may give a symbol two values. */
int su_symtab_usable(Dwfl_Module *mod);

/* MOD's table, read once through dwfl_module_getsym_info; NULL when it
 * has none or out of memory. */
struct su_symtab *su_symtab_of_module(Dwfl_Module *mod);

/* dwfl_module_addrinfo's answer for ADDR: 1 when a sized symbol holds it
 * (its name in *NAME, its address in *VALUE); 0 when libdwfl names
 * nothing there (no symbol holds it, no sizeless one could stand in:
 * *NAME NULL); -1 when only libdwfl can tell (a sizeless symbol may name
 * it, by rules that depend on the table's order and sections). */
int su_symtab_lookup(const struct su_symtab *t, uint64_t addr, const char **name, uint64_t *value);

void su_symtab_free(struct su_symtab *t);

#endif
