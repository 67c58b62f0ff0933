/* SPDX-License-Identifier: MIT */
/*
 * secret-holder: plants a known 64-bit secret and a secret string in the
 * frame of hold_secrets, which stays live while its callee burn_cpu runs the
 * hot loop (and keeps reading them), so every sample is taken with the
 * secrets on the stack between the sampled sp and the caller's frames.
 * tests/secret.sh checks they never reach a trace or any stackunwind output.
 *
 * The values are built at run time from two halves, so neither the word nor
 * the string is in the binary as such (only the test knows them whole).
 *
 * Usage: secret-holder [SECONDS [regs]]   (thread CPU time, default 1)
 *
 * With "regs" the word is held in registers only (rbx, r12-r15 and the
 * one the asm reads it from), never stored to memory whole, while the hot
 * loop runs: what a trace holds of it came from the recorded registers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

/* 0x5EC2E7C0DEC0FFEE: not an address of anything mapped, so no filter has
 * a reason to keep it. */
#define SECRET_HI UINT64_C(0x5EC2E7C0)
#define SECRET_LO UINT64_C(0xDEC0FFEE)

static volatile uint64_t sink;

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static void burn_cpu(volatile uint64_t *words, volatile char *str, double seconds)
{
	double const end = thread_cpu() + seconds;
	uint64_t acc = 1;
	for (;;) {
		for (unsigned i = 0; i < 100000; i++)
			acc = (acc * 6364136223846793005u + 1442695040888963407u) ^ words[i & 7] ^
			      (uint64_t)str[i & 15];
		if (thread_cpu() >= end)
			break;
	}
	sink = acc;
}

NOINLINE static void hold_secrets(double seconds)
{
	volatile uint64_t words[8];
	volatile char str[48];
	/* "XYZZY-quux-sekrit-0451-PLUGH", assembled from two halves. */
	static const char a[] = "XYZZY-quux-se", b[] = "krit-0451-PLUGH";
	for (unsigned i = 0; i < 8; i++)
		words[i] = SECRET_HI << 32 | SECRET_LO;
	size_t const na = strlen(a), nb = strlen(b);
	for (size_t i = 0; i < na; i++)
		str[i] = a[i];
	for (size_t i = 0; i <= nb; i++)
		str[na + i] = b[i];
	burn_cpu(words, str, seconds);
	/* Still live after the call: the frame cannot be reused meanwhile. */
	sink += words[3] + (uint64_t)str[5];
	for (unsigned i = 0; i < 8; i++)
		words[i] = 0;
	for (size_t i = 0; i < sizeof(str); i++)
		str[i] = 0;
}

/* The halves in memory, the word only ever whole in registers. */
static volatile uint32_t half_hi = (uint32_t)SECRET_HI, half_lo = (uint32_t)SECRET_LO;

NOINLINE static void hold_in_registers(double seconds)
{
	double const end = thread_cpu() + seconds;
	for (;;) {
		uint64_t w = (uint64_t)half_hi << 32 | half_lo;
		/* About 1 ms of work with the word in the callee-saved
		 * registers, which are cleared before C code runs again. */
		__asm__ volatile("mov %0, %%rbx\n\tmov %0, %%r12\n\tmov %0, %%r13\n\t"
				 "mov %0, %%r14\n\tmov %0, %%r15\n\t"
				 "mov $1000000, %%ecx\n"
				 "1:\tdec %%ecx\n\tjnz 1b\n\t"
				 "xor %%ebx, %%ebx\n\txor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\t"
				 "xor %%r14d, %%r14d\n\txor %%r15d, %%r15d\n\txor %0, %0"
				 : "+r"(w)
				 :
				 : "rbx", "r12", "r13", "r14", "r15", "rcx", "cc");
		if (thread_cpu() >= end)
			break;
	}
}

int main(int argc, char **argv)
{
	double const seconds = argc > 1 ? atof(argv[1]) : 1.0;
	if (argc > 2 && !strcmp(argv[2], "regs"))
		hold_in_registers(seconds);
	else
		hold_secrets(seconds);
	printf("%llu\n", (unsigned long long)(sink & 1));
	return 0;
}
