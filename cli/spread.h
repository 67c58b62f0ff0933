/* SPDX-License-Identifier: MIT */
/* Threads started on another CPU than the thread starting them.
 *
 * A -j 2 read of a 150k-sample trace lasts 60-80 ms.  On this project's
 * machines (2-vCPU VMs whose kernel packs tasks on few vCPUs:
 * sched_vcpu_pack on its command line) stackunwind's part thread started
 * on its creator's CPU 13 times in 15, the two taking turns there for up
 * to 35 ms while the other CPU idled (perf sched timehist).  So a thread
 * is created with an affinity that leaves out its creator's CPU, which
 * places it elsewhere, and given the process's whole set back as soon as
 * it is placed: a placement, not a pin.  The scheduler moves it as it
 * likes afterwards.  The creator goes on working on its CPU (stackunwind's
 * part 0, the pipeline's reader): leaving that CPU out is right on any
 * kernel.  With one CPU allowed (taskset) nothing is done. */
#ifndef STACKCAP_CLI_SPREAD_H
#define STACKCAP_CLI_SPREAD_H

#include <pthread.h>
#include <sched.h>

struct su_spread {
	cpu_set_t all;           /* the process's CPUs, as sched_getaffinity gave them */
	int cpu;                 /* the creator's CPU when su_spread_init ran */
	int ok;                  /* more than one CPU, the creator's among them */
};

/* The calling thread's CPUs and the one it is on, into *S. */
void su_spread_init(struct su_spread *s);

/* pthread_create(TH, NULL, FN, ARG), the thread placed on another CPU
 * than S's creator's when S allows it.  @return pthread_create's. */
int su_spread_create(const struct su_spread *s, pthread_t *th, void *(*fn)(void *), void *arg);

#endif
