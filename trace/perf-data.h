/* Reading perf.data files (`perf record --call-graph dwarf`) into the same
 * sample model as a stackcap trace: processes from COMM/FORK/EXIT, maps
 * generations from MMAP/MMAP2, samples from REGS_USER + STACK_USER
 * (docs/perf-data.md).  File mode only (not `perf record -o -`); samples
 * are delivered in perf's order (time, FINISHED_ROUND flushing), with
 * memory bounded by one round of events, never the file length. */
#ifndef STACKCAP_PERF_DATA_H
#define STACKCAP_PERF_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "trace/stackcap-reader.h"

/* Nonzero when PATH is a regular file starting with perf's magic. */
int su_perf_data_probe(const char *path);

/* Read the perf.data file PATH with su_stackcap_trace_read()'s contract:
 * callbacks in time order; 0 when all was read, >0 when some of it could
 * not be (warnings on stderr, the readable part delivered), a callback's
 * nonzero return, or <0 with a message in ERR when nothing can be read
 * (not a perf.data file, pipe mode, other byte order, damaged header or
 * attributes).  opts->source is ignored. */
int su_perf_data_read(const char *path, const struct su_reader_opts *opts,
		      const struct su_reader_callbacks *cb,
		      struct su_reader_stats *stats, char *err, size_t errlen);

/* The same on an open file descriptor (the fuzz target's entry). */
int su_perf_data_read_fd(int fd, const char *name, const struct su_reader_opts *opts,
			 const struct su_reader_callbacks *cb,
			 struct su_reader_stats *stats, char *err, size_t errlen);

#endif
