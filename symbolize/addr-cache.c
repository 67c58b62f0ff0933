/* The symbolizer's answers kept between runs (addr-cache.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cache-file.h"
#include "common/grow.h"
#include "common/hash.h"
#include "symbolize/addr-cache.h"

#define MAGIC "SCADDR01"
/* Bigger is not ours (a module's answers take a few MB at most). */
#define MAX_FILE (256u << 20)
#define NONE UINT32_MAX

struct file_head {
	char magic[8];
	uint64_t nent, nframes, text_len, check;
};
struct file_ent {
	uint64_t addr;
	uint32_t first, n;
};
struct file_frame {
	uint64_t func_offset;
	uint32_t function, file, decl_file; /* offsets in the text, NONE: NULL */
	uint32_t line, column, decl_line, inlined;
};

int su_addrcache_path(struct su_module *m, unsigned flags, char *path, size_t size)
{
	/* The debug file is part of what names the frames. */
	return su_module_kept_path(m, "sym", MAGIC, flags, path, size);
}

/* The string at OFF of TEXT (LEN bytes, the last a NUL), NULL for NONE;
 * *BAD set when OFF is outside. */
static const char *text_at(const char *text, uint64_t len, uint32_t off, int *bad)
{
	if (off == NONE)
		return NULL;
	if (off >= len) {
		*bad = 1;
		return NULL;
	}
	return text + off;
}

long su_addrcache_load(const char *path, int (*add)(void *ctx, const struct su_addrcache_entry *e), void *ctx)
{
	size_t size = 0;
	uint8_t *b = su_cache_file_read(path, sizeof(struct file_head), MAX_FILE, &size);
	int ok = b != NULL;
	struct file_head h;
	if (ok)
		memcpy(&h, b, sizeof(h));
	ok = ok && !memcmp(h.magic, MAGIC, 8) && h.nent <= size / sizeof(struct file_ent) &&
	     h.nframes <= size / sizeof(struct file_frame) && h.text_len <= size &&
	     sizeof(h) + h.nent * sizeof(struct file_ent) + h.nframes * sizeof(struct file_frame) + h.text_len ==
		     size &&
	     su_fnv1a_words(b + sizeof(h), size - sizeof(h)) == h.check && (!h.text_len || b[size - 1] == 0);
	if (!ok) {
		free(b);
		return -1;
	}
	const uint8_t *const ents = b + sizeof(h), *const frames = ents + h.nent * sizeof(struct file_ent);
	const char *const text = (const char *)(frames + h.nframes * sizeof(struct file_frame));
	/* Every entry checked before any is handed out: a damaged file adds
	 * nothing. */
	for (uint64_t i = 0; ok && i < h.nent; i++) {
		struct file_ent e;
		memcpy(&e, ents + i * sizeof(e), sizeof(e));
		ok = e.n <= SU_ADDRCACHE_MAX_FRAMES && e.first <= h.nframes && e.n <= h.nframes - e.first;
		for (uint32_t k = 0; ok && k < e.n; k++) {
			struct file_frame f;
			memcpy(&f, frames + (e.first + k) * sizeof(f), sizeof(f));
			int bad = 0;
			(void)text_at(text, h.text_len, f.function, &bad);
			(void)text_at(text, h.text_len, f.file, &bad);
			(void)text_at(text, h.text_len, f.decl_file, &bad);
			ok = !bad && f.inlined <= 1;
		}
	}
	long got = 0;
	for (uint64_t i = 0; ok && i < h.nent; i++, got++) {
		struct file_ent e;
		memcpy(&e, ents + i * sizeof(e), sizeof(e));
		struct su_symframe out[SU_ADDRCACHE_MAX_FRAMES];
		for (uint32_t k = 0; k < e.n; k++) {
			struct file_frame f;
			memcpy(&f, frames + (e.first + k) * sizeof(f), sizeof(f));
			int bad = 0;
			out[k] = (struct su_symframe){
				.function = text_at(text, h.text_len, f.function, &bad),
				.func_offset = f.func_offset,
				.file = text_at(text, h.text_len, f.file, &bad),
				.line = f.line,
				.column = f.column,
				.inlined = (int)f.inlined,
				.decl_file = text_at(text, h.text_len, f.decl_file, &bad),
				.decl_line = f.decl_line,
			};
		}
		struct su_addrcache_entry const en = { .addr = e.addr, .n = e.n, .frames = out };
		if (add(ctx, &en))
			break;
	}
	free(b);
	return ok ? got : -1;
}

/* The strings written so far: each written once (the symbolizer interns
 * its strings, so one pointer per content). */
struct text_slot {
	const char *s;
	uint32_t off;
};
struct texts {
	char *buf;
	size_t len, cap;
	struct text_slot *slot; /* open addressing by pointer */
	size_t nslots, count;
};

static uint32_t text_put(struct texts *t, const char *s, int *oom)
{
	if (!s)
		return NONE;
	if (2 * (t->count + 1) > t->nslots) {
		size_t const n = t->nslots ? 2 * t->nslots : 1024;
		struct text_slot *const ns = calloc(n, sizeof(*ns));
		if (!ns) {
			*oom = 1;
			return NONE;
		}
		for (size_t i = 0; i < t->nslots; i++)
			if (t->slot[i].s) {
				size_t j = su_fnv1a((const void *)&t->slot[i].s, sizeof(void *)) & (n - 1);
				while (ns[j].s)
					j = (j + 1) & (n - 1);
				ns[j] = t->slot[i];
			}
		free(t->slot);
		t->slot = ns;
		t->nslots = n;
	}
	size_t j = su_fnv1a((const void *)&s, sizeof(void *)) & (t->nslots - 1);
	while (t->slot[j].s) {
		if (t->slot[j].s == s)
			return t->slot[j].off;
		j = (j + 1) & (t->nslots - 1);
	}
	size_t const l = strlen(s) + 1;
	if (t->len + l >= NONE || SU_GROW(t->buf, t->cap, t->len + l)) {
		*oom = 1;
		return NONE;
	}
	memcpy(t->buf + t->len, s, l);
	t->slot[j].s = s;
	t->slot[j].off = (uint32_t)t->len;
	t->count++;
	t->len += l;
	return t->slot[j].off;
}

int su_addrcache_store(const char *path, size_t n, void (*get)(void *ctx, size_t i, struct su_addrcache_entry *e),
		       void *ctx)
{
	struct file_ent *ents = calloc(n ? n : 1, sizeof(*ents));
	struct file_frame *frames = NULL;
	size_t nframes = 0, capframes = 0, kept = 0;
	struct texts t = { 0 };
	int oom = !ents;
	for (size_t i = 0; !oom && i < n; i++) {
		struct su_addrcache_entry e;
		get(ctx, i, &e);
		if (e.n > SU_ADDRCACHE_MAX_FRAMES)
			continue;
		if (SU_GROW(frames, capframes, nframes + e.n + 1)) {
			oom = 1;
			break;
		}
		ents[kept++] = (struct file_ent){ .addr = e.addr, .first = (uint32_t)nframes, .n = (uint32_t)e.n };
		for (size_t k = 0; k < e.n; k++) {
			const struct su_symframe *f = &e.frames[k];
			frames[nframes++] = (struct file_frame){
				.func_offset = f->func_offset,
				.function = text_put(&t, f->function, &oom),
				.file = text_put(&t, f->file, &oom),
				.decl_file = text_put(&t, f->decl_file, &oom),
				.line = f->line,
				.column = f->column,
				.decl_line = f->decl_line,
				.inlined = f->inlined ? 1 : 0,
			};
		}
	}
	size_t const size = sizeof(struct file_head) + kept * sizeof(*ents) + nframes * sizeof(*frames) + t.len;
	uint8_t *b = oom || size > MAX_FILE || nframes >= NONE ? NULL : malloc(size);
	int rc = -1;
	if (b) {
		struct file_head h = { .nent = kept, .nframes = nframes, .text_len = t.len };
		memcpy(h.magic, MAGIC, 8);
		uint8_t *p = b + sizeof(h);
		memcpy(p, ents, kept * sizeof(*ents));
		p += kept * sizeof(*ents);
		if (nframes)
			memcpy(p, frames, nframes * sizeof(*frames));
		p += nframes * sizeof(*frames);
		if (t.len)
			memcpy(p, t.buf, t.len);
		h.check = su_fnv1a_words(b + sizeof(h), size - sizeof(h));
		memcpy(b, &h, sizeof(h));
		rc = su_cache_file_write(path, b, size);
	}
	free(b);
	free(ents);
	free(frames);
	free(t.buf);
	free(t.slot);
	return rc;
}
