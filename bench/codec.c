/* SPDX-License-Identifier: MIT */
/*
 * bench/codec: encode real stacks with the stack codec.
 *
 * The program recurses through a few functions whose frames hold the usual
 * mix of locals (integers, doubles, heap pointers, text, saved registers),
 * then, deep enough, copies its own stack from the current sp: 2, 8 and
 * 64 KiB.  Each copy is encoded many times; we print ns per encode (median
 * and p99) beside a plain memcpy of the same bytes, and blob size beside
 * raw size, for each policy and word encoding.  A benchmark, not a test.
 */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compress/stack-codec.h"

#define ITERS 3000
#define MAX_RANGES 256

static struct stackcap_code_range range_tab[MAX_RANGES];
static struct stackcap_code_ranges ranges;

static int collect_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
	uint32_t *n = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || *n >= MAX_RANGES)
			continue;
		range_tab[*n].start = info->dlpi_addr + ph->p_vaddr;
		range_tab[*n].end = range_tab[*n].start + ph->p_memsz;
		range_tab[*n].module = *n;
		(*n)++;
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct stackcap_code_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void build_ranges(void)
{
	uint32_t n = 0;
	dl_iterate_phdr(collect_ranges, &n);
	qsort(range_tab, n, sizeof(range_tab[0]), cmp_range);
	if (stackcap_code_ranges_init(&ranges, range_tab, n) != 0) {
		fprintf(stderr, "bench/codec: overlapping code ranges\n");
		exit(1);
	}
}

/* ---- the stack being copied -------------------------------------------- */

static uint64_t stack_copy[65536 / 8];
static uint64_t copy_sp;
static size_t copy_bytes;
static volatile uint64_t sink;

static uint64_t stack_top(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t lo, hi, top = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			top = hi;
	if (f)
		fclose(f);
	return top;
}

static __attribute__((noinline)) void take_copy(void)
{
	uint64_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	uint64_t const top = stack_top();
	size_t n = copy_bytes;
	if (sp + n > top)
		n = (size_t)(top - sp) & ~(size_t)7;
	memcpy(stack_copy, (const void *)sp, n);
	copy_sp = sp;
	copy_bytes = n;
}

static void descend(int depth, size_t want);

static __attribute__((noinline)) void frame_text(int depth, size_t want)
{
	char buf[96];
	snprintf(buf, sizeof(buf), "frame %d of a parser, token '%s'", depth, depth % 2 ? "ident" : "(");
	descend(depth + 1, want);
	sink += (uint64_t)buf[depth % 32];
}

static __attribute__((noinline)) void frame_numbers(int depth, size_t want)
{
	volatile double d[6] = { 1.5 * depth, 3.25, -7.0, 1e9, 0.001, (double)depth / 3 };
	volatile int64_t k[4] = { depth, -depth, depth * 1000003LL, 42 };
	descend(depth + 1, want);
	sink += (uint64_t)(d[depth % 6] + (double)k[depth % 4]);
}

static __attribute__((noinline)) void frame_heap(int depth, size_t want)
{
	void *volatile p[4];
	for (int i = 0; i < 4; i++)
		p[i] = malloc(16 + (size_t)i * 8);
	descend(depth + 1, want);
	for (int i = 0; i < 4; i++)
		free(p[i]);
}

static void descend(int depth, size_t want)
{
	uint64_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	static uint64_t start_sp;
	if (depth == 0)
		start_sp = sp;
	if (start_sp - sp >= want + 512) {
		take_copy();
		return;
	}
	switch (depth % 3) {
	case 0: frame_text(depth, want); break;
	case 1: frame_numbers(depth, want); break;
	default: frame_heap(depth, want); break;
	}
}

/* ---- timing ------------------------------------------------------------ */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t samples_ns[ITERS];

static void report(const char *what, double *median, double *p99)
{
	qsort(samples_ns, ITERS, sizeof(samples_ns[0]), cmp_u64);
	*median = (double)samples_ns[ITERS / 2];
	*p99 = (double)samples_ns[ITERS * 99 / 100];
	(void)what;
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	build_ranges();
	static uint8_t blob[STACKCAP_CODEC_BOUND(65536 / 8)];
	static uint64_t dst[65536 / 8];
	uint64_t regs[STACKCAP_NREGS] = { 0 };

	printf("# bench/codec: %u code ranges; %d encodes per row; ns per operation\n",
	       ranges.count, ITERS);
	printf("%-7s %-6s %-8s %10s %10s %10s %10s %9s %9s %7s %7s\n", "stack", "policy", "words",
	       "enc_med", "enc_p99", "memcpy_med", "memcpy_p99", "raw_B", "blob_B", "ratio", "kept%");
	const size_t sizes[] = { 2048, 8192, 65536 };
	for (size_t si = 0; si < 3; si++) {
		copy_bytes = sizes[si];
		descend(0, sizes[si]);
		uint64_t const nwords = copy_bytes / 8;
		regs[STACKCAP_REG_RIP] = (uint64_t)(uintptr_t)&take_copy;
		regs[STACKCAP_REG_RSP] = copy_sp;
		regs[STACKCAP_REG_RBP] = copy_sp + 48;

		/* memcpy of the same bytes: the floor any copy pays. */
		for (int it = 0; it < ITERS; it++) {
			uint64_t const t0 = now_ns();
			memcpy(dst, stack_copy, copy_bytes);
			__asm__ volatile("" ::: "memory");
			samples_ns[it] = now_ns() - t0;
		}
		double mc_med, mc_p99;
		report("memcpy", &mc_med, &mc_p99);

		struct { enum stackcap_policy pol; enum stackcap_word_encoding enc; const char *name; } const modes[] = {
			{ STACKCAP_POLICY_F2, STACKCAP_WORDS_RELATIVE, "F2-rel" },
			{ STACKCAP_POLICY_F2, STACKCAP_WORDS_RAW, "F2-raw" },
			{ STACKCAP_POLICY_F1, STACKCAP_WORDS_RELATIVE, "F1-rel" },
		};
		for (size_t m = 0; m < 3; m++) {
			struct stackcap_codec_input in = {
				.words = stack_copy, .nwords = nwords, .sp = copy_sp, .regs = regs,
				.ranges = &ranges, .policy = modes[m].pol, .encoding = modes[m].enc,
			};
			size_t len = 0;
			for (int it = 0; it < ITERS; it++) {
				uint64_t const t0 = now_ns();
				len = stackcap_codec_encode(blob, sizeof(blob), &in);
				__asm__ volatile("" ::: "memory");
				samples_ns[it] = now_ns() - t0;
			}
			if (stackcap_codec_is_error(len)) {
				fprintf(stderr, "encode failed: %s\n", stackcap_codec_error_name(len));
				return 1;
			}
			uint64_t kept = 0;
			for (uint64_t i = 0; i < nwords; i++)
				kept += stackcap_codec_classify(stack_copy[i], &ranges, copy_sp,
								copy_sp + 8 * nwords, modes[m].pol);
			double med, p99;
			report(modes[m].name, &med, &p99);
			printf("%-7zu %-6s %-8lu %10.0f %10.0f %10.0f %10.0f %9zu %9zu %6.1fx %6.1f%%\n",
			       copy_bytes, modes[m].name, (unsigned long)nwords, med, p99, mc_med, mc_p99,
			       copy_bytes, len, (double)copy_bytes / (double)len,
			       100.0 * (double)kept / (double)nwords);
		}
	}
	return (int)(sink & 0);
}
