/* tests/remap-burn: a program that maps its own code a second time and
 * runs there, as V8 maps the builtins of node's text beside its JIT code
 * (tests/node.sh).  After a little CPU in ordinary code (libstackcap's
 * first maps snapshot is older than the second mapping), it maps its
 * executable segment from /proc/self/exe again, elsewhere, and calls
 * remap_top in that copy: remap_top -> remap_mid -> remap_leaf run there
 * (relative calls stay in the copy; nothing there calls out of it).
 *   remap-burn [ROUNDS [WARM_MS]]   prints the copy's range and a checksum;
 *     WARM_MS: CPU time spent in ordinary code first (long enough for
 *     libstackcap's scans of the maps to slow to their slowest)
 *   remap-burn --chain    prints the chain, innermost first
 *   remap-burn --copy-unused [ROUNDS]   maps the copy first, then runs the
 *     chain in the ordinary code, never in the copy */
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static uint64_t remap_leaf(uint64_t x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	__asm__ volatile("" : "+r"(x));
	return x;
}

__attribute__((noinline)) static uint64_t remap_mid(uint64_t x)
{
	uint64_t const r = remap_leaf(x) + 1;
	__asm__ volatile("" : "+r"(x));
	return r;
}

__attribute__((noinline)) static uint64_t remap_top(uint64_t rounds)
{
	uint64_t x = rounds;
	for (uint64_t r = 0; r < rounds; r++)
		x ^= remap_mid(x + r);
	return x;
}

/* The main program's executable PT_LOAD: where it is and in the file. */
struct text {
	uintptr_t addr;
	off_t offset;
	size_t size;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct text *t = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			uintptr_t const page = (uintptr_t)sysconf(_SC_PAGESIZE);
			uintptr_t const start = info->dlpi_addr + ph->p_vaddr;
			t->addr = start & ~(page - 1);
			t->offset = (off_t)(ph->p_offset & ~(page - 1));
			t->size = start + ph->p_memsz - t->addr;
			break;
		}
	}
	return 1; /* the first object is the main program */
}

static long cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--chain") == 0) {
		puts("remap_leaf\nremap_mid\nremap_top\nmain");
		return 0;
	}
	int const unused = argc > 1 && strcmp(argv[1], "--copy-unused") == 0;
	if (unused) {
		argc--;
		argv++;
	}
	uint64_t const rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 3000;
	long const warm_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	volatile uint64_t acc = 0;
	for (int i = 0; !unused && i < 50000000; i++)
		acc = acc * 31 + 7;
	while (warm_ms > 0 && cpu_ms() < warm_ms)
		for (int i = 0; i < 1000000; i++)
			acc = acc * 31 + 7;
	struct text t = { 0 };
	dl_iterate_phdr(find_text, &t);
	int const fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *copy = fd >= 0 && t.size ? mmap(NULL, t.size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, t.offset)
				       : MAP_FAILED;
	if (copy == MAP_FAILED) {
		perror("remap-burn: mapping its own code again");
		return 1;
	}
	close(fd);
	uint64_t (*top)(uint64_t) = unused ? remap_top
					   : (uint64_t(*)(uint64_t))((uintptr_t)copy + ((uintptr_t)remap_top - t.addr));
	uint64_t const r = top(rounds);
	printf("second mapping %lx-%lx checksum %llx\n", (unsigned long)copy, (unsigned long)copy + t.size,
	       (unsigned long long)(r ^ acc));
	return 0;
}
