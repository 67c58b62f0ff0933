/* SPDX-License-Identifier: MIT */
/* Frames the compiler never makes, for the unwinder's tests. */
	.text

/* uw_fp_call(fn): calls fn() in a frame with a frame pointer and no CFI at
 * all (no .cfi directives: no FDE in .eh_frame, nothing in .debug_frame),
 * so an unwinder must fall back to the rbp chain here. */
	.globl	uw_fp_call
	.type	uw_fp_call, @function
uw_fp_call:
	pushq	%rbp
	movq	%rsp, %rbp
	subq	$16, %rsp
	call	*%rdi
	addl	$1, %eax
	leave
	ret
	.size	uw_fp_call, .-uw_fp_call

/* uw_expr_call(fn): calls fn() with its CFA (rsp + 32) given as a DWARF
 * expression that takes a branch (DW_OP_bra, DW_OP_skip) and goes through
 * most stack and arithmetic ops; the wrong branch gives rsp + 0.  rbp is
 * saved by an expression rule, rbx kept by a val_expression rule. */
	.globl	uw_expr_call
	.type	uw_expr_call, @function
uw_expr_call:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	subq	$16, %rsp
	/* DW_CFA_def_cfa_expression, 27 bytes:
	 *  0 breg7 0; 2 const1u 40; 4 const1s -8; 6 plus; 7 dup; 8 lit2;
	 *  9 mul; 10 lit2; 11 div; 12 eq; 13 bra +4 (to 20); 16 lit0;
	 * 17 skip +6 (to 26); 20 lit16; 21 lit16; 22 swap; 23 over; 24 drop;
	 * 25 plus; 26 plus */
	.cfi_escape 0x0f, 0x1b, 0x77, 0x00, 0x08, 0x28, 0x09, 0xf8, 0x22, 0x12, 0x32, 0x1e, 0x32, 0x1b, 0x29, 0x28, 0x04, 0x00, 0x30, 0x2f, 0x06, 0x00, 0x40, 0x40, 0x16, 0x14, 0x13, 0x22, 0x22
	/* DW_CFA_expression rbp: (CFA) lit16 minus */
	.cfi_escape 0x10, 0x06, 0x02, 0x40, 0x1c
	/* DW_CFA_val_expression rbx: breg3 0 */
	.cfi_escape 0x16, 0x03, 0x02, 0x73, 0x00
	call	*%rdi
	addl	$1, %eax
	addq	$16, %rsp
	.cfi_def_cfa %rsp, 16
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	uw_expr_call, .-uw_expr_call

/* uw_epilogue_call(): calls uw_epilogue_leaf() in a frame whose CFA is
 * rbp + 16, as in every function built with frame pointers.  The leaf makes
 * a frame of its own, pops rbp and stops on int3 before its ret: there its
 * CFI, as GCC writes an epilogue, has moved the CFA to rsp + 8 and still
 * says rbp is saved at CFA - 16, a slot below the stack pointer that no
 * stack copy holds.  The caller's CFA needs rbp, which the pop restored. */
	.globl	uw_epilogue_call
	.type	uw_epilogue_call, @function
uw_epilogue_call:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq	%rbx
	.cfi_offset %rbx, -24
	subq	$8, %rsp
	call	uw_epilogue_leaf
	addl	$1, %eax
	movq	-8(%rbp), %rbx
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	uw_epilogue_call, .-uw_epilogue_call

	.globl	uw_epilogue_leaf
	.type	uw_epilogue_leaf, @function
uw_epilogue_leaf:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	movl	$7, %eax
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	int3
	ret
	.cfi_endproc
	.size	uw_epilogue_leaf, .-uw_epilogue_leaf

/* uw_regret_leaf(): pops its return address into rdi, as glibc's vfork
 * does across its system call, and stops on int3 there: its CFA is the
 * stack pointer itself, its caller's frame at the same sp. */
	.globl	uw_regret_leaf
	.type	uw_regret_leaf, @function
uw_regret_leaf:
	.cfi_startproc
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rdi
	int3
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	movl	$3, %eax
	ret
	.cfi_endproc
	.size	uw_regret_leaf, .-uw_regret_leaf

	.section	.note.GNU-stack,"",@progbits
