/* SPDX-License-Identifier: MIT */
/* The off-CPU events of `stackcap record --off-cpu` (offcpu.h). */
#include "record/offcpu.h"
#include "record/perf-events.h"

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
	rec_attr_no_side_records(attr);
	attr->context_switch = 1;
}
