/* SPDX-License-Identifier: MIT */
/*
 * trace-dir.c: what a stackcap trace directory says of itself before its
 * streams are read: its metadata names the tracer and a format version we
 * know, the sampler that recorded it, the event table of `stackcap record
 * -e` (version 4), and the bytes it holds on disk.
 */
#include <errno.h>
#include <inttypes.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctf-layout.h"
#include "trace/reader-internal.h"
#include "trace/stackcap-reader.h"

/* Read DIR/metadata and check it names a stackcap trace of a version we
 * know.  @return 0, or -EINVAL with a message. */
int su_trace_check_metadata(const char *dir, char *msg, size_t msglen)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	int const fd = su_open_regular(path, O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		int const e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(msg, msglen, "%s is not a stackcap trace: %s: %s", dir, path,
			 e == EINVAL ? "not a regular file" : e == ELOOP ? "a symbolic link" : strerror(e));
		return -EINVAL;
	}
	char line[1024];
	int tracer = 0;
	long version = -1;
	char other[64] = "";
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "tracer_name = \"stackcap\";", 25) == 0)
			tracer = 1;
		else if (strncmp(p, "tracer_name = \"", 15) == 0 && !other[0])
			sscanf(p + 15, "%63[^\"]", other); /* to say which producer it is */
		else if (strncmp(p, "stackcap_trace_version = ", 25) == 0)
			version = strtol(p + 25, NULL, 10);
	}
	fclose(f);
	if (!tracer && other[0]) {
		snprintf(msg, msglen, "%s is not a stackcap trace (its metadata names tracer \"%s\", not \"stackcap\")",
			 dir, other);
		return -EINVAL;
	}
	if (!tracer) {
		snprintf(msg, msglen, "%s is not a stackcap trace (its metadata does not name tracer \"stackcap\")", dir);
		return -EINVAL;
	}
	if (version < CTF_TRACE_VERSION || version > CTF_TRACE_VERSION_OFF_CPU) {
		snprintf(msg, msglen, "%s: stackcap trace format version %ld not supported (this reader knows %d to %d)",
			 dir, version, CTF_TRACE_VERSION, CTF_TRACE_VERSION_OFF_CPU);
		return -EINVAL;
	}
	return 0;
}

/* DIR/metadata opened for reading (a regular file, not through a
 * symlink), or NULL. */
static FILE *metadata_open(const char *dir)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	int const fd = su_open_regular(path, O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f && fd >= 0)
		close(fd);
	return f;
}

int su_stackcap_trace_sampler(const char *dir, char *buf, size_t len)
{
	char line[1024];
	FILE *f = metadata_open(dir);
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f)) {
		const char *p = line + strspn(line, " \t");
		if (strncmp(p, "stackcap_sampler = \"", 20) == 0) {
			snprintf(buf, len, "%.*s", (int)strcspn(p + 20, "\""), p + 20);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	if (!found)
		snprintf(buf, len, "in-process");
	return found;
}

int su_trace_packets_whole(const char *dir)
{
	FILE *f = metadata_open(dir);
	if (!f)
		return 0;
	char line[1024];
	int whole = 0;
	/* The env block comes before the event classes: stop at the first. */
	while (!whole && fgets(line, sizeof(line), f) && strncmp(line, "event {", 7) != 0) {
		const char *p = line + strspn(line, " \t");
		whole = strcmp(p, "stackcap_packets_whole = 1;\n") == 0;
	}
	fclose(f);
	return whole;
}

/* The event table of DIR's metadata (versions 4, 5: env.stackcap_events
 * and env.stackcap_event_I, docs/trace-format.md): *OUT holds N names, or
 * none.  0 or -ENOMEM. */
int su_trace_event_table(const char *dir, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char line[1024];
	FILE *f = metadata_open(dir);
	if (!f)
		return 0;
	long count = -1;
	char **v = NULL;
	int rc = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line + strspn(line, " \t");
		unsigned long i;
		int at = 0;
		if (count < 0 && sscanf(p, "stackcap_events = %ld;", &count) == 1) {
			if (count <= 0 || count > 65536) {
				count = 0;
				break;
			}
			if (!(v = calloc((size_t)count, sizeof(*v)))) {
				rc = -ENOMEM;
				break;
			}
		} else if (v && sscanf(p, "stackcap_event_%lu = \"%n", &i, &at) == 1 && at && i < (unsigned long)count &&
			   !v[i]) {
			size_t const len = strcspn(p + at, "\"\n");
			if (!(v[i] = strndup(p + at, len))) {
				rc = -ENOMEM;
				break;
			}
		}
	}
	fclose(f);
	/* A name missing from the table: named by its index. */
	for (long i = 0; v && !rc && i < count; i++)
		if (!v[i] && asprintf(&v[i], "event%ld", i) < 0) {
			v[i] = NULL;
			rc = -ENOMEM;
		}
	if (rc || count <= 0) {
		for (long i = 0; v && i < count; i++)
			free(v[i]);
		free(v);
		return rc;
	}
	*out = v;
	*n = (size_t)count;
	return 0;
}

int su_stackcap_trace_probe(const char *dir)
{
	char msg[16];
	return su_trace_check_metadata(dir, msg, sizeof(msg)) == 0;
}

/* Bytes of the regular files under DIR, DEPTH levels down at most. */
static uint64_t dir_bytes(const char *dir, int depth)
{
	DIR *d = depth > 0 ? opendir(dir) : NULL;
	if (!d)
		return 0;
	uint64_t total = 0;
	struct dirent *e;
	struct stat sb;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(sb.st_mode)) {
			total += (uint64_t)sb.st_size;
		} else if (S_ISDIR(sb.st_mode) && !ctf_side_dir(e->d_name)) {
			char sub[8192];
			snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
			total += dir_bytes(sub, depth - 1);
		}
	}
	closedir(d);
	return total;
}

/* Bytes of the recording under DIR: its stream files (an LTTng session
 * directory holds its traces in subdirectories, a few levels down; a
 * crafted one nested deeper is not followed), not the perf maps and
 * archived binaries a stackcap trace may hold beside them. */
uint64_t su_trace_dir_bytes(const char *dir)
{
	return dir_bytes(dir, 16);
}
