/* SPDX-License-Identifier: MIT */
/* Samples of this process for the unwinder's tests: see uw-sample.h. */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress/stack-codec.h"
#include "tests/unit/uw-sample.h"

uint64_t uw_stack_top(void)
{
	pthread_attr_t attr;
	void *addr = NULL;
	size_t size = 0;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return 0;
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	return (uint64_t)(uintptr_t)addr + size;
}

/* The live stack holds other frames' ASan redzones: read it unchecked. */
__attribute__((no_sanitize_address, noinline))
static void copy_stack(uint64_t *dst, uint64_t src, uint64_t n)
{
	const volatile uint64_t *s = (const volatile uint64_t *)(uintptr_t)src;
	for (uint64_t i = 0; i < n; i++)
		dst[i] = s[i];
}

void uw_capture(struct uw_capture *c, const ucontext_t *uc, uint64_t top)
{
	static const int greg[STACKCAP_NREGS] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	for (int r = 0; r < STACKCAP_NREGS; r++)
		c->regs[r] = (uint64_t)uc->uc_mcontext.gregs[greg[r]];
	c->sp = c->regs[STACKCAP_REG_RSP];
	uint64_t bytes = top > c->sp ? top - c->sp : 0;
	c->capped = bytes > UW_CAP_BYTES;
	if (c->capped)
		bytes = UW_CAP_BYTES;
	c->nwords = bytes / 8;
	copy_stack(c->words, c->sp, c->nwords);
}

void uw_capture_stack(struct uw_capture *c, uint64_t sp, uint64_t top, uint64_t max_bytes)
{
	for (int r = 0; r < STACKCAP_NREGS; r++)
		c->regs[r] = 0;
	c->regs[STACKCAP_REG_RSP] = sp;
	c->sp = sp;
	if (max_bytes > UW_CAP_BYTES)
		max_bytes = UW_CAP_BYTES;
	uint64_t bytes = top > sp ? top - sp : 0;
	c->capped = bytes > max_bytes;
	if (c->capped)
		bytes = max_bytes;
	c->nwords = bytes / 8;
	copy_stack(c->words, sp, c->nwords);
}

/* ---- maps ------------------------------------------------------------------ */

struct maps_build {
	struct su_map_entry *entries;
	uint32_t count, cap;
	int failed;
};

static uint8_t note_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= SU_BUILD_ID_MAX) {
				memcpy(out, desc, nh->n_descsz);
				return (uint8_t)nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct maps_build *b = arg;
	int const is_main = !info->dlpi_name || !info->dlpi_name[0];
	int const is_vdso = !is_main && strstr(info->dlpi_name, "linux-vdso") != NULL;
	char path[4096];
	if (is_main) {
		ssize_t const n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		if (n <= 0) {
			b->failed = 1;
			return 1;
		}
		path[n] = '\0';
	} else {
		snprintf(path, sizeof(path), "%s", is_vdso ? "[vdso]" : info->dlpi_name);
	}
	uint8_t id[SU_BUILD_ID_MAX];
	uint8_t const id_len = note_build_id(info, id);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0)
			continue;
		if (b->count == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 16;
			struct su_map_entry *n = realloc(b->entries, sizeof(*n) * b->cap);
			if (!n) {
				b->failed = 1;
				return 1;
			}
			b->entries = n;
		}
		struct su_map_entry *e = &b->entries[b->count++];
		memset(e, 0, sizeof(*e));
		e->start = info->dlpi_addr + ph->p_vaddr;
		e->end = e->start + ph->p_memsz;
		e->offset = ph->p_offset;
		e->bias = info->dlpi_addr;
		e->flags = (is_main ? SU_MAP_MAIN : 0) | (is_vdso ? SU_MAP_VDSO : 0);
		e->build_id_len = id_len;
		memcpy(e->build_id, id, id_len);
		e->path = strdup(path);
		if (!e->path)
			b->failed = 1;
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct su_map_entry *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct su_maps *uw_self_maps(void)
{
	struct maps_build b = { 0 };
	dl_iterate_phdr(phdr_cb, &b);
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m || b.failed || b.count == 0)
		goto fail;
	qsort(b.entries, b.count, sizeof(*b.entries), entry_cmp);
	m->generation = 1;
	m->count = b.count;
	m->entries = b.entries;
	m->range_list = calloc(b.count, sizeof(*m->range_list));
	if (!m->range_list)
		goto fail;
	for (uint32_t i = 0; i < b.count; i++) {
		m->range_list[i].start = b.entries[i].start;
		m->range_list[i].end = b.entries[i].end;
		m->range_list[i].module = i;
	}
	if (stackcap_code_list_check(m->range_list, b.count) != 0)
		goto fail;
	return m;
fail:
	if (m) {
		m->entries = b.entries;
		m->count = b.count;
		uw_maps_free(m);
	} else {
		for (uint32_t i = 0; i < b.count; i++)
			free(b.entries[i].path);
		free(b.entries);
	}
	return NULL;
}

void uw_maps_free(struct su_maps *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->count; i++)
		free(m->entries[i].path);
	free(m->entries);
	free(m->range_list);
	free(m);
}

/* ---- samples ----------------------------------------------------------------- */

/* Encode C (registers only when REGS) and decode it into IMG. */
static int code(struct stackcap_image *img, const struct uw_capture *c, int regs,
		const struct su_maps *maps, enum stackcap_policy policy, size_t *blob_size)
{
	size_t const cap = STACKCAP_CODEC_BOUND(c->nwords);
	uint8_t *blob = malloc(cap);
	img->words = malloc(c->nwords ? c->nwords * 8 : 8);
	img->kept = malloc(c->nwords ? (c->nwords + 7) / 8 : 1);
	img->capacity = c->nwords;
	struct stackcap_code_ranges *set = malloc(sizeof(*set));
	int rc = -1;
	if (blob && img->words && img->kept && set &&
	    stackcap_code_ranges_init(set, maps->range_list, maps->count) == 0) {
		struct stackcap_codec_input in = {
			.words = c->words, .nwords = c->nwords, .sp = c->sp,
			.regs = regs ? c->regs : NULL, .ranges = set,
			.policy = policy, .encoding = STACKCAP_WORDS_RELATIVE,
		};
		size_t const size = stackcap_codec_encode(blob, cap, &in);
		if (!stackcap_codec_is_error(size) &&
		    stackcap_codec_decode_list(blob, size, maps->range_list, maps->count, NULL, img) == size) {
			*blob_size += size;
			rc = 0;
		}
	}
	free(blob);
	free(set);
	return rc;
}

int uw_sample_make_seg(struct uw_sample *s, const struct uw_capture *c, const struct uw_capture *seg,
		       const struct su_maps *maps, enum stackcap_policy policy)
{
	memset(s, 0, sizeof(*s));
	if (code(&s->img, c, 1, maps, policy, &s->blob_size) != 0 ||
	    (seg && code(&s->seg, seg, 0, maps, policy, &s->blob_size) != 0)) {
		uw_sample_free(s);
		return -1;
	}
	s->s.pid = (uint32_t)getpid();
	s->s.tid = s->s.pid;
	s->s.maps = maps;
	s->s.image = &s->img;
	s->s.segment = seg ? &s->seg : NULL;
	s->s.stack_capped = seg ? seg->capped : c->capped;
	return 0;
}

int uw_sample_make(struct uw_sample *s, const struct uw_capture *c, const struct su_maps *maps,
		   enum stackcap_policy policy)
{
	return uw_sample_make_seg(s, c, NULL, maps, policy);
}

void uw_sample_free(struct uw_sample *s)
{
	free(s->img.words);
	free(s->img.kept);
	free(s->seg.words);
	free(s->seg.kept);
	s->img.words = NULL;
	s->img.kept = NULL;
	s->seg.words = NULL;
	s->seg.kept = NULL;
}
