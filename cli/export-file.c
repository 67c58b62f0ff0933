/* SPDX-License-Identifier: MIT */
/* The output file of `stackunwind export` (export.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

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
	if (x->f != stdout && rc)
		unlink(x->path);
	x->f = NULL;
	return rc;
}

void export_out_abort(struct export_out *x)
{
	if (!x->f)
		return;
	if (x->f != stdout) {
		fclose(x->f);
		unlink(x->path);
	}
	x->f = NULL;
}
