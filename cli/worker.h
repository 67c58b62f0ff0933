/* SPDX-License-Identifier: MIT */
/* What each thread of stackunwind owns: its modules (elfutils 0.188 is not
 * thread-safe), resolver, unwinder and frames; what it counted; the
 * binaries its frames needed and could not use; the stacks formatter's
 * frame texts.  Each worker unwinds, resolves and formats with its own,
 * and so does the reader thread. */
#ifndef STACKCAP_CLI_WORKER_H
#define STACKCAP_CLI_WORKER_H

#include <stdint.h>
#include "cli/stackunwind.h"
#include "common/hashmap.h"
#include "export/text.h"
#include "symbolize/resolve.h"

struct counts {
	uint64_t samples;
	uint64_t complete;       /* unwound to the outermost frame */
	uint64_t truncated;      /* cut by the stack cap */
	uint64_t incomplete;     /* stopped early for another reason */
	uint64_t no_user;        /* no user state (perf.data: kernel threads, exiting tasks) */
	uint64_t exec;           /* in execve, the program's image replaced (SU_END_EXEC) */
	uint64_t unknown_frames; /* frames without a symbol */
	uint64_t frames;
};

/* The text after the address of every line a frame prints (several when
 * functions were inlined there), cached: a long trace repeats its pcs. */
struct frame_text {
	const struct su_module *m;   /* NULL: not filled yet */
	const char *path;            /* the maps entry's path (module name shown) */
	uint64_t addr;               /* ELF address looked up */
	uint8_t activation;
	uint8_t unknown;             /* no symbol: counts as an unknown frame */
	uint16_t lines;
	char *text;                  /* LINES lines, each ending in '\n' */
};

/* A frame's whole text as printed (the lines with their address), cached
 * per (maps snapshot, pc, maps entry, activation): a long trace repeats
 * its pcs, and a hit costs one lookup and one copy. */
struct pc_text {
	const struct su_maps *maps;
	uint64_t pc;
	int64_t map;
	const struct su_module *m;         /* NULL: a kernel frame */
	uint8_t activation;
	uint8_t unknown;             /* no symbol: counts as an unknown frame */
	uint32_t len;
	char *text;
};

/* A module a frame needed but that could not be used. */
struct bad_module {
	const struct su_module *m;
};

struct worker {
	const struct options *o;
	struct bad_module *bad;
	size_t n_bad, cap_bad;
	struct frame_text *ftext;    /* in first-use order (FTEXT_MAP finds them) */
	size_t n_ftext, cap_ftext;
	struct su_hmap ftext_map;
	struct pc_text *pctext;      /* in first-use order (PCTEXT_MAP finds them) */
	size_t n_pctext, cap_pctext;
	struct su_hmap pctext_map;
	size_t last_pctext;          /* the last one found (recursion repeats a pc) */
	size_t pctext_bytes;         /* what they hold: emptied past PCTEXT_BUDGET */
	uint32_t *pctext_seen;       /* PCTEXT_SEEN fingerprints of keys met once (cli/format.c) */
	struct chain_text *chains;   /* folded, stacks or export: CHAIN_SLOTS, direct-mapped, or NULL */
	/* The slot holding the previous sample's chain exactly (its lookup
	 * hit, or its text was kept there); REUSE_CHAIN: that slot when the
	 * unwinder says this sample's frames repeat the previous one's
	 * (su_unwind_repeats), taken without hashing or comparing the frames
	 * again.  NULL: none. */
	struct chain_text *last_chain, *reuse_chain;
	/* stacks: the start of the last sample's first line, "comm pid/tid
	 * sec.", and what it was made of (LEN 0: none): a thread's next
	 * samples in the same second start alike. */
	struct {
		char buf[96];
		uint32_t len, comm_len, pid, tid;
		uint64_t sec;
	} head;
	/* stacks into a text by reference: a chain's lines formatted here,
	 * kept in its slot and put by reference (not in the output's own
	 * bytes: the texts stacks -j N holds stay small). */
	struct text chain_lines;
	struct text frame_lines;     /* a frame's lines made here, then copied to their cache entry */
	struct su_modcache *modules;
	struct su_resolver *resolver;
	struct su_unwinder *unwinder;
	struct su_frame *frames;
	struct counts counts;
	/* Workers sit side by side in one array, each written at every
	 * sample by its own thread: apart by more than a cache line pair,
	 * or each write costs the next worker a miss on its read-mostly
	 * head (-j 2 on two threads ran each at half speed). */
	char apart[128];
};

/* folded: the frames' part of a line; stacks: the frames' lines; cached per (maps snapshot, every
 * frame's pc, maps entry and activation) when each frame's text came from
 * the pc_text cache: a hot loop repeats whole chains.  Direct-mapped, so
 * memory stays bounded however long the trace. */
#define CHAIN_SLOTS 512
struct chain_text {
	const struct su_maps *maps;  /* NULL: empty slot */
	uint64_t hash;
	uint64_t version;            /* bumped each time the slot takes a chain (export names it) */
	uint64_t seen;               /* stacks: the hash of the last chain met here and not kept (kept from its second time) */
	struct su_frame *frames;     /* NFRAMES, only pc, map, activation compared */
	uint32_t nframes;
	uint32_t unknown;            /* frames without a symbol */
	uint32_t len;
	struct text_shared *text;    /* LEN bytes (stacks writes them out by reference) */
	/* The line last written with this chain, to add the next same line's
	 * count to rather than write it again: in text LINE_OUT while its
	 * contents are LINE_GEN, at LINE_AT, its root ROOT_LEN bytes, its
	 * count's FOLDED_COUNT_DIGITS digits at COUNT_AT.  NULL: none. */
	const struct text *line_out;
	uint64_t line_gen;
	size_t line_at, count_at;
	uint32_t root_len;
};

int worker_init(struct worker *w, const struct options *o);
/* At a command's end, before the process exits (libdw's state is left to
 * the exit: su_modcache_free_at_exit). */
void worker_fini(struct worker *w);
/* At the command's very end, the process exiting next: only the kept
 * answers written back, nothing freed (a system-wide trace's contexts
 * took 1-2 ms to free after the reading's threads were done; under
 * AddressSanitizer, worker_fini for its leak check).  W is not used
 * again. */
void worker_fini_at_exit(struct worker *w);

/* Unwind S, counting how it ended: *FRAMES points to its frames (W's, or
 * the unwinder's until its next call: su_unwind_view).  @return how many. */
size_t worker_unwind(struct worker *w, const struct su_sample *s, const struct su_frame **frames,
		     enum su_unwind_end *end);

/* Frame F of a sample of PID resolved into *R, counted (unknown frames,
 * binaries missing).  @return 0 or -ENOMEM. */
int worker_resolve(struct worker *w, uint32_t pid, const struct su_maps *maps, const struct su_frame *f,
		   struct su_resolved *r);

/* Note module M when its binary was missing or rebuilt (warned at the end). */
void worker_note_module(struct worker *w, const struct su_module *m);

/* One warning per binary that frames of the N WORKERS needed and could not use. */
void worker_warn_modules(struct worker *workers, unsigned n);

/* The counts of the N WORKERS added up into *C, and their modules' into *MS. */
void worker_totals(struct worker *workers, unsigned n, struct counts *c, struct su_modcache_stats *ms);

#endif
