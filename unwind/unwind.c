/* The unwinders' common part (per-maps state, public API) and the fast
 * unwinder: cached CFI rules (cfi-cache.c) applied by our own register
 * transfer, reading only the sample's stack image. */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/ucontext.h>
#include <gelf.h>
#include <libelf.h>

#include "unwind/unwind-internal.h"

const char *su_unwind_end_name(enum su_unwind_end end)
{
	switch (end) {
	case SU_END_OUTERMOST: return "outermost";
	case SU_END_TRUNCATED: return "truncated";
	case SU_END_NO_MAP: return "no-map";
	case SU_END_NO_CFI: return "no-cfi";
	case SU_END_BAD_STACK: return "bad-stack";
	case SU_END_MAX_FRAMES: return "max-frames";
	case SU_END_ERROR: return "error";
	case SU_END_NO_USER: return "no-user";
	case SU_END_EXEC: return "exec";
	}
	return "?";
}

/* ---- unwinder and per-maps state ------------------------------------------ */

struct su_unwinder *su_unwinder_new(enum su_unwinder_kind kind, struct su_modcache *modules)
{
	if (!modules || (kind != SU_UNWINDER_FAST && kind != SU_UNWINDER_DWFL)) {
		errno = EINVAL;
		return NULL;
	}
	struct su_unwinder *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->kind = kind;
	u->modules = modules;
	u->memo_epoch = 1;
	const char *reuse = getenv("STACKCAP_UNWIND_REUSE");
	u->reuse = !(reuse && strcmp(reuse, "0") == 0);
	if (kind == SU_UNWINDER_FAST) {
		su_modcache_set_finalizers(modules, uw_cache_free, NULL);
		su_modcache_set_savers(modules, uw_cache_save, NULL);
	}
	return u;
}

static void proc_clear(struct uw_proc *p)
{
	if (p->dwfl)
		uw_dwfl_proc_free(p->dwfl);
	free(p->mods);
	memset(p, 0, sizeof(*p));
}

void su_unwinder_free(struct su_unwinder *u)
{
	if (!u)
		return;
	for (int i = 0; i < UW_NPROCS; i++)
		proc_clear(&u->procs[i]);
	if (u->stub_elf)
		elf_end(u->stub_elf);
	free(u->splice);
	for (int i = 0; i < UW_KEPT_SLOTS; i++)
		uw_kept_free(&u->kept[i]);
	free(u->walk);
	free(u->rd);
	free(u);
}

void su_unwinder_forget_maps(struct su_unwinder *u, const struct su_maps *maps)
{
	if (!u || !maps)
		return;
	for (int i = 0; i < UW_NPROCS; i++)
		if (u->procs[i].maps == maps)
			proc_clear(&u->procs[i]);
	for (int i = 0; i < UW_KEPT_SLOTS; i++)
		if (u->kept[i].maps == maps)
			u->kept[i].maps = NULL;
	u->memo_epoch++;
}

int su_unwind_repeats(const struct su_unwinder *u)
{
	return u && u->repeat;
}

void su_unwinder_get_stats(const struct su_unwinder *u, struct su_unwind_stats *stats)
{
	if (!stats)
		return;
	if (!u)
		memset(stats, 0, sizeof(*stats));
	else
		*stats = u->stats;
}

static int proc_matches(const struct uw_proc *p, const struct su_maps *maps)
{
	return p->maps == maps && p->generation == maps->generation &&
	       p->count == maps->count && p->entries == maps->entries;
}

struct uw_proc *uw_proc_get(struct su_unwinder *u, const struct su_maps *maps)
{
	struct uw_proc *victim = &u->procs[0];
	u->tick++;
	/* The last one first: scanning all 16 was 3% of stackunwind stacks. */
	if (u->last_proc && u->last_proc->maps && proc_matches(u->last_proc, maps)) {
		u->last_proc->last_use = u->tick;
		return u->last_proc;
	}
	for (int i = 0; i < UW_NPROCS; i++) {
		struct uw_proc *p = &u->procs[i];
		if (p->maps && proc_matches(p, maps)) {
			p->last_use = u->tick;
			u->last_proc = p;
			return p;
		}
		if (!p->maps)
			victim = p;
		else if (victim->maps && p->last_use < victim->last_use)
			victim = p;
	}
	proc_clear(victim);
	u->memo_epoch++; /* a snapshot not met before (or at an address reused) */
	victim->mods = calloc(maps->count ? maps->count : 1, sizeof(*victim->mods));
	if (!victim->mods)
		return NULL;
	victim->maps = maps;
	victim->generation = maps->generation;
	victim->count = maps->count;
	victim->entries = maps->entries;
	victim->last_use = u->tick;
	u->stats.maps_built++;
	u->last_proc = victim;
	return victim;
}

struct su_module *uw_proc_module(struct su_unwinder *u, struct uw_proc *p, uint32_t i)
{
	struct su_module *m = p->mods[i];
	if (!m) {
		m = su_modcache_get(u->modules, &p->entries[i]);
		/* A failed get (no memory) is retried on the next sample. */
		if (!m)
			return NULL;
		if (m->status != SU_MODULE_OK || !m->mod)
			m = UW_MOD_NONE;
		p->mods[i] = m;
	}
	return m == UW_MOD_NONE ? NULL : m;
}

/* ---- fast unwinder: register state and expressions ------------------------ */

#define STEP_OK (-1)

#define WHY_UNDEF 0xff

struct walk {
	struct uw_stack st;
	int switched;                  /* a signal frame moved sp off the image */
	uint64_t bias;                 /* load bias of the current module */
	/* What the current frame's step read (struct uw_kept_frame). */
	uint64_t min_read, ok_end, fail_end;
	/* The word addresses read so far, when the walk may be kept (else
	 * RD is NULL): RD_N of RD_CAP; RD_FULL: some did not fit (not kept). */
	uint64_t *rd;
	size_t rd_n, rd_cap;
	int rd_full;
	/* The frame being stepped was interrupted (its pc is the next
	 * instruction, not a return address); POPPED: the registers the step
	 * took as the frame holds them (uw_slot_popped). */
	int activation;
	uint32_t popped;
};

/* Note the read of the 8 bytes at ADDR, inside the one segment: the
 * word or two of the image that hold them. */
static inline void walk_note(struct walk *w, uint64_t addr)
{
	uint64_t const off = (addr - w->st.seg[0].lo) & 7;
	if (w->rd_n + 2 > w->rd_cap) {
		w->rd_full = 1;
		return;
	}
	w->rd[w->rd_n++] = addr - off;
	if (off)
		w->rd[w->rd_n++] = addr - off + 8;
}

/* A read of the image, noted for the walk kept for the next sample. */
static inline enum uw_read walk_read(struct walk *w, uint64_t addr, uint64_t *val)
{
	enum uw_read const rd = uw_stack_read(&w->st, addr, val);
	uint64_t const e = addr > UINT64_MAX - 8 ? UINT64_MAX : addr + 8;
	if (addr < w->min_read)
		w->min_read = addr;
	if (rd == UW_READ_OK || rd == UW_READ_DROPPED) {
		if (e > w->ok_end)
			w->ok_end = e;
		if (w->rd)
			walk_note(w, addr);
	} else if (e < w->fail_end) {
		w->fail_end = e;
	}
	return rd;
}

/* What the unwind ends with when it needs register R and it is unknown. */
static inline int need_why(const struct uw_regs *s, unsigned r)
{
	return s->undef >> r & 1 ? SU_END_ERROR : s->why[r];
}

#define EVAL_STACK 64
#define EVAL_STEPS 1024

/* Evaluate a DWARF expression as elfutils' unwinder does (a leading
 * DW_OP_call_frame_cfa makes the result a location, DW_OP_stack_value a
 * value).  CFA is NULL while computing the CFA itself.  @return STEP_OK with
 * *OUT, or an su_unwind_end. */
static int eval(const struct uw_op *ops, uint32_t n, const struct uw_regs *s, const uint64_t *cfa,
		struct walk *w, uint64_t *out)
{
	uint64_t stk[EVAL_STACK];
	unsigned sp = 0;
	int is_location = 0;
	unsigned steps = 0;
	uint64_t a, b;
	enum uw_read rd;

#define NEED(k) do { if (sp < (k)) return SU_END_ERROR; } while (0)
#define PUSH(x) do { uint64_t const x_ = (x); \
		if (sp >= EVAL_STACK) return SU_END_ERROR; \
		stk[sp++] = x_; } while (0)
#define REG(r, dst) do { unsigned r_ = (unsigned)(r); \
		if (r_ >= STACKCAP_NREGS) return SU_END_ERROR; \
		if (!(s->known >> r_ & 1)) return need_why(s, r_); \
		(dst) = s->v[r_]; } while (0)

	for (uint32_t i = 0; i < n; i++) {
		const struct uw_op *op = &ops[i];
		if (++steps > EVAL_STEPS)
			return SU_END_ERROR;
		switch (op->atom) {
		case DW_OP_lit0 ... DW_OP_lit31:
			PUSH((uint64_t)(op->atom - DW_OP_lit0));
			break;
		case DW_OP_addr:
			PUSH(op->number + w->bias);
			break;
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts:
			PUSH(op->number);
			break;
		case DW_OP_reg0 ... DW_OP_reg31:
			REG(op->atom - DW_OP_reg0, a);
			PUSH(a);
			break;
		case DW_OP_regx:
			if (op->number >= STACKCAP_NREGS)
				return SU_END_ERROR;
			REG(op->number, a);
			PUSH(a);
			break;
		case DW_OP_breg0 ... DW_OP_breg31:
			REG(op->atom - DW_OP_breg0, a);
			PUSH(a + op->number);
			break;
		case DW_OP_bregx:
			if (op->number >= STACKCAP_NREGS)
				return SU_END_ERROR;
			REG(op->number, a);
			PUSH(a + op->number2);
			break;
		case DW_OP_dup:
			NEED(1);
			PUSH(stk[sp - 1]);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_pick:
			if (op->number >= sp)
				return SU_END_ERROR;
			PUSH(stk[sp - 1 - op->number]);
			break;
		case DW_OP_over:
			NEED(2);
			PUSH(stk[sp - 2]);
			break;
		case DW_OP_swap:
			NEED(2);
			a = stk[sp - 1];
			stk[sp - 1] = stk[sp - 2];
			stk[sp - 2] = a;
			break;
		case DW_OP_rot:
			NEED(3);
			a = stk[sp - 1];
			stk[sp - 1] = stk[sp - 2];
			stk[sp - 2] = stk[sp - 3];
			stk[sp - 3] = a;
			break;
		case DW_OP_deref:
		case DW_OP_deref_size:
			NEED(1);
			rd = walk_read(w, stk[sp - 1], &a);
			if (rd != UW_READ_OK)
				return (int)uw_read_end(rd, w->switched, &w->st);
			if (op->atom == DW_OP_deref_size) {
				if (op->number > 8)
					return SU_END_ERROR;
				if (op->number < 8)
					a &= (1ull << (op->number * 8)) - 1;
			}
			stk[sp - 1] = a;
			break;
		case DW_OP_abs:
			NEED(1);
			if ((int64_t)stk[sp - 1] < 0)
				stk[sp - 1] = 0 - stk[sp - 1];
			break;
		case DW_OP_neg:
			NEED(1);
			stk[sp - 1] = 0 - stk[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			stk[sp - 1] = ~stk[sp - 1];
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			stk[sp - 1] += op->number;
			break;
		case DW_OP_and: case DW_OP_or: case DW_OP_xor: case DW_OP_plus: case DW_OP_minus:
		case DW_OP_mul: case DW_OP_div: case DW_OP_mod: case DW_OP_shl: case DW_OP_shr:
		case DW_OP_shra: case DW_OP_le: case DW_OP_ge: case DW_OP_eq: case DW_OP_lt:
		case DW_OP_gt: case DW_OP_ne:
			NEED(2);
			b = stk[--sp];
			a = stk[sp - 1];
			switch (op->atom) {
			case DW_OP_and: a &= b; break;
			case DW_OP_or: a |= b; break;
			case DW_OP_xor: a ^= b; break;
			case DW_OP_plus: a += b; break;
			case DW_OP_minus: a -= b; break;
			case DW_OP_mul: a *= b; break;
			case DW_OP_div:
				if (b == 0 || (a == (uint64_t)INT64_MIN && b == UINT64_MAX))
					return SU_END_ERROR;
				a = (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case DW_OP_mod:
				if (b == 0)
					return SU_END_ERROR;
				a %= b;
				break;
			case DW_OP_shl: a = b >= 64 ? 0 : a << b; break;
			case DW_OP_shr: a = b >= 64 ? 0 : a >> b; break;
			case DW_OP_shra:
				a = (uint64_t)((int64_t)a >> (b >= 63 ? 63 : b));
				break;
			case DW_OP_le: a = (int64_t)a <= (int64_t)b; break;
			case DW_OP_ge: a = (int64_t)a >= (int64_t)b; break;
			case DW_OP_eq: a = a == b; break;
			case DW_OP_lt: a = (int64_t)a < (int64_t)b; break;
			case DW_OP_gt: a = (int64_t)a > (int64_t)b; break;
			default: a = a != b; break; /* DW_OP_ne */
			}
			stk[sp - 1] = a;
			break;
		case DW_OP_bra:
			NEED(1);
			if (stk[--sp] == 0)
				break;
			/* fall through */
		case DW_OP_skip: {
			uint64_t const target = op->offset + 1 + 2 + (uint64_t)(int64_t)(int16_t)op->number;
			uint32_t j = 0;
			while (j < n && ops[j].offset != target)
				j++;
			if (j == n)
				return SU_END_ERROR;
			i = j - 1; /* the loop's i++ lands on j */
			if (j == 0)
				i = UINT32_MAX;
			break;
		}
		case DW_OP_nop:
			break;
		case DW_OP_call_frame_cfa:
			if (!cfa)
				return SU_END_ERROR;
			PUSH(*cfa);
			is_location = 1;
			break;
		case DW_OP_stack_value:
			is_location = 0;
			break;
		default:
			return SU_END_ERROR;
		}
	}
#undef NEED
#undef PUSH
#undef REG
	if (sp == 0)
		return SU_END_ERROR;
	a = stk[sp - 1];
	if (is_location) {
		rd = walk_read(w, a, &a);
		if (rd != UW_READ_OK)
			return (int)uw_read_end(rd, w->switched, &w->st);
	}
	*out = a;
	return STEP_OK;
}

/* ---- fast unwinder: one frame ----------------------------------------------- */

static inline void set_reg(struct uw_regs *s, unsigned r, uint64_t v)
{
	s->v[r] = v;
	s->known |= 1u << r;
}

static inline void unset_reg(struct uw_regs *s, unsigned r, int why)
{
	s->known &= ~(1u << r);
	if (why == WHY_UNDEF) {
		s->undef |= 1u << r;
	} else {
		s->undef &= ~(1u << r);
		s->why[r] = (uint8_t)why;
	}
}

/* Apply RULE to CUR, giving the caller's registers in NX. */
static int cfi_step(const struct uw_rule *rule, const struct uw_op *ops, const struct uw_regs *cur,
		    struct uw_regs *nx, struct walk *w)
{
	uint64_t cfa;
	int rc;
	switch (rule->cfa_kind) {
	case UW_CFA_REG:
		if (!(cur->known >> rule->cfa_reg & 1))
			return need_why(cur, rule->cfa_reg);
		cfa = cur->v[rule->cfa_reg] + (uint64_t)rule->cfa_arg;
		break;
	case UW_CFA_EXPR:
		rc = eval(ops + UW_EXPR_FIRST(rule->cfa_arg), UW_EXPR_COUNT(rule->cfa_arg), cur, NULL, w, &cfa);
		if (rc != STEP_OK)
			return rc;
		break;
	default:
		return SU_END_ERROR;
	}

	/* Same-value and undefined registers in bulk; then the few that
	 * the rule moves. */
	memcpy(nx->v, cur->v, sizeof(nx->v));
	memcpy(nx->why, cur->why, sizeof(nx->why));
	nx->known = cur->known & rule->same_mask;
	nx->undef = (cur->undef & rule->same_mask) | rule->undef_mask;
	for (unsigned i = 0; i < rule->nmoved; i++) {
		unsigned const r = rule->moved[i];
		uint64_t v;
		enum uw_read rd;
		switch (rule->kind[r]) {
		case UW_REG_AT_CFA: {
			uint64_t const at = cfa + (uint64_t)rule->arg[r];
			rd = walk_read(w, at, &v);
			if (rd == UW_READ_OK) {
				set_reg(nx, r, v);
			} else if ((cur->known >> r & 1) && uw_slot_popped(rd, w->activation, cur, at)) {
				set_reg(nx, r, cur->v[r]);
				w->popped |= 1u << r;
			} else {
				unset_reg(nx, r, (int)uw_read_end(rd, w->switched, &w->st));
			}
			break;
		}
		case UW_REG_VAL_CFA:
			set_reg(nx, r, cfa + (uint64_t)rule->arg[r]);
			break;
		case UW_REG_IN_REG: {
			unsigned const from = (unsigned)rule->arg[r];
			if (cur->known >> from & 1)
				set_reg(nx, r, cur->v[from]);
			else
				unset_reg(nx, r, cur->undef >> from & 1 ? WHY_UNDEF : cur->why[from]);
			break;
		}
		default: /* UW_REG_EXPR */
			rc = eval(ops + UW_EXPR_FIRST(rule->arg[r]), UW_EXPR_COUNT(rule->arg[r]),
				  cur, &cfa, w, &v);
			if (rc == STEP_OK)
				set_reg(nx, r, v);
			else
				unset_reg(nx, r, rc);
			break;
		}
	}
	if (!(nx->known >> STACKCAP_REG_RIP & 1))
		return nx->undef >> STACKCAP_REG_RIP & 1 ? SU_END_OUTERMOST : nx->why[STACKCAP_REG_RIP];
	if (nx->v[STACKCAP_REG_RIP] == 0)
		return SU_END_OUTERMOST;
	return STEP_OK;
}

/* No CFI: the rbp chain, exactly as elfutils' x86-64 fallback. */
static int fp_step(const struct uw_regs *cur, struct uw_regs *nx, struct walk *w)
{
	if (!(cur->known >> STACKCAP_REG_RBP & 1) || cur->v[STACKCAP_REG_RBP] == 0)
		return SU_END_NO_CFI;
	uint64_t const fp = cur->v[STACKCAP_REG_RBP];
	nx->known = 0;
	nx->undef = (1u << STACKCAP_NREGS) - 1;
	uint64_t v = 0;
	enum uw_read rd = walk_read(w, fp, &v);
	if (rd == UW_READ_OK)
		set_reg(nx, STACKCAP_REG_RBP, v);
	else
		unset_reg(nx, STACKCAP_REG_RBP, (int)uw_read_end(rd, w->switched, &w->st));
	rd = walk_read(w, fp + 8, &v);
	if (rd != UW_READ_OK)
		return (int)uw_read_end(rd, w->switched, &w->st);
	/* The caller's pc, but (as in elfutils) not its rip register: CFI
	 * reading rip there fails. */
	nx->v[STACKCAP_REG_RIP] = v;
	set_reg(nx, STACKCAP_REG_RSP, fp + 16);
	/* The stack grows down: a caller's frame is above its callee's. */
	if ((cur->known >> STACKCAP_REG_RSP & 1) && cur->v[STACKCAP_REG_RSP] >= fp + 16)
		return SU_END_NO_CFI;
	if (v == 0)
		return SU_END_OUTERMOST;
	return STEP_OK;
}

/* The byte of module M's code at ELF address A, in an executable PT_LOAD
 * of its file holding at least BEFORE bytes before A (A may be the
 * segment's end); *AFTER: the bytes from A to that end.  NULL: none. */
static const uint8_t *code_at(struct su_module *m, uint64_t a, uint64_t before, uint64_t *after)
{
	GElf_Addr bias;
	size_t size, nph;
	Elf *elf = m && m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
	const uint8_t *img = elf ? (const uint8_t *)elf_rawfile(elf, &size) : NULL;
	if (!img || elf_getphdrnum(elf, &nph) != 0 || a < before)
		return NULL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    a - before < ph.p_vaddr || a > ph.p_vaddr + ph.p_filesz || ph.p_offset + ph.p_filesz > size)
			continue;
		*after = ph.p_vaddr + ph.p_filesz - a;
		return img + ph.p_offset + (a - ph.p_vaddr);
	}
	return NULL;
}

/* Does the code of module M just before ELF address RA (a return address)
 * end with a call instruction?  call rel32 (e8), and ff /2 in its register,
 * [reg], disp8, SIB, disp32 and rip-relative forms. */
static int follows_call(struct su_module *m, uint64_t ra)
{
	uint64_t after;
	const uint8_t *b = code_at(m, ra, 7, &after); /* b[-k]: k bytes before ra */
	if (!b)
		return 0;
	if (b[-5] == 0xe8)
		return 1;
	for (int k = 2; k <= 7; k++) {
		if (b[-k] != 0xff || (b[-k + 1] >> 3 & 7) != 2)
			continue;
		uint8_t const mod = b[-k + 1] >> 6, rm = b[-k + 1] & 7;
		int const sib = mod != 3 && rm == 4;
		int len = 2 + sib;
		if (mod == 1)
			len += 1;
		else if (mod == 2 || (mod == 0 && rm == 5) || (mod == 0 && sib && (b[-k + 2] & 7) == 5))
			len += 4;
		if (len == k)
			return 1;
	}
	return 0;
}

/* Is the code of module M at ELF address A the rt_sigreturn system call
 * (mov $15 into rax or eax, then syscall): a signal restorer, whose first
 * byte the kernel made the return address of a handler?  Go's
 * runtime.sigreturn__sigaction has no CFI saying so, as libc's has. */
static int is_sigreturn(struct su_module *m, uint64_t a)
{
	static const uint8_t mov_rax[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	static const uint8_t mov_eax[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	uint64_t left;
	const uint8_t *b = code_at(m, a, 0, &left);
	return b && ((left >= sizeof(mov_rax) && !memcmp(b, mov_rax, sizeof(mov_rax))) ||
		     (left >= sizeof(mov_eax) && !memcmp(b, mov_eax, sizeof(mov_eax))));
}

/* The kernel's signal frame as a restorer sees it (x86-64 rt_sigframe:
 * its return address popped, the stack pointer at the ucontext): every
 * register saved in uc_mcontext, as libc's __restore_rt CFI says. */
#define SIGFRAME_REG(r) ((int64_t)(offsetof(ucontext_t, uc_mcontext.gregs) + (r) * sizeof(greg_t)))
static const struct uw_rule sigreturn_rule = {
	.cfa_kind = UW_CFA_REG,
	.cfa_reg = STACKCAP_REG_RSP,
	.signal = 1,
	.kind = { [0 ... STACKCAP_NREGS - 1] = UW_REG_AT_CFA },
	/* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
	.arg = { SIGFRAME_REG(REG_RAX), SIGFRAME_REG(REG_RDX), SIGFRAME_REG(REG_RCX), SIGFRAME_REG(REG_RBX),
		 SIGFRAME_REG(REG_RSI), SIGFRAME_REG(REG_RDI), SIGFRAME_REG(REG_RBP), SIGFRAME_REG(REG_RSP),
		 SIGFRAME_REG(REG_R8),	SIGFRAME_REG(REG_R9),  SIGFRAME_REG(REG_R10), SIGFRAME_REG(REG_R11),
		 SIGFRAME_REG(REG_R12), SIGFRAME_REG(REG_R13), SIGFRAME_REG(REG_R14), SIGFRAME_REG(REG_R15),
		 SIGFRAME_REG(REG_RIP) },
	.nmoved = STACKCAP_NREGS,
	.moved = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
	.uses_mask = 1u << STACKCAP_REG_RSP,
};
_Static_assert(STACKCAP_NREGS == 17, "sigreturn_rule lists 17 registers");

/* What a return address no call put there is (ELF address A of module M,
 * the byte before it without CFI): a signal restorer's first byte, put
 * there by the kernel; a function's first byte with CFI, as makecontext
 * puts __start_context's under a context's function (a coroutine's
 * stack), where the stack ends; or neither. */
enum uw_entry { UW_ENTRY_NONE, UW_ENTRY_SIGRETURN, UW_ENTRY_CONTEXT };
static enum uw_entry entry_kind(struct su_unwinder *u, struct su_module *m, uint64_t a)
{
	if (follows_call(m, a))
		return UW_ENTRY_NONE;
	if (is_sigreturn(m, a))
		return UW_ENTRY_SIGRETURN;
	const struct uw_rule *r;
	const struct uw_op *o;
	const uint32_t *moves;
	return uw_rule_lookup(m, a, &r, &o, &moves, &u->stats.rule_misses) == UW_LOOKUP_RULE ? UW_ENTRY_CONTEXT
											 : UW_ENTRY_NONE;
}

int uw_context_start(struct su_unwinder *u, struct uw_proc *p, const struct su_maps *maps, uint64_t ra)
{
	int64_t const mi = ra ? su_maps_find(maps, ra) : -1;
	struct su_module *m = mi >= 0 ? uw_proc_module(u, p, (uint32_t)mi) : NULL;
	return m && entry_kind(u, m, ra - su_module_bias(m, &maps->entries[mi])) == UW_ENTRY_CONTEXT;
}

int uw_leaf_return(struct su_unwinder *u, struct uw_proc *p, const struct su_maps *maps, uint64_t ra)
{
	int64_t const mi = ra ? su_maps_find(maps, ra - 1) : -1;
	struct su_module *m = mi >= 0 ? uw_proc_module(u, p, (uint32_t)mi) : NULL;
	return m && follows_call(m, ra - su_module_bias(m, &maps->entries[mi]));
}

/* No CFI and no rbp chain at the interrupted pc: code that ended its FDE
 * on purpose (glibc's clone3 and clone before the syscall: the child's
 * unwind info would be wrong) or hand-written stubs, all leaves: the
 * return address at the stack pointer, if it follows a call in a module's
 * code.  Callee-saved registers are the caller's (the ABI). */
static int leaf_step(struct su_unwinder *u, struct uw_proc *p, const struct su_maps *maps, const struct uw_regs *cur,
		     struct uw_regs *nx, struct walk *w)
{
	uint64_t ra;
	if (!(cur->known >> STACKCAP_REG_RSP & 1) ||
	    walk_read(w, cur->v[STACKCAP_REG_RSP], &ra) != UW_READ_OK || ra == 0)
		return SU_END_NO_CFI;
	if (!uw_leaf_return(u, p, maps, ra))
		return SU_END_NO_CFI;
	nx->known = 0;
	nx->undef = (1u << STACKCAP_NREGS) - 1;
	for (uint32_t m = UW_CALLEE_SAVED; m; m &= m - 1) {
		unsigned const r = (unsigned)__builtin_ctz(m);
		if (cur->known >> r & 1)
			set_reg(nx, r, cur->v[r]);
		else /* unknown for the same reason (the filter dropped it) */
			unset_reg(nx, r, cur->undef >> r & 1 ? WHY_UNDEF : cur->why[r]);
	}
	set_reg(nx, STACKCAP_REG_RIP, ra);
	set_reg(nx, STACKCAP_REG_RSP, cur->v[STACKCAP_REG_RSP] + 8);
	return STEP_OK;
}

/* The walk kept for SAMPLE's thread, or NULL when walks are not kept or
 * this one cannot be (a second segment). */
static struct uw_kept_walk *kept_slot(struct su_unwinder *u, const struct su_sample *sample)
{
	if (!u->reuse || sample->segment)
		return NULL;
	return &u->kept[(sample->tid * 0x9E3779B1u) >> (32 - 4)];
}

/* Room for the states of a walk of up to MAX frames (one more: the step
 * from the last frame writes the next).  @return 0, or -1. */
static int walk_reserve(struct su_unwinder *u, size_t max)
{
	/* Reads: a few a frame (more after a walk that ran out). */
	if (u->rd_cap < 8 * (max + 1)) {
		size_t const cap = 8 * (max + 1);
		uint64_t *rd = realloc(u->rd, cap * sizeof(*rd));
		if (!rd)
			return -1;
		u->rd = rd;
		u->rd_cap = cap;
	}
	if (max < u->walk_cap)
		return 0;
	struct uw_kept_frame *w = realloc(u->walk, (max + 1) * sizeof(*w));
	if (!w)
		return -1;
	u->walk = w;
	u->walk_cap = max + 1;
	return 0;
}

/* Frames A and B the same, N of them (a walk's frames: rt_fp and rt_pos
 * are a runtime frame's only, never set here). */
static int frames_same(const struct su_frame *a, const struct su_frame *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].pc != b[i].pc || a[i].map != b[i].map || a[i].how != b[i].how ||
		    a[i].activation != b[i].activation)
			return 0;
	return 1;
}

/* Keep this walk for the next sample of its thread?  Keeping copies the
 * words the walk read: on threads whose stacks keep changing, where no
 * walk is reused (sqlite3's: keeping cost 11% of `stackunwind stacks`),
 * walks are kept ever more rarely after 4 misses, down to one in 64; a
 * reuse brings back keeping every walk. */
static int kept_due(struct uw_kept_walk *k)
{
	uint32_t const m = k->misses < UINT32_MAX ? ++k->misses : k->misses;
	if (m <= 4)
		return 1;
	uint32_t const shift = m - 4 < 6 ? m - 4 : 6;
	return (m & ((1u << shift) - 1)) == 0;
}

/* *VIEW (when not NULL): where the frames are, FRAMES or the kept walk's
 * own (su_unwind_view). */
static size_t fast_unwind(struct su_unwinder *u, struct uw_proc *p, const struct su_sample *sample,
			  struct su_frame *frames, size_t max, enum su_unwind_end *end,
			  const struct su_frame **view)
{
	const struct stackcap_image *img = sample->image;
	const struct su_maps *maps = sample->maps;
	struct walk w;
	uw_stack_init(&w.st, sample);
	w.switched = 0;
	w.bias = 0;

	/* Each frame's state in KF[k] when walks are kept, else in two
	 * buffers taken in turn. */
	struct uw_kept_walk *kw = kept_slot(u, sample);
	if (kw && walk_reserve(u, max) != 0)
		kw = NULL;
	struct uw_kept_frame bufs[2];
	struct uw_kept_frame *const kf = kw ? u->walk : bufs;
	w.rd = kw ? u->rd : NULL;
	w.rd_n = 0;
	w.rd_cap = kw ? u->rd_cap : 0;
	w.rd_full = 0;
	size_t const kmask = kw ? SIZE_MAX : 1;
	int const match = kw && kw->maps == maps; /* the kept walk may be met */
	size_t j = 1;                               /* the kept frame to meet next */
	if (match && !sample->decode_no) {
		/* The words the kept walk read, where this image holds them:
		 * fetched while the first frames unwind (a perf.data image is
		 * cold memory, first read by the compare; ours was just
		 * decoded). */
		uint64_t const lo = w.st.seg[0].lo, hi = w.st.seg[0].hi;
		uint64_t line = 0;
		size_t const nr = kw->n > 1 ? kw->kf[1].rn : kw->nreads;
		for (size_t i = 0; i < nr; i++) {
			uint64_t const at = kw->reads[i].at;
			if (at >= lo && at < hi && at >> 6 != line) {
				__builtin_prefetch(&img->words[(at - lo) / 8]);
				line = at >> 6;
			}
		}
	}

	/* Field by field, not a memset and set_reg/unset_reg each: the
	 * memset (rep stos) and the byte stores after it were a quarter of
	 * this function on a 48-frame chain. */
	struct uw_regs *cur = &kf[0].r, *nx;
	uint32_t const known = uw_initial_regs_known(img);
	if (known == (1u << STACKCAP_NREGS) - 1) { /* a perf.data sample's, or every one kept: one copy */
		memcpy(cur->v, img->regs, sizeof(cur->v));
	} else {
		for (unsigned r = 0; r < STACKCAP_NREGS; r++)
			cur->v[r] = known >> r & 1 ? img->regs[r] : 0;
	}
	cur->known = known;
	cur->undef = 0;
	memset(cur->why, SU_END_BAD_STACK, sizeof(cur->why)); /* the unknown ones: dropped by the filter */

	uint64_t pc = img->regs[STACKCAP_REG_RIP];
	int activation = 1;
	int any_signal = 0;
	int same_sp_ok = 1; /* uw_sp_progress */
	uint8_t how = SU_FRAME_INITIAL;
	size_t n = 0;
	for (;;) {
		uint64_t const lookup = activation ? pc : pc - 1;
		/* A state the kept walk had: the rest of its frames are this
		 * walk's (walk-reuse.c).  Frames come in stack order, so the
		 * kept frame to compare with is the next with rsp >= this rsp. */
		if (match && n >= 1 && !any_signal && (cur->known >> STACKCAP_REG_RSP & 1)) {
			uint64_t const rsp = cur->v[STACKCAP_REG_RSP];
			while (j < kw->n && kw->kf[j].r.v[STACKCAP_REG_RSP] < rsp)
				j++;
			if (j < kw->n && kw->kf[j].r.v[STACKCAP_REG_RSP] == rsp &&
			    uw_kept_matches(kw, j, cur, pc, (uint8_t)activation, sample, n, max,
					    &u->stats.trusted_words)) {
				frames[n] = (struct su_frame){ .pc = pc, .map = kw->frames[j].map, .how = how,
							      .activation = (uint8_t)activation };
				size_t const rest = kw->n - j - 1;
				/* Met at the same depth, the kept frames stay where
				 * they are through the splice below, which puts this
				 * walk's before them: a caller that can read them
				 * there (VIEW) is not given a copy (~50 frames of a
				 * deep program: 3.5% of stackunwind stacks). */
				int const in_place = view && n == j;
				if (!in_place)
					memcpy(&frames[n + 1], &kw->frames[j + 1], rest * sizeof(*frames));
				*end = (enum su_unwind_end)kw->end;
				u->stats.fp_frames += kw->kf[j].fp_after;
				u->stats.reused_frames += rest + 1;
				kw->misses = 0;
				/* The previous call's frames, when it left this walk
				 * and the frames below the meeting are its own too. */
				u->fast_repeat = kw->stamp && kw->stamp + 1 == u->calls && n == j &&
						 frames_same(frames, kw->frames, n + 1);
				kw->stamp = !w.rd_full && uw_kept_splice(kw, j, sample, frames, kf, n, w.rd, w.rd_n) == 0
						    ? u->calls
						    : 0;
				if (w.rd_full)
					kw->maps = NULL;
				if (in_place && kw->stamp)
					*view = kw->frames; /* this walk's frames, then the kept ones */
				else if (in_place) /* not spliced: the kept frames, still in place */
					memcpy(&frames[n + 1], &kw->frames[n + 1], rest * sizeof(*frames));
				return n + 1 + rest;
			}
		}
		/* A pc met before: its entry, module, bias and rule at once. */
		uint64_t const mh = (lookup ^ (uint64_t)(uintptr_t)maps * 0x9E3779B97F4A7C15ull) * 0xC2B2AE3D27D4EB4Full;
		struct uw_memo *mm = &u->memo[mh >> (64 - UW_MEMO_BITS)];
		int const memo_hit = mm->maps == maps && mm->lookup == lookup && mm->epoch == u->memo_epoch &&
				     *mm->moves_at == mm->moves;
		int64_t const mi = memo_hit ? mm->mi : su_maps_find(maps, lookup);
		frames[n].pc = pc;
		frames[n].map = mi;
		frames[n].how = how;
		frames[n].activation = (uint8_t)activation;
		struct uw_kept_frame *const kn = &kf[n & kmask];
		kn->min_read = UINT64_MAX;
		kn->ok_end = 0;
		kn->fail_end = UINT64_MAX;
		kn->rn = (uint32_t)w.rd_n;
		kn->uses = UW_ALL_REGS; /* until a step says less */
		kn->keeps = 0;
		n++;
		if (mi < 0) {
			*end = SU_END_NO_MAP;
			break;
		}
		struct su_module *mod;
		const struct uw_rule *rule = NULL;
		const struct uw_op *ops = NULL;
		enum uw_lookup lk = UW_LOOKUP_NO_CFI;
		uint64_t bias;
		if (memo_hit) {
			mod = mm->mod;
			bias = mm->bias;
			rule = mm->rule;
			ops = mm->ops;
			lk = UW_LOOKUP_RULE;
		} else {
			mod = uw_proc_module(u, p, (uint32_t)mi);
			bias = su_module_bias(mod, &maps->entries[mi]);
			const uint32_t *moves = NULL;
			if (mod)
				lk = uw_rule_lookup(mod, lookup - bias, &rule, &ops, &moves, &u->stats.rule_misses);
			if (lk == UW_LOOKUP_RULE)
				*mm = (struct uw_memo){ .maps = maps, .lookup = lookup, .epoch = u->memo_epoch, .mi = mi,
							.mod = mod, .bias = bias, .rule = rule, .ops = ops,
							.moves_at = moves, .moves = *moves };
			if (lk == UW_LOOKUP_NO_CFI && activation && mod) {
				/* In rt_sigreturn: the pc is just past the signal
				 * trampoline's syscall, where its CFI ends.  Its
				 * signal frame is still the stack's.  (Not
				 * remembered for the pc: a return address one
				 * past it would look up the same address.) */
				const struct uw_rule *r1 = NULL;
				const struct uw_op *o1 = NULL;
				if (uw_rule_lookup(mod, lookup - 1 - bias, &r1, &o1, &moves, &u->stats.rule_misses) ==
					    UW_LOOKUP_RULE && r1->signal) {
					rule = r1;
					ops = o1;
					lk = UW_LOOKUP_RULE;
				}
			}
			if (lk == UW_LOOKUP_NO_CFI && !activation && mod) {
				/* A return address no call put there (entry_kind):
				 * a restorer is the kernel's signal frame; at a
				 * context's start the stack ends.  Both
				 * activations, named at their first byte, as a
				 * signal trampoline is. */
				enum uw_entry const ek = entry_kind(u, mod, pc - bias);
				if (ek == UW_ENTRY_SIGRETURN) {
					rule = &sigreturn_rule;
					ops = NULL;
					lk = UW_LOOKUP_RULE;
				} else if (ek == UW_ENTRY_CONTEXT) {
					frames[n - 1].activation = 1;
					frames[n - 1].map = su_maps_find(maps, pc);
					*end = SU_END_OUTERMOST;
					break;
				}
			}
		}
		int rc;
		int signal = 0;
		nx = &kf[n & kmask].r;
		w.min_read = UINT64_MAX;
		w.ok_end = 0;
		w.fail_end = UINT64_MAX;
		if (lk == UW_LOOKUP_RULE) {
			w.bias = bias;
			w.activation = activation;
			w.popped = 0;
			if (rule->signal && (cur->known >> STACKCAP_REG_RSP & 1))
				uw_stack_signal_frame(&w.st, cur->v[STACKCAP_REG_RSP]);
			rc = cfi_step(rule, ops, cur, nx, &w);
			signal = rule->signal;
			how = signal ? SU_FRAME_SIGNAL : SU_FRAME_CFI;
		} else if (lk == UW_LOOKUP_NO_CFI) {
			rc = fp_step(cur, nx, &w);
			how = SU_FRAME_FP;
			if (rc != STEP_OK && n == 1) { /* the interrupted frame */
				rc = leaf_step(u, p, maps, cur, nx, &w);
				how = SU_FRAME_LEAF;
			}
		} else {
			rc = SU_END_ERROR;
		}
		kn->min_read = w.min_read;
		kn->ok_end = w.ok_end;
		kn->fail_end = w.fail_end;
		if (lk == UW_LOOKUP_RULE) { /* else all of them, as set above */
			kn->uses = rule->uses_mask | w.popped;
			kn->keeps = rule->same_mask | w.popped;
		}
		any_signal |= signal;
		if (rc != STEP_OK) {
			*end = (enum su_unwind_end)rc;
			break;
		}
		uint64_t const nsp = nx->v[STACKCAP_REG_RSP];
		int const nsp_known = nx->known >> STACKCAP_REG_RSP & 1;
		if (signal) {
			/* elfutils calls the trampoline itself an activation:
			 * the kernel made its first byte the return address. */
			frames[n - 1].activation = 1;
			frames[n - 1].map = su_maps_find(maps, frames[n - 1].pc);
			if (!nsp_known || !uw_stack_holds(&w.st, nsp))
				w.switched = 1;
		} else if ((cur->known >> STACKCAP_REG_RSP & 1) &&
			   !uw_sp_progress(nsp_known, nsp, cur->v[STACKCAP_REG_RSP], &same_sp_ok)) {
			*end = SU_END_BAD_STACK; /* no progress: a loop or garbage */
			break;
		}
		if (signal)
			same_sp_ok = 1;
		if (n == max) {
			*end = SU_END_MAX_FRAMES;
			break;
		}
		if (how == SU_FRAME_FP)
			u->stats.fp_frames++;
		pc = nx->v[STACKCAP_REG_RIP];
		activation = signal;
		cur = nx;
	}
	if (kw) {
		if (any_signal || w.rd_full) {
			/* never kept: reads of a signal frame depend on more;
			 * reads that did not fit are made room for next time */
			kw->maps = NULL;
			if (w.rd_full) {
				uint64_t *rd = realloc(u->rd, 2 * u->rd_cap * sizeof(*rd));
				if (rd) {
					u->rd = rd;
					u->rd_cap *= 2;
				}
			}
		} else if (kept_due(kw) && uw_kept_store(kw, sample, frames, n, &u->walk, &u->walk_cap, *end, w.rd,
							 w.rd_n) == 0) {
			u->stats.kept_walks++;
			kw->stamp = u->calls;
		}
	}
	return n;
}

/* ---- where a process starts ------------------------------------------------- */

/* Does the copied stack hold a process's initial stack with ARGC: the
 * word ARGC, then ARGC pointers further up the stack (argv), then 0?
 * That is where the kernel starts a program: entry code that has CFI but
 * does not mark its return address undefined (Go's runtime.rt0_go) reads
 * argc as one.  (A filtered trace zeroes argc: the unwind ends on 0.) */
static int initial_stack_holds(const struct su_sample *sample, uint64_t argc)
{
	const struct stackcap_image *img = sample->image;
	if (argc == 0 || argc >= 4096)
		return 0;
	struct uw_stack st;
	uw_stack_init(&st, sample);
	uint64_t const end = img->sp + 8 * img->nwords;
	for (uint64_t at = img->sp; at + 8 * (argc + 2) <= end; at += 8) {
		uint64_t v;
		if (uw_stack_read(&st, at, &v) != UW_READ_OK || v != argc)
			continue;
		uint64_t const argv_end = at + 8 * (argc + 1);
		int ok = uw_stack_read(&st, argv_end, &v) == UW_READ_OK && v == 0;
		for (uint64_t k = 1; ok && k <= argc; k++)
			ok = uw_stack_read(&st, at + 8 * k, &v) == UW_READ_OK && v > argv_end && v - argv_end < (1u << 20);
		if (ok)
			return 1;
	}
	return 0;
}

/* Is ELF_LOOKUP (a frame's pc as looked up) in the first instructions of
 * the entry point of module M?  ld.so's _start calls _dl_start at once,
 * then (as _dl_start_user, rbp cleared "to mark the outermost frame even
 * for constructors") _dl_init, 0x30 bytes on in glibc 2.36, then jumps to
 * the program: no CFI, and the first frame of every exec'd process and of
 * the constructors its libraries run.  (Only where no CFI covers the
 * address: a program's own _start has CFI saying it is the outermost.) */
static int at_entry(struct su_module *m, uint64_t elf_lookup)
{
	GElf_Addr bias;
	GElf_Ehdr eh;
	Elf *elf = m && m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
	if (!elf || !gelf_getehdr(elf, &eh) || !eh.e_entry)
		return 0;
	return elf_lookup >= eh.e_entry && elf_lookup < eh.e_entry + 64;
}

/* Frame F's kind for Go's traceback (uw_go_topframe; 0: none). */
static int go_kind(struct su_unwinder *u, struct uw_proc *p, const struct su_sample *sample, const struct su_frame *f)
{
	if (!p || f->map < 0)
		return 0;
	struct su_module *m = uw_proc_module(u, p, (uint32_t)f->map);
	uint64_t const pc = f->activation ? f->pc : f->pc - 1;
	return m ? uw_go_topframe(m, pc - su_module_bias(m, &sample->maps->entries[f->map])) : 0;
}

/* The first of the N frames in a function Go's own traceback stops at
 * (unwind-internal.h: uw_go_topframe), or N. */
static size_t go_top_frame(struct su_unwinder *u, const struct su_sample *sample, const struct su_frame *frames,
			   size_t n)
{
	struct uw_proc *p = uw_proc_get(u, sample->maps);
	for (size_t i = 0; p && i < n; i++) {
		int const kind = go_kind(u, p, sample, &frames[i]);
		if (kind == UW_GO_TOP || (kind == UW_GO_SPWRITE && i > 0))
			return i;
	}
	return n;
}

/* An unwind that stopped where a process, a thread or a goroutine starts
 * reached its outermost frame: the same rule after either unwinder. */
static void entry_end(struct su_unwinder *u, const struct su_sample *sample, const struct su_frame *frames,
		      size_t *n, enum su_unwind_end *end)
{
	if (*end != SU_END_OUTERMOST && *end != SU_END_MAX_FRAMES && *n) {
		/* Go: what the unwind read above goexit, mstart or rt0_go is
		 * not a frame (the memory above the goroutine's stack, or argc
		 * zeroed by the filter), nor above systemstack and the others
		 * that switch stacks. */
		size_t const k = go_top_frame(u, sample, frames, *n);
		if (k < *n) {
			*n = k + 1;
			*end = SU_END_OUTERMOST;
			return;
		}
		/* Innermost in one of those, its caller not found at once:
		 * sampled past its switch of SP (systemstack+0x52), the
		 * stack is the system stack's, where the goroutine's frames
		 * are not; Go's traceback ends there too.  (Before the
		 * switch its caller is read as any other's.) */
		if (*n == 1 && (*end == SU_END_BAD_STACK || *end == SU_END_NO_MAP || *end == SU_END_NO_CFI) &&
		    go_kind(u, uw_proc_get(u, sample->maps), sample, &frames[0]) == UW_GO_SPWRITE) {
			*end = SU_END_OUTERMOST;
			return;
		}
	}
	if (*end == SU_END_NO_MAP && *n >= 2 && frames[*n - 1].pc < 4096 &&
	    initial_stack_holds(sample, frames[*n - 1].pc)) {
		(*n)--;
		*end = SU_END_OUTERMOST;
	} else if (*end == SU_END_NO_CFI && *n >= 1 && frames[*n - 1].map >= 0) {
		/* (An activation there: the process's first instructions.) */
		struct uw_proc *p = uw_proc_get(u, sample->maps);
		const struct su_frame *f = &frames[*n - 1];
		struct su_module *m = p ? uw_proc_module(u, p, (uint32_t)f->map) : NULL;
		if (m && at_entry(m, su_frame_lookup_pc(f) - su_module_bias(m, &sample->maps->entries[f->map])))
			*end = SU_END_OUTERMOST;
	}
}

/* ---- entry point ------------------------------------------------------------ */

/* The sample's kernel frames put before the N user frames (at most MAX
 * in all: the outermost user frames give way). */
static size_t kernel_prepend(const struct su_sample *sample, struct su_frame *frames, size_t n, size_t max,
			     enum su_unwind_end *end)
{
	size_t const nk = sample->n_kernel_chain < max ? sample->n_kernel_chain : max;
	size_t const keep = n < max - nk ? n : max - nk;
	if (keep < n)
		*end = SU_END_MAX_FRAMES;
	memmove(frames + nk, frames, keep * sizeof(*frames));
	for (size_t i = 0; i < nk; i++)
		frames[i] = (struct su_frame){ .pc = sample->kernel_chain[i], .map = -1, .how = SU_FRAME_KERNEL,
					       .activation = i == 0 };
	return nk + keep;
}

static size_t unwind(struct su_unwinder *u, const struct su_sample *sample, struct su_frame *frames, size_t max,
		     enum su_unwind_end *end, const struct su_frame **view);

size_t su_unwind(struct su_unwinder *u, const struct su_sample *sample,
		 struct su_frame *frames, size_t max, enum su_unwind_end *end)
{
	return unwind(u, sample, frames, max, end, NULL);
}

size_t su_unwind_view(struct su_unwinder *u, const struct su_sample *sample, struct su_frame *frames, size_t max,
		      const struct su_frame **out, enum su_unwind_end *end)
{
	*out = frames;
	return unwind(u, sample, frames, max, end, out);
}

static size_t unwind(struct su_unwinder *u, const struct su_sample *sample, struct su_frame *frames, size_t max,
		     enum su_unwind_end *end, const struct su_frame **view)
{
	enum su_unwind_end dummy;
	if (!end)
		end = &dummy;
	*end = SU_END_ERROR;
	if (u) {
		u->calls++;
		u->fast_repeat = 0;
		u->repeat = 0;
	}
	if (!u || !sample || !sample->image || (!frames && max)) {
		if (u)
			u->prev_plain = 0;
		return 0;
	}
	const struct stackcap_image *img = sample->image;
	size_t n;
	u->stats.samples++;
	int plain = 0; /* the frames are the fast walk's, as it left them */
	uint64_t const rip = img->regs[STACKCAP_REG_RIP];
	if (!(img->regs_kept >> STACKCAP_REG_RIP & 1)) {
		/* No registers: nothing to unwind.  A perf record -g sample
		 * carries the chain the kernel walked: that is the stack, and
		 * it ends where the kernel's frame-pointer walk stopped. */
		n = 0;
		uint32_t const nc = sample->user_chain ? sample->n_user_chain : 0;
		for (uint32_t i = 0; i < nc && n < max; i++) {
			uint64_t const pc = sample->user_chain[i];
			frames[n++] = (struct su_frame){
				.pc = pc, .map = sample->maps ? su_maps_find(sample->maps, pc) : -1,
				.how = i ? SU_FRAME_CHAIN : SU_FRAME_INITIAL, .activation = i == 0,
			};
		}
		*end = !nc ? SU_END_NO_USER : n < nc ? SU_END_MAX_FRAMES : SU_END_OUTERMOST;
	} else if (rip == 0) {
		*end = SU_END_OUTERMOST;
		n = 0;
	} else if (max == 0) {
		*end = SU_END_MAX_FRAMES;
		n = 0;
	} else if (!sample->maps || su_maps_find(sample->maps, rip) < 0) {
		frames[0] = (struct su_frame){ .pc = rip, .map = -1, .how = SU_FRAME_INITIAL,
					       .activation = 1 };
		*end = SU_END_NO_MAP;
		n = 1;
	} else {
		struct uw_proc *p = uw_proc_get(u, sample->maps);
		if (!p) {
			frames[0] = (struct su_frame){ .pc = rip, .map = su_maps_find(sample->maps, rip),
						       .how = SU_FRAME_INITIAL, .activation = 1 };
			*end = SU_END_ERROR;
			n = 1;
		} else if (u->kind == SU_UNWINDER_DWFL) {
			n = uw_dwfl_unwind(u, p, sample, frames, max, end);
		} else {
			n = fast_unwind(u, p, sample, frames, max, end, view);
			plain = 1;
			/* The frames changed below are FRAMES: the kept walk's
			 * copied there first. */
			if (view && *view != frames && (sample->runtime_frames || sample->kernel_chain)) {
				memcpy(frames, *view, n * sizeof(*frames));
				*view = frames;
			}
		}
		size_t const walked = n;
		enum su_unwind_end const walk_end = *end;
		entry_end(u, sample, view ? *view : frames, &n, end); /* reads them only */
		plain &= n == walked && *end == walk_end;
	}
	if (sample->runtime_frames) {
		n = su_runtime_splice(u, sample, frames, n, max, end);
		plain = 0;
	}
	if (sample->kernel_chain && sample->n_kernel_chain && max) {
		n = kernel_prepend(sample, frames, n, max, end);
		plain = 0;
	}
	u->repeat = (uint8_t)(plain && u->prev_plain && u->fast_repeat);
	u->prev_plain = (uint8_t)plain;
	u->stats.frames += n;
	if ((unsigned)*end < SU_END_COUNT)
		u->stats.ends[*end]++;
	return n;
}
