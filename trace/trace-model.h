/* The sample model every trace reader produces and every later stage reads:
 * processes, their maps timelines, and samples (registers + stack image).
 * Readers (stackcap CTF, LTTng-UST, perf.data) fill it; the
 * unwinder and symbolizer never know which format a sample came from. */
#ifndef STACKCAP_TRACE_MODEL_H
#define STACKCAP_TRACE_MODEL_H

#include <stdint.h>
#include <stddef.h>
#include "common/map-entry.h"
#include "compress/stack-codec.h"

struct su_module; /* debuginfo/module.h: an opened binary, keyed by build-id */

/* A runtime unwinder's description of a process (docs/trace-format.md,
 * `runtime` and `runtime_code` events; capture/runtime.h): which
 * interpreter ran there, the native code of its interpreter loop, and the
 * code objects its frames name. */
struct su_rt_code {
	uint64_t code;             /* the object's address in the process */
	uint32_t fp;               /* its fingerprint (0: empty slot) */
	uint32_t first_line;
	char *name, *file;
	uint8_t *line_table;       /* the runtime's format (CPython 3.11: co_linetable) */
	uint32_t line_table_len;
};

struct su_runtime {
	uint8_t kind;              /* 1: CPython */
	uint32_t version;          /* CPython: PY_VERSION_HEX */
	uint64_t eval_start, eval_end; /* native frames here ran runtime frames */
	uint64_t chains, dropped, stale; /* the capture's counts (latest event) */
	char *name;
	struct su_rt_code *codes;  /* open addressing by (code, fp), power of two */
	size_t n_codes, cap_codes;
};

/* The description of (CODE, FP) in RT, or NULL (never described: the
 * object was gone before the writer read it, or no fingerprint). */
const struct su_rt_code *su_runtime_code(const struct su_runtime *rt, uint64_t code, uint32_t fp);

/* One maps snapshot (generation) of one process, immutable once built.
 * ENTRIES[i] describes code range i of RANGES (the codec's range index). */
/* Kernel symbols a trace carries (docs/trace-format.md "Kernel frames"):
 * SYMS sorted by start, each covering [start, end). */
struct su_ksym {
	uint64_t start, end;
	char *name;
	char *module;          /* "" for the kernel image */
};
/* A kernel symbol as a file keeps it: names as offsets into a block. */
struct su_ksym_packed {
	uint64_t start, end;
	uint32_t name, module;
};
struct su_kernel {
	struct su_ksym *syms;
	size_t n;
	uint8_t build_id[SU_BUILD_ID_MAX];
	uint8_t build_id_len;
	/* When set, every name and module points into this one block (what
	 * su_kallsyms_read keeps of the file), freed in one go. */
	char *text;
	/* Or (SYMS NULL) the N symbols are PACKED, their names in PACKED_TEXT
	 * (PACKED_TEXT_LEN bytes, the last a NUL), all inside MAP (MAP_LEN
	 * bytes, unmapped by su_kernel_free): the kept copy of kallsyms mapped
	 * whole (trace/kallsyms-cache.c), read only where a lookup lands. */
	const struct su_ksym_packed *packed;
	const char *packed_text;
	size_t packed_text_len;
	void *map;
	size_t map_len;
	/* The mapped copy is checked where lookups read it: this looks symbols
	 * up then (set by trace/kallsyms-cache.c, which owns the fields
	 * below: the body of symbols then names, its checks per block and
	 * their states, 0 not yet, 1 good, 2 damaged, one more byte set when
	 * any is damaged, and the copy's file), instead of the search below. */
	int (*find_checked)(const struct su_kernel *k, uint64_t addr, struct su_ksym *out);
	const uint8_t *body;
	uint64_t body_len;
	const uint64_t *block_check;
	uint8_t *block_state;
	size_t n_blocks;
	char *cache_path;
	struct su_kernel *fallback; /* /proc/kallsyms, read when a block was damaged */
	int fallback_tried;
	/* Being read on another thread (trace/kallsyms-ahead.c, which owns
	 * it and sets FIND_CHECKED and DROP, which su_kernel_free calls
	 * first), or NULL. */
	struct su_kernel_ahead *ahead;
	void (*drop)(struct su_kernel *k);
};
/* Free K, its symbols and names (NULL: no-op). */
void su_kernel_free(struct su_kernel *k);

/* The symbol of K covering ADDR into *OUT (its names point into K).
 * @return 1, or 0 when none covers it (K NULL: none).  A packed entry
 * whose bounds or names do not hold covers nothing. */
static inline int su_kernel_find(const struct su_kernel *k, uint64_t addr, struct su_ksym *out)
{
	if (k && k->find_checked)
		return k->find_checked(k, addr, out);
	size_t lo = 0, hi = k ? k->n : 0;
	while (lo < hi) { /* the first symbol ending after addr */
		size_t const mid = lo + (hi - lo) / 2;
		if ((k->syms ? k->syms[mid].end : k->packed[mid].end) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!k || lo == k->n)
		return 0;
	if (k->syms) {
		*out = k->syms[lo];
		return out->start <= addr;
	}
	struct su_ksym_packed const y = k->packed[lo];
	if (y.start > addr || y.end <= addr || y.name >= k->packed_text_len || y.module >= k->packed_text_len)
		return 0;
	*out = (struct su_ksym){ .start = y.start, .end = y.end, .name = (char *)k->packed_text + y.name,
				 .module = (char *)k->packed_text + y.module };
	return 1;
}

struct su_maps {
	uint32_t generation;
	uint32_t count;
	struct su_map_entry *entries;
	struct stackcap_code_range *range_list; /* sorted: stackcap_codec_decode_list's */
	/* The process's runtime (shared by its generations), or NULL. */
	const struct su_runtime *runtime;
	/* The trace's kernel symbols (shared by every process), or NULL. */
	const struct su_kernel *kernel;
};

/* Index of the entry holding PC in MAPS, or -1. */
static inline int64_t su_maps_find(const struct su_maps *maps, uint64_t pc)
{
	return maps ? stackcap_code_list_find(maps->range_list, maps->count, pc) : -1;
}

/* A process section (one exec image of one pid). */
struct su_process {
	uint32_t pid, ppid;
	uint32_t seq;          /* section number of this pid (after exec) */
	char *comm;
	char *exe;
	int64_t clock_offset_ns;
	uint32_t frequency_hz;
	uint32_t stack_cap;    /* bytes: a stack image this long may be cut */
	uint8_t policy;        /* enum stackcap_policy */
	uint8_t codec_version;
	int ended;             /* a process_end event was seen */
	uint64_t drops;        /* samples lost at capture (its drops events, every thread) */
};

/* One sample, decoded.  Valid only during the callback that delivers it. */
struct su_sample {
	uint64_t time_ns;          /* CLOCK_MONOTONIC */
	uint32_t pid, tid;
	const struct su_process *process;
	const struct su_maps *maps;    /* generation the blob names; NULL if unknown */
	const struct stackcap_image *image; /* registers and stack words; kept
					     * is NULL: a zero word was dropped */
	int stack_capped;          /* image reached the stack cap: may be cut */
	/* The unfiltered copy of the same stack (fidelity recordings), or NULL. */
	const struct stackcap_image *full_image;
	/* A second stack segment, or NULL: the thread's own stack, interrupted
	 * by a signal handler that ran on the alternate stack (IMAGE).  Memory
	 * reads look in IMAGE, then here.  It ends at the stack top unless
	 * STACK_CAPPED. */
	const struct stackcap_image *segment;
	/* perf.data recorded with call chains walked by the kernel (perf
	 * record -g: frame pointers): the user part, the pc first, then
	 * return addresses; NULL otherwise.  Set only on a sample whose IMAGE
	 * has no registers (nothing to unwind): the chain is the stack. */
	const uint64_t *user_chain;
	uint32_t n_user_chain;
	/* A runtime unwinder's frames of this sample (compress/rt-frames.h:
	 * innermost first), or NULL; named through maps->runtime. */
	const uint8_t *runtime_frames;
	size_t runtime_frames_len;
	/* The kernel part of the sample's call chain (stackcap record's
	 * kernel frames), innermost first: the interrupted kernel pc, then
	 * return addresses; NULL when none. */
	const uint64_t *kernel_chain;
	uint32_t n_kernel_chain;
	/* The event that took the sample (stackcap record -e: "cpu-clock",
	 * "sched:sched_switch", "BINARY:FUNCTION", "sdt:PROVIDER:NAME"), from
	 * the trace's event table; NULL when the trace has none: the default
	 * event (a stackcap trace's cpu-clock; a perf.data file's, unnamed).
	 * su_sample_event() names both. */
	const char *event;
	/* Off-CPU time (stackcap record --off-cpu): nonzero, the stack is
	 * where the thread blocked and this many ns passed until it ran
	 * again; 0: an ordinary (on-CPU) sample. */
	uint64_t off_cpu_ns;
	/* Our traces: the thread's images decoded so far, this one included,
	 * whether or not they were passed on; 0: not counted (perf.data).
	 * IMAGE's top IMAGE->ELIDED words are then those of image
	 * DECODE_NO - 1 (same stack top): a consumer that copies samples
	 * (the -j pipeline) copies only the words below them when it holds
	 * that image. */
	uint64_t decode_no;
	/* IMAGE's words lie where they stay, unchanged, until the read's end
	 * callback returns (a perf.data file's mapping): a consumer that
	 * copies samples (the -j pipeline) may keep the pointer instead. */
	int words_stay;
};

/* The name of S's event: its own, or "cpu-clock", what every trace
 * without an event table was sampled on. */
static inline const char *su_sample_event(const struct su_sample *s)
{
	return s->event ? s->event : "cpu-clock";
}

#endif
