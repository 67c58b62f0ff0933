/* Names of JIT code from perf maps (perfmap.h). */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"
#include "common/hashmap.h"
#include "symbolize/perfmap.h"

struct pm_entry {
	uint64_t start, end;
	uint32_t line;             /* a later line wins over an earlier one at the same start */
	char *name;
};

struct pm_proc {
	uint32_t pid;
	char map[32];              /* "/tmp/perf-PID.map" */
	struct pm_entry *e;
	size_t n;
};

struct su_perfmaps {
	char *symfs;
	char *jit_dir;             /* the trace's copies, or NULL */
	struct pm_proc *procs;     /* each process asked for, first asked first */
	size_t cap, count;
	struct su_hmap by_pid;     /* pid -> its entry in PROCS */
};

struct su_perfmaps *su_perfmaps_new(const char *symfs, const char *jit_dir)
{
	struct su_perfmaps *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	pm->symfs = strdup(symfs ? symfs : "");
	if (!pm->symfs || (jit_dir && !(pm->jit_dir = strdup(jit_dir)))) {
		su_perfmaps_free(pm);
		return NULL;
	}
	return pm;
}

static void proc_clear(struct pm_proc *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->e[i].name);
	free(p->e);
}

void su_perfmaps_free(struct su_perfmaps *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->count; i++)
		proc_clear(&pm->procs[i]);
	free(pm->procs);
	su_hmap_free(&pm->by_pid);
	free(pm->symfs);
	free(pm->jit_dir);
	free(pm);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* The map at PATH, when a regular file (ANYONES: whoever owns it; else,
 * as perf, only ours or root's); else NULL. */
static FILE *open_map(const char *path, int anyones)
{
	/* /tmp is anyone's: the name may be a FIFO (the open must not wait),
	 * a device or a symlink.  As perf: a map that is neither ours nor
	 * root's could name frames anything.  Checked on the fd, then read. */
	int const fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
	struct stat st;
	if (fd < 0)
		return NULL;
	FILE *f = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (!anyones && st.st_uid != geteuid() && st.st_uid != 0) ||
	    !(f = fdopen(fd, "r"))) {
		close(fd);
		return NULL;
	}
	return f;
}

/* Read P's map into P (nothing when there is none): the trace's copy
 * (the recorder's, of that very process), else SYMFS/tmp/perf-PID.map. */
static void load(struct su_perfmaps *pm, struct pm_proc *p)
{
	char path[4200];
	FILE *f = NULL;
	if (pm->jit_dir) {
		snprintf(path, sizeof(path), "%s/perf-%" PRIu32 ".map", pm->jit_dir, p->pid);
		f = open_map(path, 1);
	}
	if (!f) {
		snprintf(path, sizeof(path), "%s%s", pm->symfs, p->map);
		f = open_map(path, 0);
	}
	if (!f)
		return;
	char *line = NULL;
	size_t len = 0, cap = 0;
	uint32_t no = 0;
	while (getline(&line, &len, f) > 0) {
		char *s = line, *end;
		uint64_t const start = strtoull(s, &end, 16);
		if (end == s || *end != ' ')
			continue;
		s = end;
		uint64_t const size = strtoull(s, &end, 16);
		if (end == s || *end != ' ' || size == 0 || start + size < start)
			continue;
		char *name = end + 1;
		name[strcspn(name, "\r\n")] = '\0';
		if (!*name)
			continue;
		if (SU_GROW(p->e, cap, p->n + 1))
			break;
		char *copy = strdup(name);
		if (!copy)
			break;
		p->e[p->n++] = (struct pm_entry){ start, start + size, no++, copy };
	}
	free(line);
	fclose(f);
	if (p->n)
		qsort(p->e, p->n, sizeof(*p->e), entry_cmp);
}

struct pid_key {
	const struct su_perfmaps *pm;
	uint32_t pid;
};

static int pid_eq(const void *arg, uint32_t i)
{
	const struct pid_key *k = arg;
	return k->pm->procs[i].pid == k->pid;
}

/* PID's entry, its map read at the first ask.  NULL: out of memory. */
static struct pm_proc *proc_of(struct su_perfmaps *pm, uint32_t pid)
{
	if (su_hmap_reserve(&pm->by_pid) || pm->count >= UINT32_MAX || SU_GROW(pm->procs, pm->cap, pm->count + 1))
		return NULL;
	uint64_t const h = pid * 2654435761u;
	struct pid_key const key = { pm, pid };
	size_t const slot = su_hmap_find(&pm->by_pid, h, pid_eq, &key);
	if (su_hmap_used(&pm->by_pid, slot))
		return &pm->procs[su_hmap_value(&pm->by_pid, slot)];
	struct pm_proc *p = &pm->procs[pm->count];
	*p = (struct pm_proc){ .pid = pid };
	snprintf(p->map, sizeof(p->map), "/tmp/perf-%" PRIu32 ".map", pid);
	su_hmap_set(&pm->by_pid, slot, h, (uint32_t)pm->count++);
	load(pm, p);
	return p;
}

const char *su_perfmap_lookup(struct su_perfmaps *pm, uint32_t pid, uint64_t addr, uint64_t *start,
			      const char **map)
{
	if (!pm)
		return NULL;
	struct pm_proc *p = proc_of(pm, pid);
	if (!p || !p->n)
		return NULL;
	/* The last entry starting at or below ADDR (the latest line among
	 * equal starts), then whether it covers ADDR. */
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t const mid = (lo + hi) / 2;
		if (p->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= p->e[lo - 1].end)
		return NULL;
	if (start)
		*start = p->e[lo - 1].start;
	if (map)
		*map = p->map;
	return p->e[lo - 1].name;
}
