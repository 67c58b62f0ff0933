/* Symbolizing: module + ELF address -> function, inline chain, file:line.
 *
 * One address may give several frames: the innermost inlined function
 * first, then each caller it was inlined into, then the real function
 * (like perf's "(inlined)" frames and `addr2line -f -i`).  The innermost
 * frame is at ADDR's line; each outer one at the call site of the frame
 * inside it.  Results are cached per (module, address) in the module
 * (module->sym_cache): register su_symbolize_cache_free with
 * su_modcache_set_finalizers.  Names: the demangled linkage name, else
 * DW_AT_name (C++: qualified by namespaces and classes), else the symbol
 * table's.  One thread per module cache. */
#ifndef STACKCAP_SYMBOLIZE_H
#define STACKCAP_SYMBOLIZE_H

#include <stdint.h>
#include <stddef.h>
#include "debuginfo/module.h"

struct su_symframe {
	const char *function;  /* demangled name, or NULL when unknown */
	uint64_t func_offset;  /* address - function start (symbol, else DWARF entry pc;
	                        * outermost frame only; 0 for inlined) */
	const char *file;      /* source file, or NULL */
	uint32_t line;         /* 0 when unknown */
	uint32_t column;
	int inlined;           /* this frame was inlined into the next one */
	/* Where the function is declared (DW_AT_decl_file/line), for exports
	 * that name functions by their source: NULL / 0 when unknown. */
	const char *decl_file;
	uint32_t decl_line;
};

/* Symbolize ELF address ADDR (already pc - bias, and already - 1 for return
 * addresses) in MODULE.  Fills up to MAX frames, innermost first.  Strings
 * are owned by the module's cache and live as long as the module.
 * @return the number of frames (0: nothing known; then print module+offset). */
size_t su_symbolize(struct su_module *module, uint64_t addr,
		    struct su_symframe *frames, size_t max);

/* As su_symbolize; *CLEAN (when not NULL) 1 when no function, file or
 * declaration file of the frames needs escaping to be printed
 * (resolve.h's su_text_needs_escape), found once per address. */
size_t su_symbolize_clean(struct su_module *module, uint64_t addr, struct su_symframe *frames, size_t max,
			  int *clean);

/* su_symbolize_clean's FLAGS. */
enum {
	/* Functions only (folded stacks, flamegraphs, reports): FILE, LINE,
	 * COLUMN and DECL_FILE left unset, so no line table is read (most of
	 * a cold run's time on a large library: libdw reads and sorts a
	 * unit's whole table for one row), unless the address has nothing
	 * else to be named by.  A module's cache keeps the answers of its
	 * first call's flags; others are made afresh at each call. */
	SU_SYMBOLIZE_NAMES_ONLY = 1,
};

/* As su_symbolize_clean, with FLAGS. */
size_t su_symbolize_flags(struct su_module *module, uint64_t addr, struct su_symframe *frames, size_t max,
			  int *clean, unsigned flags);

/* Free a module's symbol cache (the modcache finalizer). */
void su_symbolize_cache_free(void *sym_cache);
/* Write its new answers to its kept file, without freeing (the modcache
 * saver, at the process's exit). */
void su_symbolize_cache_save(void *sym_cache);

/* Demangle NAME when it is a C++ (Itanium ABI) symbol: a malloc'ed string,
 * or NULL when NAME is not mangled. */
char *su_demangle(const char *name);

#endif
