/* SPDX-License-Identifier: MIT */
/*
 * lttng-sink.c: libstackcap's LTTng-UST sink, linked only into
 * liblttng-stackcap.so.  Samples become `stackcap:sample` events recorded in
 * the sampled thread; code-range generations become `stackcap:code_ranges`
 * (docs/lttng.md).  Paths and build-ids are LTTng's own state dump and dl
 * events: not repeated here.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "capture/lttng/stackcap-tp.h"

#include <lttng/ust-thread.h>
#include <stdlib.h>

#include "capture/capture-internal.h"

/* LTTng-UST 2.13 lets signal handlers use tracepoints once the thread's
 * LTTng-UST state exists (lttng/ust-thread.h): done here for every thread
 * libstackcap registers, before its timer is armed. */
static void sink_thread_init(void)
{
	lttng_ust_init_thread();
}

/* liblttng-ust-common's RCU reader of this thread (exported TLS, declared
 * in lttng/urcu/static/urcu-ust.h): NULL before lttng_ust_init_thread and
 * again once the thread's exit has unregistered it (a thread-specific
 * data destructor: the main thread's pthread_exit, or any thread libstackcap
 * did not start).  A tracepoint there registers the thread again, taking
 * LTTng-UST's registry locks from our signal handler: if the interrupted
 * code held one (its unregister does, signals unblocked) the thread hangs. */
struct lttng_ust_urcu_reader;
extern __thread struct lttng_ust_urcu_reader *lttng_ust_urcu_reader;

static int sink_thread_ready(void)
{
	return lttng_ust_urcu_reader != NULL;
}

/* The blobs' words are their bytes in memory order: little-endian, as
 * the reader takes them (trace/bt2-event.c su_bt2_copy_blob). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stackcap:sample blob_words are little-endian");

/* The 64-bit words of LEN bytes at P (8-byte aligned, its last word
 * padded with zeros: capture_regs lays them out so in LTTng mode). */
#define WORDS(p, len) (const uint64_t *)(const void *)(p), (uint32_t)(((len) + 7) / 8), (uint32_t)(len)

/* In the signal handler or stackcap_capture(): the tracepoint is lock-free
 * and reentrant (nested events use their own nesting level). */
static void sink_sample(uint32_t generation, const uint8_t *blob, size_t len, const uint8_t *seg,
			size_t seg_len, uint8_t runtime, const uint8_t *rt, size_t rt_len)
{
	if (rt && rt_len)
		lttng_ust_tracepoint(stackcap, runtime_frames, runtime, WORDS(rt, rt_len));
	if (seg && seg_len)
		lttng_ust_tracepoint(stackcap, sample_segment, generation, WORDS(seg, seg_len));
	lttng_ust_tracepoint(stackcap, sample, generation, WORDS(blob, len));
}

/* Writer thread: malloc is fine here. */
static int sink_code_ranges(uint32_t generation, const struct stackcap_code_range *ranges, uint32_t count,
			     const uint8_t *vdso_build_id, uint8_t vdso_build_id_len, const struct stackcap_config *cfg)
{
	if (!lttng_ust_tracepoint_enabled(stackcap, code_ranges))
		return 0;
	uint64_t *v = malloc(2 * (size_t)(count ? count : 1) * sizeof(*v));
	if (!v)
		return 0;
	for (uint32_t i = 0; i < count; i++) {
		v[2 * i] = ranges[i].start;
		v[2 * i + 1] = ranges[i].end;
	}
	lttng_ust_do_tracepoint(stackcap, code_ranges, generation, STACKCAP_CODEC_VERSION, (uint8_t)cfg->policy,
				(uint32_t)cfg->stack_cap, cfg->no_sampling ? 0 : cfg->frequency_hz, v, 2 * count,
				vdso_build_id ? vdso_build_id : (const uint8_t *)"", vdso_build_id_len);
	free(v);
	return 1;
}

/* Writer thread.  Whether it was recorded: a session enables the event a
 * while after the program starts, and without this description no frame
 * of the runtime is named. */
static int sink_runtime(uint8_t runtime, uint32_t version, uint64_t eval_start, uint64_t eval_end,
			uint64_t chains, uint64_t dropped, const char *name)
{
	if (!lttng_ust_tracepoint_enabled(stackcap, runtime))
		return 0;
	lttng_ust_do_tracepoint(stackcap, runtime, runtime, version, eval_start, eval_end, chains, dropped, name);
	return 1;
}

static void sink_runtime_code(uint8_t runtime, uint64_t code, uint32_t fp, uint32_t first_line, const char *name,
			      const char *file, const uint8_t *line_table, uint32_t line_table_len)
{
	lttng_ust_tracepoint(stackcap, runtime_code, runtime, code, fp, first_line, name, file, line_table,
			     line_table_len);
}

HIDDEN const struct capture_sink capture_lttng_sink = {
	.thread_init = sink_thread_init,
	.thread_ready = sink_thread_ready,
	.sample = sink_sample,
	.code_ranges = sink_code_ranges,
	.runtime = sink_runtime,
	.runtime_code = sink_runtime_code,
};
