/* SPDX-License-Identifier: MIT */
/*
 * proc-files.h: the files a live process maps, opened as it sees them.
 *
 * A process in a container (another mount namespace) or under chroot
 * names its files by its own paths: the kernel's MMAP2 records hold
 * them, and the file at the same path here is another one (the host's
 * libc for the container's) or none.  So is a file deleted or replaced
 * since it was mapped ("PATH (deleted)", a package upgraded under a
 * running daemon).  The recorder reads a file's build-id and program
 * headers (the load bias) from the file the process maps, found in this
 * order:
 *   1. /proc/PID/map_files/START-END: that very mapping's file (needs
 *      CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE: root);
 *   2. PATH inside /proc/PID/root (openat2 RESOLVE_IN_ROOT: the
 *      container's own symlinks stay in it), when the process's root or
 *      mount namespace is not the recorder's;
 *   3. PATH here, unless the process is in another mount namespace.
 * Each is taken only when it is a regular file (looked at through an
 * O_PATH descriptor first: a FIFO or a device put at a path is never
 * opened) and is the file the process maps: the build-id the kernel
 * recorded, else the device and inode of its mapping, else (neither
 * known) only the first, which is the mapping's own.  perf does the same
 * through /proc/PID/root and setns.
 */
#ifndef STACKCAP_RECORD_PROC_FILES_H
#define STACKCAP_RECORD_PROC_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Does PID see another file system tree than this process: 1 another
 * mount namespace, 2 another root (chroot) in ours, 0 ours; or -errno
 * (gone, or not ours to look at). */
int rec_proc_other_view(pid_t pid);

/* The GNU build-id of the ELF file open at FD into ID (at most LEN
 * bytes).  @return its length, or -1 when it has none or is no ELF. */
int rec_file_build_id(int fd, uint8_t *id, size_t len);

/* The file of PID's mapping [START, END) of PATH (as the process's
 * records name it, " (deleted)" at its end allowed), opened read-only,
 * by the order above; OTHER_VIEW is rec_proc_other_view's answer; ID
 * (ID_LEN bytes, 0: none) the build-id recorded, DEV:INO (INO 0: not
 * known) the mapping's file as /proc/PID/maps or MMAP2 give it.  With
 * HERE not NULL, *HERE is 1 when the file at PATH here is that file too
 * (by build-id: a reader finds it there), else 0.  @return the
 * descriptor, or -ENOENT when no candidate is the file. */
int rec_proc_file_open(pid_t pid, uint64_t start, uint64_t end, const char *path, int other_view,
		       const uint8_t *id, size_t id_len, uint64_t dev, uint64_t ino, int *here);

/* The perf map PID's JIT writes (node --perf-basic-prof, a Java agent:
 * /tmp/perf-N.map, N its pid as it sees it, NStgid), as PID sees it:
 * inside /proc/PID/root when OTHER_VIEW (rec_proc_other_view), else
 * here (the process may be gone: then only here; OTHER_VIEW < 0: not a
 * process of this machine's now, a perf.data file's or one gone: here).
 * Taken only when a regular file owned by OWNER (the process's user, as
 * seen while it ran; (uid_t)-1: not known), root or us: anyone may put a
 * file at a /tmp path.  @return the
 * descriptor (read-only), or -errno (-ENOENT: none, -EPERM: another
 * user's). */
int rec_proc_jit_map_open(pid_t pid, int other_view, uid_t owner);

#endif
