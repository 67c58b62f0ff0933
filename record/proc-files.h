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
 *   2. /proc/PID/root/PATH, when the process's root or mount namespace
 *      is not the recorder's (PATH as the process names it);
 *   3. PATH, unless the process is in another mount namespace.
 * A candidate whose build-id is not the one the kernel recorded is
 * passed over.  perf does the same through /proc/PID/root and setns.
 */
#ifndef STACKCAP_RECORD_PROC_FILES_H
#define STACKCAP_RECORD_PROC_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Does PID see another file system tree than this process: 1 another
 * mount namespace, 2 another root (chroot) in ours, 0 ours; or -errno
 * (gone, or not ours to look at: then its paths are taken as ours). */
int rec_proc_other_view(pid_t pid);

/* The GNU build-id of the ELF file open at FD into ID (at most LEN
 * bytes).  @return its length, or -1 when it has none or is no ELF. */
int rec_file_build_id(int fd, uint8_t *id, size_t len);

/* The path to open for PID's mapping [START, END) of PATH (as the
 * process's records name it, " (deleted)" at its end allowed), written
 * into BUF (LEN bytes): the first candidate above that opens and, when
 * ID_LEN > 0, holds build-id ID; OTHER_VIEW is rec_proc_other_view's
 * answer.  With WANT_ID (when ID_LEN is 0 and it is not NULL) the
 * chosen file's build-id is put there (*WANT_ID_LEN its length, 0:
 * none).  @return 0 (the file at PATH here is that file, by its
 * build-id: a reader finds it there; or CHECK_HERE is 0: not looked),
 * 1 (it is not: only the process sees it), or -ENOENT when no candidate
 * opens (or none holds ID). */
int rec_proc_file_path(pid_t pid, uint64_t start, uint64_t end, const char *path, int other_view,
		       const uint8_t *id, size_t id_len, uint8_t *want_id, size_t *want_id_len, int check_here,
		       char *buf, size_t len);

#endif
