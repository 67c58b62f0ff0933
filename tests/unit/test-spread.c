/* SPDX-License-Identifier: MIT */
/* Threads started apart (cli/spread.c): a thread su_spread_create
 * starts runs first on another CPU than its creator's, and is then free
 * to run on every CPU the process may (a placement, not a pin); with one
 * CPU allowed it starts as pthread_create would. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "check-main.h"
#include "cli/spread.h"

/* Tries, and how many must start apart: all of them on an idle machine;
 * on a loaded one (make check -j) a thread placed apart may be moved
 * back before its first instruction, once in ~15 here.  Without the
 * placement this kernel put 2-4 of 20 apart. */
#define TRIES 40
#define APART_AT_LEAST 30

static _Atomic int first_cpu, done;

/* Notes its first CPU, then lives until told (the affinity of a thread
 * gone would be read from its creator: glibc asks for tid 0). */
static void *note_cpu(void *arg)
{
	(void)arg;
	atomic_store(&first_cpu, sched_getcpu());
	while (!atomic_load(&done))
		sched_yield();
	return NULL;
}

/* Start a thread from S, wait for its first CPU without leaving ours (a
 * creator blocked in pthread_join would leave its CPU idle, and the new
 * thread might be pulled there before it ran), check its affinity is
 * S's whole set.  @return its first CPU. */
static int start_one(const struct su_spread *s)
{
	atomic_store(&first_cpu, -2);
	atomic_store(&done, 0);
	pthread_t th;
	ck_assert_int_eq(su_spread_create(s, &th, note_cpu, NULL), 0);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(&first_cpu) == -2) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10, "the started thread did not run in 10 s");
	}
	cpu_set_t got;
	CPU_ZERO(&got);
	ck_assert_int_eq(pthread_getaffinity_np(th, sizeof(got), &got), 0);
	ck_assert_msg(CPU_EQUAL(&got, &s->all), "the started thread is left pinned: %d CPUs of %d", CPU_COUNT(&got),
		      CPU_COUNT(&s->all));
	atomic_store(&done, 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	return atomic_load(&first_cpu);
}

START_TEST(t_apart)
{
	cpu_set_t mine;
	CPU_ZERO(&mine);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	ck_assert_msg(CPU_COUNT(&mine) > 1,
		      "this test needs two CPUs to run on (it has %d): run it on a machine with two or more",
		      CPU_COUNT(&mine));
	int apart = 0;
	for (int i = 0; i < TRIES; i++) {
		/* As a process just started: its CPU little used (a kernel
		 * that packs tasks on few CPUs, as this project's VMs' do,
		 * puts a new thread beside such a creator). */
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
		struct su_spread s;
		su_spread_init(&s);
		ck_assert(s.ok);
		/* Not pinned here: a thread inherits its creator's set. */
		int const cpu = start_one(&s);
		ck_assert_msg(cpu >= 0 && CPU_ISSET(cpu, &mine), "the thread ran on CPU %d, not one of ours", cpu);
		apart += cpu != s.cpu;
	}
	ck_assert_msg(apart >= APART_AT_LEAST, "only %d of %d threads started on another CPU than their creator's", apart, TRIES);
}
END_TEST

START_TEST(t_one_cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	struct su_spread s;
	su_spread_init(&s);
	ck_assert(!s.ok);
	ck_assert(CPU_EQUAL(&s.all, &one));
	/* Nowhere else to go: it starts, on the one CPU. */
	ck_assert_int_eq(start_one(&s), s.cpu);
}
END_TEST

static Suite *spread_suite(void)
{
	Suite *s = suite_create("spread");
	TCase *tc = tcase_create("spread");
	tcase_add_test(tc, t_apart);
	tcase_add_test(tc, t_one_cpu);
	suite_add_tcase(s, tc);
	return s;
}

CHECK_MAIN(spread_suite)
