/* SPDX-License-Identifier: MIT */
/* A live process's files as it sees them (proc-files.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "record/proc-files.h"

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
	Elf *const elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -1;
	const void *bid = NULL;
	ssize_t const n = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &bid) : -1;
	int rc = -1;
	if (n > 0 && (size_t)n <= len) {
		memcpy(id, bid, (size_t)n);
		rc = (int)n;
	}
	elf_end(elf);
	return rc;
}

/* Does the file at PATH open, and hold ID (when ID_LEN)?  Its build-id
 * into WANT_ID when asked. */
static int candidate(const char *path, const uint8_t *id, size_t id_len, uint8_t *want_id, size_t *want_id_len)
{
	int const fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (ok && (id_len || want_id)) {
		uint8_t got[64];
		int const n = rec_file_build_id(fd, got, sizeof(got));
		if (id_len)
			ok = n == (int)id_len && memcmp(got, id, id_len) == 0;
		else if (want_id && want_id_len) {
			*want_id_len = n > 0 && (size_t)n <= *want_id_len ? (size_t)n : 0;
			if (*want_id_len)
				memcpy(want_id, got, *want_id_len);
		}
	}
	close(fd);
	return ok;
}

int rec_proc_file_path(pid_t pid, uint64_t start, uint64_t end, const char *path, int other_view,
		       const uint8_t *id, size_t id_len, uint8_t *want_id, size_t *want_id_len, int check_here,
		       char *buf, size_t len)
{
	size_t const wcap = want_id_len ? *want_id_len : 0;
	/* The path as the process names it, without the kernel's mark of
	 * a file gone from its directory. */
	static const char deleted[] = " (deleted)";
	size_t plen = strlen(path);
	if (plen > sizeof(deleted) - 1 && !strcmp(path + plen - (sizeof(deleted) - 1), deleted))
		plen -= sizeof(deleted) - 1;
	char here[PATH_MAX];
	int const have_here = (size_t)snprintf(here, sizeof(here), "%.*s", (int)plen, path) < sizeof(here);
	/* 1. The mapping's own file; 2. through the process's root, in its
	 * mount namespace. */
	for (int c = 1; c <= 2; c++) {
		if (c == 1)
			snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
		else if (other_view <= 0 || path[0] != '/' ||
			 (size_t)snprintf(buf, len, "/proc/%d/root%.*s", (int)pid, (int)plen, path) >= len)
			continue;
		if (want_id_len)
			*want_id_len = wcap;
		if (!candidate(buf, id, id_len, want_id, want_id_len))
			continue;
		/* Is the file here the same (by its build-id)?  When not,
		 * a reader would not find it at its path. */
		const uint8_t *const known = id_len ? id : want_id;
		size_t const known_len = id_len ? id_len : want_id_len ? *want_id_len : 0;
		return !check_here || (known_len && have_here && candidate(here, known, known_len, NULL, NULL)) ? 0 : 1;
	}
	/* 3. The path here: a chroot's files have it in /proc/PID/maps
	 * (paths are shown from the reader's root); another mount
	 * namespace's would be other files. */
	if (other_view != 1 && have_here && (size_t)snprintf(buf, len, "%s", here) < len) {
		if (want_id_len)
			*want_id_len = wcap;
		if (candidate(buf, id, id_len, want_id, want_id_len))
			return 0;
	}
	if (want_id_len)
		*want_id_len = 0;
	return -ENOENT;
}
