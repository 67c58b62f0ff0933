/* SPDX-License-Identifier: MIT */
/* tsd-exit-burn MS [PLUGIN]: a program whose main thread leaves by
 * pthread_exit while another thread goes on.  Used by tests/record-in-process.sh
 * and tests/lttng.sh.
 *
 *   main: early_burn (MS of CPU), starts the worker, pthread_exit; a
 *   thread-specific data destructor of its own (its key made after every
 *   library's) burns MS more in late_burn, after LTTng-UST has
 *   unregistered the thread from its RCU.
 *   worker: once the main thread is gone (a zombie: /proc/self is then
 *   empty of maps and fds), worker_burn (MS), then dlopen(PLUGIN) and
 *   its plugin_entry (MS in plugin_hot): code mapped after main's exit.
 *
 * The process ends (exit 0) when the worker returns, as glibc ends a
 * process whose last thread ends. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testdata/tdata-plugin.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double secs;
static const char *plugin;

__attribute__((noipa)) static void burn(void)
{
	double const t0 = cpu_now();
	volatile unsigned long x = 0;
	while (cpu_now() - t0 < secs)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
}

/* (noipa: not folded into one another; the empty asm after each call:
 * not a tail call, the frame stays.) */
__attribute__((noipa)) static void early_burn(void)
{
	burn();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noipa)) static void late_burn(void *arg)
{
	(void)arg;
	burn();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noipa)) static void worker_burn(void)
{
	burn();
	__asm__ volatile("" ::: "memory");
}

/* Whether the main thread is a zombie (its state in /proc/self/stat). */
static int main_gone(void)
{
	char buf[512];
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return 1;
	size_t const n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return !p || p[2] == 'Z';
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000 && !main_gone(); i++)
		usleep(10000);
	worker_burn();
	if (plugin) {
		void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
		tdata_plugin_entry_fn fn = h ? (tdata_plugin_entry_fn)dlsym(h, TDATA_PLUGIN_ENTRY) : NULL;
		if (!fn) {
			fprintf(stderr, "tsd-exit-burn: %s: %s\n", plugin, dlerror());
			exit(1);
		}
		fn(secs);
	}
	/* (tests/lttng.sh: lttng-ust's own threads keep such a process alive
	 * once this thread ends, as without stackcap; it is killed then.) */
	fputs("tsd-exit-burn: worker done\n", stderr);
	return NULL;
}

int main(int argc, char **argv)
{
	secs = (argc > 1 ? atoi(argv[1]) : 300) / 1000.0;
	plugin = argc > 2 ? argv[2] : NULL;
	pthread_key_t key;
	pthread_t t;
	if (pthread_key_create(&key, late_burn) != 0 || pthread_setspecific(key, &key) != 0)
		return 1;
	early_burn();
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}
