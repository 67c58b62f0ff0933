/* SPDX-License-Identifier: MIT */
/*
 * stackcap-lttng.h: a call stack on your own LTTng-UST event.
 *
 *     #include "my-provider-tp.h"
 *     #include <stackcap-lttng.h>
 *     stackcap_lttng_tracepoint(my_provider, my_event, a, b);
 *
 * records my_provider:my_event, then, when that event is enabled, a
 * `stackcap:sample` of the calling thread (innermost frame: the caller),
 * right after it in the same thread.  Link with -llttng-stackcap (or
 * preload liblttng-stackcap.so); see docs/lttng.md.
 */
#ifndef STACKCAP_LTTNG_H
#define STACKCAP_LTTNG_H

#include <lttng/tracepoint.h>
#include <stackcap.h>

#define stackcap_lttng_tracepoint(prov, name, ...)                      \
	do {                                                            \
		lttng_ust_tracepoint(prov, name, ##__VA_ARGS__);        \
		if (lttng_ust_tracepoint_enabled(prov, name))           \
			stackcap_capture();                             \
	} while (0)

#endif /* STACKCAP_LTTNG_H */
