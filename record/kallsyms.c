/* SPDX-License-Identifier: MIT */
/* The kernel symbols a recording needs (kallsyms.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "record/kallsyms.h"

int rec_kallsyms_readable(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return 0;
	/* Hidden addresses read as zeros (kernel.kptr_restrict). */
	unsigned long long a = 0;
	int const ok = fscanf(f, "%llx", &a) == 1 && a != 0;
	fclose(f);
	return ok;
}

struct ksym {
	uint64_t start;
	size_t name, module; /* offsets in the string pool */
	int global;          /* 'T': preferred among names of one address */
};

static int by_start(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return y->global - x->global; /* global first */
}

static int by_u64(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The GNU build-id note of the running kernel (/sys/kernel/notes). */
static void build_id(struct rec_ksyms *k)
{
	FILE *f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return;
	uint8_t buf[4096];
	size_t const len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	size_t p = 0;
	while (p + 12 <= len) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, buf + p, 4);
		memcpy(&descsz, buf + p + 4, 4);
		memcpy(&type, buf + p + 8, 4);
		size_t const name_at = p + 12, desc_at = name_at + ((namesz + 3u) & ~3u);
		if (namesz > len || descsz > len || desc_at + descsz > len)
			break;
		if (type == 3 && namesz == 4 && memcmp(buf + name_at, "GNU", 4) == 0 && descsz <= sizeof(k->build_id)) {
			memcpy(k->build_id, buf + desc_at, descsz);
			k->build_id_len = descsz;
			return;
		}
		p = desc_at + ((descsz + 3u) & ~3u);
	}
}

int rec_ksyms_cover(const uint64_t *addrs0, size_t n, struct rec_ksyms *out)
{
	memset(out, 0, sizeof(*out));
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return -errno;
	struct ksym *all = NULL;
	size_t n_all = 0, cap_all = 0;
	char *pool = NULL;
	size_t n_pool = 0, cap_pool = 0;
	uint64_t *addrs = NULL;
	int rc = -ENOMEM;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[512], mod[256] = "";
		int const got = sscanf(line, "%llx %c %511s %255s", &a, &type, name, mod);
		if (got < 3 || (type != 't' && type != 'T'))
			continue;
		if (!a) {
			rc = -EACCES; /* hidden: not ours to read */
			goto out;
		}
		size_t const ln = strlen(name) + 1, lm = strlen(mod) + 1;
		if (SU_GROW(all, cap_all, n_all + 1))
			goto out;
		while (n_pool + ln + lm > cap_pool) {
			size_t const nc = cap_pool ? 2 * cap_pool : 1 << 20;
			char *np = realloc(pool, nc);
			if (!np)
				goto out;
			pool = np;
			cap_pool = nc;
		}
		all[n_all++] = (struct ksym){ .start = a, .name = n_pool, .module = n_pool + ln, .global = type == 'T' };
		memcpy(pool + n_pool, name, ln);
		memcpy(pool + n_pool + ln, mod, lm);
		n_pool += ln + lm;
	}
	if (!n_all) {
		rc = -EACCES;
		goto out;
	}
	qsort(all, n_all, sizeof(*all), by_start);
	addrs = malloc((n ? n : 1) * sizeof(*addrs));
	out->syms = calloc(n ? n : 1, sizeof(*out->syms));
	if (!addrs || !out->syms)
		goto out;
	memcpy(addrs, addrs0, n * sizeof(*addrs));
	qsort(addrs, n, sizeof(*addrs), by_u64);
	for (size_t i = 0; i < n; i++) {
		uint64_t const a = addrs[i];
		/* The last symbol starting at or before a, the first name of its address. */
		size_t lo = 0, hi = n_all;
		while (lo < hi) {
			size_t const mid = lo + (hi - lo) / 2;
			if (all[mid].start <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			continue;
		size_t s = lo - 1;
		while (s > 0 && all[s - 1].start == all[s].start)
			s--;
		uint64_t const end = lo < n_all ? all[lo].start : all[s].start + 4096;
		if (out->n && out->syms[out->n - 1].start == all[s].start)
			continue; /* covered already */
		out->syms[out->n++] = (struct ctf_kernel_symbol){
			.start = all[s].start, .end = end, .name = (const char *)(uintptr_t)all[s].name,
			.module = (const char *)(uintptr_t)all[s].module,
		};
	}
	/* Only the strings kept. */
	size_t need = 1;
	for (size_t i = 0; i < out->n; i++)
		need += strlen(pool + (uintptr_t)out->syms[i].name) + strlen(pool + (uintptr_t)out->syms[i].module) + 2;
	if (!(out->names = malloc(need)))
		goto out;
	size_t at = 0;
	for (size_t i = 0; i < out->n; i++) {
		const char *nm = pool + (uintptr_t)out->syms[i].name, *md = pool + (uintptr_t)out->syms[i].module;
		size_t const ln = strlen(nm) + 1, lm = strlen(md) + 1;
		memcpy(out->names + at, nm, ln);
		out->syms[i].name = out->names + at;
		at += ln;
		memcpy(out->names + at, md, lm);
		out->syms[i].module = out->names + at;
		at += lm;
	}
	build_id(out);
	rc = 0;
out:
	fclose(f);
	free(all);
	free(pool);
	free(addrs);
	if (rc)
		rec_ksyms_free(out);
	return rc;
}

void rec_ksyms_free(struct rec_ksyms *k)
{
	free(k->syms);
	free(k->names);
	memset(k, 0, sizeof(*k));
}
