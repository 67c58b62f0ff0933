/* A user's own tracepoint provider, for tests/lttng-probe.c. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER stackcap_test

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "tests/lttng-probe-tp.h"

#if !defined(LTTNG_PROBE_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define LTTNG_PROBE_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(stackcap_test, tick,
	LTTNG_UST_TP_ARGS(int, i),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int, i, i)))

#endif

#include <lttng/tracepoint-event.h>
