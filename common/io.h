/* SPDX-License-Identifier: MIT */
/* io.h: file writes that finish what they start. */
#ifndef STACKCAP_COMMON_IO_H
#define STACKCAP_COMMON_IO_H

#include <stddef.h>
#include <sys/uio.h>

/* write() all of DATA, retrying on EINTR (su_writev_all of one piece).
 * @return 0 or -errno. */
int su_write_all(int fd, const void *data, size_t len);

/* writev() all N pieces of IOV (changed: a short write moves them on),
 * retrying on EINTR.  @return 0 or -errno (-EIO: nothing written). */
int su_writev_all(int fd, struct iovec *iov, int n);

#endif
