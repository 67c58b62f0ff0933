/* SPDX-License-Identifier: MIT */
/* Threads started on another CPU (spread.h). */
#include <pthread.h>
#include <sched.h>

#include "cli/spread.h"

void su_spread_init(struct su_spread *s)
{
	CPU_ZERO(&s->all);
	s->cpu = sched_getcpu();
	/* sched_getaffinity fails past CPU_SETSIZE (1024) CPUs: then no hint. */
	s->ok = !sched_getaffinity(0, sizeof(s->all), &s->all) && s->cpu >= 0 && s->cpu < CPU_SETSIZE &&
		CPU_ISSET(s->cpu, &s->all) && CPU_COUNT(&s->all) > 1;
}

int su_spread_create(const struct su_spread *s, pthread_t *th, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int hinted = 0;
	if (s->ok && !pthread_attr_init(&attr)) {
		cpu_set_t away = s->all;
		CPU_CLR(s->cpu, &away);
		hinted = !pthread_attr_setaffinity_np(&attr, sizeof(away), &away);
		if (!hinted)
			pthread_attr_destroy(&attr);
	}
	int const rc = pthread_create(th, hinted ? &attr : NULL, fn, arg);
	if (hinted) {
		pthread_attr_destroy(&attr);
		/* Placed when pthread_create returns (glibc sets a new
		 * thread's affinity while it waits to start, then wakes it on
		 * a CPU of that set): widening the set now moves nothing, it
		 * only ends the pin.  Should it fail, the thread keeps off one
		 * CPU: no harm beyond that. */
		if (!rc)
			pthread_setaffinity_np(*th, sizeof(s->all), &s->all);
	}
	return rc;
}
