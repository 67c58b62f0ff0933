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
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cache-file.h"
#include "common/hash.h"
#include "trace/kallsyms.h"

/* 02: the check is four FNV-1a lanes (01's one lane took longer than
 * the rest of loading the file).  03: a check per block of the body, made
 * when a lookup first reads the block (the whole file's took 11% of a
 * small perf.data's run, and mapped all of its 6 MB).  04: blocks of 4 KiB
 * (a lookup's bisection reads one entry of most blocks it meets: checking
 * 16 KiB for it was 3% of a small perf.data's run). */
#define MAGIC "SCKSYM04"
/* More than any kernel lists: a bigger file is not ours. */
#define MAX_FILE (256u << 20)
/* The body is checked in blocks of this many bytes. */
#define BLOCK (4u << 10)

/* The file: this head, N_BLOCKS checks, then the body: N struct
 * su_ksym_packed sorted by start (what a mapped su_kernel reads in
 * place), then TEXT_LEN bytes of names.  CHECK covers the head's fields
 * and the block checks, each block check its BLOCK bytes of the body (the
 * last block the rest). */
struct file_head {
	char magic[8];
	uint64_t n, text_len, n_blocks, check;
	uint8_t build_id_len, pad[7];
	uint8_t build_id[SU_BUILD_ID_MAX];
};

_Static_assert(sizeof(struct file_head) % 8 == 0 && _Alignof(struct su_ksym_packed) <= 8 &&
		       sizeof(struct su_ksym_packed) == 24,
	       "the block checks and the symbols follow the head aligned, as in every file written");

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

/* The check of head H's fields and its block checks TABLE. */
static uint64_t head_check(const struct file_head *h, const uint64_t *table)
{
	uint64_t x = check_of((const uint8_t *)table, h->n_blocks * 8);
	x = su_fnv1a_add(x, h->n);
	x = su_fnv1a_add(x, h->text_len);
	x = su_fnv1a_add(x, h->n_blocks);
	return su_fnv1a_from(x, h->build_id, sizeof(h->build_id));
}

static size_t blocks_of(uint64_t body_len)
{
	return (size_t)((body_len + BLOCK - 1) / BLOCK);
}

/* The bytes of block B of a body BODY_LEN long (the last one: the rest). */
static size_t block_len(uint64_t body_len, size_t b)
{
	uint64_t const at = (uint64_t)b * BLOCK;
	return (size_t)(body_len - at < BLOCK ? body_len - at : BLOCK);
}

/* Whether the body bytes [OFF, OFF + LEN) of K lie in good blocks: each
 * block checked the first time it is read (a damaged one marks K).
 * Workers share K: the states are atomic bytes (two checking one block
 * at once find the same). */
static int body_ok(const struct su_kernel *k, uint64_t off, uint64_t len)
{
	if (off + len > k->body_len || len == 0)
		return 0;
	for (size_t b = (size_t)(off / BLOCK); b <= (size_t)((off + len - 1) / BLOCK); b++) {
		uint8_t st = __atomic_load_n(&k->block_state[b], __ATOMIC_RELAXED);
		if (!st) {
			st = check_of(k->body + (uint64_t)b * BLOCK, block_len(k->body_len, b)) == k->block_check[b] ? 1 : 2;
			__atomic_store_n(&k->block_state[b], st, __ATOMIC_RELAXED);
			if (st == 2)
				__atomic_store_n(&k->block_state[k->n_blocks], 1, __ATOMIC_RELAXED); /* damaged */
		}
		if (st != 1)
			return 0;
	}
	return 1;
}

/* Name at text offset OFF of K: its bytes, up to its NUL, in good blocks. */
static const char *text_at(const struct su_kernel *k, uint64_t off)
{
	if (off >= k->packed_text_len)
		return NULL;
	uint64_t const base = (uint64_t)((const uint8_t *)k->packed_text - k->body);
	for (uint64_t at = off; at < k->packed_text_len;) {
		uint64_t const block_end = ((base + at) / BLOCK + 1) * BLOCK - base;
		uint64_t const end = block_end < k->packed_text_len ? block_end : k->packed_text_len;
		if (!body_ok(k, base + at, end - at))
			return NULL;
		if (memchr(k->packed_text + at, 0, (size_t)(end - at)))
			return k->packed_text + off;
		at = end;
	}
	return NULL;
}

/* su_kernel_find on the mapped copy: every entry the search reads, and
 * the names returned, from good blocks only, so that a damaged copy gives
 * no name rather than a wrong one.  @return 1, 0 (no symbol), or -1 (a
 * damaged block). */
static int find_in_copy(const struct su_kernel *k, uint64_t addr, struct su_ksym *out)
{
	size_t lo = 0, hi = k->n;
	size_t const es = sizeof(struct su_ksym_packed);
	while (lo < hi) {
		size_t const mid = lo + (hi - lo) / 2;
		if (!body_ok(k, (uint64_t)mid * es, es))
			return -1;
		if (k->packed[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == k->n)
		return 0;
	if (!body_ok(k, (uint64_t)lo * es, es))
		return -1;
	struct su_ksym_packed const y = k->packed[lo];
	if (y.start > addr || y.end <= addr)
		return 0;
	const char *const name = text_at(k, y.name), *const module = text_at(k, y.module);
	if (!name || !module)
		return y.name < k->packed_text_len && y.module < k->packed_text_len ? -1 : 0;
	*out = (struct su_ksym){ .start = y.start, .end = y.end, .name = (char *)name, .module = (char *)module };
	return 1;
}

static void store(const char *path, const struct su_kernel *k);

/* The kernel's symbols read from /proc/kallsyms once a lookup met a
 * damaged block of K's copy (a good copy is kept in its place), or NULL
 * when they cannot be read.  Workers share K: one reads, under a lock. */
static pthread_mutex_t fallback_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct su_kernel *fallback_of(const struct su_kernel *k)
{
	struct su_kernel *const m = (struct su_kernel *)(uintptr_t)k; /* ours: allocated by load() */
	const struct su_kernel *f = __atomic_load_n(&m->fallback, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	pthread_mutex_lock(&fallback_lock);
	if (!m->fallback_tried) {
		m->fallback_tried = 1;
		struct su_kernel *n = NULL;
		if (su_kallsyms_read(&n) == 0 && n->build_id_len == k->build_id_len &&
		    !memcmp(n->build_id, k->build_id, k->build_id_len)) {
			store(k->cache_path, n);
			__atomic_store_n(&m->fallback, n, __ATOMIC_RELEASE);
		} else {
			su_kernel_free(n);
		}
	}
	f = m->fallback;
	pthread_mutex_unlock(&fallback_lock);
	return f;
}

static int find_checked(const struct su_kernel *k, uint64_t addr, struct su_ksym *out)
{
	int const rc = find_in_copy(k, addr, out);
	if (rc >= 0)
		return rc;
	const struct su_kernel *const f = fallback_of(k);
	return f ? su_kernel_find(f, addr, out) : 0;
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
	uint64_t const body_len = ok ? h.n * sizeof(struct su_ksym_packed) + h.text_len : 0;
	ok = ok && !memcmp(h.magic, MAGIC, 8) && h.build_id_len == id_len && !memcmp(h.build_id, id, id_len) &&
	     h.n > 0 && h.n <= size / sizeof(struct su_ksym_packed) && h.text_len > 0 && h.text_len <= UINT32_MAX &&
	     h.n_blocks == blocks_of(body_len) && sizeof(h) + h.n_blocks * 8 + body_len == size &&
	     head_check(&h, (const uint64_t *)(const void *)(b + sizeof(h))) == h.check &&
	     (k = calloc(1, sizeof(*k))) && (k->block_state = calloc(h.n_blocks + 1, 1));
	if (ok) {
		/* The symbols and names are read where they lie (the head and
		 * the checks keep them aligned), each block checked when a
		 * lookup first reads it (find_checked). */
		k->block_check = (const uint64_t *)(const void *)(b + sizeof(h));
		k->body = b + sizeof(h) + h.n_blocks * 8;
		k->body_len = body_len;
		k->n_blocks = h.n_blocks;
		k->packed = (const struct su_ksym_packed *)(const void *)k->body;
		k->n = h.n;
		k->packed_text = (const char *)k->body + h.n * sizeof(struct su_ksym_packed);
		k->packed_text_len = h.text_len;
		k->find_checked = find_checked;
		ok = body_ok(k, body_len - 1, 1) && k->packed_text[h.text_len - 1] == 0 &&
		     (k->cache_path = strdup(path)) != NULL;
	}
	if (!ok) {
		if (k)
			free(k->block_state);
		free(k);
		if (b)
			munmap(b, size);
		return -1;
	}
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
	uint64_t const body_len = k->n * sizeof(struct su_ksym_packed) + text_len;
	size_t const n_blocks = blocks_of(body_len);
	size_t const size = sizeof(struct file_head) + n_blocks * 8 + body_len;
	if (!k->n || text_len >= UINT32_MAX || size > MAX_FILE)
		return;
	uint8_t *const b = calloc(1, size);
	if (!b)
		return;
	struct file_head h = { .n = k->n, .text_len = text_len, .n_blocks = n_blocks, .build_id_len = k->build_id_len };
	memcpy(h.magic, MAGIC, 8);
	memcpy(h.build_id, k->build_id, k->build_id_len);
	uint64_t *const table = (void *)(b + sizeof(h));
	uint8_t *const body = b + sizeof(h) + n_blocks * 8;
	struct su_ksym_packed *const syms = (void *)body;
	char *const text = (char *)(body + k->n * sizeof(struct su_ksym_packed));
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
	for (size_t i = 0; i < n_blocks; i++)
		table[i] = check_of(body + (uint64_t)i * BLOCK, block_len(body_len, i));
	h.check = head_check(&h, table);
	memcpy(b, &h, sizeof(h));
	(void)su_cache_file_write(path, b, size);
	free(b);
}

int su_kallsyms_cache_damaged(const struct su_kernel *k, const char **path)
{
	k = su_kallsyms_ahead_real(k); /* read on another thread: what it read */
	if (!k || !k->find_checked || !__atomic_load_n(&k->block_state[k->n_blocks], __ATOMIC_RELAXED))
		return 0;
	*path = k->cache_path;
	if (__atomic_load_n(&k->fallback, __ATOMIC_ACQUIRE))
		return 1; /* a good copy was kept in its place */
	(void)unlink(k->cache_path);
	return 2;
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
