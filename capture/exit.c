/* SPDX-License-Identifier: MIT */
/*
 * exit.c: a process that ends without exit() (a child's _exit, a fatal
 * signal we forward) runs no destructor, so its trace would end with the
 * packets in flight lost and no process_end.  _exit is interposed to let
 * the writer thread finish the trace first, waiting a bounded time: _exit
 * may be called from a signal handler that interrupted malloc, where the
 * writer could block; then the process ends anyway, a second later.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/capture-internal.h"

/* How long a process ending without exit() waits for its trace. */
#define EXIT_FLUSH_TIMEOUT_MS 1000

void stackcap_exit_flush(void)
{
	if (!atomic_load(&stackcap_g.running))
		return;
	/* A vfork child shares the parent's memory, rings and writer: the
	 * trace is the parent's, and it goes on. */
	if (getpid() != stackcap_g.pid)
		return;
	atomic_store(&stackcap_g.running, 0);
	writer_finish_bounded(EXIT_FLUSH_TIMEOUT_MS);
}

/* exit_group is what glibc's _exit does; no lookup needed in a handler. */
STACKCAP_API void _exit(int status)
{
	stackcap_exit_flush();
	for (;;)
		syscall(SYS_exit_group, status);
}

STACKCAP_API void _Exit(int status)
{
	_exit(status);
}
