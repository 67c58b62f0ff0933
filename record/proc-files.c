/* SPDX-License-Identifier: MIT */
/* A live process's files as it sees them (proc-files.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "debuginfo/module.h"
#include "record/proc-files.h"

#define BTRFS_MAGIC 0x9123683e /* statfs f_type: a subvolume's files show another st_dev than the mapping's */

/* The link /proc/PID/NAME points to, compared with this process's. */
static int link_differs(pid_t pid, const char *name)
{
	char p[64], theirs[256], ours[256];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, name);
	ssize_t const n = readlink(p, theirs, sizeof(theirs) - 1);
	if (n < 0)
		return -errno;
	snprintf(p, sizeof(p), "/proc/self/%s", name);
	ssize_t const m = readlink(p, ours, sizeof(ours) - 1);
	if (m < 0)
		return -errno;
	return n != m || memcmp(theirs, ours, (size_t)n) != 0;
}

int rec_proc_other_view(pid_t pid)
{
	int const ns = link_differs(pid, "ns/mnt");
	if (ns)
		return ns;
	/* The same namespace: a chroot shows as another root.  The
	 * link's text is the root as seen from here ("/" for ours). */
	int const root = link_differs(pid, "root");
	return root > 0 ? 2 : root;
}

int rec_file_build_id(int fd, uint8_t *id, size_t len)
{
	elf_version(EV_CURRENT);
	/* Read, not mapped: a file truncated under us (a container's)
	 * would raise SIGBUS in a mapping. */
	Elf *const elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -1;
	const void *bid = NULL;
	ssize_t const n = elf_kind(elf) == ELF_K_ELF ? su_elf_file_id(elf, &bid) : -1; /* a Go program's too */
	int rc = -1;
	if (n > 0 && (size_t)n <= len) {
		memcpy(id, bid, (size_t)n);
		rc = (int)n;
	}
	elf_end(elf);
	return rc;
}

/* What the file must be. */
struct want {
	const uint8_t *id;
	size_t id_len;
	uint64_t dev, ino;
};

/* O_PATH descriptor PFD (closed here): when a regular file that W says
 * is the one (ANY: when W knows nothing, any regular file), the file
 * opened for reading; else -1. */
static int take(int pfd, const struct want *w, int any)
{
	if (pfd < 0)
		return -1;
	struct stat st;
	int fd = -1;
	if (fstat(pfd, &st) == 0 && S_ISREG(st.st_mode)) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
		fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	close(pfd);
	if (fd < 0)
		return -1;
	int ok;
	if (w->id_len) {
		uint8_t got[64];
		int const n = rec_file_build_id(fd, got, sizeof(got));
		ok = n == (int)w->id_len && memcmp(got, w->id, w->id_len) == 0;
	} else if (w->ino) {
		struct statfs sf;
		ok = st.st_ino == w->ino &&
		     (st.st_dev == w->dev || (fstatfs(fd, &sf) == 0 && (uint32_t)sf.f_type == BTRFS_MAGIC));
	} else {
		ok = any;
	}
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

/* PATH (absolute) inside PID's root, its symlinks resolved there (with
 * O_NOFOLLOW in FLAGS: not its last). */
static int open_in_root(pid_t pid, const char *path, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	int const root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -1;
	struct open_how how = { .flags = (uint64_t)(O_PATH | O_CLOEXEC | flags), .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int const fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	close(root);
	return fd;
}

int rec_proc_file_open(pid_t pid, uint64_t start, uint64_t end, const char *path, int other_view,
		       const uint8_t *id, size_t id_len, uint64_t dev, uint64_t ino, int *here)
{
	struct want const w = { .id = id, .id_len = id_len, .dev = dev, .ino = ino };
	if (here)
		*here = 0;
	/* The path as the process names it, without the kernel's mark of
	 * a file gone from its directory: a path then names another file
	 * or none, only the mapping's own is it. */
	static const char deleted[] = " (deleted)";
	size_t plen = strlen(path);
	int const gone = plen > sizeof(deleted) - 1 && !strcmp(path + plen - (sizeof(deleted) - 1), deleted);
	if (gone)
		plen -= sizeof(deleted) - 1;
	char p[PATH_MAX];
	int const fits = plen < sizeof(p);
	if (fits)
		snprintf(p, sizeof(p), "%.*s", (int)plen, path);
	char mf[96];
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	int fd = take(open(mf, O_PATH | O_CLOEXEC), &w, 1);
	int from_path = 0;
	if (fd < 0 && !gone && fits && p[0] == '/' && other_view != 0)
		fd = take(open_in_root(pid, p, 0), &w, 0);
	if (fd < 0 && !gone && fits && other_view != 1) {
		fd = take(open(p, O_PATH | O_CLOEXEC), &w, 0);
		from_path = fd >= 0;
	}
	if (fd < 0)
		return -ENOENT;
	if (here && fits && !gone) {
		if (from_path) {
			*here = 1;
		} else {
			/* The same build-id at the path here: the file a
			 * reader finds. */
			uint8_t got[64];
			int const n = id_len ? (int)id_len : rec_file_build_id(fd, got, sizeof(got));
			struct want const same = { .id = id_len ? id : got, .id_len = n > 0 ? (size_t)n : 0 };
			int const h = n > 0 ? take(open(p, O_PATH | O_CLOEXEC), &same, 0) : -1;
			*here = h >= 0;
			if (h >= 0)
				close(h);
		}
	}
	return fd;
}

/* PID's pid as its own namespace names it (the last NStgid), else PID. */
static long ns_tgid(pid_t pid)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	long n = pid;
	if (!f)
		return n;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NStgid:", 7)) {
			char *last = strrchr(line, '\t');
			if (!last)
				last = strrchr(line, ' ');
			if (last)
				n = strtol(last + 1, NULL, 10);
			break;
		}
	fclose(f);
	return n > 0 ? n : pid;
}

int rec_proc_jit_map_open(pid_t pid, int other_view, uid_t owner)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/tmp/perf-%ld.map", other_view >= 0 ? ns_tgid(pid) : (long)pid);
	int const pfd = other_view > 0 ? open_in_root(pid, path, O_NOFOLLOW) : open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -ENOENT;
	int fd = -ENOENT;
	if (fstat(pfd, &st) == 0 && S_ISREG(st.st_mode)) {
		if ((owner != (uid_t)-1 && st.st_uid == owner) || st.st_uid == 0 || st.st_uid == geteuid()) {
			char p[64];
			snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
			fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
			if (fd < 0)
				fd = -errno;
		} else {
			fd = -EPERM;
		}
	}
	close(pfd);
	return fd;
}
