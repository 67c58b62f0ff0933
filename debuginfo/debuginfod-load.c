/* libdebuginfod loaded with dlopen at the first lookup that needs it
 * (debuginfod-load.h).  Linked in, it loads libcurl, gnutls, krb5, ldap,
 * p11-kit and some thirty more libraries, and runs their constructors, at
 * every start: ~4 ms, more than all the work of a second run over a small
 * perf.data.  Most runs never ask a server (DEBUGINFOD_URLS unset, or every
 * file found locally). */
#ifdef HAVE_DEBUGINFOD
#include <dlfcn.h>
#include <errno.h> /* program_invocation_short_name */
#include <pthread.h>
#include <stdio.h>

#include "debuginfo/debuginfod-load.h"

#define SONAME "libdebuginfod.so.1"

static struct su_debuginfod_api api;
static int api_ok;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	/* RTLD_NODELETE: its libraries' exit handlers stay valid to the end. */
	void *h = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		const char *e = dlerror();
		fprintf(stderr, "%s: debuginfod: cannot load %s (%s): no files fetched from servers "
				"(apt-get install libdebuginfod1)\n", program_invocation_short_name, SONAME, e ? e : "?");
		return;
	}
	api.begin = (__typeof__(api.begin))dlsym(h, "debuginfod_begin");
	api.end = (__typeof__(api.end))dlsym(h, "debuginfod_end");
	api.find_debuginfo = (__typeof__(api.find_debuginfo))dlsym(h, "debuginfod_find_debuginfo");
	api.find_executable = (__typeof__(api.find_executable))dlsym(h, "debuginfod_find_executable");
	api_ok = api.begin && api.end && api.find_debuginfo && api.find_executable;
	if (!api_ok)
		fprintf(stderr, "%s: debuginfod: %s lacks the calls used: no files fetched from servers\n",
			program_invocation_short_name, SONAME);
}

const struct su_debuginfod_api *su_debuginfod_api(void)
{
	pthread_once(&once, load);
	return api_ok ? &api : NULL;
}
#endif
