/* The running kernel's symbols (kallsyms.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A text symbol as read: its address, where its name and module were put
 * in the file's block, and its line (by address, then in the file's order). */
struct ksym_read {
	uint64_t start;
	size_t name, module, at;
};

static int by_start(const void *a, const void *b)
{
	const struct ksym_read *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

/* Part of a line. */
struct span {
	const char *s;
	size_t n;
};

/* The next whitespace-delimited word of *P, at most MAX bytes of it (the
 * rest is the next word, as sscanf's %Ns leaves it), into *OUT: its
 * length, 0 at the end of the line. */
static size_t word(const char **p, struct span *out, size_t max)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
		s++;
	size_t n = 0;
	while (n < max && s[n] && s[n] != ' ' && s[n] != '\t' && s[n] != '\n' && s[n] != '\r' && s[n] != '\v' &&
	       s[n] != '\f')
		n++;
	*out = (struct span){ s, n };
	*p = s + n;
	return n;
}

/* Each byte's value as a hex digit plus one, 0 when it is none. */
static const unsigned char hex_value1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* C's value as a hex digit, -1 when it is none. */
static int hex_digit(char c)
{
	return hex_value1[(unsigned char)c] - 1;
}

/* One line of /proc/kallsyms, "ADDRESS TYPE NAME [MODULE]", read as
 * sscanf(LINE, "%llx %c %511s %255s") reads it (without its cost: it was
 * most of reading the file): the fields read. */
static int parse_line(const char *line, unsigned long long *a, char *type, struct span *name, struct span *mod)
{
	/* What %llx reads (strtoull's hex without its locale machinery:
	 * most of this loop's cost): blanks, an optional sign and 0x, digits,
	 * ULLONG_MAX when too large. */
	const char *p = line;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
		p++;
	int const neg = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && hex_digit(p[2]) >= 0)
		p += 2;
	unsigned long long v = 0;
	int digits = 0, over = 0;
	for (int d; (d = hex_digit(*p)) >= 0; p++, digits++) {
		over |= v >> 60 != 0;
		v = v << 4 | (unsigned)d;
	}
	if (!digits)
		return 0;
	*a = over ? ULLONG_MAX : neg ? -v : v;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
		p++;
	if (!*p)
		return 1;
	*type = *p++;
	if (!word(&p, name, 511))
		return 2;
	return word(&p, mod, 255) ? 4 : 3;
}

/* /proc/kallsyms whole, NUL-terminated, into *TEXT (malloc'ed) and its
 * length into *LEN.  @return 0 or -errno. */
static int read_all(char **text, size_t *len)
{
	*text = NULL;
	int const fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap);
	int rc = b ? 0 : -ENOMEM;
	while (!rc) {
		if (cap - n < (1 << 16)) {
			/* The kernel's own table: 20 MB is many times what a
			 * kernel with every module loaded lists. */
			char *const nb = cap >= (256u << 20) ? NULL : realloc(b, cap * 2);
			if (!nb) {
				rc = cap >= (256u << 20) ? -EFBIG : -ENOMEM;
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t const got = read(fd, b + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			rc = -errno;
		else if (!got)
			break;
		else
			n += (size_t)got;
	}
	close(fd);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = 0;
	*text = b;
	*len = n;
	return 0;
}

int su_kallsyms_read(struct su_kernel **out)
{
	*out = NULL;
	char *text;
	size_t len = 0;
	int rc = read_all(&text, &len);
	if (rc)
		return rc;
	/* Each kept name and module is moved down to the front of the block,
	 * NUL-terminated, over the lines already read (a line's address and
	 * type are longer than the two NULs), so the block becomes the names'
	 * one allocation: no malloc per symbol. */
	struct ksym_read *all = NULL;
	size_t n = 0, cap = 0, w = 0;
	int sorted = 1;
	for (char *line = text, *next; line < text + len; line = next) {
		char *const nl = memchr(line, '\n', (size_t)(text + len - line));
		next = nl ? nl + 1 : text + len;
		if (nl)
			*nl = 0;
		unsigned long long a;
		char type;
		struct span name, mod = { "", 0 };
		int const got = parse_line(line, &a, &type, &name, &mod);
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
		all[n] = (struct ksym_read){ .start = a, .name = w, .at = n };
		memmove(text + w, name.s, name.n);
		w += name.n;
		text[w++] = 0;
		all[n].module = w;
		memmove(text + w, mod.s, mod.n);
		w += mod.n;
		text[w++] = 0;
		sorted = sorted && (!n || all[n - 1].start <= a);
		n++;
	}
	struct su_kernel *k = rc || !n ? NULL : calloc(1, sizeof(*k));
	if (k && !(k->syms = calloc(n, sizeof(*k->syms))))
		rc = -ENOMEM;
	if (!rc && !n)
		rc = -EACCES;
	if (!rc && k) {
		if (!sorted) /* the kernel's own symbols are; modules' may not be */
			qsort(all, n, sizeof(*all), by_start);
		char *const small = realloc(text, w);
		k->text = small ? small : text;
		text = NULL;
		/* The last name of each address in the file's order, as perf
		 * takes it (the others end where they start: no length), up to
		 * the next address. */
		for (size_t i = 0; i < n; i++) {
			if (i + 1 < n && all[i + 1].start == all[i].start)
				continue;
			k->syms[k->n++] = (struct su_ksym){ .start = all[i].start, .name = k->text + all[i].name,
							    .module = k->text + all[i].module };
		}
		for (size_t i = 0; i < k->n; i++)
			k->syms[i].end = i + 1 < k->n ? k->syms[i + 1].start : k->syms[i].start + 4096;
		k->build_id_len = (uint8_t)su_kernel_build_id(k->build_id);
	} else if (!rc) {
		rc = -ENOMEM;
	}
	free(text);
	free(all);
	if (rc) {
		su_kernel_free(k);
		return rc;
	}
	*out = k;
	return 0;
}
