/* The running kernel's text symbols (/proc/kallsyms) and build-id
 * (/sys/kernel/notes) as the model's su_kernel: what names kernel frames
 * when a recording carries none of its own (perf.data files, as perf script
 * does) and what stackcap record picks the symbols it stores from
 * (record/kallsyms.h). */
#ifndef STACKCAP_TRACE_KALLSYMS_H
#define STACKCAP_TRACE_KALLSYMS_H

#include "trace/trace-model.h"

/* Every text symbol ('t', 'T') of /proc/kallsyms, sorted, one per address
 * (of several names, the last one listed, as perf script names it), each
 * up to the next one (the last 4 KiB), and the
 * kernel's build-id (build_id_len 0: none found).  @return 0 with *OUT
 * (su_kernel_free), or -errno: -EACCES when kallsyms hides the addresses
 * (kernel.kptr_restrict) or lists no text symbol. */
int su_kallsyms_read(struct su_kernel **out);

/* As su_kallsyms_read, through a copy kept under DIR/kallsyms/ (DIR NULL:
 * none) for this kernel, boot and set of loaded modules, made at the first
 * read (trace/kallsyms-cache.c): the kernel regenerates /proc/kallsyms at
 * each read.  A copy that is not ours (owner, 0600), is damaged or names
 * another kernel is not used. */
int su_kallsyms_read_cached(const char *dir, struct su_kernel **out);

/* Whether K (from su_kallsyms_read_cached) is a kept copy that a lookup
 * found damaged where it read (its blocks are checked where lookups read
 * them; no name comes from a damaged part).  The lookups then went to
 * /proc/kallsyms, read once, and a good copy was kept in place of the
 * damaged one: 1; or /proc/kallsyms could not be read (those frames went
 * unnamed) and the copy is deleted: 2; 0: not damaged.  *PATH: the copy. */
int su_kallsyms_cache_damaged(const struct su_kernel *k, const char **path);

/* su_kallsyms_read_cached(DIR) started on a thread of its own
 * (trace/kallsyms-ahead.c): a kernel, at once, whose lookups
 * (su_kernel_find, from any thread) wait for that read to end, then look
 * up in what it read (nothing when it failed).  su_kernel_free waits for
 * the read too.  NULL when out of memory or no thread could start. */
struct su_kernel *su_kallsyms_ahead(const char *dir);
/* Wait for the read of K (from su_kallsyms_ahead; any other K: 0 at
 * once): su_kallsyms_read_cached's return. */
int su_kallsyms_ahead_wait(struct su_kernel *k);
/* What K's lookups look in: the read's kernel (waited for; NULL when it
 * failed) for K from su_kallsyms_ahead, else K. */
const struct su_kernel *su_kallsyms_ahead_real(const struct su_kernel *k);

/* The build-id of the running kernel (/sys/kernel/notes) into ID
 * (SU_BUILD_ID_MAX bytes).  @return its length, 0 when none was found. */
size_t su_kernel_build_id(uint8_t *id);

#endif
