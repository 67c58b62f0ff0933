/* libtdata-evlib.so: a shared library with an SDT marker and a function
 * to put a uprobe on, for stackcap record -e on a library's events
 * (tests/events.sh).  Linked by tdata-evlib (DT_NEEDED), so that a marker
 * named without its file is found through the command's libraries.
 *
 *   evlib_run -> evlib_hit     marker tdata_lib:lib_tick in evlib_hit
 */
#include "tdata.h"
#include "tdata-evlib.h"

#ifdef HAVE_SYS_SDT_H
#include <sys/sdt.h>
#define TD_LIB_MARK(i) DTRACE_PROBE1(tdata_lib, lib_tick, i)
#else
#define TD_LIB_MARK(i) ((void)(i))
#endif

static volatile uint64_t lib_sink;

TD_FRAME void evlib_hit(unsigned i)
{
	TD_LIB_MARK(i);
	lib_sink += i;
	TD_KEEP();
}

TD_FRAME void evlib_run(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		evlib_hit(i);
	TD_KEEP();
}
