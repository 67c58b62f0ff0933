/* SPDX-License-Identifier: MIT */
/*
 * offcpu.h: the kernel events of `stackcap record --off-cpu`: where each
 * traced thread blocks (switched out while not runnable) and for how long.
 *
 * The mechanism, chosen over sched:sched_switch:
 *  - a PERF_COUNT_SW_CONTEXT_SWITCHES event with sample_period 1 beside
 *    the cpu-clock sampler, sampling the same user registers and stack
 *    window (and kernel chain).  It fires in perf_event_task_sched_out,
 *    in the context of the task being switched out: its user stack is the
 *    blocked thread's, its kernel chain the way into schedule();
 *  - attr.context_switch on it: PERF_RECORD_SWITCH records, out (with
 *    PERF_RECORD_MISC_SWITCH_OUT_PREEMPT when the task was still runnable:
 *    preempted, which is CPU time, not off-CPU) and in, in the switching
 *    task's own context, so a per-task event (a command, -p, -t) sees its
 *    thread come back; the switch-in time minus the switch-out time is the
 *    blocked time.
 * sched:sched_switch would tell the state at once (prev_state), but it
 * fires only in the task switched out: the switch-in of a traced thread
 * happens in another task's switch, which a per-task event never sees
 * (only -a could pair them); its state is in PERF_SAMPLE_RAW, whose layout
 * is read from tracefs per kernel and needs CAP_PERFMON (or paranoid -1)
 * even on one's own tasks, where the software event needs paranoid <= 1.
 * Measured in bench/offcpu.sh (docs/BENCHMARKS.md): beside `perf record
 * -e sched:sched_switch --call-graph dwarf` on the same program.
 *
 * The sampler's and this event's samples share each CPU's ring: both
 * carry PERF_SAMPLE_IDENTIFIER, and the ids of the context-switch events
 * (REC_OFFCPU_IDS) tell their samples apart.
 */
#ifndef STACKCAP_RECORD_OFFCPU_H
#define STACKCAP_RECORD_OFFCPU_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

/* The sampler's attr, ready to share its rings with the off-CPU event. */
void rec_offcpu_sampler_attr(struct perf_event_attr *sampler);

/* The off-CPU event's attr from the sampler's (after
 * rec_offcpu_sampler_attr): the same samples, at every context switch. */
void rec_offcpu_attr(struct perf_event_attr *attr, const struct perf_event_attr *sampler);

/* The ids of the context-switch events opened (perf-events.h
 * rec_events_open_more appends; rec_offcpu_ids_sort after). */
struct rec_offcpu_ids {
	uint64_t *v;
	size_t n, cap;
};
void rec_offcpu_ids_sort(struct rec_offcpu_ids *ids);
int rec_offcpu_ids_has(const struct rec_offcpu_ids *ids, uint64_t id);

#endif
