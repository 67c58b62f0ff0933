/* SPDX-License-Identifier: MIT */
/*
 * capture-api: libstackcap linked into a program (not preloaded), sampling
 * off, captures requested with stackcap_capture() from ordinary code and
 * from a signal handler.  Prints TAP; tests/capture-api.sh then reads the
 * trace with babeltrace2.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "capture/stackcap.h"

static int n;
static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n, what);
}

static volatile int handler_rc = 1;
static void on_usr1(int sig)
{
	(void)sig;
	handler_rc = stackcap_capture(); /* async-signal-safe by contract */
}

static __attribute__((noinline)) int capture_at_depth(int d)
{
	if (d > 0) {
		int const r = capture_at_depth(d - 1);
		__asm__ volatile("" ::: "memory");
		return r;
	}
	return stackcap_capture();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: capture-api TRACE_DIR\n");
		return 2;
	}
	ok(stackcap_capture() == -ENODEV, "capture before init: -ENODEV");
	struct stackcap_opts o = { .sz = sizeof(o), .output_dir = argv[1], .no_sampling = 1 };
	ok(stackcap_init(&o) == 0, "stackcap_init");
	ok(stackcap_init(&o) == -EALREADY, "second init: -EALREADY");
	int fails = 0;
	for (int i = 0; i < 100; i++)
		fails += capture_at_depth(i % 20) != 0;
	ok(fails == 0, "100 captures from ordinary code");
	signal(SIGUSR1, on_usr1);
	int hfails = 0;
	for (int i = 0; i < 10; i++) {
		handler_rc = 1;
		raise(SIGUSR1);
		hfails += handler_rc != 0;
	}
	ok(hfails == 0, "10 captures from a signal handler");
	struct stackcap_stats st;
	stackcap_get_stats(&st);
	ok(st.samples == 110, "stats: 110 samples");
	ok(st.drops == 0, "stats: no drops");
	ok(stackcap_shutdown() == 0, "stackcap_shutdown");
	ok(stackcap_capture() == -ENODEV, "capture after shutdown: -ENODEV");
	ok(stackcap_version() == STACKCAP_VERSION_NUMBER, "version");
	/* A newer caller's options: unknown nonzero bytes are refused. */
	union {
		struct stackcap_opts o;
		char bytes[sizeof(struct stackcap_opts) + 8];
	} newer;
	memset(&newer, 0, sizeof(newer));
	newer.o.sz = sizeof(newer);
	newer.o.output_dir = argv[1];
	newer.bytes[sizeof(struct stackcap_opts) + 3] = 1;
	int rc = stackcap_init(&newer.o);
	ok(rc == -EINVAL, "unknown nonzero option bytes: -EINVAL");
	struct stackcap_opts badpol = { .sz = sizeof(badpol), .output_dir = argv[1], .policy = 9 };
	rc = stackcap_init(&badpol);
	ok(rc == -EINVAL, "bad policy: -EINVAL");
	if (rc != -EINVAL)
		printf("# got %d\n", rc);
	/* LTTng mode is liblttng-stackcap's (docs/lttng.md). */
	struct stackcap_opts lt = { .sz = sizeof(lt), .lttng = 1, .no_sampling = 1 };
	rc = stackcap_init(&lt);
	ok(rc == -ENOTSUP, "libstackcap.so: .lttng = 1 is -ENOTSUP");
	if (rc != -ENOTSUP)
		printf("# got %d\n", rc);
	printf("# trace in %s\n", argv[1]);
	return 0;
}
