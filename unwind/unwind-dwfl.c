/* The reference unwinder: elfutils' own, on a Dwfl holding the modules of
 * one maps snapshot at their load biases, with the sample's registers and
 * stack image behind Dwfl_Thread_Callbacks.  A Dwfl can be attached only
 * once, so each keeps a "current sample" that the callbacks read. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <gelf.h>
#include <libelf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "unwind/unwind-internal.h"

struct uw_dwfl_proc {
	Dwfl *dwfl;
	int broken;                    /* could not be built: frame 0 only */
	struct su_unwinder *u;
	struct uw_proc *proc;
	/* The sample being unwound. */
	const struct su_sample *sample;
	struct uw_stack st;
	int switched;
	enum uw_read read_fail;        /* last failed read since the last frame */
	enum uw_read any_read_fail;    /* last failed read of the sample */
	enum uw_read last_read;        /* the last read since the last frame */
	struct su_frame *frames;
	size_t max, n;
	int have_end;
	enum su_unwind_end end;
	uint64_t prev_rsp;
	int prev_rsp_known;
	int prev_signal;               /* with a segment: the last frame was a signal frame */
	int same_sp_ok;                /* uw_sp_progress */
	uint32_t known_mask;           /* registers elfutils knows in the last frame */
	uint64_t last_regs[STACKCAP_NREGS];
	/* The leaf rule's second walk: begun at the caller of a no-CFI
	 * frame 0, pc LEAF_RA and stack pointer LEAF_RSP. */
	int leaf;
	uint64_t leaf_ra, leaf_rsp;
	/* The sample is in rt_sigreturn (unwind.c: the pc just past the
	 * signal trampoline's CFI): elfutils is given pc - 1 to look up, the
	 * frame keeps its pc. */
	int sigret;
	/* Slots the frame being unwound has popped already (POP_AT), and
	 * the registers' values they held (unwind-internal.h:
	 * uw_slot_popped). */
	unsigned npop;
	uint64_t pop_at[STACKCAP_NREGS], pop_val[STACKCAP_NREGS];
};

/* ---- thread callbacks --------------------------------------------------------- */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct uw_dwfl_proc *dp = arg;
	if (*thread_argp)
		return 0;
	*thread_argp = dp;
	return dp->sample && dp->sample->tid ? (pid_t)dp->sample->tid : 1;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct uw_dwfl_proc *dp = arg;
	uint64_t v;
	enum uw_read const rd = uw_stack_read(&dp->st, addr, &v);
	dp->last_read = rd;
	if (rd == UW_READ_OUTSIDE) {
		for (unsigned k = 0; k < dp->npop; k++) {
			if (dp->pop_at[k] == addr) {
				*result = dp->pop_val[k];
				dp->last_read = UW_READ_OK;
				return true;
			}
		}
	}
	if (rd != UW_READ_OK) {
		dp->read_fail = rd;
		dp->any_read_fail = rd;
		return false;
	}
	*result = v;
	return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct uw_dwfl_proc *dp = arg;
	const struct stackcap_image *img = dp->sample->image;
	for (unsigned r = 0; r < STACKCAP_NREGS; r++) {
		/* The leaf rule: the caller has the callee-saved ones only. */
		if (!uw_initial_reg_known(img, r) || (dp->leaf && !(UW_CALLEE_SAVED >> r & 1)))
			continue;
		Dwarf_Word const v = img->regs[r];
		if (!dwfl_thread_state_registers(thread, (int)r, 1, &v))
			return false;
	}
	if (dp->leaf) {
		Dwarf_Word const sp = dp->leaf_rsp;
		if (!dwfl_thread_state_registers(thread, STACKCAP_REG_RSP, 1, &sp))
			return false;
	}
	dwfl_thread_state_register_pc(thread, dp->leaf ? dp->leaf_ra : img->regs[STACKCAP_REG_RIP] - (dp->sigret ? 1 : 0));
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* ---- building the process Dwfl ------------------------------------------------ */

/* Separate debug info (for .debug_frame) is what the module cache found for
 * the same module, so both unwinders read the same CFI. */
static int cb_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct su_module *m = *userdata;
	if (!m || m->debug_only || !m->mod)
		return -1;
	Dwarf_Addr bias;
	if (!m->debug_path)
		(void)dwfl_module_getdwarf(m->mod, &bias); /* lets the cache look */
	if (!m->debug_path)
		return -1;
	int const fd = open(m->debug_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	*debuginfo_file_name = strdup(m->debug_path);
	return fd;
}

static int cb_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	return -1; /* every module is reported with its file */
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = cb_find_elf,
	.find_debuginfo = cb_find_debuginfo,
};

/* A file descriptor on the bytes of M's ELF (for modules that are not a
 * file on disk, like the vDSO), or -1. */
static int memfd_of(struct su_module *m)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	size_t size = 0;
	char *raw = elf ? elf_rawfile(elf, &size) : NULL;
	if (!raw || size == 0)
		return -1;
	int const fd = memfd_create("stackcap-unwind", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < size) {
		ssize_t const w = write(fd, raw + done, size - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	return fd;
}

/* An ELF header naming x86-64, so dwfl_attach_state picks the backend even
 * when no module could be reported. */
static Elf *stub_elf(struct su_unwinder *u)
{
	if (u->stub_elf)
		return u->stub_elf;
	Elf64_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	memcpy(u->stub_image, &eh, sizeof(eh));
	elf_version(EV_CURRENT);
	u->stub_elf = elf_memory(u->stub_image, sizeof(u->stub_image));
	return u->stub_elf;
}

static struct uw_dwfl_proc *dwfl_proc_build(struct su_unwinder *u, struct uw_proc *p)
{
	struct uw_dwfl_proc *dp = calloc(1, sizeof(*dp));
	if (!dp)
		return NULL;
	dp->u = u;
	dp->proc = p;
	/* libdwfl refuses a module whose range overlaps one reported (an
	 * ET_EXEC file mapped a second time elsewhere, as node maps its
	 * builtins: its addresses are fixed, the base is ignored), and from
	 * then on finds no module at all, even those reported before: the
	 * Dwfl is made again without the entries refused (SKIP). */
	uint8_t *skip = calloc(p->count ? p->count : 1, 1);
again:
	dp->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!dp->dwfl) {
		free(skip);
		dp->broken = 1;
		return dp;
	}
	dwfl_report_begin(dp->dwfl);
	for (uint32_t i = 0; i < p->count; i++) {
		if (skip && skip[i])
			continue;
		struct su_module *m = uw_proc_module(u, p, i);
		if (!m)
			continue;
		uint64_t const bias = su_module_bias(m, &p->entries[i]);
		int dup = 0;
		for (uint32_t j = 0; j < i && !dup; j++)
			dup = p->mods[j] == m && su_module_bias(m, &p->entries[j]) == bias;
		if (dup)
			continue;
		int fd = -1;
		if (m->is_vdso && (fd = memfd_of(m)) < 0)
			continue;
		const char *path = m->elf_path;
		const char *slash = strrchr(path, '/');
		Dwfl_Module *dm = dwfl_report_elf(dp->dwfl, slash ? slash + 1 : path, path, fd,
						  bias, true);
		if (!dm) {
			if (fd >= 0)
				close(fd);
			if (skip) {
				skip[i] = 1;
				dwfl_end(dp->dwfl);
				goto again;
			}
			continue; /* no memory to start again: this Dwfl as it is */
		}
		void **ud = NULL;
		dwfl_module_info(dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (ud)
			*ud = m;
	}
	free(skip);
	Elf *elf = stub_elf(u);
	if (dwfl_report_end(dp->dwfl, NULL, NULL) != 0 || !elf ||
	    !dwfl_attach_state(dp->dwfl, elf, 1, &thread_callbacks, dp))
		dp->broken = 1;
	return dp;
}

void uw_dwfl_proc_free(struct uw_dwfl_proc *dp)
{
	if (!dp)
		return;
	if (dp->dwfl)
		dwfl_end(dp->dwfl);
	free(dp);
}

/* ---- frames ------------------------------------------------------------------ */

/* What the CFI covering an address says. */
struct row_info {
	int signal;        /* the CIE's 'S' augmentation */
	int ra_undef;      /* the return address is undefined: the outermost frame */
	int cfa_reg;       /* the CFA is this register + CFA_OFF; -1 an expression; -2 none */
	uint64_t cfa_off;
	uint32_t cfa_needs; /* registers the CFA reads */
	int ra_at_cfa;     /* the return address is saved at CFA + RA_OFF */
	uint64_t ra_off;
};

/* The CFI row covering ADDR that elfutils unwinds with (.eh_frame's
 * first, then .debug_frame's), to free(), or NULL. */
static Dwarf_Frame *row_at(Dwfl *dwfl, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	for (int k = 0; mod && k < 2; k++) {
		Dwarf_Addr bias;
		Dwarf_CFI *cfi = k == 0 ? dwfl_module_eh_cfi(mod, &bias) : dwfl_module_dwarf_cfi(mod, &bias);
		Dwarf_Frame *fr = NULL;
		if (cfi && dwarf_cfi_addrframe(cfi, addr - bias, &fr) == 0)
			return fr;
	}
	return NULL;
}

/* @return 0, or -1 when no CFI covers ADDR. */
static int cfi_row_info(Dwfl *dwfl, uint64_t addr, struct row_info *ri)
{
	Dwarf_Frame *fr = row_at(dwfl, addr);
	if (!fr)
		return -1;
	bool signalp = false;
	int const ra = dwarf_frame_info(fr, NULL, NULL, &signalp);
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	memset(ri, 0, sizeof(*ri));
	ri->signal = signalp;
	if (ra >= 0 && dwarf_frame_register(fr, ra, mem, &ops, &nops) == 0) {
		ri->ra_undef = nops == 0 && ops == mem;
		if (nops >= 1 && nops <= 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		    (nops == 1 || ops[1].atom == DW_OP_plus_uconst)) {
			ri->ra_at_cfa = 1;
			ri->ra_off = nops == 2 ? ops[1].number : 0;
		}
	}
	ri->cfa_reg = -2;
	if (dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops > 0) {
		if (nops > 1 || ops[0].atom != DW_OP_bregx) {
			ri->cfa_reg = -1;
		} else if (ops[0].number < STACKCAP_NREGS) {
			ri->cfa_reg = (int)ops[0].number;
			ri->cfa_off = ops[0].number2;
		}
		for (size_t j = 0; j < nops; j++) {
			unsigned const a = ops[j].atom;
			uint64_t const r = a >= DW_OP_breg0 && a <= DW_OP_breg31 ? a - DW_OP_breg0
					 : a >= DW_OP_reg0 && a <= DW_OP_reg31 ? a - DW_OP_reg0
					 : a == DW_OP_bregx || a == DW_OP_regx ? ops[j].number : 64;
			if (r < STACKCAP_NREGS)
				ri->cfa_needs |= 1u << r;
		}
	}
	free(fr);
	return 0;
}

/* Where elfutils looked frame I up: the exact pc for the initial frame and
 * a signal frame's caller, pc - 1 otherwise (and for an initial frame in
 * rt_sigreturn). */
static uint64_t dwfl_lookup_pc(const struct uw_dwfl_proc *dp, size_t i)
{
	const struct su_frame *f = &dp->frames[i];
	if (i == 0)
		return f->pc - (dp->sigret && !dp->leaf ? 1 : 0);
	return f->how == SU_FRAME_SIGNAL ? f->pc : f->pc - 1;
}

static enum su_unwind_end read_end(const struct uw_dwfl_proc *dp, enum uw_read rd)
{
	return uw_read_end(rd, dp->switched, &dp->st);
}

/* Registers libdw's x86-64 defaults carry from frame to frame (rax, rbp,
 * r12-r15) and rbx, which the ABI makes callee-saved. */
#define CARRIED_REGS (1u << 0 | 1u << 3 | 1u << 6 | 0xfu << 12)

/* elfutils says only "return address undefined" (RC 0) or "error" (-1);
 * guess what the fast unwinder says from the CFI, the registers elfutils
 * knew in the last frame and the failed reads. */
static enum su_unwind_end guess_end(const struct uw_dwfl_proc *dp, int rc)
{
	if (rc != 0) {
		/* The rbp chain failed: on its last read (the return
		 * address), or on its checks (rbp unknown, the stack going
		 * down). */
		if (dp->last_read != UW_READ_OK)
			return read_end(dp, dp->last_read);
		return SU_END_NO_CFI;
	}
	struct row_info ri;
	if (!dp->n || cfi_row_info(dp->dwfl, dwfl_lookup_pc(dp, dp->n - 1), &ri) != 0)
		return dp->read_fail != UW_READ_OK ? read_end(dp, dp->read_fail) : SU_END_ERROR;
	if (ri.ra_undef)
		return SU_END_OUTERMOST;
	uint32_t const unknown = ri.cfa_needs & ~dp->known_mask;
	if (unknown) {
		/* A register the CFA needs is unknown: since the sample (the
		 * filter dropped it), lost on a failed read, or undefined by
		 * the CFI. */
		unsigned const r = (unsigned)__builtin_ctz(unknown);
		uint32_t const bit = 1u << r;
		if (!uw_initial_reg_known(dp->sample->image, r) && (dp->n == 1 || (bit & CARRIED_REGS)))
			return SU_END_BAD_STACK;
		if ((bit & CARRIED_REGS) && dp->any_read_fail != UW_READ_OK)
			return read_end(dp, dp->any_read_fail);
		return SU_END_ERROR;
	}
	if (ri.cfa_reg >= 0) {
		if (ri.ra_at_cfa) {
			/* Read the return address again: failed, or 0. */
			uint64_t v;
			enum uw_read const rd = uw_stack_read(&dp->st, dp->last_regs[ri.cfa_reg] +
							      ri.cfa_off + ri.ra_off, &v);
			return rd == UW_READ_OK ? SU_END_OUTERMOST : read_end(dp, rd);
		}
		return dp->read_fail != UW_READ_OK ? read_end(dp, dp->read_fail) : SU_END_OUTERMOST;
	}
	if (ri.cfa_reg == -1) {
		/* An expression on known registers: a failed read, or the
		 * return address came out 0. */
		if (dp->read_fail != UW_READ_OK)
			return read_end(dp, dp->read_fail);
		return dp->any_read_fail != UW_READ_OK ? read_end(dp, dp->any_read_fail)
						       : SU_END_OUTERMOST;
	}
	return SU_END_ERROR;
}

/* The slots frame state LAST_REGS (KNOWN_MASK), interrupted and looked up
 * at LOOKUP, has popped already, as the fast unwinder finds them: rules
 * "saved at CFA + N" of the row elfutils uses whose slot lies below the
 * stack pointer. */
static void popped_slots(struct uw_dwfl_proc *dp, uint64_t lookup)
{
	dp->npop = 0;
	if (!(dp->known_mask >> STACKCAP_REG_RSP & 1))
		return;
	uint64_t const rsp = dp->last_regs[STACKCAP_REG_RSP];
	Dwarf_Frame *fr = row_at(dp->dwfl, lookup);
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	if (!fr || dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    ops[0].number >= STACKCAP_NREGS || !(dp->known_mask >> ops[0].number & 1)) {
		free(fr);
		return;
	}
	uint64_t const cfa = dp->last_regs[ops[0].number] + ops[0].number2;
	for (unsigned r = 0; r < STACKCAP_NREGS; r++) {
		if (!(dp->known_mask >> r & 1) || dwarf_frame_register(fr, (int)r, mem, &ops, &nops) != 0 ||
		    nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa ||
		    (nops == 2 && ops[1].atom != DW_OP_plus_uconst))
			continue;
		uint64_t const at = cfa + (nops == 2 ? ops[1].number : 0);
		if (at <= rsp - 8) {
			dp->pop_at[dp->npop] = at;
			dp->pop_val[dp->npop++] = dp->last_regs[r];
		}
	}
	free(fr);
}

static int stop(struct uw_dwfl_proc *dp, enum su_unwind_end end)
{
	dp->have_end = 1;
	dp->end = end;
	return DWARF_CB_ABORT;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct uw_dwfl_proc *dp = arg;
	/* Reads from here on belong to unwinding this frame. */
	dp->read_fail = UW_READ_OK;
	dp->last_read = UW_READ_OK;
	size_t const i = dp->n;
	Dwarf_Addr pc;
	bool act = false;
	Dwarf_Word rsp = 0, v;
	int const rsp_known = dwfl_frame_reg(state, STACKCAP_REG_RSP, &rsp) == 0;
	dp->known_mask = 0;
	for (unsigned r = 0; r < STACKCAP_NREGS; r++)
		if (dwfl_frame_reg(state, r, &v) == 0) {
			dp->known_mask |= 1u << r;
			dp->last_regs[r] = v;
		}
	if (dp->st.nseg == 2) {
		/* Before elfutils unwinds this frame (asking for the
		 * activation does): is it a signal frame? */
		struct row_info ri;
		if (!dwfl_frame_pc(state, &pc, NULL))
			return stop(dp, SU_END_ERROR);
		uint64_t const lookup = i == 0 || dp->prev_signal ? pc : pc - 1;
		int const signal = cfi_row_info(dp->dwfl, lookup, &ri) == 0 && ri.signal;
		if (signal && rsp_known)
			uw_stack_signal_frame(&dp->st, rsp);
		dp->prev_signal = signal;
	}
	if (!dwfl_frame_pc(state, &pc, &act))
		return stop(dp, SU_END_ERROR);
	if (pc == 0)
		return stop(dp, SU_END_OUTERMOST);
	if (i == 0 && dp->sigret && !dp->leaf)
		pc++; /* given pc - 1 to look up (cb_set_initial_registers) */

	uint8_t how = i == 0 ? SU_FRAME_INITIAL : SU_FRAME_CFI;
	if (dp->leaf && i == 1) {
		/* The second walk's first frame: elfutils calls it the
		 * initial frame, it is the leaf's caller.  (elfutils looks its
		 * CFI up at the return address, not before it: the two differ
		 * only where the call ends its function.) */
		how = SU_FRAME_LEAF;
		act = false;
	} else if (i > 0 && act && dp->frames[i - 1].activation) {
		/* Activation because the previous frame is a signal frame, or
		 * because this one is?  Look at the previous frame's CFI where
		 * elfutils looked it up. */
		struct row_info ri;
		if (cfi_row_info(dp->dwfl, dwfl_lookup_pc(dp, i - 1), &ri) == 0 && ri.signal)
			how = SU_FRAME_SIGNAL;
	}
	if (how == SU_FRAME_SIGNAL) {
		if (!rsp_known || !uw_stack_holds(&dp->st, rsp))
			dp->switched = 1;
		dp->same_sp_ok = 1;
	} else if (i > 0 && dp->prev_rsp_known && !uw_sp_progress(rsp_known, rsp, dp->prev_rsp, &dp->same_sp_ok)) {
		return stop(dp, SU_END_BAD_STACK);
	}
	if (i == dp->max)
		return stop(dp, SU_END_MAX_FRAMES);

	uint64_t const lookup = act ? pc : pc - 1;
	int64_t const mi = su_maps_find(dp->sample->maps, lookup);
	dp->frames[i] = (struct su_frame){ .pc = pc, .map = mi, .how = how, .activation = act };
	dp->n++;
	dp->prev_rsp = rsp;
	dp->prev_rsp_known = rsp_known;
	if (mi < 0)
		return stop(dp, SU_END_NO_MAP);
	struct row_info cri;
	if (i > 0 && !act && cfi_row_info(dp->dwfl, pc - 1, &cri) != 0 &&
	    uw_context_start(dp->u, dp->proc, dp->sample->maps, pc)) {
		/* A return address no call put there, a function's first
		 * byte (makecontext's __start_context): the stack ends there,
		 * as the fast unwinder says (unwind.c). */
		dp->frames[i].activation = 1;
		dp->frames[i].map = su_maps_find(dp->sample->maps, pc);
		return stop(dp, SU_END_OUTERMOST);
	}
	if (act)
		popped_slots(dp, dwfl_lookup_pc(dp, i));
	else
		dp->npop = 0;
	return DWARF_CB_OK;
}

size_t uw_dwfl_unwind(struct su_unwinder *u, struct uw_proc *p, const struct su_sample *sample,
		      struct su_frame *frames, size_t max, enum su_unwind_end *end)
{
	if (!p->dwfl)
		p->dwfl = dwfl_proc_build(u, p);
	struct uw_dwfl_proc *dp = p->dwfl;
	uint64_t const rip = sample->image->regs[STACKCAP_REG_RIP];
	if (!dp || dp->broken) {
		frames[0] = (struct su_frame){ .pc = rip, .map = su_maps_find(sample->maps, rip),
					       .how = SU_FRAME_INITIAL, .activation = 1 };
		*end = SU_END_ERROR;
		return 1;
	}
	dp->sample = sample;
	uw_stack_init(&dp->st, sample);
	dp->switched = 0;
	dp->read_fail = UW_READ_OK;
	dp->any_read_fail = UW_READ_OK;
	dp->last_read = UW_READ_OK;
	dp->frames = frames;
	dp->max = max;
	dp->n = 0;
	dp->have_end = 0;
	dp->prev_rsp_known = 0;
	dp->prev_signal = 0;
	dp->same_sp_ok = 1;
	dp->npop = 0;
	struct row_info sri;
	dp->sigret = cfi_row_info(dp->dwfl, rip, &sri) != 0 && cfi_row_info(dp->dwfl, rip - 1, &sri) == 0 && sri.signal;
	pid_t const tid = sample->tid ? (pid_t)sample->tid : 1;
	int rc = dwfl_getthread_frames(dp->dwfl, tid, frame_cb, dp);
	struct row_info ri;
	if (rc != 0 && !dp->have_end && dp->n == 1 && cfi_row_info(dp->dwfl, frames[0].pc, &ri) != 0) {
		/* No CFI at the interrupted pc and no rbp chain: the leaf
		 * rule, the fast unwinder's own (unwind.c's leaf_step), then
		 * elfutils again from the caller. */
		uint64_t const rsp = sample->image->regs[STACKCAP_REG_RSP];
		uint64_t ra = 0;
		if (!uw_initial_reg_known(sample->image, STACKCAP_REG_RSP) ||
		    uw_stack_read(&dp->st, rsp, &ra) != UW_READ_OK || !uw_leaf_return(u, p, sample->maps, ra)) {
			*end = SU_END_NO_CFI;
			goto done;
		}
		dp->leaf = 1;
		dp->leaf_ra = ra;
		dp->leaf_rsp = rsp + 8;
		dp->read_fail = dp->last_read = UW_READ_OK;
		rc = dwfl_getthread_frames(dp->dwfl, tid, frame_cb, dp);
		dp->leaf = 0;
	}
	*end = dp->have_end ? dp->end : guess_end(dp, rc);
done:
	dp->sample = NULL;
	dp->frames = NULL;
	return dp->n;
}
