/* Format dispatch: each reader says whether PATH is its format (probe)
 * and reads it into the one sample model. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/trace-read.h"
#include "trace/lttng-reader.h"
#include "trace/perf-data.h"
#include "trace/reader-internal.h"

enum su_trace_format su_trace_probe(const char *path)
{
	struct stat sb;
	if (!strcmp(path, "-")) /* standard input: perf record -o - | ... */
		return SU_TRACE_PERF;
	if (stat(path, &sb))
		return SU_TRACE_UNKNOWN;
	if (S_ISDIR(sb.st_mode) && su_stackcap_trace_probe(path))
		return SU_TRACE_STACKCAP;
	if (S_ISDIR(sb.st_mode) && su_lttng_trace_probe(path))
		return SU_TRACE_LTTNG;
	if (S_ISDIR(sb.st_mode) && su_perf_data_probe(path)) /* perf record --threads */
		return SU_TRACE_PERF;
	if (S_ISREG(sb.st_mode) && su_perf_data_probe(path))
		return SU_TRACE_PERF;
	return SU_TRACE_UNKNOWN;
}

const char *su_trace_format_name(enum su_trace_format f)
{
	switch (f) {
	case SU_TRACE_STACKCAP: return "stackcap trace";
	case SU_TRACE_LTTNG: return "LTTng-UST trace";
	case SU_TRACE_PERF: return "perf.data";
	case SU_TRACE_UNKNOWN: break;
	}
	return "unknown";
}

int su_trace_read(const char *path, const struct su_reader_opts *opts,
		  const struct su_reader_callbacks *cb,
		  struct su_reader_stats *stats, char *err, size_t errlen)
{
	struct stat sb;
	switch (su_trace_probe(path)) {
	case SU_TRACE_PERF:
		return su_perf_data_read(path, opts, cb, stats, err, errlen);
	case SU_TRACE_STACKCAP:
		break;
	case SU_TRACE_LTTNG:
		return su_lttng_trace_read(path, opts, cb, stats, err, errlen);
	case SU_TRACE_UNKNOWN:
		/* A file: ours are directories, so say which files we read.
		 * Otherwise the stackcap reader gives the precise message
		 * (missing path, missing or foreign metadata, wrong version). */
		if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
			memset(stats, 0, sizeof(*stats));
			/* Unreadable: say why; a FIFO or device is never opened to wait. */
			int const fd = su_open_regular(path, 0);
			if (fd < 0) {
				int const e = errno;
				snprintf(err, errlen, "%s: %s", path, e == EINVAL ? "not a regular file" : strerror(e));
				return -e;
			}
			close(fd);
			snprintf(err, errlen, "%s is neither a stackcap trace directory nor a perf.data file", path);
			return -EINVAL;
		}
		break;
	}
	return su_stackcap_trace_read(path, opts, cb, stats, err, errlen);
}
