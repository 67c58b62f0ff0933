/* SPDX-License-Identifier: MIT */
/*
 * procmaps.h: what a process already running looks like, from /proc, as
 * the perf records the kernel would have written had it been watched
 * from its start: COMM (its name), FORK (each thread but the main one)
 * and MMAP2 (each executable mapping,
 * the main executable first, then the anonymous ones, where stacks
 * are), stamped with the attach time, so the recorder reads them with
 * the same code as the live records (trace/perf-data.c).  Build-ids come from the mapped files when the
 * records are read (as for a perf.data file without them).
 */
#ifndef STACKCAP_RECORD_PROCMAPS_H
#define STACKCAP_RECORD_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/hashmap.h"

struct rec_buf {
	uint8_t *p;
	size_t len, cap;
	/* The records' sample_id also holds this id (PERF_SAMPLE_IDENTIFIER:
	 * the recorder's events are several). */
	int with_id;
	uint64_t id;
};

/* The build-ids read from the files processes map, by the file's device,
 * inode, size and modification time (the file itself, whichever mount
 * namespace names it): a machine's hundreds of processes map the same
 * few libraries, each read once.  Zeroed: empty. */
struct rec_file_ids {
	struct su_hmap map;
	struct rec_file_id {
		uint64_t dev, ino, size, mtime_ns;
		uint8_t len, id[20];
	} *e;
	size_t n, cap;
};
void rec_file_ids_free(struct rec_file_ids *ids);

/* Append PID's COMM and MMAP2 records (sample_id: pid, tid, TS) to B,
 * the build-ids of its files found in IDS or read into it.
 * @return 0, -ESRCH when the process is gone, -ENOMEM. */
int rec_proc_synthesize(struct rec_buf *b, pid_t pid, uint64_t ts, struct rec_file_ids *ids);

/* Does process PID still run a thread (not gone, not a zombie whose
 * threads have all ended)?  A main thread that left by pthread_exit is a
 * zombie while the others run. */
int rec_proc_running(pid_t pid);

/* The threads of PID now, not those ended (*TIDS malloc'd).  @return their
 * count or -errno (-ESRCH: none left). */
int rec_proc_threads(pid_t pid, pid_t **tids);

/* Every process now (*PIDS malloc'd).  @return the count or -errno. */
int rec_proc_all(pid_t **pids);

/* The process a thread belongs to (Tgid of /proc/TID/status), or -errno. */
pid_t rec_proc_tgid(pid_t tid);

#endif
