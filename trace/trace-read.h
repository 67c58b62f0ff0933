/* Opening any trace stackunwind reads: a stackcap trace directory, an
 * LTTng-UST trace with stackcap:* events or a perf.data file, each through a
 * reader of the same signature, so every command works on every format. */
#ifndef STACKCAP_TRACE_READ_H
#define STACKCAP_TRACE_READ_H

#include "trace/stackcap-reader.h"

enum su_trace_format {
	SU_TRACE_UNKNOWN = 0,
	SU_TRACE_STACKCAP,     /* our CTF trace directory (docs/trace-format.md) */
	SU_TRACE_LTTNG,        /* an LTTng-UST trace (directory) with stackcap:* events (docs/lttng.md) */
	SU_TRACE_PERF,         /* a perf.data file (perf record, file mode) */
};

/* The format of PATH, from its first bytes / metadata; SU_TRACE_UNKNOWN
 * when it is none we read (or cannot be opened). */
enum su_trace_format su_trace_probe(const char *path);

/* Name of a format, for messages ("stackcap trace", ...). */
const char *su_trace_format_name(enum su_trace_format f);

/* Read PATH, whatever its format, with su_stackcap_trace_read()'s
 * contract (callbacks in time order, return values, ERR).  A path that is
 * no trace we know is an error naming the formats we read. */
int su_trace_read(const char *path, const struct su_reader_opts *opts,
		  const struct su_reader_callbacks *cb,
		  struct su_reader_stats *stats, char *err, size_t errlen);

#endif
