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
#include <unistd.h>

#include "common/cache-file.h"
#include "common/hash.h"
#include "trace/kallsyms.h"

#define MAGIC "SCKSYM01"
/* More than any kernel lists: a bigger file is not ours. */
#define MAX_FILE (256u << 20)

struct file_head {
	char magic[8];
	uint64_t n, text_len, check;
	uint8_t build_id_len, pad[7];
	uint8_t build_id[SU_BUILD_ID_MAX];
};
struct file_sym {
	uint64_t start, end;
	uint32_t name, module; /* offsets in the text */
};

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

/* The kept copy at PATH, if ours and whole, for kernel ID: 0 with *OUT. */
static int load(const char *path, const uint8_t *id, size_t id_len, struct su_kernel **out)
{
	size_t size = 0;
	uint8_t *b = su_cache_file_read(path, sizeof(struct file_head) + 1, MAX_FILE, &size);
	struct su_kernel *k = NULL;
	int ok = b != NULL;
	struct file_head h;
	if (ok)
		memcpy(&h, b, sizeof(h));
	ok = ok && !memcmp(h.magic, MAGIC, 8) && h.build_id_len == id_len && !memcmp(h.build_id, id, id_len) &&
	     h.n > 0 && h.n <= size / sizeof(struct file_sym) && h.text_len > 0 &&
	     sizeof(h) + h.n * sizeof(struct file_sym) + h.text_len == size &&
	     su_fnv1a_words(b + sizeof(h), size - sizeof(h)) == h.check;
	const struct file_sym *syms = ok ? (const void *)(b + sizeof(h)) : NULL;
	char *const text = ok ? (char *)(b + sizeof(h) + h.n * sizeof(struct file_sym)) : NULL;
	ok = ok && text[h.text_len - 1] == 0 && (k = calloc(1, sizeof(*k))) &&
	     (k->syms = calloc(h.n, sizeof(*k->syms)));
	for (size_t i = 0; ok && i < h.n; i++) {
		struct file_sym s;
		memcpy(&s, syms + i, sizeof(s));
		ok = s.name < h.text_len && s.module < h.text_len && s.start < s.end &&
		     (!i || k->syms[i - 1].start < s.start);
		if (ok)
			k->syms[k->n++] = (struct su_ksym){ .start = s.start, .end = s.end, .name = text + s.name,
							    .module = text + s.module };
	}
	if (!ok) {
		if (k)
			k->n = 0;
		free(k ? k->syms : NULL);
		free(k);
		free(b);
		return -1;
	}
	/* The names point into the file's block: K keeps it whole. */
	k->text = (char *)b;
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
	size_t const size = sizeof(struct file_head) + k->n * sizeof(struct file_sym) + text_len;
	if (!k->n || text_len >= UINT32_MAX || size > MAX_FILE)
		return;
	uint8_t *const b = calloc(1, size);
	if (!b)
		return;
	struct file_head h = { .n = k->n, .text_len = text_len, .build_id_len = k->build_id_len };
	memcpy(h.magic, MAGIC, 8);
	memcpy(h.build_id, k->build_id, k->build_id_len);
	struct file_sym *const syms = (void *)(b + sizeof(h));
	char *const text = (char *)(b + sizeof(h) + k->n * sizeof(struct file_sym));
	size_t at = 0;
	for (size_t i = 0; i < k->n; i++) {
		struct file_sym s = { .start = k->syms[i].start, .end = k->syms[i].end };
		size_t const nl = strlen(k->syms[i].name) + 1, ml = strlen(k->syms[i].module) + 1;
		s.name = (uint32_t)at;
		memcpy(text + at, k->syms[i].name, nl);
		at += nl;
		s.module = (uint32_t)at;
		memcpy(text + at, k->syms[i].module, ml);
		at += ml;
		memcpy(syms + i, &s, sizeof(s));
	}
	h.check = su_fnv1a_words(b + sizeof(h), size - sizeof(h));
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
