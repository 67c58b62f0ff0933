/* This machine's kernel symbols kept between runs (kallsyms.h,
 * su_kallsyms_read_cached).  The kernel generates /proc/kallsyms anew at
 * each read (~120,000 lines, 0.04 s of system time here, most of a small
 * perf.data's run): a copy, parsed, is kept under the cache directory for
 * as long as it describes the same kernel text: the same kernel (build-id),
 * the same boot (KASLR moves it at each), the same modules loaded (their
 * list and load addresses, /proc/modules).  Kernel addresses are a secret
 * of the machine (they defeat KASLR): the directory is 0700, the file 0600
 * and ours, checked before it is trusted; anything else is ignored and
 * /proc/kallsyms read. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cache-file.h"
#include "common/hash.h"
#include "trace/kallsyms.h"

/* 02: the check is four FNV-1a lanes (01's one lane took longer than
 * the rest of loading the file). */
#define MAGIC "SCKSYM02"
/* More than any kernel lists: a bigger file is not ours. */
#define MAX_FILE (256u << 20)

/* The file: this head, N struct su_ksym_packed sorted by start (what a
 * mapped su_kernel reads in place), then TEXT_LEN bytes of names. */
struct file_head {
	char magic[8];
	uint64_t n, text_len, check;
	uint8_t build_id_len, pad[7];
	uint8_t build_id[SU_BUILD_ID_MAX];
};

_Static_assert(sizeof(struct file_head) % _Alignof(struct su_ksym_packed) == 0 &&
		       sizeof(struct su_ksym_packed) == 24,
	       "the symbols follow the head aligned, as in every file written");

/* A hash of the SIZE bytes at P (a multiple of 32 of them, then the rest)
 * in four independent FNV-1a lanes: each multiply waits only on its own
 * lane, four times the speed of one. */
static uint64_t check_of(const uint8_t *p, size_t size)
{
	uint64_t h[4] = { SU_FNV_SEED, SU_FNV_SEED ^ 1, SU_FNV_SEED ^ 2, SU_FNV_SEED ^ 3 };
	size_t i = 0;
	for (; i + 32 <= size; i += 32)
		for (int l = 0; l < 4; l++) {
			uint64_t v;
			memcpy(&v, p + i + 8 * l, 8);
			h[l] = su_fnv1a_add(h[l], v);
			h[l] ^= h[l] >> 32;
		}
	uint64_t x = su_fnv1a_from(SU_FNV_SEED, p + i, size - i);
	for (int l = 0; l < 4; l++)
		x = su_fnv1a_add(x, h[l]);
	return x;
}

/* The first LEN bytes of FILE (a /proc file: read, not stat'ed) hashed into
 * *H; the whole file's length.  @return 0, -1 when unreadable. */
static int hash_proc(const char *file, uint64_t *h)
{
	int const fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	char buf[1 << 14];
	ssize_t got;
	while ((got = read(fd, buf, sizeof(buf))) > 0 || (got < 0 && errno == EINTR))
		if (got > 0)
			*h = su_fnv1a_from(*h, buf, (size_t)got);
	close(fd);
	return got < 0 ? -1 : 0;
}

/* DIR/kallsyms/BUILDID-BOOTID-MODULES into PATH, the running kernel's
 * build-id into ID (*ID_LEN).  @return 0, -1 when the kernel cannot be
 * told apart from another (no build-id, no boot id). */
static int cache_path(const char *dir, char *path, size_t size, uint8_t *id, size_t *id_len)
{
	*id_len = su_kernel_build_id(id);
	char boot[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = 0;
		fclose(f);
	}
	boot[strcspn(boot, "\n")] = 0;
	if (!*id_len || strlen(boot) != 36 || strspn(boot, "0123456789abcdef-") != 36)
		return -1;
	/* No /proc/modules (a kernel without modules): nothing loads. */
	uint64_t mods = SU_FNV_SEED;
	(void)hash_proc("/proc/modules", &mods);
	char hex[2 * SU_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < *id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return snprintf(path, size, "%s/kallsyms/%s-%s-%016llx", dir, hex, boot, (unsigned long long)mods) <
			       (int)size ? 0 : -1;
}

/* The kept copy at PATH, if ours and whole, for kernel ID: 0 with *OUT,
 * the file mapped, not copied: a run reads the pages its lookups land on
 * (su_kernel_find), and the check's one pass. */
static int load(const char *path, const uint8_t *id, size_t id_len, struct su_kernel **out)
{
	size_t size = 0;
	uint8_t *b = su_cache_file_map(path, sizeof(struct file_head) + 1, MAX_FILE, &size);
	struct su_kernel *k = NULL;
	int ok = b != NULL;
	struct file_head h;
	if (ok)
		memcpy(&h, b, sizeof(h));
	ok = ok && !memcmp(h.magic, MAGIC, 8) && h.build_id_len == id_len && !memcmp(h.build_id, id, id_len) &&
	     h.n > 0 && h.n <= size / sizeof(struct su_ksym_packed) && h.text_len > 0 &&
	     h.text_len <= UINT32_MAX && sizeof(h) + h.n * sizeof(struct su_ksym_packed) + h.text_len == size &&
	     check_of(b + sizeof(h), size - sizeof(h)) == h.check;
	const char *const text = ok ? (const char *)(b + sizeof(h) + h.n * sizeof(struct su_ksym_packed)) : NULL;
	ok = ok && text[h.text_len - 1] == 0 && (k = calloc(1, sizeof(*k)));
	if (!ok) {
		free(k);
		if (b)
			munmap(b, size);
		return -1;
	}
	/* The symbols are read where they lie (the head keeps them aligned):
	 * each lookup checks the entry it lands on. */
	k->packed = (const struct su_ksym_packed *)(const void *)(b + sizeof(h));
	k->n = h.n;
	k->packed_text = text;
	k->packed_text_len = h.text_len;
	k->map = b;
	k->map_len = size;
	memcpy(k->build_id, id, id_len);
	k->build_id_len = (uint8_t)id_len;
	*out = k;
	return 0;
}

/* K kept at PATH (su_cache_file_write: whole or not at all). */
static void store(const char *path, const struct su_kernel *k)
{
	size_t text_len = 0;
	for (size_t i = 0; i < k->n; i++)
		text_len += strlen(k->syms[i].name) + 1 + strlen(k->syms[i].module) + 1;
	size_t const size = sizeof(struct file_head) + k->n * sizeof(struct su_ksym_packed) + text_len;
	if (!k->n || text_len >= UINT32_MAX || size > MAX_FILE)
		return;
	uint8_t *const b = calloc(1, size);
	if (!b)
		return;
	struct file_head h = { .n = k->n, .text_len = text_len, .build_id_len = k->build_id_len };
	memcpy(h.magic, MAGIC, 8);
	memcpy(h.build_id, k->build_id, k->build_id_len);
	struct su_ksym_packed *const syms = (void *)(b + sizeof(h));
	char *const text = (char *)(b + sizeof(h) + k->n * sizeof(struct su_ksym_packed));
	size_t at = 0;
	for (size_t i = 0; i < k->n; i++) {
		struct su_ksym_packed s = { .start = k->syms[i].start, .end = k->syms[i].end };
		size_t const nl = strlen(k->syms[i].name) + 1, ml = strlen(k->syms[i].module) + 1;
		s.name = (uint32_t)at;
		memcpy(text + at, k->syms[i].name, nl);
		at += nl;
		s.module = (uint32_t)at;
		memcpy(text + at, k->syms[i].module, ml);
		at += ml;
		memcpy(syms + i, &s, sizeof(s));
	}
	h.check = check_of(b + sizeof(h), size - sizeof(h));
	memcpy(b, &h, sizeof(h));
	(void)su_cache_file_write(path, b, size);
	free(b);
}

int su_kallsyms_read_cached(const char *dir, struct su_kernel **out)
{
	*out = NULL;
	char path[PATH_MAX];
	uint8_t id[SU_BUILD_ID_MAX];
	size_t id_len = 0;
	if (!dir || !*dir || cache_path(dir, path, sizeof(path), id, &id_len) != 0)
		return su_kallsyms_read(out);
	if (load(path, id, id_len, out) == 0)
		return 0;
	int const rc = su_kallsyms_read(out);
	if (!rc)
		store(path, *out);
	return rc;
}
