/* SPDX-License-Identifier: MIT */
/* The output file of `stackunwind export` (export.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/export.h"

int export_out_open(struct export_out *x, const char *path, char *err, size_t errlen)
{
	x->path = path;
	if (!strcmp(path, "-")) {
		x->f = stdout;
		return 0;
	}
	x->f = fopen(path, "wb");
	if (!x->f) {
		int const e = errno;
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(e));
		return -e;
	}
	/* A run that fails removes its half-written file; never what is not
	 * a file of ours to remove (-o /dev/full, a FIFO, a symlink to one). */
	struct stat sb;
	x->regular = !fstat(fileno(x->f), &sb) && S_ISREG(sb.st_mode);
	/* Written in 1 MB writes, not stdio's 4 KB (a file's st_blksize): a
	 * speedscope file of a 150k-sample trace is 24 MB, ~6,000 write
	 * calls, 35-60 ms of the whole run's 165.  Before any output, as
	 * setvbuf wants; glibc takes no size without a buffer.  Without
	 * one (out of memory), stdio's own. */
	if ((x->buf = malloc(EXPORT_OUT_BUF)) && setvbuf(x->f, x->buf, _IOFBF, EXPORT_OUT_BUF)) {
		free(x->buf);
		x->buf = NULL;
	}
	return 0;
}

int export_out_finish(struct export_out *x, struct export_model *m, int pprof, const struct export_info *info,
		      char *err, size_t errlen)
{
	err[0] = 0;
	int rc = pprof ? export_pprof_write(m, info, x->f, err, errlen)
		       : export_speedscope_write(m, info, x->f, err, errlen);
	if (fflush(x->f) || ferror(x->f)) {
		int const e = errno ? errno : EIO;
		if (!rc)
			rc = -e;
		if (!err[0] || rc == -e)
			snprintf(err, errlen, "write error on '%s': %s", x->path, strerror(e));
	}
	if (x->f != stdout && fclose(x->f) && !rc) {
		rc = -errno;
		snprintf(err, errlen, "write error on '%s': %s", x->path, strerror(errno));
	}
	if (x->f != stdout && rc && x->regular)
		unlink(x->path);
	x->f = NULL;
	free(x->buf); /* after fclose: stdio wrote from it until then */
	x->buf = NULL;
	return rc;
}

void export_out_abort(struct export_out *x)
{
	if (!x->f)
		return;
	if (x->f != stdout) {
		fclose(x->f);
		if (x->regular)
			unlink(x->path);
	}
	x->f = NULL;
	free(x->buf);
	x->buf = NULL;
}
