/* SPDX-License-Identifier: MIT */
/* A /proc/PID/stat (or task/TID/stat) line: the task's state letter and
 * its process's thread count.  A main thread that left by pthread_exit is
 * a zombie ('Z') still counted among the threads while others run; a
 * process whose threads have all ended is a zombie counting 1.  Header
 * only: the in-process capture library and the recorder both read it. */
#ifndef STACKCAP_COMMON_PROC_STAT_H
#define STACKCAP_COMMON_PROC_STAT_H

#include <stdlib.h>
#include <string.h>

/* From LINE (NUL-terminated): *STATE and num_threads (field 20) into
 * *THREADS.  The comm (field 2) may hold ')' and spaces: the fields
 * follow its last ')'.  @return 0, -1 when LINE is not such a line. */
static inline int su_proc_stat_parse(const char *line, char *state, long *threads)
{
	const char *p = strrchr(line, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 20; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	*threads = strtol(p, NULL, 10);
	return 0;
}

#endif
