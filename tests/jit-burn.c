/* tests/jit-burn: JIT-like code for tests/record.sh.  Burns a little CPU
 * in ordinary code, then maps an anonymous executable page (after
 * libstackcap's first maps snapshot), writes a counting loop into it and
 * runs it for SECONDS of thread CPU time.  Prints the page's address.
 * With a second argument "perf-map", names its code as JITs do for perf:
 * a line "START SIZE jit_count_loop" in /tmp/perf-PID.map (removed by
 * the test). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double const seconds = argc > 1 ? atof(argv[1]) : 0.5;
	volatile uint64_t acc = 0;
	double t0 = cpu_seconds();
	while (cpu_seconds() - t0 < 0.1)
		acc = acc * 31 + 7;
	/* mov ecx, 100000; 1: dec ecx; jnz 1b; ret */
	static const uint8_t code[] = { 0xb9, 0xa0, 0x86, 0x01, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("jit-burn: mmap");
		return 1;
	}
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) {
		perror("jit-burn: mprotect");
		return 1;
	}
	void (*fn)(void) = (void (*)(void))(uintptr_t)page;
	if (argc > 2 && !strcmp(argv[2], "perf-map")) {
		char path[64];
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		FILE *f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		fprintf(f, "%lx %zx jit_count_loop\n", (unsigned long)(uintptr_t)page, sizeof(code));
		fclose(f);
	}
	printf("%lx\n", (unsigned long)(uintptr_t)page);
	fflush(stdout);
	t0 = cpu_seconds();
	while (cpu_seconds() - t0 < seconds)
		fn();
	return (int)(acc & 0) ;
}
