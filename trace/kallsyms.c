/* The running kernel's symbols (kallsyms.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "trace/kallsyms.h"
#include "trace/reader-internal.h"

size_t su_kernel_build_id(uint8_t *id)
{
	FILE *f = fopen("/sys/kernel/notes", "re");
	if (!f)
		return 0;
	uint8_t buf[4096];
	size_t const len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	size_t p = 0;
	while (p + 12 <= len) {
		uint32_t const namesz = su_ld32(buf + p), descsz = su_ld32(buf + p + 4), type = su_ld32(buf + p + 8);
		size_t const name_at = p + 12, desc_at = name_at + ((namesz + 3u) & ~3u);
		if (namesz > len || descsz > len || desc_at + descsz > len)
			break;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && memcmp(buf + name_at, "GNU", 4) == 0 &&
		    descsz <= SU_BUILD_ID_MAX) {
			memcpy(id, buf + desc_at, descsz);
			return descsz;
		}
		p = desc_at + ((descsz + 3u) & ~3u);
	}
	return 0;
}

/* By address, then in the file's order. */
struct ksym_read {
	struct su_ksym s;
	size_t at;
};

static int by_start(const void *a, const void *b)
{
	const struct ksym_read *x = a, *y = b;
	if (x->s.start != y->s.start)
		return x->s.start < y->s.start ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
		p++;
	return p;
}

/* The next word of *P (at most CAP - 1 bytes kept, like %s with a width)
 * into DST.  @return whether there was one. */
static int word(const char **p, char *dst, size_t cap)
{
	const char *s = skip_space(*p);
	size_t n = 0;
	while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\v' && *s != '\f' &&
	       n + 1 < cap)
		dst[n++] = *s++;
	dst[n] = 0;
	*p = s;
	return n > 0;
}

/* One line of /proc/kallsyms, "ADDRESS TYPE NAME [MODULE]", as
 * sscanf(LINE, "%llx %c %511s %255s") reads it, without scanf's cost
 * (it was most of reading a perf.data file with kernel frames).
 * @return the fields read. */
static int ksym_line(const char *line, unsigned long long *a, char *type, char *name, char *mod)
{
	const char *p = skip_space(line);
	char *end;
	if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
		return 0;
	*a = strtoull(p, &end, 16);
	p = skip_space(end);
	if (!*p)
		return 1;
	*type = *p++;
	if (!word(&p, name, 512))
		return 2;
	return 3 + word(&p, mod, 256);
}

int su_kallsyms_read(struct su_kernel **out)
{
	*out = NULL;
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return -errno;
	struct ksym_read *all = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[512], mod[256] = "";
		int const got = ksym_line(line, &a, &type, name, mod);
		if (got < 3 || (type != 't' && type != 'T'))
			continue;
		if (!a) {
			rc = -EACCES; /* hidden: not ours to read */
			break;
		}
		if (su_grow((void **)&all, &cap, n + 1, sizeof(*all))) {
			rc = -ENOMEM;
			break;
		}
		all[n].s = (struct su_ksym){ .start = a, .name = strdup(name), .module = strdup(mod) };
		all[n].at = n;
		if (!all[n++].s.name || !all[n - 1].s.module) {
			rc = -ENOMEM;
			break;
		}
	}
	fclose(f);
	struct su_kernel *k = rc || !n ? NULL : calloc(1, sizeof(*k));
	if (k && !(k->syms = calloc(n, sizeof(*k->syms))))
		rc = -ENOMEM;
	if (!rc && !n)
		rc = -EACCES;
	if (!rc && k) {
		qsort(all, n, sizeof(*all), by_start);
		/* The last name of each address in the file's order, as perf
		 * takes it (the others end where they start: no length), up to
		 * the next address. */
		for (size_t i = 0; i < n; i++) {
			if (i + 1 < n && all[i + 1].s.start == all[i].s.start)
				continue;
			k->syms[k->n] = all[i].s;
			all[i].s.name = all[i].s.module = NULL; /* k owns them */
			k->n++;
		}
		for (size_t i = 0; i < k->n; i++)
			k->syms[i].end = i + 1 < k->n ? k->syms[i + 1].start : k->syms[i].start + 4096;
		k->build_id_len = (uint8_t)su_kernel_build_id(k->build_id);
	} else if (!rc) {
		rc = -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		free(all[i].s.name);
		free(all[i].s.module);
	}
	free(all);
	if (rc) {
		su_kernel_free(k);
		return rc;
	}
	*out = k;
	return 0;
}
