/* SPDX-License-Identifier: MIT */
/* The off-CPU events of `stackcap record --off-cpu` (offcpu.h). */
#include <stdlib.h>

#include "record/offcpu.h"

void rec_offcpu_sampler_attr(struct perf_event_attr *sampler)
{
	sampler->sample_type |= PERF_SAMPLE_IDENTIFIER;
}

void rec_offcpu_attr(struct perf_event_attr *attr, const struct perf_event_attr *sampler)
{
	*attr = *sampler;
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	attr->freq = 0;
	attr->sample_period = 1; /* every switch */
	/* The switch happens in the kernel: its sample is taken there (an
	 * excluded kernel would drop every one), the user state sampled is
	 * the task's own. */
	attr->exclude_kernel = 0;
	/* Maps, comm and task records come from the sampler once. */
	attr->mmap = 0;
	attr->mmap2 = 0;
	attr->build_id = 0;
	attr->comm = 0;
	attr->comm_exec = 0;
	attr->task = 0;
	attr->context_switch = 1;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t const x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void rec_offcpu_ids_sort(struct rec_offcpu_ids *ids)
{
	qsort(ids->v, ids->n, sizeof(*ids->v), by_u64);
}

int rec_offcpu_ids_has(const struct rec_offcpu_ids *ids, uint64_t id)
{
	return ids->n && bsearch(&id, ids->v, ids->n, sizeof(*ids->v), by_u64) != NULL;
}
