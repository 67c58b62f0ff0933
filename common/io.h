/* SPDX-License-Identifier: MIT */
/* io.h: file reads and writes that finish what they start. */
#ifndef STACKCAP_COMMON_IO_H
#define STACKCAP_COMMON_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Up to LEN bytes into DST, fewer only at the end of the file or stream:
 * from offset OFF (pread), or with OFF < 0 from where FD is (read).
 * EINTR is retried, and a non-blocking FD (as a shell may leave standard
 * input) is waited on rather than failed.  @return the bytes read, or
 * -errno. */
ssize_t su_read_full(int fd, void *dst, size_t len, off_t off);

/* write() all of DATA, retrying on EINTR (su_writev_all of one piece).
 * @return 0 or -errno. */
int su_write_all(int fd, const void *data, size_t len);

/* writev() all N pieces of IOV (changed: a short write moves them on),
 * retrying on EINTR.  @return 0 or -errno (-EIO: nothing written). */
int su_writev_all(int fd, struct iovec *iov, int n);

/* "/proc/thread-self/REST" into BUF (SIZE bytes; "" when too small): the
 * calling thread's view of its process.  Once the main thread has left by
 * pthread_exit, /proc/self is that zombie's: no maps, no fds, no exe,
 * while the program's other threads go on.  "/proc/self/REST" where
 * /proc/thread-self is missing (kernels before 3.17, /proc not mounted).
 * Async-signal-safe.  @return BUF. */
const char *su_proc_self_path(char *buf, size_t size, const char *rest);

/* FD's bytes from its start, at most MAX, appended to OUT (in the kernel
 * where it can: copy_file_range, else read and write); *BYTES counts
 * them as they go.  @return 0 at FD's end or MAX, or -errno. */
int su_copy_fd(int fd, int out, uint64_t max, uint64_t *bytes);

/* The open-file limit's soft value raised to the hard one (at most
 * 1,048,576): a trace of a busy machine holds thousands of stream files,
 * and the usual soft limit is 1,024.  @return the soft limit it had, for
 * a command started from here, which must see its own (setrlimit before
 * exec: a program may still use select(), or close every fd up to the
 * limit); RLIM_INFINITY when nothing changed. */
rlim_t su_nofile_raise(void);
/* The soft limit set back to WAS (what su_nofile_raise returned;
 * RLIM_INFINITY: nothing to do).  Two system calls: async-signal-safe,
 * for a forked child before exec. */
void su_nofile_restore(rlim_t was);

#endif
