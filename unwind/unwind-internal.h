/* Shared by the two unwinders: bounds-checked reads of a stack image, the
 * per-maps process state, and the per-module CFI rule cache. */
#ifndef STACKCAP_UNWIND_INTERNAL_H
#define STACKCAP_UNWIND_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <elfutils/libdwfl.h>
#include "unwind/unwind.h"

/* ---- stack image reads -------------------------------------------------- */

enum uw_read {
	UW_READ_OK = 0,
	UW_READ_OUTSIDE,   /* in no segment, and not where the stack cap cut */
	UW_READ_CUT,       /* above the top of the last segment, which the stack cap cut */
	UW_READ_DROPPED,   /* a zero word of a filtered image: maybe dropped */
};

/* The sample's memory: its image, then the second segment (the stack a
 * handler on the alternate signal stack interrupted), if any. */
struct uw_seg {
	const uint64_t *words;
	uint64_t lo, hi;   /* [lo, hi) */
	int filtered;      /* policy F1/F2: a zero word may be a dropped one */
};

struct uw_stack {
	struct uw_seg seg[2];
	int nseg;
	int capped;        /* the last segment may have been cut by the stack cap */
	uint64_t sig_slot; /* the saved rsp of the signal frame, or 0 */
};

/* Where a signal frame saves the interrupted rsp: in the ucontext that the
 * trampoline's stack pointer points at (x86-64 Linux rt_sigframe). */
#define UW_SIGFRAME_RSP_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP])

/* The unwind reached a signal frame whose trampoline runs with stack
 * pointer RSP.  A handler on the alternate stack saved a pointer into the
 * second segment there, which the filter dropped from the image (it is no
 * pointer into the image); the segment starts at that very rsp (the
 * capture found it there), so reads of the slot give it back. */
static inline void uw_stack_signal_frame(struct uw_stack *s, uint64_t rsp)
{
	if (s->nseg == 2)
		s->sig_slot = rsp + UW_SIGFRAME_RSP_OFF;
}

static inline void uw_seg_init(struct uw_seg *g, const struct stackcap_image *img)
{
	uint64_t n = img->words ? img->nwords : 0;
	if (n > (UINT64_MAX - img->sp) / 8)
		n = (UINT64_MAX - img->sp) / 8;
	g->words = img->words;
	g->lo = img->sp;
	g->hi = img->sp + 8 * n;
	g->filtered = img->policy != STACKCAP_POLICY_ALL;
}

static inline void uw_stack_init(struct uw_stack *s, const struct su_sample *sample)
{
	uw_seg_init(&s->seg[0], sample->image);
	s->nseg = 1;
	if (sample->segment)
		uw_seg_init(&s->seg[s->nseg++], sample->segment);
	s->capped = sample->stack_capped != 0;
	s->sig_slot = 0;
}

/* Whether ADDR lies in one of the segments (or at the top of one). */
static inline int uw_stack_holds(const struct uw_stack *s, uint64_t addr)
{
	for (int k = 0; k < s->nseg; k++)
		if (addr >= s->seg[k].lo && addr <= s->seg[k].hi)
			return 1;
	return 0;
}

/* The 8 bytes at ADDR, from the sample's segments only. */
static inline enum uw_read uw_stack_read(const struct uw_stack *s, uint64_t addr, uint64_t *val)
{
	for (int k = 0; k < s->nseg; k++) {
		const struct uw_seg *g = &s->seg[k];
		if (addr < g->lo || addr >= g->hi || g->hi - addr < 8)
			continue;
		uint64_t const off = addr - g->lo;
		uint64_t const i = off >> 3;
		unsigned const sh = (unsigned)(off & 7) * 8;
		uint64_t const w0 = g->words[i];
		if (sh == 0) {
			if (w0 == 0 && g->filtered) {
				if (addr == s->sig_slot && k == 0) {
					*val = s->seg[1].lo;
					return UW_READ_OK;
				}
				return UW_READ_DROPPED;
			}
			*val = w0;
			return UW_READ_OK;
		}
		uint64_t const w1 = g->words[i + 1]; /* exists: addr + 8 <= hi */
		if (g->filtered && (w0 == 0 || w1 == 0))
			return UW_READ_DROPPED;
		*val = (w0 >> sh) | (w1 << (64 - sh));
		return UW_READ_OK;
	}
	const struct uw_seg *last = &s->seg[s->nseg - 1];
	return s->capped && addr >= last->lo ? UW_READ_CUT : UW_READ_OUTSIDE;
}

/* How an unwind ends on read RD (not OK), SWITCHED: after a signal frame
 * moved sp off the image.  Past the top of a copy the cap cut: truncated.
 * Off a one-segment copy through a signal frame: truncated too, the
 * interrupted stack was not copied (the kernel copies the alternate
 * stack only).  Else what was read is not the stack: bad-stack. */
static inline enum su_unwind_end uw_read_end(enum uw_read rd, int switched, const struct uw_stack *st)
{
	if (rd == UW_READ_CUT && !switched)
		return SU_END_TRUNCATED;
	return rd == UW_READ_OUTSIDE && switched && st->nseg == 1 ? SU_END_TRUNCATED : SU_END_BAD_STACK;
}

/* The registers of the image's initial state that are known: those kept,
 * or all of them when every word was (perf.data's). */
static inline uint32_t uw_initial_regs_known(const struct stackcap_image *img)
{
	uint32_t const all = (1u << STACKCAP_NREGS) - 1;
	return img->policy == STACKCAP_POLICY_ALL ? all : img->regs_kept & all;
}

/* Whether register R of the image's initial state is known. */
static inline int uw_initial_reg_known(const struct stackcap_image *img, unsigned r)
{
	return uw_initial_regs_known(img) >> r & 1;
}

/* ---- per-maps state ------------------------------------------------------- */

struct uw_dwfl_proc; /* runtime-splice.c: each native interpreter-loop frame of FRAMES[0..N)
 * replaced by the runtime frames it ran (sample->runtime_frames), at most
 * MAX in all.  @return the new count. */
size_t su_runtime_splice(struct su_unwinder *u, const struct su_sample *s, struct su_frame *frames, size_t n,
			 size_t max, enum su_unwind_end *end);

/* unwind-dwfl.c */

/* What an unwinder keeps per maps snapshot: the module of each entry
 * (su_modcache_get allocates a key per call) and the dwfl process. */
struct uw_proc {
	const struct su_maps *maps;  /* NULL: free slot */
	uint32_t generation, count;
	const struct su_map_entry *entries;
	uint64_t last_use;
	struct su_module **mods;     /* per entry; UW_MOD_NONE when not usable */
	struct uw_dwfl_proc *dwfl;   /* SU_UNWINDER_DWFL only */
};

#define UW_MOD_NONE ((struct su_module *)(uintptr_t)1)

/* The usable module (status OK, with a Dwfl_Module) of entry I, or NULL. */
struct su_module *uw_proc_module(struct su_unwinder *u, struct uw_proc *p, uint32_t i);

/* ---- CFI rules ------------------------------------------------------------ */

/* How the caller's value of a register is found (DWARF 6.4.1). */
enum uw_reg_kind {
	UW_REG_UNDEF = 0,  /* unknown (undefined, or a CFI error) */
	UW_REG_SAME,       /* the callee's value */
	UW_REG_AT_CFA,     /* saved at CFA + arg */
	UW_REG_VAL_CFA,    /* the value CFA + arg */
	UW_REG_IN_REG,     /* the callee's register arg */
	UW_REG_EXPR,       /* a DWARF expression: arg = uw_expr_ref */
};

enum uw_cfa_kind {
	UW_CFA_REG = 0,    /* register cfa_reg + cfa_arg */
	UW_CFA_EXPR,       /* expression: cfa_arg = uw_expr_ref */
	UW_CFA_BAD,        /* undefined or invalid */
};

#define UW_ALL_REGS ((1u << STACKCAP_NREGS) - 1)

/* One row of the CFI table, resolved for x86-64: everything the register
 * transfer needs, without libdw. */
struct uw_rule {
	uint8_t cfa_kind;
	uint8_t cfa_reg;
	uint8_t signal;          /* the CIE has the 'S' augmentation */
	uint8_t kind[STACKCAP_NREGS];
	int64_t cfa_arg;
	int64_t arg[STACKCAP_NREGS];
	/* Derived from KIND, so the transfer touches only what moves. */
	uint32_t same_mask;      /* registers UW_REG_SAME */
	uint32_t undef_mask;     /* registers UW_REG_UNDEF */
	uint8_t nmoved;          /* registers with any other rule: */
	uint8_t moved[STACKCAP_NREGS];
	/* Registers the step reads (struct uw_kept_frame.uses): the CFA's,
	 * or all of them with an expression or a register copied. */
	uint32_t uses_mask;
};

/* An expression op, as libdw interned it (module addresses for DW_OP_addr). */
struct uw_op {
	uint8_t atom;
	uint32_t offset;         /* for DW_OP_bra/skip targets */
	uint64_t number, number2;
};

/* Expression reference inside a rule: first op index and count. */
#define UW_EXPR_REF(first, n) ((int64_t)(((uint64_t)(n) << 32) | (uint32_t)(first)))
#define UW_EXPR_FIRST(ref) ((uint32_t)(uint64_t)(ref))
#define UW_EXPR_COUNT(ref) ((uint32_t)((uint64_t)(ref) >> 32))

enum uw_lookup {
	UW_LOOKUP_RULE = 0,      /* *RULE set */
	UW_LOOKUP_NO_CFI,        /* no CFI covers the address: frame-pointer fallback */
	UW_LOOKUP_ERROR,         /* out of memory */
};

struct uw_cache; /* per module, in su_module.unwind_cache */

/* The rule for module address ADDR of MOD (already pc - 1 for return
 * addresses), read through libdw on the first call and cached.  *RULE and
 * *OPS stay valid while **MOVES keeps the value it has on return: a
 * lookup in the same module, by any unwinder sharing it, may move them. */
enum uw_lookup uw_rule_lookup(struct su_module *mod, uint64_t addr, const struct uw_rule **rule,
			      const struct uw_op **ops, const uint32_t **moves, uint64_t *misses);

/* Is module address ADDR of MOD (pc - 1 for return addresses) in one of
 * the functions Go's own traceback stops at: UW_GO_TOP (runtime.goexit,
 * mstart, rt0_go), UW_GO_SPWRITE (systemstack, mcall, morestack,
 * asmcgocall: there unless the innermost frame), else 0?  The symbol table
 * is read once per module. */
enum { UW_GO_TOP = 1, UW_GO_SPWRITE = 2 };
int uw_go_topframe(struct su_module *mod, uint64_t addr);

/* Finalizer for su_module.unwind_cache: writes the module's rules to its
 * kept file (cfi-file.c) when this run found rows the file did not have. */
void uw_cache_free(void *cache);
/* The same without freeing (the saver, at the process's exit). */
void uw_cache_save(void *cache);

/* Longest expression kept; longer ones (never seen in real CFI) are errors. */
#define UW_EXPR_MAX 64

/* ---- a module's rules kept between runs (cfi-file.c) ----------------------- */

#define UW_CFI_FILE_NO_CFI UINT32_MAX /* an address no CFI covers */

struct uw_cfi_file {
	uint64_t *addr;            /* looked-up module addresses ... */
	uint32_t *rule;            /* ... and their rule index (or NO_CFI) */
	size_t nent;
	struct uw_rule *rules;     /* as translated; masks not derived on load */
	size_t nrules;
	struct uw_op *ops;
	size_t nops;
};

/* The kept file of M's rules, into PATH.  @return 0, -1 (none is kept). */
int uw_cfi_file_path(struct su_module *m, char *path, size_t size);
/* Read PATH into OUT (malloc'ed: uw_cfi_file_free).  @return 0, or -1
 * when missing, not ours or damaged (OUT empty). */
int uw_cfi_file_load(const char *path, struct uw_cfi_file *out);
void uw_cfi_file_free(struct uw_cfi_file *f);
/* Write F to PATH (whole, or not at all).  @return 0, -1. */
int uw_cfi_file_store(const char *path, const struct uw_cfi_file *f);

/* ---- the fast unwinder's register state ------------------------------------ */

/* Registers of one frame.  An unknown register is unknown because the CFI
 * says so (UNDEF bit: needing it is an error), or for WHY[r], an
 * su_unwind_end (a failed read, a register the filter dropped). */
struct uw_regs {
	uint64_t v[STACKCAP_NREGS];
	uint32_t known;                /* bit r: v[r] holds the value */
	uint32_t undef;                /* bit r: undefined by the CFI */
	uint8_t why[STACKCAP_NREGS];
};

/* A register the CFI says is saved at AT, a read that failed with RD, in
 * a frame interrupted with registers CUR (ACTIVATION): is AT a slot the
 * frame has popped already, its value back in the register?  GCC's x86-64
 * epilogues say only where the CFA moves after `pop %rbp` (or rbx, r12-r15),
 * never that the register is restored: until the `ret` the rule still
 * points at its slot, now below the stack pointer, where no stack copy
 * starts (the kernel's starts at sp).  The register holds what the slot
 * held.  (A slot below sp before any pop would be a save into the red
 * zone, which GCC makes only for leaf functions under tunings that save
 * by mov: not the x86-64 default.) */
static inline int uw_slot_popped(enum uw_read rd, int activation, const struct uw_regs *cur, uint64_t at)
{
	return rd == UW_READ_OUTSIDE && activation && (cur->known >> STACKCAP_REG_RSP & 1) &&
	       at <= cur->v[STACKCAP_REG_RSP] - 8;
}

/* Did a step (not through a signal frame) from stack pointer SP to NSP
 * (NSP_KNOWN) go up the stack?  A caller's frame is above its callee's,
 * but at the same sp where the callee holds its return address in a
 * register, not on the stack (glibc's vfork pops it into rdi across the
 * system call): once, then the next step must rise (*SAME_OK, 1 at the
 * first step, tells).  Anything else is a loop or garbage. */
static inline int uw_sp_progress(int nsp_known, uint64_t nsp, uint64_t sp, int *same_ok)
{
	if (!nsp_known || nsp < sp || (nsp == sp && !*same_ok))
		return 0;
	*same_ok = nsp > sp;
	return 1;
}

/* ---- a walk kept for the next sample of its thread (walk-reuse.c) ---------- */

/* The frames above a point of a walk are a function of the register state
 * there, of the stack words the later steps read and of the maps snapshot.
 * So when a sample's walk reaches a state its thread's previous walk had
 * (the outer frames of a hot loop's stack), and every word the rest of
 * that walk read is the same, its remaining frames are the previous
 * walk's, exactly: they are copied, not unwound again. */

/* One frame of a kept walk: the state it was unwound from, and what the
 * steps from it outward read (a suffix over the walk). */
struct uw_kept_frame {
	struct uw_regs r;
	uint64_t min_read;    /* lowest address read */
	uint64_t ok_end;      /* highest end of a read inside the image (0: none) */
	uint64_t fail_end;    /* lowest end of a read past the image's top (UINT64_MAX: none) */
	uint32_t fp_after;    /* later frames reached through rbp */
	/* Reads: while walking, those made before this frame's step; once
	 * kept, those of this frame's suffix (the first RN of
	 * uw_kept_walk.reads). */
	uint32_t rn;
	/* Registers of this frame's state that the step from it read (its
	 * CFA's; every one for a step we do not follow as closely: an
	 * expression, a register copied to another, no CFI), and those it
	 * passed on unchanged; then (made a suffix) NEED: the registers the
	 * rest of the walk depends on.  A kept walk is met where these
	 * match, whatever the others hold (perf.data's samples carry every
	 * register, loop data included). */
	uint32_t uses, keeps, need;
};

/* A word a kept walk read, as its image held it: at AT, word-aligned as
 * the image is (an unaligned read is two); LOW: the lowest AT of the
 * reads up to this one (uw_kept_walk.reads), which falls along them. */
struct uw_kept_read {
	uint64_t at, word, low;
};

struct uw_kept_walk {
	const struct su_maps *maps;    /* NULL: empty slot */
	uint32_t generation;
	uint64_t lo, hi;               /* the image's [lo, hi) */
	uint8_t capped, filtered;
	uint8_t end;                   /* enum su_unwind_end */
	size_t n;                      /* frames */
	struct su_frame *frames;
	size_t fcap;
	struct uw_kept_frame *kf;      /* per frame */
	size_t kcap;
	/* The words the walk read, the last read first: frame i's suffix
	 * read reads [0, kf[i].rn), so that a walk spliced in at a frame
	 * changes only the end. */
	struct uw_kept_read *reads;
	size_t nreads, rcap;
	uint32_t misses;               /* walks since the last that reused this slot's */
	uint64_t stamp;                /* the su_unwind call whose frames FRAMES are (0: none) */
	/* The sample WORDS were taken from: its thread and su_sample.decode_no
	 * (0: not counted), so that the next image of that thread, whose top
	 * words are known to be the same, is not compared there. */
	uint32_t pid, tid;
	uint64_t decode_no;
};

#define UW_KEPT_SLOTS 16

void uw_kept_free(struct uw_kept_walk *k);

/* Whether the state CUR of frame N of SAMPLE's walk is frame J of K's,
 * whose remaining frames then hold for this sample too (their count fits
 * in MAX).  Only for one-segment images and walks that met no signal
 * frame.  *TRUSTED counts the words not compared because SAMPLE's image
 * says they are those of the image K's words came from. */
int uw_kept_matches(const struct uw_kept_walk *k, size_t j, const struct uw_regs *cur, uint64_t pc,
		    uint8_t activation, const struct su_sample *sample, size_t n, size_t max, uint64_t *trusted);

/* Keep SAMPLE's walk: its N FRAMES, the state of each frame in KF[0..N)
 * with each frame's own reads (made suffixes here), ending with END; the
 * word addresses it read, NRD at RD (struct uw_kept_read.at).
 * Swaps KF's storage with the slot's (*KF is the slot's old array, or a
 * new one, on return).  @return 0, or -1 (no memory: the slot is emptied). */
int uw_kept_store(struct uw_kept_walk *k, const struct su_sample *sample, const struct su_frame *frames,
		  size_t n, struct uw_kept_frame **kf, size_t *kf_cap, enum su_unwind_end end, const uint64_t *rd,
		  size_t nrd);

/* After a match of frame N with frame J of K (uw_kept_matches): FRAMES
 * [0..N] and KF[0..N) are this sample's, and the NRD word addresses at RD
 * its steps read; make K this sample's walk (N + K->n - J frames).
 * @return 0, or -1 (the slot is emptied). */
int uw_kept_splice(struct uw_kept_walk *k, size_t j, const struct su_sample *sample,
		   const struct su_frame *frames, const struct uw_kept_frame *kf, size_t n, const uint64_t *rd,
		   size_t nrd);

/* ---- the unwinder ---------------------------------------------------------- */

#define UW_NPROCS 16

/* What the fast unwinder looked up for a pc of a maps snapshot (its
 * entry, module, bias and CFI rule), kept while MEMO_EPOCH holds (a
 * forgotten or new snapshot ends every entry) and the module's rules have
 * not moved since (*MOVES_AT == MOVES). */
#define UW_MEMO_BITS 9
struct uw_memo {
	const struct su_maps *maps;
	uint64_t lookup;
	uint64_t epoch;
	int64_t mi;
	struct su_module *mod;
	uint64_t bias;
	const struct uw_rule *rule;
	const struct uw_op *ops;
	const uint32_t *moves_at;
	uint32_t moves;
};

struct su_unwinder {
	enum su_unwinder_kind kind;
	struct su_modcache *modules;
	struct uw_proc procs[UW_NPROCS];
	struct uw_proc *last_proc;      /* the last one uw_proc_get gave (samples come in runs) */
	struct uw_memo memo[1u << UW_MEMO_BITS];
	uint64_t memo_epoch;     /* from 1: a zeroed entry is never valid */
	uint64_t tick;
	struct su_unwind_stats stats;
	Elf *stub_elf;           /* x86-64 ELF header for dwfl_attach_state */
	char stub_image[64];     /* its bytes: an Elf64_Ehdr */
	struct su_frame *splice; /* runtime-splice.c's output, grown as needed */
	size_t splice_cap;
	/* Walks kept per thread (by tid), and the current walk's states. */
	int reuse;               /* 0: STACKCAP_UNWIND_REUSE=0, every frame unwound */
	struct uw_kept_walk kept[UW_KEPT_SLOTS];
	struct uw_kept_frame *walk;
	size_t walk_cap;
	uint64_t *rd;            /* the word addresses the current walk read */
	size_t rd_cap;
	/* su_unwind_repeats: calls so far (the current one included); the
	 * current fast walk met the kept walk the previous call left, with
	 * the same frames before it; the previous call's frames were its fast
	 * walk's, untouched after it; the answer. */
	uint64_t calls;
	uint8_t fast_repeat, prev_plain, repeat;
};

struct uw_proc *uw_proc_get(struct su_unwinder *u, const struct su_maps *maps);
/* The registers the x86-64 ABI makes callee-saved: a no-CFI leaf's
 * caller has them as the leaf has them (the leaf rule of both unwinders). */
#define UW_CALLEE_SAVED                                                                            \
	(1u << STACKCAP_REG_RBX | 1u << STACKCAP_REG_RBP | 1u << STACKCAP_REG_R12 | 1u << STACKCAP_REG_R13 | \
	 1u << STACKCAP_REG_R14 | 1u << STACKCAP_REG_R15)
/* Can RA, the word at a no-CFI leaf's stack pointer, be its return
 * address: does it follow a call instruction in a module's code?  The
 * leaf rule of both unwinders (unwind.c's leaf_step). */
int uw_leaf_return(struct su_unwinder *u, struct uw_proc *p, const struct su_maps *maps, uint64_t ra);
/* Is RA (a caller frame's pc) a context's start: no call before it, not
 * a signal restorer, and CFI at RA itself (makecontext's
 * __start_context)?  The stack ends there (unwind.c). */
int uw_context_start(struct su_unwinder *u, struct uw_proc *p, const struct su_maps *maps, uint64_t ra);

/* unwind-dwfl.c */
size_t uw_dwfl_unwind(struct su_unwinder *u, struct uw_proc *p, const struct su_sample *sample,
		      struct su_frame *frames, size_t max, enum su_unwind_end *end);
void uw_dwfl_proc_free(struct uw_dwfl_proc *dp);

#endif
