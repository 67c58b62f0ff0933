/* The LTTng join (docs/lttng.md): what LTTng-UST events say of each process
 * (vpid) -- its modules from the state dump and dl events, our
 * `stackcap:code_ranges` generations -- joined into the reader core's
 * process_start and maps events, and `stackcap:sample` records turned into
 * its sample events.  Fed one babeltrace2 event at a time, in time order,
 * by both consumers of LTTng traces: the event source (trace/source-lttng.c:
 * all of pass 1, then every generation at once) and the unwind filter
 * (plugin/filter-unwind.c: each generation as soon as it is settled). */
#ifndef STACKCAP_LTTNG_JOIN_H
#define STACKCAP_LTTNG_JOIN_H

#include <stdint.h>
#include <babeltrace2/babeltrace.h>
#include "trace/reader-internal.h"

enum su_lttng_event {
	SU_LTTNG_OTHER = 0,      /* neither ours nor LTTng's: the user's own */
	SU_LTTNG_MODULES,        /* lttng_ust_statedump:*, lttng_ust_dl:*, lttng_ust_lib:* */
	SU_LTTNG_CODE_RANGES,    /* stackcap:code_ranges */
	SU_LTTNG_SAMPLE,         /* stackcap:sample */
	SU_LTTNG_SEGMENT,        /* stackcap:sample_segment */
	SU_LTTNG_RUNTIME,        /* stackcap:runtime, stackcap:runtime_code (--python) */
	SU_LTTNG_RUNTIME_FRAMES, /* stackcap:runtime_frames (--python) */
};

/* What the event class NAME is to the join. */
enum su_lttng_event su_lttng_event_of(const char *name);

/* The vpid and vtid contexts of event message MSG: 0, or -ENOENT when
 * the session did not add them. */
int su_lttng_event_ids(const bt_message *msg, uint32_t *vpid, uint32_t *vtid);

struct su_lttng_join;

struct su_lttng_join *su_lttng_join_new(void);
void su_lttng_join_free(struct su_lttng_join *j);

/* Take in MSG, an SU_LTTNG_MODULES, SU_LTTNG_CODE_RANGES or SU_LTTNG_RUNTIME
 * event of process VPID at time TS.  @return 0 or -ENOMEM. */
int su_lttng_join_add(struct su_lttng_join *j, const bt_message *msg, enum su_lttng_event kind, uint32_t vpid,
		      uint64_t ts);

/* What a sample brings: its segment and its runtime frames, each when its
 * thread recorded one just before it (stamped with the sample's time: the
 * core pairs them by time). */
struct su_lttng_extra {
	struct raw_event seg, rt;
	int has_seg, has_rt;
};

/* MSG, an SU_LTTNG_SAMPLE, SU_LTTNG_SEGMENT or SU_LTTNG_RUNTIME_FRAMES event
 * of thread VPID/VTID at TS.  A segment or runtime frames are kept for
 * their thread's next sample.  A sample fills *EV and *X.  Blobs stay
 * valid until the next call.  @return 1 when *EV is a sample, 0 when
 * there is nothing to deliver, -ENOMEM. */
int su_lttng_join_sample(struct su_lttng_join *j, const bt_message *msg, enum su_lttng_event kind, uint32_t vpid,
			 uint32_t vtid, uint64_t ts, struct raw_event *ev, struct su_lttng_extra *x);

/* Deliver through EMIT each process's process_start (once, before its
 * first maps), its runtime and runtime_code events once it has started,
 * and the maps of each generation not delivered yet that is
 * settled at trace time NOW: every range lies in a module with a size, or
 * the process finished a state dump since the generation, or WAIT_NS
 * passed, or FORCE.  A range in no module is anonymous code ([anon:exec]).
 * @return 0, EMIT's nonzero return, or -ENOMEM. */
int su_lttng_join_flush(struct su_lttng_join *j, uint64_t now, uint64_t wait_ns, int force, raw_emit_fn emit,
			void *ctx);

/* Nonzero when some process has stackcap:code_ranges generations. */
int su_lttng_join_has_generations(const struct su_lttng_join *j);

#endif
