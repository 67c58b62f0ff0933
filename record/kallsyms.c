/* SPDX-License-Identifier: MIT */
/* The kernel symbols a recording needs (kallsyms.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "record/kallsyms.h"
#include "trace/kallsyms.h"

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

static int by_u64(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int rec_ksyms_cover(const uint64_t *addrs0, size_t n, struct rec_ksyms *out)
{
	memset(out, 0, sizeof(*out));
	struct su_kernel *k = NULL;
	int rc = su_kallsyms_read(&k);
	if (rc)
		return rc;
	rc = -ENOMEM;
	uint64_t *addrs = malloc((n ? n : 1) * sizeof(*addrs));
	out->syms = calloc(n ? n : 1, sizeof(*out->syms));
	if (!addrs || !out->syms)
		goto out;
	memcpy(addrs, addrs0, n * sizeof(*addrs));
	qsort(addrs, n, sizeof(*addrs), by_u64);
	size_t need = 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t const a = addrs[i];
		/* The last symbol starting at or before a. */
		size_t lo = 0, hi = k->n;
		while (lo < hi) {
			size_t const mid = lo + (hi - lo) / 2;
			if (k->syms[mid].start <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			continue;
		const struct su_ksym *y = &k->syms[lo - 1];
		if (out->n && out->syms[out->n - 1].start == y->start)
			continue; /* covered already */
		out->syms[out->n++] = (struct ctf_kernel_symbol){ .start = y->start, .end = y->end, .name = y->name,
								  .module = y->module };
		need += strlen(y->name) + strlen(y->module) + 2;
	}
	/* Only the strings kept. */
	if (!(out->names = malloc(need)))
		goto out;
	size_t at = 0;
	for (size_t i = 0; i < out->n; i++) {
		const char *nm = out->syms[i].name, *md = out->syms[i].module;
		size_t const ln = strlen(nm) + 1, lm = strlen(md) + 1;
		memcpy(out->names + at, nm, ln);
		out->syms[i].name = out->names + at;
		at += ln;
		memcpy(out->names + at, md, lm);
		out->syms[i].module = out->names + at;
		at += lm;
	}
	memcpy(out->build_id, k->build_id, k->build_id_len);
	out->build_id_len = k->build_id_len;
	rc = 0;
out:
	su_kernel_free(k);
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
