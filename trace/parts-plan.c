/* The parts' plan: which part of a read in parts opens which stream files
 * (trace/parts-plan.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "common/ctf-layout.h"
#include "trace/parts-plan.h"
#include "trace/reader-internal.h"
#include "trace/trace-model.h"

/* What a process costs a part besides its sample bytes (its process
 * stream, maps, modules, first unwinds), in bytes of samples: weighs the
 * parts' shares. */
#define PID_COST 2048u

struct pid_load {
	uint32_t pid;
	uint64_t bytes;
	int owner;
};

/* The pid in NAME after PREFIX (proc-<pid>-..., samples-<pid>-...). */
static int name_pid(const char *name, size_t prefix, uint32_t *pid)
{
	const char *p = name + prefix;
	uint64_t v = 0;
	size_t n = 0;
	while (p[n] >= '0' && p[n] <= '9' && n < 10)
		v = v * 10 + (uint64_t)(p[n++] - '0');
	if (!n || v > UINT32_MAX || (p[n] && p[n] != '-' && p[n] != '.'))
		return 0;
	*pid = (uint32_t)v;
	return 1;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct plan_file *)a)->name, ((const struct plan_file *)b)->name);
}

static int load_cmp(const void *a, const void *b)
{
	uint32_t const x = ((const struct pid_load *)a)->pid, y = ((const struct pid_load *)b)->pid;
	return x < y ? -1 : x > y;
}

static struct pid_load *load_find(struct pid_load *l, size_t n, uint32_t pid)
{
	struct pid_load key = { .pid = pid };
	return bsearch(&key, l, n, sizeof(*l), load_cmp);
}

/* Each process whose samples are small beside the trace to the part with
 * the least work so far, in pid order; the others' to every part. */
static int assign(struct su_parts_plan *p)
{
	size_t n = 0;
	struct pid_load *l = malloc((p->n ? p->n : 1) * sizeof(*l));
	uint64_t *work = calloc(p->parts, sizeof(*work));
	if (!l || !work) {
		free(l);
		free(work);
		return -1;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->files[i].has_pid)
			l[n++] = (struct pid_load){ .pid = p->files[i].pid };
	qsort(l, n, sizeof(*l), load_cmp);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || l[u - 1].pid != l[i].pid)
			l[u++] = l[i];
	n = u;
	for (size_t i = 0; i < p->n; i++) {
		struct plan_file *f = &p->files[i];
		if (f->has_pid && !strncmp(f->name, "samples-", 8))
			load_find(l, n, f->pid)->bytes += f->size;
	}
	for (size_t i = 0; i < n; i++) {
		/* A busy process (an eighth of the trace's samples or more on
		 * two parts: a one-process trace's) is every part's: its
		 * packets go first come, so a part on a slower core takes
		 * fewer. */
		if (l[i].bytes * 4 * p->parts > p->sample_bytes) {
			l[i].owner = PLAN_EVERY;
			continue;
		}
		unsigned best = 0;
		for (unsigned k = 1; k < p->parts; k++)
			if (work[k] < work[best])
				best = k;
		l[i].owner = (int)best;
		work[best] += l[i].bytes + PID_COST;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct plan_file *f = &p->files[i];
		f->owner = f->has_pid ? load_find(l, n, f->pid)->owner : PLAN_EVERY;
	}
	free(l);
	free(work);
	return 0;
}

struct su_parts_plan *su_parts_plan_new(const char *dir, unsigned parts)
{
	struct su_parts_plan *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->parts = parts ? parts : 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	DIR *d = opendir(dir);
	size_t cap = 0;
	if (!d)
		goto fail;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		if (nm[0] == '.' || !strcmp(nm, "metadata") || ctf_side_dir(nm))
			continue;
		if (p->n == cap) {
			size_t const nc = cap ? 2 * cap : 256;
			struct plan_file *nf = realloc(p->files, nc * sizeof(*nf));
			if (!nf)
				goto fail;
			p->files = nf;
			cap = nc;
		}
		struct plan_file *f = &p->files[p->n];
		memset(f, 0, sizeof(*f));
		if (!(f->name = strdup(nm)))
			goto fail;
		p->n++;
		if (!strncmp(nm, "samples-", 8)) {
			f->has_pid = name_pid(nm, 8, &f->pid);
			struct stat sb;
			if (!fstatat(dirfd(d), nm, &sb, AT_SYMLINK_NOFOLLOW) && S_ISREG(sb.st_mode))
				f->size = (uint64_t)sb.st_size;
			p->n_samples++;
			p->sample_bytes += f->size;
		} else if (!strncmp(nm, "proc-", 5)) {
			f->has_pid = name_pid(nm, 5, &f->pid);
		}
	}
	closedir(d);
	d = NULL;
	if (p->n)
		qsort(p->files, p->n, sizeof(*p->files), file_cmp);
	if (!(p->claims = calloc(p->n_samples ? p->n_samples : 1, sizeof(*p->claims))) ||
	    !(p->met = calloc(p->parts, 1)) || assign(p))
		goto fail;
	return p;
fail:;
	int const e = errno ? errno : ENOMEM; /* opendir's, or an allocation's */
	if (d)
		closedir(d);
	su_parts_plan_free(p);
	errno = e;
	return NULL;
}

void su_parts_plan_free(struct su_parts_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->files[i].name);
	free(p->files);
	free(p->claims);
	free(p->met);
	su_kernel_free(p->kernel);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

size_t su_parts_plan_sample_files(const struct su_parts_plan *p)
{
	return p->n_samples;
}

uint64_t su_parts_plan_sample_bytes(const struct su_parts_plan *p)
{
	return p->sample_bytes;
}

void su_parts_plan_cancel(struct su_parts_plan *p)
{
	pthread_mutex_lock(&p->mu);
	p->cancelled = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* PART comes to the meeting (under the lock), once. */
static void arrive(struct su_parts_plan *p, unsigned part)
{
	if (part >= p->parts || p->met[part])
		return;
	p->met[part] = 1;
	if (++p->arrived >= p->parts)
		pthread_cond_broadcast(&p->cv);
}

void su_parts_plan_part_done(struct su_parts_plan *p, unsigned part)
{
	pthread_mutex_lock(&p->mu);
	arrive(p, part);
	pthread_mutex_unlock(&p->mu);
}

unsigned su_parts_plan_meet(struct su_parts_plan *p, unsigned part, struct su_kernel **k, unsigned n_events,
			    size_t *sections)
{
	pthread_mutex_lock(&p->mu);
	p->kernel_events += n_events;
	p->sections += *sections;
	if (*k) {
		if (!p->kernel)
			p->kernel = *k;
		else
			su_kernel_free(*k); /* a second: said by the return */
		*k = NULL;
	}
	arrive(p, part);
	while (p->arrived < p->parts && !p->cancelled)
		pthread_cond_wait(&p->cv, &p->mu);
	*k = p->kernel;
	*sections = p->sections;
	unsigned const n = p->kernel_events;
	pthread_mutex_unlock(&p->mu);
	return n;
}
