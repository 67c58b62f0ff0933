/* Modules: binaries found by build-id and opened once per run.
 *
 * A module is one ELF image (executable or shared object) identified by its
 * GNU build-id.  It is looked up in this order (first match wins):
 *   1. the user's --debug-dir / --symfs directories,
 *   2. the recorded path (under --symfs when given), only if its build-id
 *      matches,
 *   3. /usr/lib/debug/.build-id/xx/rest.debug (separate debug info),
 *   4. .gnu_debuglink of the binary found,
 *   5. debuginfod (libdebuginfod) when DEBUGINFOD_URLS is set.
 * A file whose build-id differs from the recorded one is never used.
 *
 * Each module owns a private Dwfl holding just that module at bias 0, so
 * every address here is an ELF address (pc - load bias).  elfutils 0.188 is
 * not thread-safe: a module cache belongs to one thread; -j N gives each
 * worker its own cache. */
#ifndef STACKCAP_DEBUGINFO_MODULE_H
#define STACKCAP_DEBUGINFO_MODULE_H

#include <stdint.h>
#include <stddef.h>
#include <elfutils/libdwfl.h>
#include "trace/trace-model.h"

enum su_module_status {
	SU_MODULE_OK = 0,          /* ELF found, build-id matches (or none recorded and path exists) */
	SU_MODULE_NOT_FOUND,       /* no file with this build-id anywhere */
	SU_MODULE_BUILD_ID_MISMATCH, /* only files with another build-id exist */
	SU_MODULE_NO_FILE,         /* anonymous/JIT code: nothing to open */
};

struct su_module {
	uint8_t build_id[SU_BUILD_ID_MAX];
	uint8_t build_id_len;
	char *recorded_path;
	enum su_module_status status;
	char *elf_path;            /* file opened, NULL unless OK */
	Dwfl *dwfl;                /* private, holds MOD only; NULL unless OK */
	Dwfl_Module *mod;          /* at bias 0: ELF address = module address */
	int is_vdso;
	void *unwind_cache;        /* owned by unwind/: per-pc CFI rules */
	void *sym_cache;           /* owned by symbolize/: per-address frames */
};

struct su_debuginfo_opts {
	const char *const *debug_dirs; /* NULL-terminated, or NULL */
	const char *symfs;             /* root prefix for recorded paths, or NULL */
	int no_debuginfod;             /* never ask debuginfod */
};

struct su_modcache_stats {
	uint64_t modules;          /* distinct build-ids asked for */
	uint64_t not_found;
	uint64_t build_id_mismatch;
};

struct su_modcache;

struct su_modcache *su_modcache_new(const struct su_debuginfo_opts *opts);
void su_modcache_free(struct su_modcache *cache);

/* The module of ENTRY, looked up and opened on first use, then cached by
 * build-id (by path when no build-id was recorded).  Never NULL unless out
 * of memory: a module that could not be found has a status saying why. */
struct su_module *su_modcache_get(struct su_modcache *cache,
				  const struct su_map_entry *entry);

void su_modcache_get_stats(const struct su_modcache *cache,
			   struct su_modcache_stats *stats);

/* Hooks so unwind/ and symbolize/ can free what they cached in a module. */
void su_modcache_set_finalizers(struct su_modcache *cache,
				void (*unwind_free)(void *),
				void (*sym_free)(void *));

#endif
