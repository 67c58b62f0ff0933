/* Reading an LTTng-UST trace recorded with liblttng-stackcap.so
 * (docs/lttng.md) into the trace model, with the same contract as
 * su_stackcap_trace_read(). */
#ifndef STACKCAP_LTTNG_READER_H
#define STACKCAP_LTTNG_READER_H

#include "trace/stackcap-reader.h"

/* Nonzero when DIR is, or holds below it, an LTTng-UST trace. */
int su_lttng_trace_probe(const char *dir);

int su_lttng_trace_read(const char *dir, const struct su_reader_opts *opts, const struct su_reader_callbacks *cb,
			struct su_reader_stats *stats, char *err, size_t errlen);

#endif
