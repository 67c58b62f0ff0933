/* tdata-events: the SDT marker tdata:guarded and its semaphore
 * (tdata_guarded_semaphore, in .probes): the marker's site is reached only
 * while the semaphore is raised, as programs guard costly probe arguments
 * (PROVIDER_NAME_ENABLED() of dtrace -h).  A tracer that does not raise
 * it records nothing here. */
#include "tdata.h"
#include "tdata-events.h"

#ifdef HAVE_SYS_SDT_H
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
__extension__ unsigned short tdata_guarded_semaphore __attribute__((unused)) __attribute__((section(".probes")));
#define TD_GUARDED_ENABLED() __builtin_expect(tdata_guarded_semaphore, 0)
#define TD_GUARDED(i) DTRACE_PROBE1(tdata, guarded, i)
#else
#define TD_GUARDED_ENABLED() 0
#define TD_GUARDED(i) ((void)(i))
#endif

static volatile uint64_t sink;

TD_FRAME void guarded_site(unsigned i)
{
	if (TD_GUARDED_ENABLED())
		TD_GUARDED(i);
	sink += i;
	TD_KEEP();
}
