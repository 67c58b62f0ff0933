/* tdata-events: the marker behind a semaphore lives in its own file
 * (events-sem.c): <sys/sdt.h> gives every marker of a file a semaphore
 * once _SDT_HAS_SEMAPHORES is defined. */
#ifndef STACKCAP_TDATA_EVENTS_H
#define STACKCAP_TDATA_EVENTS_H

void guarded_site(unsigned i);

#endif
