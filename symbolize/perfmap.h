/* Names of JIT code from perf maps.
 *
 * A JIT (node --perf-basic-prof, Java's perf-map-agent, Python 3.12 -X
 * perf, LuaJIT, wasmtime...) writes /tmp/perf-PID.map: one line per
 * function it generated, "START SIZE NAME" (hex, hex, the rest of the
 * line), as perf script reads it (and, as perf, only when the file is
 * ours or root's).  Its code lives in anonymous mappings,
 * which no ELF file describes: this names those frames.  The file is read
 * once per process, on the first frame that needs it; a missing or
 * unreadable file just leaves the frames unnamed.  One set per thread. */
#ifndef STACKCAP_SYMBOLIZE_PERFMAP_H
#define STACKCAP_SYMBOLIZE_PERFMAP_H

#include <stdint.h>

struct su_perfmaps;

/* Maps read from JIT_DIR/perf-PID.map, the copies a trace holds
 * (TRACE/jit, record/keep-jit-maps.h; NULL: none), else from
 * SYMFS/tmp/perf-PID.map (SYMFS NULL or "": /tmp).  NULL when out of
 * memory. */
struct su_perfmaps *su_perfmaps_new(const char *symfs, const char *jit_dir);
void su_perfmaps_free(struct su_perfmaps *pm);

/* The name of the function of process PID at ADDR, or NULL; *START its
 * first address, *MAP the map file as perf names the module
 * ("/tmp/perf-PID.map", whatever the symfs).  Both strings live as long
 * as PM. */
const char *su_perfmap_lookup(struct su_perfmaps *pm, uint32_t pid, uint64_t addr, uint64_t *start,
			      const char **map);

#endif
