/* SPDX-License-Identifier: MIT */
/* A running process as synthesized perf records (procmaps.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "record/procmaps.h"
#include "record/proc-files.h"
#include "common/grow.h"
#include "common/proc-stat.h"
#include "common/hash.h"

static uint8_t *buf_add(struct rec_buf *b, size_t n)
{
	if (SU_GROW(b->p, b->cap, b->len + n))
		return NULL;
	uint8_t *at = b->p + b->len;
	memset(at, 0, n);
	b->len += n;
	return at;
}

static void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* A record: header, BODY (LEN bytes, padded to 8), the sample_id of
 * TID|TIME (|IDENTIFIER: B->with_id).  Records hold at most 64 KiB: names
 * are cut well below. */
static int put_record(struct rec_buf *b, uint32_t type, uint16_t misc, const void *body, size_t len,
		      pid_t pid, uint64_t ts)
{
	size_t const padded = (len + 7) & ~(size_t)7;
	size_t const size = 8 + padded + 16 + (b->with_id ? 8 : 0);
	uint8_t *r = buf_add(b, size);
	if (!r)
		return -ENOMEM;
	st32(r, type);
	memcpy(r + 4, &misc, 2);
	uint16_t const sz = (uint16_t)size;
	memcpy(r + 6, &sz, 2);
	memcpy(r + 8, body, len);
	st32(r + 8 + padded, (uint32_t)pid);
	st32(r + 12 + padded, (uint32_t)pid);
	st64(r + 16 + padded, ts);
	if (b->with_id)
		st64(r + 24 + padded, b->id);
	return 0;
}

/* An MMAP2 record: the file's identity as the kernel gives it, its
 * build-id (ID_LEN bytes, MMAP2's at most 20: PERF_RECORD_MISC_MMAP_BUILD_ID)
 * when known, else device and inode. */
static int put_mmap2(struct rec_buf *b, pid_t pid, uint64_t ts, uint64_t start, uint64_t end, uint64_t pgoff,
		     unsigned maj, unsigned min, uint64_t ino, const uint8_t *id, size_t id_len, uint32_t prot,
		     const char *path)
{
	uint8_t body[8 + 24 + 24 + 8 + PATH_MAX];
	size_t const plen = strnlen(path, PATH_MAX - 1);
	uint16_t misc = PERF_RECORD_MISC_USER;
	st32(body, (uint32_t)pid);
	st32(body + 4, (uint32_t)pid);
	st64(body + 8, start);
	st64(body + 16, end - start);
	st64(body + 24, pgoff);
	if (id_len && id_len <= 20) {
		memset(body + 32, 0, 24);
		body[32] = (uint8_t)id_len;
		memcpy(body + 36, id, id_len);
		misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else {
		st32(body + 32, maj);
		st32(body + 36, min);
		st64(body + 40, ino);
		st64(body + 48, 0);
	}
	st32(body + 56, prot);
	st32(body + 60, MAP_PRIVATE);
	memcpy(body + 64, path, plen);
	body[64 + plen] = 0;
	return put_record(b, PERF_RECORD_MMAP2, misc, body, 64 + plen + 1, pid, ts);
}

void rec_file_ids_free(struct rec_file_ids *ids)
{
	su_hmap_free(&ids->map);
	free(ids->e);
	*ids = (struct rec_file_ids){ 0 };
}

static int file_eq(const void *arg, uint32_t idx)
{
	const struct rec_file_id *key = ((const struct rec_file_id *const *)arg)[0];
	const struct rec_file_id *e = &((const struct rec_file_id *const *)arg)[1][idx];
	return e->ino == key->ino && e->dev == key->dev && e->size == key->size && e->mtime_ns == key->mtime_ns;
}

/* The build-id of PID's mapping [START, END) of NAME (file MAJ:MIN INO
 * as /proc/PID/maps gives it), read from the file the process maps, or
 * from IDS when that file (by device, inode, size and time: a btrfs
 * subvolume's inode numbers repeat under one device in /proc) was read
 * already: its length, 0 when none. */
static size_t file_build_id(struct rec_file_ids *ids, pid_t pid, int *view, uint64_t start, uint64_t end,
			    const char *name, uint32_t maj, uint32_t min, uint64_t ino, uint8_t id[20])
{
	if (*view == 0x7fff)
		*view = rec_proc_other_view(pid);
	int const fd = rec_proc_file_open(pid, start, end, name, *view, NULL, 0, makedev(maj, min), ino, NULL);
	if (fd < 0)
		return 0;
	struct stat st;
	int const have_key = fstat(fd, &st) == 0 && !su_hmap_reserve(&ids->map);
	struct rec_file_id key = { 0 };
	size_t slot = 0;
	uint64_t h = 0;
	if (have_key) {
		key = (struct rec_file_id){ .dev = st.st_dev, .ino = st.st_ino, .size = (uint64_t)st.st_size,
					    .mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
							(uint64_t)st.st_mtim.tv_nsec };
		uint64_t const k[4] = { key.dev, key.ino, key.size, key.mtime_ns };
		h = su_fnv1a(k, sizeof(k));
		const struct rec_file_id *const arg[2] = { &key, ids->e };
		slot = su_hmap_find(&ids->map, h, file_eq, arg);
		if (su_hmap_used(&ids->map, slot)) {
			const struct rec_file_id *e = &ids->e[su_hmap_value(&ids->map, slot)];
			memcpy(id, e->id, e->len);
			close(fd);
			return e->len;
		}
	}
	int const n = rec_file_build_id(fd, id, 20);
	close(fd);
	size_t const len = n > 0 ? (size_t)n : 0;
	if (have_key && !SU_GROW(ids->e, ids->cap, ids->n + 1)) {
		key.len = (uint8_t)len;
		memcpy(key.id, id, len);
		ids->e[ids->n] = key;
		su_hmap_set(&ids->map, slot, h, (uint32_t)ids->n);
		ids->n++;
	}
	return len;
}

static int list_numeric(const char *dir, pid_t **out);

/* The state letter and thread count in the stat file at PATH.  @return 0,
 * -1 when it cannot be read (the task is gone). */
static int read_stat(const char *path, char *state, long *threads)
{
	char buf[1024];
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t const n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return su_proc_stat_parse(buf, state, threads);
}

/* Whether task TID of PID has ended (a zombie, or gone). */
static int task_gone(pid_t pid, pid_t tid)
{
	char path[64], state;
	long threads;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	return read_stat(path, &state, &threads) != 0 || state == 'Z' || state == 'X';
}

int rec_proc_running(pid_t pid)
{
	char path[64], state;
	long threads;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_stat(path, &state, &threads) != 0)
		return 0;
	/* A zombie main thread is counted among its process's threads. */
	return (state != 'Z' && state != 'X') || threads > 1;
}

/* PID's threads as FORK records (as perf synthesizes them): the reader
 * counts a process's threads, and the process ends with the last one,
 * not with its main thread when that left by pthread_exit.  *VIEW: PID,
 * or when its main thread is such a zombie (/proc/PID then shows no
 * maps, no exe, no files) a live thread of it, whose /proc/TID shows the
 * same process. */
static int put_threads(struct rec_buf *b, pid_t pid, uint64_t ts, pid_t *view)
{
	*view = pid;
	pid_t *tids = NULL;
	int const n = rec_proc_threads(pid, &tids);
	if (n < 0)
		return n == -ENOMEM ? n : 0;
	int leader_gone = 1; /* (not listed then) */
	for (int i = 0; i < n; i++)
		leader_gone &= tids[i] != pid;
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		if (tids[i] == pid)
			continue;
		if (leader_gone && *view == pid)
			*view = tids[i];
		uint8_t body[24];
		st32(body, (uint32_t)pid);
		st32(body + 4, (uint32_t)pid);
		st32(body + 8, (uint32_t)tids[i]);
		st32(body + 12, (uint32_t)pid);
		st64(body + 16, ts);
		rc = put_record(b, PERF_RECORD_FORK, 0, body, sizeof(body), pid, ts);
	}
	free(tids);
	return rc;
}

int rec_proc_synthesize(struct rec_buf *b, pid_t pid, uint64_t ts, struct rec_file_ids *ids)
{
	char path[64], comm[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	uint8_t body[8 + 24];
	st32(body, (uint32_t)pid);
	st32(body + 4, (uint32_t)pid);
	memcpy(body + 8, comm, 16);
	body[8 + 15] = 0;
	size_t const clen = strnlen((const char *)body + 8, 16);
	size_t const mark = b->len;
	int rc = put_record(b, PERF_RECORD_COMM, PERF_RECORD_MISC_USER, body, 8 + clen + 1, pid, ts);
	pid_t view = pid;
	if (rc == 0)
		rc = put_threads(b, pid, ts, &view);
	if (rc) {
		b->len = mark;
		return rc;
	}

	char exe[PATH_MAX] = "";
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)view);
	ssize_t const n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)view);
	if (!(f = fopen(path, "r"))) {
		b->len = mark;
		return errno == ENOENT ? -ESRCH : -errno;
	}
	/* Two passes: the main executable's mappings first (the reader names
	 * the process after the first file mapped), then the others. */
	char line[PATH_MAX + 256];
	int other = 0x7fff; /* rec_proc_other_view, asked at the first file */
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		rewind(f);
		while (rc == 0 && fgets(line, sizeof(line), f)) {
			uint64_t start, end, pgoff, ino;
			unsigned maj, min;
			char perms[8];
			int name_at = 0;
			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start, &end,
				   perms, &pgoff, &maj, &min, &ino, &name_at) < 7)
				continue;
			char *name = line + name_at;
			name[strcspn(name, "\n")] = 0;
			/* Code, and memory with no file, where stacks are ([stack],
			 * threads' anonymous mappings): where each stack ends. */
			int const exec = perms[2] == 'x';
			if (!exec && name[0] && name[0] != '[')
				continue;
			/* The kernel's page above user space, which no MMAP
			 * record names: not code of the process (nor a JIT's). */
			if (!strcmp(name, "[vsyscall]"))
				continue;
			int const is_exe = exe[0] && strcmp(name, exe) == 0;
			if (is_exe != (pass == 0))
				continue;
			/* No name: anonymous code (a JIT's), as the kernel names it. */
			const char *pname = name[0] ? name : "//anon";
			uint32_t const prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
					      (exec ? PROT_EXEC : 0);
			/* A file's build-id read now, from the file the process
			 * maps (record/proc-files.h), as the kernel gives it in
			 * the records of a mapping made while recording: a
			 * container's file is not the one at its path here. */
			uint8_t id[20];
			size_t const id_len = exec && name[0] == '/' ? file_build_id(ids, view, &other, start, end, name,
										      maj, min, ino, id)
								     : 0;
			rc = put_mmap2(b, pid, ts, start, end, pgoff, maj, min, ino, id, id_len, prot, pname);
		}
	}
	fclose(f);
	if (rc)
		b->len = mark;
	return rc;
}

static int list_numeric(const char *dir, pid_t **out)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	size_t n = 0, cap = 0;
	pid_t *v = NULL;
	struct dirent *e;
	int oom = 0;
	while (!oom && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (su_grow((void **)&v, &cap, n + 1, sizeof(*v)))
			oom = 1;
		else
			v[n++] = (pid_t)strtol(e->d_name, NULL, 10);
	}
	closedir(d);
	if (oom || !v) {
		free(v);
		return oom ? -ENOMEM : -ESRCH;
	}
	*out = v;
	return (int)n;
}

int rec_proc_threads(pid_t pid, pid_t **tids)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	int n = list_numeric(dir, tids);
	/* Not a main thread that left by pthread_exit: it stays listed, a
	 * zombie, while the others run (no event opens on it).  Other
	 * threads are taken off the list as they end. */
	int k = 0;
	int const leader_gone = n > 0 && task_gone(pid, pid);
	for (int i = 0; i < n; i++)
		if (!leader_gone || (*tids)[i] != pid)
			(*tids)[k++] = (*tids)[i];
	if (n > 0 && !k) {
		free(*tids);
		*tids = NULL;
		return -ESRCH;
	}
	return n < 0 ? n : k;
}

int rec_proc_all(pid_t **pids)
{
	return list_numeric("/proc", pids);
}

pid_t rec_proc_tgid(pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	pid_t tgid = -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}
