/* SPDX-License-Identifier: MIT */
/* uw_fp_call(fn): calls fn() in a frame with a frame pointer and no CFI at
 * all (no .cfi directives: no FDE in .eh_frame, nothing in .debug_frame),
 * so an unwinder must fall back to the rbp chain here. */
	.text
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
	.section	.note.GNU-stack,"",@progbits
