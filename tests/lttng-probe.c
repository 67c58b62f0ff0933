/* tests/lttng-probe: a program with its own LTTng-UST event that wants a
 * call stack on each: linked with liblttng-stackcap, started with
 * stackcap_init(.lttng = 1, .no_sampling = 1), it records N events
 * stackcap_test:tick from probe_inner <- probe_outer <- main through
 * stackcap_lttng_tracepoint(), so each is followed by a stackcap:sample
 * whose innermost frame is probe_inner.
 *
 * Usage: lttng-probe [--chain] [N]   (default 200) */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tests/lttng-probe-tp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackcap.h"
#include "stackcap-lttng.h"

__attribute__((noinline)) static void probe_inner(int i)
{
	stackcap_lttng_tracepoint(stackcap_test, tick, i);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void probe_outer(int i)
{
	probe_inner(i);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--chain")) {
		puts("probe_inner\nprobe_outer\nmain");
		return 0;
	}
	int const n = argc > 1 ? atoi(argv[1]) : 200;
	struct stackcap_opts o = { .sz = sizeof(o), .lttng = 1, .no_sampling = 1 };
	int rc = stackcap_init(&o);
	if (rc) {
		fprintf(stderr, "lttng-probe: stackcap_init: %s\n", strerror(-rc));
		return 1;
	}
	for (int i = 0; i < n; i++)
		probe_outer(i);
	struct stackcap_stats st;
	stackcap_get_stats(&st);
	rc = stackcap_shutdown();
	printf("captures %llu drops %llu\n", (unsigned long long)st.samples, (unsigned long long)st.drops);
	return rc ? 1 : 0;
}
