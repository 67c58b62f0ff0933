/* Resolving: one unwound frame -> what every output prints about it.
 *
 * A frame resolves to one of:
 *   SU_RESOLVED_SYMBOLS  functions from DWARF or the symbol table, the
 *                        innermost inlined one first, the real one last;
 *   SU_RESOLVED_JIT      code no file describes, named by the process's
 *                        /tmp/perf-PID.map (symbolize/perfmap.h);
 *   SU_RESOLVED_MODULE   a known mapping, no symbol: module+offset;
 *   SU_RESOLVED_UNKNOWN  a pc in no recorded mapping;
 * always with its maps entry, its module and its ELF address, looked up at
 * the frame's su_frame_lookup_pc (pc - 1 for a return address).
 *
 * Every string a resolver hands out is safe to print on a terminal: a
 * control character (C0, DEL, a C1 control encoded in UTF-8) or a byte
 * that is not part of well-formed UTF-8, all of which a trace may carry
 * in a recorded path, a comm, a function or a file name, is written as
 * the four characters \xHH.  Clean strings (nearly all) are handed out as
 * they are, escaped ones are kept by the resolver.  Outputs only print.
 *
 * One resolver per thread (it uses the thread's module cache). */
#ifndef STACKCAP_SYMBOLIZE_RESOLVE_H
#define STACKCAP_SYMBOLIZE_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include "debuginfo/module.h"
#include "symbolize/escape.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

/* The longest inline chain kept for one frame. */
#define SU_RESOLVE_MAX_SYM 64

enum su_resolved_kind {
	SU_RESOLVED_UNKNOWN = 0,   /* no mapping: no module, no ELF address */
	SU_RESOLVED_MODULE,        /* a mapping, no symbol: module+ELF address */
	SU_RESOLVED_SYMBOLS,       /* SYM[NSYM], innermost first */
	SU_RESOLVED_JIT,           /* SYM[0]: the perf map's name, func_offset = pc - start */
	/* Frames other unwinders will add, resolved here too. */
	SU_RESOLVED_KERNEL,        /* kernel code (a SU_FRAME_KERNEL frame): SYM[0] has the
	                            * function of the trace's kernel symbols and
	                            * func_offset (nsym 0: none covers it); module_name
	                            * "[kernel.kallsyms]" or the module's "[name]",
	                            * elf_addr the kernel address */
	SU_RESOLVED_PYTHON,        /* an interpreter's frame (CPython, a SU_FRAME_RUNTIME
	                            * frame): SYM[0] has its qualified name (NULL when
	                            * the trace does not describe its code object),
	                            * file, line, decl_line = its first line,
	                            * func_offset = its instruction index; module_name
	                            * "[python]", elf_addr the code object's address */
};

struct su_resolved {
	enum su_resolved_kind kind;
	uint64_t pc;                       /* the frame's */
	uint8_t activation;                /* 0: PC is a return address */
	const struct su_map_entry *entry;  /* NULL when UNKNOWN */
	struct su_module *module;          /* NULL when UNKNOWN */
	const char *module_name;           /* the entry's path, "[anon]" (anonymous
	                                    * code) or "[unknown]" (no path, no
	                                    * mapping) */
	uint64_t elf_addr;                 /* pc - the entry's load bias */
	const char *jit_map;               /* JIT: the perf map file, perf's module name */
	size_t nsym;                       /* SYMBOLS: >= 1, the last has a function; JIT: 1 */
	const struct su_symframe *sym;     /* the resolver's: valid until its next su_resolve */
};

struct su_resolver;

/* A resolver over MODULES (a thread's module cache; it registers the
 * symbol cache's finalizer there), with JIT names from the trace's
 * perf maps in JIT_DIR (TRACE/jit; NULL: none), else from SYMFS/tmp
 * (SYMFS NULL: /tmp).  NULL when out of memory. */
struct su_resolver *su_resolver_new(struct su_modcache *modules, const char *symfs, const char *jit_dir);
void su_resolver_free(struct su_resolver *r);
/* From now on, functions only: no file:line (SU_SYMBOLIZE_NAMES_ONLY), for
 * outputs that print names alone (folded stacks, flamegraphs, reports).
 * Call before the first su_resolve. */
void su_resolver_names_only(struct su_resolver *r);

/* The maps entry (*ENTRY, may be NULL) and module of frame F of a sample
 * with MAPS, or NULL: the cheap first step of su_resolve, cached by entry. */
struct su_module *su_resolver_module(struct su_resolver *r, const struct su_maps *maps,
				     const struct su_frame *f, const struct su_map_entry **entry);

/* Resolve frame F of a sample of process PID with MAPS into *OUT.
 * @return 0, or -ENOMEM (then *OUT is UNKNOWN). */
int su_resolve(struct su_resolver *r, uint32_t pid, const struct su_maps *maps, const struct su_frame *f,
	       struct su_resolved *out);

/* A sample in execve after the old image's memory went (exec_mmap) holds
 * that image's registers: its pc is the old execve's, not in the new maps
 * (no-map), and its stack is not there to read (bad-stack).  When the
 * unwind of sample S (its N FRAMES, its kernel frames first) ended *END so
 * on its one user frame and a kernel frame is in execve, *END becomes
 * SU_END_EXEC and that frame goes: the kernel's are the sample.
 * @return the frames kept. */
size_t su_resolver_exec_end(struct su_resolver *r, const struct su_sample *s, const struct su_frame *frames,
			    size_t n, enum su_unwind_end *end);

/* S safe to print: S itself, or the resolver's escaped copy (living as
 * long as R).  NULL when out of memory. */
const char *su_resolver_text(struct su_resolver *r, const char *s);

/* The name process P is shown under (its comm, "[unknown]" without one),
 * safe to print.  NULL when out of memory. */
const char *su_resolver_comm(struct su_resolver *r, const struct su_process *p);

#endif
