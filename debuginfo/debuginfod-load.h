/* libdebuginfod, loaded at its first use rather than with the program. */
#ifndef STACKCAP_DEBUGINFO_DEBUGINFOD_LOAD_H
#define STACKCAP_DEBUGINFO_DEBUGINFOD_LOAD_H

#include <elfutils/debuginfod.h>

/* The libdebuginfod calls the module cache makes. */
struct su_debuginfod_api {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_end) *end;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_find_executable) *find_executable;
};

/* libdebuginfod.so.1 loaded (once per process, thread-safe) and its calls.
 * @return them, or NULL when it cannot be loaded (said once on stderr). */
const struct su_debuginfod_api *su_debuginfod_api(void);

#endif
