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
 * It is one more event of the recorder's (record/recorder.c, beside -e's):
 * its samples share each CPU's ring with the others', all carrying
 * PERF_SAMPLE_IDENTIFIER, and the record stream names each sample's
 * event (REC_OFFCPU_EVENT for this one's).
 */
#ifndef STACKCAP_RECORD_OFFCPU_H
#define STACKCAP_RECORD_OFFCPU_H

#include <linux/perf_event.h>

/* The name of the off-CPU event's samples in the record stream, and in
 * the trace's event table when it has one (-e with --off-cpu). */
#define REC_OFFCPU_EVENT "off-cpu"

/* The off-CPU event's attr from the sampler's (SAMPLER: the same samples,
 * PERF_SAMPLE_IDENTIFIER added by the caller), at every context switch. */
void rec_offcpu_attr(struct perf_event_attr *attr, const struct perf_event_attr *sampler);

#endif
