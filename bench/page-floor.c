/* SPDX-License-Identifier: MIT */
/*
 * bench/page-floor FILE: what the kernel alone costs to lend a cached
 * file's pages to a reader that maps it, as stackunwind reads a perf.data
 * file (trace/perf-data.c, trace/perf-ahead.c): map it, load one byte of
 * each 4 KB page, give each 2 MB back once past it.  No parsing: the
 * floor under any reader that maps the file.  Prints "WALL CPU" in
 * seconds (CPU: user + system, this process).
 *
 * Where perf record's writes left the page cache in single 4 KB pages,
 * mapping and giving back cost per page (page table entries, reference
 * counts, rmap, TLB); in large folios (a file copied with cp, or read
 * from disk) several times less.  bench/perf-vs.sh prints it beside the
 * ~1 GB file's timings.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (2u << 20)

static double seconds(const struct timeval *t)
{
	return (double)t->tv_sec + (double)t->tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	int const fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	if (st.st_size <= 0) {
		fprintf(stderr, "%s: %s: empty\n", argv[0], argv[1]);
		return 1;
	}
	size_t const size = (size_t)st.st_size;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	const volatile uint8_t *const map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "%s: mmap %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	unsigned sum = 0;
	for (size_t at = 0; at < size; at += CHUNK) {
		size_t const end = size - at < CHUNK ? size : at + CHUNK;
		for (size_t p = at; p < end; p += 4096)
			sum += map[p];
		madvise((void *)(uintptr_t)(map + at), end - at, MADV_DONTNEED);
	}
	munmap((void *)(uintptr_t)map, size);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%.3f %.3f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       seconds(&ru.ru_utime) + seconds(&ru.ru_stime));
	return sum == 0xdeadbeef; /* SUM read, so the loads stay */
}
