/* libtdata-plugin.so: the plugin of tdata-dlopen (see dlopen.c).
 *
 *   plugin_entry -> plugin_hot
 *
 * Built as a libtool module (-module -avoid-version) and loaded with dlopen;
 * it never appears in a program's DT_NEEDED.
 */
#include "tdata.h"
#include "tdata-plugin.h"

TD_FRAME static uint64_t plugin_hot(double seconds)
{
	volatile uint64_t acc = 7;
	double end = TD_THREAD_CPU() + seconds;

	for (;;) {
		for (unsigned i = 0; i < TD_CLOCK_EVERY; i++)
			acc = TD_MIX(acc) * 3 + i;
		if (TD_THREAD_CPU() >= end)
			break;
	}
	return acc;
}

/* Looked up with dlsym by tdata-dlopen. */
TD_FRAME uint64_t plugin_entry(double seconds)
{
	uint64_t r = plugin_hot(seconds);

	TD_KEEP();
	return r + 9;
}
