/* Modules: binaries found by build-id and opened once per run.
 *
 * A module is one ELF image (executable or shared object) identified by its
 * GNU build-id.  The binary (code, .eh_frame, symbols) is looked up in this
 * order (first match wins):
 *   1. the user's --debug-dir directories: DIR/.build-id/xx/rest, then
 *      DIR/<basename of the recorded path>,
 *   2. the recorded path (under --symfs when given),
 *   3. [SYMFS]/usr/lib/debug/.build-id/xx/rest,
 *   4. the copy `stackcap record` kept of it (a container's file, a
 *      deleted one), KEPT_DIR/bin/.build-id/xx/rest, when ours,
 *   5. perf's build-id cache (perf-cache.h: ~/.debug unless perf is
 *      told otherwise) /.build-id/xx/rest/elf: what perf record keeps,
 *      what `perf archive` packs (not with no_system_dirs),
 *   6. debuginfod (libdebuginfod) when DEBUGINFOD_URLS is set.
 * Its separate debug info (DWARF, full .symtab), when the binary has none,
 * is looked up when libdw first asks for it:
 *   1. DIR/.build-id/xx/rest.debug, DIR/<.gnu_debuglink name> of each
 *      --debug-dir,
 *   2. [SYMFS]/usr/lib/debug/.build-id/xx/rest.debug,
 *   3. the .gnu_debuglink name next to the binary, in its .debug/, and under
 *      [SYMFS]/usr/lib/debug/<recorded dir>/,
 *   4. debuginfod.
 * When no binary is found but a debug file is, the debug file stands in for
 * it (symbols and lines work; it has no .eh_frame).  A file whose build-id
 * differs from the recorded one is never used.  For [vdso] (SU_MAP_VDSO)
 * the recorded path is replaced by this process's own vDSO, used only when
 * its build-id matches.
 *
 * A debug file whose sections are compressed is handed to libdw as an
 * inflated copy kept by build-id when a cache directory is given
 * (inflate-cache.h): libdw would inflate it at every run.
 *
 * Each module owns a private Dwfl holding just that module at bias 0, so
 * every address here is an ELF address (pc - load bias).  elfutils 0.188 is
 * not thread-safe: a module cache belongs to one thread; -j N gives each
 * worker its own cache. */
#ifndef STACKCAP_DEBUGINFO_MODULE_H
#define STACKCAP_DEBUGINFO_MODULE_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <elfutils/libdwfl.h>
#include "common/map-entry.h"

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
	char *elf_path;            /* file opened, NULL unless OK ("[vdso]" for ours) */
	char *debug_path;          /* separate debug file libdw opened, or NULL */
	Dwfl *dwfl;                /* private, holds MOD only; NULL unless OK */
	Dwfl_Module *mod;          /* at bias 0: ELF address = module address */
	int is_vdso;
	int debug_only;            /* ELF_PATH is a debug file: no code, no .eh_frame */
	/* The opened file's build-id (OK only): the recorded one, or the
	 * file's own when none was recorded. */
	uint8_t file_id_len;
	uint8_t file_id[SU_BUILD_ID_MAX];
	/* The PT_LOAD segments of the file opened (OK only): where a mapping
	 * of a file offset puts ELF addresses (su_module_bias). */
	uint16_t nload;
	struct { uint64_t offset, vaddr, filesz; uint32_t flags; } load[16];
	void *unwind_cache;        /* owned by unwind/: per-pc CFI rules */
	void *sym_cache;           /* owned by symbolize/: per-address frames */
	/* Where answers may be kept between runs (the cache directory, or
	 * NULL), and a hash of how files are looked up (--debug-dir, --symfs,
	 * system dirs, debuginfod): an answer kept under one lookup is never
	 * used under another. */
	const char *cache_dir;
	uint64_t lookup_hash;
};

struct su_debuginfo_opts {
	const char *const *debug_dirs; /* NULL-terminated, or NULL */
	const char *symfs;             /* root prefix for recorded paths, or NULL */
	int no_debuginfod;             /* never ask debuginfod */
	int no_system_dirs;            /* skip /usr/lib/debug (tests) */
	/* Where inflated copies of compressed debug files are kept
	 * (debuginfo/inflate-cache.h), or NULL: inflate them at each open. */
	const char *inflate_cache_dir;
	/* Where `stackcap record` keeps copies of the binaries a reader
	 * would not find at their recorded path (a container's, a deleted
	 * one): KEPT_DIR/bin/.build-id/xx/rest (record/keep-binaries.h),
	 * looked at after the system's debug directories.  NULL: not. */
	const char *kept_dir;
};

struct su_modcache_stats {
	uint64_t modules;          /* distinct build-ids asked for */
	uint64_t not_found;        /* modules NOT_FOUND */
	uint64_t build_id_mismatch; /* modules BUILD_ID_MISMATCH */
	uint64_t no_file;          /* modules NO_FILE */
	uint64_t mismatched_files; /* files seen and refused for their build-id */
	uint64_t separate_debug;   /* separate debug files opened */
};

struct su_modcache;

/* A cache with a copy of OPTS (NULL: defaults).  NULL + errno on failure. */
struct su_modcache *su_modcache_new(const struct su_debuginfo_opts *opts);
void su_modcache_free(struct su_modcache *cache);
/* The same, in a process about to exit: the modules' cached answers are
 * written back as by su_modcache_free, but libdw's state for each module
 * (its Dwfl: trees of CUs, aranges, abbreviations) is left to the exit,
 * which gives the memory back at once; freed node by node it was ~10% of
 * a warm stackunwind run.  Freed all the same under AddressSanitizer,
 * whose leak check would take it for a leak. */
void su_modcache_free_at_exit(struct su_modcache *cache);
/* At a command's very end, the process exiting next: only the modules'
 * cached answers written back (each layer's saver: su_modcache_set_savers,
 * else its finalizer); nothing freed, the exit gives it all back at once
 * (a system-wide trace's hundreds of modules: 1-2 ms freed piece by
 * piece, after the reading's threads are done).  CACHE is not to be used
 * again.  Under AddressSanitizer su_modcache_free, for its leak check. */
void su_modcache_save_at_exit(struct su_modcache *cache);

/* The module of ENTRY, looked up and opened on first use, then cached by
 * build-id (by path when no build-id was recorded).  Never NULL unless out
 * of memory or ENTRY is NULL (errno set): a module that could not be found
 * has a status saying why. */
struct su_module *su_modcache_get(struct su_modcache *cache,
				  const struct su_map_entry *entry);

/* The module of ENTRY when already looked up (by su_modcache_get, with
 * the same build-id, or the same path when it has none), else NULL:
 * nothing opened. */
struct su_module *su_modcache_find(struct su_modcache *cache, const struct su_map_entry *entry);

/* The separate debug file of build-id ID (ID_LEN bytes) that a module's
 * lookup tries first (by build-id: --debug-dir's, the system's, then
 * debuginfod's unless C has it off; not by .gnu_debuglink), its inflated
 * copy written now
 * when it is compressed and C keeps copies (inflate-cache.h): the first
 * run's costliest step for that module, done before it is needed
 * (debuginfo/inflate-ahead.h).  @return 0, or -1 when there is none. */
int su_modcache_inflate_ahead(struct su_modcache *c, const uint8_t *id, size_t id_len);

void su_modcache_get_stats(const struct su_modcache *cache,
			   struct su_modcache_stats *stats);

/* Hooks so unwind/ and symbolize/ can free what they cached in a module.
 * A NULL argument keeps the hook already set, so each layer registers its
 * own without knowing the other. */
void su_modcache_set_finalizers(struct su_modcache *cache,
				void (*unwind_free)(void *),
				void (*sym_free)(void *));
/* And so they can write back, without freeing, what they cached in a
 * module (su_modcache_save_at_exit); NULL keeps as above. */
void su_modcache_set_savers(struct su_modcache *cache, void (*unwind_save)(void *), void (*sym_save)(void *));

/* The load bias of ENTRY (ELF address = pc - bias), M its module (or
 * NULL): ENTRY's own, unless it maps a file offset with no bias known
 * (SU_MAP_FILE_BIAS, a perf.data mapping): then from the program headers
 * of the file M opened (under --symfs, in a --debug-dir...), the segment
 * holding ENTRY's offset (an executable one first: ENTRY maps code, and
 * its first page may hold the end of the read-only segment before, where
 * lld starts a segment at another distance from its file offset than the
 * one before); START - OFFSET when there is none. */
uint64_t su_module_bias(const struct su_module *m, const struct su_map_entry *entry);

const char *su_module_status_name(enum su_module_status status);

/* Each module of CACHE opened (status OK), in no order, given to FN. */
void su_modcache_each(struct su_modcache *cache, void (*fn)(void *arg, struct su_module *m), void *arg);

/* M's separate debug file (M OK), looked for now if it was not yet: its
 * path, or NULL (none: the binary holds what there is). */
const char *su_module_debug_file(struct su_module *m);

/* Where answers about M are kept between runs (issue 20):
 * CACHE_DIR/SUBDIR/BUILDID-KEY, KEY a hash of MAGIC (8 bytes), SALT, how
 * files are looked up (lookup_hash) and the identity (device, inode,
 * size, mtime) of M's binary, of the debug file libdw opened for it
 * (found now: no unit is read) and of the program or plugin holding this
 * code (another build may answer otherwise).  A build-id is easy to
 * forge: a hostile file read once is named by its own identity, so it
 * never stands in for the true one later.  @return 0, or -1 when nothing
 * is kept for M (no cache directory, a vDSO, a file with no build-id, a
 * file named by no absolute path, PATH too short).  The build-id in the
 * name is the opened file's (su_module.file_id): the recorded one, or the
 * file's own when none was recorded. */
int su_module_kept_path(struct su_module *m, const char *subdir, const char *magic, uint64_t salt, char *path,
			size_t size);

/* What names an ELF file's build, as a build-id: its GNU build-id
 * (NT_GNU_BUILD_ID), else the Go toolchain's build ID (the "Go" note of
 * type 4, .note.go.buildid: Go writes no GNU build-id by default), its
 * first SU_BUILD_ID_MAX bytes.  With it a Go program rebuilt since it was
 * recorded is told from the one that ran, and a container's is kept and
 * found by it, as any other.  @return its length (*ID points into ELF's
 * data), or -1: none. */
ssize_t su_elf_file_id(Elf *elf, const void **id);

/* Is ID a Go build ID (su_elf_file_id's fallback: text of base64url
 * parts joined by '/'), which no debuginfod server knows? */
int su_build_id_is_go(const uint8_t *id, size_t len);

/* "xx/rest" of a build-id, the layout of .build-id trees, in BUF
 * (2 * SU_BUILD_ID_MAX + 2 bytes). */
void su_build_id_rel(char *buf, const uint8_t *id, size_t len);

#endif
