/* SPDX-License-Identifier: MIT */
/*
 * ctf-writer.c: standalone CTF 1.8 trace writer (docs/trace-format.md).
 *
 * The metadata text lives in ctf-metadata.c, the binary layout in
 * common/ctf-layout.h, the zstd reader in common/zstd-frame.c.
 *
 * Each stream builds one packet at a time in memory: the 80-byte packet
 * header + context is reserved at the front and filled in when the packet
 * is written, since its timestamps and sizes are only known then.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "capture/ctf-writer.h"
#include "capture/ctf-internal.h"
#include "common/hash.h"
#include "common/io.h"

#define PKT_HDR CTF_PACKET_PREAMBLE
#define TS27 (UINT64_C(1) << CTF_EV_TS_BITS)
#define U24_LIMIT (UINT32_C(1) << 24)

struct ctf_writer {
	int dirfd;
	/* The program may close our fds (closefrom, close_range) and reuse
	 * their numbers: each is checked against its identity before use,
	 * and reopened by name when it is no longer ours. */
	char *dir;
	dev_t dir_dev;
	ino_t dir_ino;
	int zstd;
	size_t packet_size;
	uint8_t uuid[16];
	ZSTD_CCtx *cctx;
	uint8_t *zbuf;          /* compressed packet, reused */
	size_t zcap;
	struct ctf_stream *streams;
	struct ctf_writer_stats st;
	int version;            /* CTF_TRACE_VERSION or _RUNTIME */
	int kernel;             /* the kernel events are declared */
	size_t n_events;        /* the event table's size (0: none, version < 4) */
	int off_cpu;            /* the off_cpu event is declared */
	int own_fds;            /* ctf_writer_opts.own_fds */
	int (*create)(void *arg, int dirfd, const char *name); /* ctf_writer_set_create */
	void *create_arg;
};

struct ctf_stream {
	struct ctf_writer *w;
	struct ctf_stream *next, **pprev;
	enum ctf_stream_kind kind;
	int fd;
	dev_t dev;              /* the file's identity (see struct ctf_writer) */
	ino_t ino;
	char fname[NAME_MAX + 1];
	uint32_t nsamples;      /* sample events in the packet in flight */
	int err;                /* sticky: the file could not be cut back */
	uint64_t file_off;      /* end of the last complete packet */
	uint64_t synced;        /* bytes of the packet in flight on disk after file_off */
	uint64_t instance_id;
	uint32_t pid, tid;      /* tid of the packet in flight */
	uint8_t *buf;           /* packet in flight, PKT_HDR reserved */
	size_t cap, used;
	uint32_t nevents;
	uint64_t ts_begin;      /* first event of the packet in flight */
	uint64_t last_ts;       /* last event accepted on the stream */
	int have_ts;
	uint64_t discarded;     /* running total, as CTF wants it */
	uint64_t discarded_written;
	/* A sample's group (ctf_stream_group_begin): its events from BUF +
	 * GROUP_START; what the packet held before it, to go back to. */
	int group;
	size_t group_start;
	uint32_t group_events, group_samples;
	uint64_t group_prev_ts;   /* last_ts before the group */
	uint64_t group_first_ts;  /* its first event's */
};

/* ---- little-endian encoding ---------------------------------------------- */

static uint8_t *put_le(uint8_t *p, uint64_t v, unsigned nbytes)
{
	for (unsigned i = 0; i < nbytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + nbytes;
}

static uint8_t *put_str(uint8_t *p, const char *str, size_t len)
{
	memcpy(p, str, len);
	p[len] = 0;
	return p + len + 1;
}

/* ---- file helpers --------------------------------------------------------- */

static int pwrite_all(int fd, const void *data, size_t len, uint64_t off)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Is FD still the file (DEV, INO)?  Not when the program closed it, nor
 * when it reused the number for a file of its own.  Asked through
 * /proc/thread-self/fd by name (su_proc_self_path: not /proc/self/fd,
 * empty once the main thread has left by pthread_exit while the others
 * go on writing), not by fstat on the fd: the number may be the
 * program's now, and nothing of ours operates on its fds
 * (ThreadSanitizer rightly reports an fstat racing with the program's own
 * use).  fstat only where /proc is not mounted. */
int ctf_fd_is_file(int fd, dev_t dev, ino_t ino)
{
	if (fd < 0)
		return 0;
	char dir[32], path[48];
	su_proc_self_path(dir, sizeof dir, "fd");
	snprintf(path, sizeof path, "%s/%d", dir, fd);
	struct stat st;
	if (stat(path, &st) != 0) {
		if (errno != ENOENT || access(dir, F_OK) == 0)
			return 0;
		if (fstat(fd, &st) != 0)
			return 0;
	}
	return st.st_dev == dev && st.st_ino == ino;
}

static int same_file(const struct ctf_writer *w, int fd, dev_t dev, ino_t ino)
{
	return w->own_fds ? fd >= 0 : ctf_fd_is_file(fd, dev, ino);
}

/* FD, just opened, is the file (DEV, INO) (else it is closed).  @return 0, or
 * -ESTALE: the name now names another file. */
static int check_reopened(int fd, dev_t dev, ino_t ino)
{
	if (ctf_fd_is_file(fd, dev, ino))
		return 0;
	close(fd);
	return -ESTALE;
}

/* The trace directory's fd, reopened by name if the program closed ours. */
static int writer_dirfd(struct ctf_writer *w)
{
	if (same_file(w, w->dirfd, w->dir_dev, w->dir_ino))
		return w->dirfd;
	int const fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int const rc = check_reopened(fd, w->dir_dev, w->dir_ino);
	if (rc)
		return rc;
	w->dirfd = fd; /* the old number is not ours any more: never closed */
	return fd;
}

/* The stream file's fd, reopened (no symlink followed) if needed. */
static int stream_fd(struct ctf_stream *s)
{
	if (same_file(s->w, s->fd, s->dev, s->ino))
		return s->fd;
	int const d = writer_dirfd(s->w);
	if (d < 0)
		return d;
	int const fd = openat(d, s->fname, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int const rc = check_reopened(fd, s->dev, s->ino);
	if (rc)
		return rc;
	s->fd = fd;
	return fd;
}

/* mkdir -p: several processes may race to create the same directory.
 * Private (0700), as every file of a trace (0600): code and stack
 * pointers reveal the program's address layout. */
static int mkdir_p(const char *dir)
{
	char *path = strdup(dir);
	if (!path)
		return -ENOMEM;
	int rc = 0;
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	free(path);
	return rc;
}

/* ---- writer --------------------------------------------------------------- */

int ctf_writer_open(const char *dir, const struct ctf_writer_opts *opts,
		    struct ctf_writer **out)
{
	struct ctf_writer_opts o = { 0 };
	if (!dir || !*dir || !out)
		return -EINVAL;
	*out = NULL;
	if (opts) {
		/* Copy only what the caller's version of the struct has. */
		size_t sz = opts->sz < sizeof o ? opts->sz : sizeof o;
		if (sz < offsetof(struct ctf_writer_opts, zstd))
			return -EINVAL;
		memcpy(&o, opts, sz);
	}
	if (!o.packet_size)
		o.packet_size = CTF_PACKET_SIZE_DEFAULT;
	if (o.packet_size < CTF_PACKET_SIZE_MIN || o.packet_size > (SIZE_MAX >> 4))
		return -EINVAL;

	struct ctf_writer *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->dirfd = -1;
	w->zstd = !!o.zstd;
	w->packet_size = o.packet_size;
	memcpy(w->uuid, o.uuid, 16);
	static const uint8_t zero[16];
	int rc = 0;
	if (!memcmp(w->uuid, zero, 16)) {
		if (getrandom(w->uuid, 16, 0) != 16) {
			rc = -EIO;
			goto fail;
		}
		w->uuid[6] = (uint8_t)((w->uuid[6] & 0x0f) | 0x40); /* RFC 4122 v4 */
		w->uuid[8] = (uint8_t)((w->uuid[8] & 0x3f) | 0x80);
	}
	if (w->zstd) {
		w->cctx = ZSTD_createCCtx();
		if (!w->cctx) {
			rc = -ENOMEM;
			goto fail;
		}
		/* The checksum lets the reader tell a torn frame from a good one. */
		if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, o.zstd_level)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1))) {
			rc = -EINVAL;
			goto fail;
		}
	}
	rc = mkdir_p(dir);
	if (rc)
		goto fail;
	w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat dst;
	if (w->dirfd < 0 || fstat(w->dirfd, &dst) != 0) {
		rc = -errno;
		goto fail;
	}
	w->dir_dev = dst.st_dev;
	w->dir_ino = dst.st_ino;
	w->dir = strdup(dir);
	if (!w->dir) {
		rc = -ENOMEM;
		goto fail;
	}
	if (o.n_events > UINT16_MAX + 1u || (o.n_events && !o.events)) {
		rc = -EINVAL;
		goto fail;
	}
	w->version = o.off_cpu ? CTF_TRACE_VERSION_OFF_CPU
		   : o.n_events ? CTF_TRACE_VERSION_EVENTS
		   : o.kernel_frames ? CTF_TRACE_VERSION_KERNEL
		   : o.runtime_frames ? CTF_TRACE_VERSION_RUNTIME : CTF_TRACE_VERSION;
	w->kernel = o.kernel_frames != 0;
	w->n_events = o.n_events;
	w->off_cpu = o.off_cpu != 0;
	w->own_fds = o.own_fds != 0;
	rc = ctf_metadata_install(w->dirfd, w->uuid, o.clock_offset_ns, w->version, o.sampler, o.kernel_frames,
				  o.events, o.n_events, o.off_cpu, &w->st.metadata_bytes);
	if (rc)
		goto fail;
	*out = w;
	return 0;
fail:
	if (w->dirfd >= 0)
		close(w->dirfd);
	free(w->dir);
	ZSTD_freeCCtx(w->cctx);
	free(w);
	return rc;
}

void ctf_writer_uuid(const struct ctf_writer *w, uint8_t uuid[16])
{
	memcpy(uuid, w->uuid, 16);
}

void ctf_writer_get_stats(const struct ctf_writer *w, struct ctf_writer_stats *st)
{
	*st = w->st;
}

uint64_t ctf_writer_bytes_written(const struct ctf_writer *w)
{
	return w->st.metadata_bytes + w->st.stream_bytes;
}

int ctf_writer_close(struct ctf_writer *w)
{
	if (!w)
		return 0;
	int rc = 0;
	while (w->streams) {
		int r = ctf_stream_close(w->streams);
		if (r && !rc)
			rc = r;
	}
	if (same_file(w, w->dirfd, w->dir_dev, w->dir_ino) && close(w->dirfd) < 0 && !rc)
		rc = -errno;
	free(w->dir);
	ZSTD_freeCCtx(w->cctx);
	free(w->zbuf);
	free(w);
	return rc;
}

/* ---- streams -------------------------------------------------------------- */

/* FNV-1a of the file name.  babeltrace2 merges files that share a stream
 * class and a stream_instance_id into one stream, so ids must be unique in
 * the directory, across processes and exec()s; file names are (O_EXCL). */
static uint64_t name_hash(const char *name)
{
	return su_fnv1a_str(name);
}

void ctf_writer_set_create(struct ctf_writer *w, int (*fn)(void *arg, int dirfd, const char *name), void *arg)
{
	w->create = fn;
	w->create_arg = arg;
}

int ctf_writer_open_stream(struct ctf_writer *w, enum ctf_stream_kind kind,
			   const char *name, uint32_t pid, struct ctf_stream **out)
{
	if (!w || !name || !out || (kind != CTF_STREAM_PROCESS && kind != CTF_STREAM_SAMPLES))
		return -EINVAL;
	*out = NULL;
	if (!*name || name[0] == '.' || strchr(name, '/') || !strcmp(name, "metadata") ||
	    strlen(name) > NAME_MAX - 4)
		return -EINVAL;
	char fname[NAME_MAX + 1];
	snprintf(fname, sizeof fname, "%s%s", name, w->zstd ? ".zst" : "");

	struct ctf_stream *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->cap = w->packet_size;
	s->buf = malloc(s->cap);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	int const d = writer_dirfd(w);
	s->fd = d < 0 ? d : w->create ? w->create(w->create_arg, d, fname) : -EAGAIN;
	if (s->fd == -EAGAIN) { /* none made ahead: made here */
		s->fd = openat(d, fname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (s->fd < 0)
			s->fd = -errno;
	}
	struct stat st;
	if (s->fd < 0 || fstat(s->fd, &st) != 0) {
		int rc = s->fd < 0 ? s->fd : -errno;
		if (s->fd >= 0)
			close(s->fd);
		free(s->buf);
		free(s);
		return rc;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	strcpy(s->fname, fname);
	s->w = w;
	s->kind = kind;
	s->pid = pid;
	s->instance_id = name_hash(name);
	s->used = PKT_HDR;
	s->next = w->streams;
	if (w->streams)
		w->streams->pprev = &s->next;
	s->pprev = &w->streams;
	w->streams = s;
	*out = s;
	return 0;
}

static void fill_packet_header(struct ctf_stream *s, uint64_t ts_begin, uint64_t ts_end)
{
	uint8_t *p = s->buf;
	p = put_le(p, CTF_MAGIC, 4);
	memcpy(p, s->w->uuid, 16);
	p += 16;
	p = put_le(p, (uint64_t)s->kind, 4);
	p = put_le(p, s->instance_id, 8);
	p = put_le(p, ts_begin, 8);
	p = put_le(p, ts_end, 8);
	p = put_le(p, (uint64_t)s->used * 8, 8); /* content_size, bits */
	p = put_le(p, (uint64_t)s->used * 8, 8); /* packet_size: no padding */
	p = put_le(p, s->discarded, 8);
	p = put_le(p, s->pid, 4);
	put_le(p, s->kind == CTF_STREAM_SAMPLES ? s->tid : 0, 4);
}

/* The packet in flight as the file holds it: as-is, or as one zstd
 * frame.  0 or -errno. */
static int packet_bytes(struct ctf_stream *s, const void **out, size_t *outlen)
{
	struct ctf_writer *w = s->w;
	const void *data = s->buf;
	size_t len = s->used;
	if (w->zstd) {
		size_t bound = ZSTD_compressBound(len) + 64; /* and the header's own block */
		if (bound > w->zcap) {
			uint8_t *nb = realloc(w->zbuf, bound);
			if (!nb)
				return -ENOMEM;
			w->zbuf = nb;
			w->zcap = bound;
		}
		/* The packet header and context in a block of their own, the
		 * events after it: a reader that only needs the header (a part
		 * of stackunwind -j N skipping another part's packet) inflates
		 * 80 bytes, not the packet.  One frame still, its content size
		 * and checksum in it; later blocks may refer to the first. */
		size_t rc = ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
		if (!ZSTD_isError(rc))
			rc = ZSTD_CCtx_setPledgedSrcSize(w->cctx, s->used);
		ZSTD_outBuffer ob = { w->zbuf, w->zcap, 0 };
		ZSTD_inBuffer hb = { s->buf, PKT_HDR, 0 };
		/* The output holds the whole frame: each call finishes its part. */
		if (!ZSTD_isError(rc))
			rc = ZSTD_compressStream2(w->cctx, &ob, &hb, ZSTD_e_flush);
		ZSTD_inBuffer eb = { s->buf + PKT_HDR, s->used - PKT_HDR, 0 };
		if (!ZSTD_isError(rc) && rc == 0)
			rc = ZSTD_compressStream2(w->cctx, &ob, &eb, ZSTD_e_end);
		if (!ZSTD_isError(rc) && rc != 0)
			return -EIO; /* cannot be: the output is the bound */
		if (ZSTD_isError(rc))
			return ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
		len = ob.pos;
		data = w->zbuf;
	}
	*out = data;
	*outlen = len;
	return 0;
}

/* Write the packet in flight after the last complete one (over its synced
 * copy, cut to its length).  0 or -errno. */
static int put_packet(struct ctf_stream *s, size_t *outlen)
{
	const void *data;
	size_t len;
	int rc = packet_bytes(s, &data, &len);
	if (rc)
		return rc;
	int const fd = stream_fd(s);
	if (fd < 0)
		return fd;
	rc = pwrite_all(fd, data, len, s->file_off);
	if (!rc && s->synced > len && ftruncate(fd, (off_t)(s->file_off + len)) < 0)
		rc = -errno;
	if (rc) {
		/* Never leave a torn packet: cut back to the last good one. */
		s->synced = 0;
		if (ftruncate(fd, (off_t)s->file_off) < 0)
			s->err = rc;
		return rc;
	}
	*outlen = len;
	return 0;
}

/* Append the packet to the file. */
static int append_packet(struct ctf_stream *s)
{
	struct ctf_writer *w = s->w;
	size_t len;
	int const rc = put_packet(s, &len);
	if (rc)
		return rc;
	s->synced = 0;
	s->file_off += len;
	w->st.stream_bytes += len;
	w->st.packet_bytes += s->used;
	w->st.packets++;
	w->st.events += s->nevents;
	w->st.samples += s->nsamples;
	return 0;
}

/* Write the packet in flight (or an empty one carrying a new discard
 * count), then start an empty one whatever happened; the buffer is kept
 * as it is (packet_write gives memory back). */
static int packet_emit(struct ctf_stream *s)
{
	if (s->err)
		return s->err;
	if (!s->nevents && s->discarded == s->discarded_written)
		return 0;
	uint64_t begin = s->nevents ? s->ts_begin : s->last_ts;
	fill_packet_header(s, begin, s->last_ts);
	int rc = append_packet(s);
	if (rc)
		s->discarded += s->nevents; /* reported by the next packet */
	else
		s->discarded_written = s->discarded;
	s->used = PKT_HDR;
	s->nevents = 0;
	s->nsamples = 0;
	return rc;
}

/* The group does not fit in the packet in flight: the packet is written
 * without it, and the group's events move to the front of the next one
 * (their headers hold as they are: the first one's time begins the
 * packet, the others' follow it). */
static int group_move(struct ctf_stream *s)
{
	size_t const len = s->used - s->group_start;
	uint32_t const events = s->nevents - s->group_events, samples = s->nsamples - s->group_samples;
	uint64_t const last = s->last_ts;
	s->used = s->group_start;
	s->nevents = s->group_events;
	s->nsamples = s->group_samples;
	s->last_ts = s->group_prev_ts;
	int const rc = packet_emit(s);
	if (s->err)
		return s->err;
	memmove(s->buf + PKT_HDR, s->buf + s->group_start, len);
	s->used = PKT_HDR + len;
	s->nevents = events;
	s->nsamples = samples;
	if (events) {
		s->ts_begin = s->group_first_ts;
		s->last_ts = last;
	}
	s->group_start = PKT_HDR;
	s->group_events = 0;
	s->group_samples = 0;
	return rc;
}

/* packet_emit, and the memory a huge event took given back.  A group
 * open here (a thread change, a flush) ends: its events went out. */
static int packet_write(struct ctf_stream *s)
{
	s->group = 0;
	int const rc = packet_emit(s);
	/* A huge event grew the buffer: give the memory back. */
	if (s->cap > 4 * s->w->packet_size) {
		uint8_t *nb = realloc(s->buf, s->w->packet_size);
		if (nb) {
			s->buf = nb;
			s->cap = s->w->packet_size;
		}
	}
	return rc;
}

/* A group begins at the end of the packet in flight. */
static void group_open(struct ctf_stream *s)
{
	s->group = 1;
	s->group_start = s->used;
	s->group_events = s->nevents;
	s->group_samples = s->nsamples;
	s->group_prev_ts = s->last_ts;
}

/*
 * Reserve room for one event of `payload` bytes at time ts and write its
 * header; returns where the payload goes, or NULL with *rc set.
 *
 * Header rule: the reader keeps a clock value that the packet context's
 * timestamp_begin sets and each event's timestamp updates; a 27-bit
 * timestamp replaces the low 27 bits and is taken to have wrapped once if
 * it is below the current low bits.  So a compact header decodes exactly
 * iff 0 <= ts - previous < 2^27, where previous is the previous event of
 * the packet, or timestamp_begin (= ts of the first event) for the first.
 */
static uint8_t *event_begin(struct ctf_stream *s, uint64_t ts, uint32_t tid,
			    unsigned id, size_t payload, int *rc)
{
	*rc = s->err;
	if (*rc)
		return NULL;
	if (s->have_ts && ts < s->last_ts) {
		*rc = -EINVAL;
		return NULL;
	}
	/* A packet never mixes threads: its context names one tid. */
	if (s->nevents && tid != s->tid) {
		*rc = packet_write(s);
		if (*rc)
			return NULL;
	}
	/* An event a sample comes with opens its group when the caller did
	 * not (ctf_stream_group_begin): the events up to the sample go in
	 * one packet whoever writes them. */
	if (!s->group && s->kind == CTF_STREAM_SAMPLES && id != CTF_EV_SAMPLE && id != CTF_EV_EVENT_SAMPLE)
		group_open(s);
	for (;;) {
		int compact = id <= CTF_EV_COMPACT_MAX_ID &&
			      (!s->nevents || ts - s->last_ts < TS27);
		size_t need = (compact ? CTF_EV_COMPACT_SIZE : CTF_EV_EXTENDED_SIZE) + payload;
		if (need <= s->cap - s->used) {
			if (!s->nevents) {
				s->ts_begin = ts;
				s->tid = tid;
			}
			if (s->group && s->used == s->group_start)
				s->group_first_ts = ts;
			uint8_t *p = s->buf + s->used;
			if (compact) {
				p = put_le(p, id | ((ts & (TS27 - 1)) << 5), 4);
			} else {
				*p++ = CTF_EV_EXTENDED_MARK;
				p = put_le(p, id, 4);
				p = put_le(p, ts, 8);
			}
			s->used += need;
			s->nevents++;
			s->last_ts = ts;
			s->have_ts = 1;
			return p;
		}
		if (s->nevents && !(s->group && s->group_start == PKT_HDR)) {
			*rc = s->group ? group_move(s) : packet_write(s);
			if (*rc)
				return NULL;
			continue;
		}
		/* Alone in its packet, or with its own group only, and still
		 * too big: grow the packet. */
		if (payload > SIZE_MAX / 2) {
			*rc = -EINVAL;
			return NULL;
		}
		uint8_t *nb = realloc(s->buf, s->used + need);
		if (!nb) {
			*rc = -ENOMEM;
			return NULL;
		}
		s->buf = nb;
		s->cap = s->used + need;
	}
}

int ctf_stream_process_start(struct ctf_stream *s, uint64_t ts,
			     const struct ctf_process_info *info)
{
	if (!s || !info || s->kind != CTF_STREAM_PROCESS)
		return -EINVAL;
	const char *comm = info->comm ? info->comm : "";
	const char *exe = info->exe ? info->exe : "";
	size_t lc = strlen(comm), le = strlen(exe);
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_PROCESS_START, 4 + 4 + lc + 1 + le + 1 + 8 + 4 + 4 + 1 + 1, &rc);
	if (!p)
		return rc;
	p = put_le(p, info->pid, 4);
	p = put_le(p, info->ppid, 4);
	p = put_str(p, comm, lc);
	p = put_str(p, exe, le);
	p = put_le(p, (uint64_t)info->clock_offset_ns, 8);
	p = put_le(p, info->frequency_hz, 4);
	p = put_le(p, info->stack_cap, 4);
	p = put_le(p, info->policy, 1);
	put_le(p, info->codec_version, 1);
	return 0;
}

int ctf_stream_maps(struct ctf_stream *s, uint64_t ts, uint32_t generation,
		    const struct ctf_map_entry *e, size_t n)
{
	if (!s || (n && !e) || s->kind != CTF_STREAM_PROCESS || n > UINT32_MAX)
		return -EINVAL;
	size_t payload = 4 + 4;
	for (size_t i = 0; i < n; i++) {
		if (e[i].start > e[i].end || (i && e[i].start < e[i - 1].start) ||
		    (e[i].build_id_len && !e[i].build_id))
			return -EINVAL;
		size_t lp = e[i].path ? strlen(e[i].path) : 0;
		if (lp > SIZE_MAX / 4 || payload > SIZE_MAX / 4)
			return -EINVAL;
		payload += 8 * 4 + 1 + 1 + e[i].build_id_len + lp + 1;
	}
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_MAPS, payload, &rc);
	if (!p)
		return rc;
	p = put_le(p, generation, 4);
	p = put_le(p, n, 4);
	for (size_t i = 0; i < n; i++) {
		p = put_le(p, e[i].start, 8);
		p = put_le(p, e[i].end, 8);
		p = put_le(p, e[i].offset, 8);
		p = put_le(p, e[i].bias, 8);
		p = put_le(p, e[i].flags, 1);
		p = put_le(p, e[i].build_id_len, 1);
		if (e[i].build_id_len)
			memcpy(p, e[i].build_id, e[i].build_id_len);
		p += e[i].build_id_len;
		const char *path = e[i].path ? e[i].path : "";
		p = put_str(p, path, strlen(path));
	}
	return 0;
}

int ctf_stream_drops(struct ctf_stream *s, uint64_t ts, const struct ctf_drops *d)
{
	if (!s || !d || s->kind != CTF_STREAM_PROCESS)
		return -EINVAL;
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_DROPS, 4 + 4 * 8, &rc);
	if (!p)
		return rc;
	p = put_le(p, d->tid, 4);
	p = put_le(p, d->ring_full, 8);
	p = put_le(p, d->nested, 8);
	p = put_le(p, d->no_stack_bounds, 8);
	put_le(p, d->other, 8);
	return 0;
}

int ctf_stream_process_end(struct ctf_stream *s, uint64_t ts,
			   uint64_t samples, uint64_t drops)
{
	if (!s || s->kind != CTF_STREAM_PROCESS)
		return -EINVAL;
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_PROCESS_END, 16, &rc);
	if (!p)
		return rc;
	p = put_le(p, samples, 8);
	put_le(p, drops, 8);
	return 0;
}

/* An event of the samples stream whose fields are HEAD (HEAD_LEN bytes,
 * already little-endian), then a u24 length and the blob: sample,
 * sample_full, sample_segment, event_sample, runtime_frames.  The caller
 * checks the fields; LEN < U24_LIMIT. */
static int blob_event(struct ctf_stream *s, uint64_t ts, uint32_t tid, int id, const uint8_t *head,
		      size_t head_len, const uint8_t *blob, size_t len)
{
	int rc;
	uint8_t *p = event_begin(s, ts, tid, id, head_len + 3 + len, &rc);
	if (!p)
		return rc;
	memcpy(p, head, head_len);
	p = put_le(p + head_len, len, 3);
	if (len)
		memcpy(p, blob, len);
	return 0;
}

static int sample_event(struct ctf_stream *s, uint64_t ts, uint32_t tid, int id,
			uint32_t generation, const uint8_t *blob, size_t len)
{
	if (!s || s->kind != CTF_STREAM_SAMPLES || generation >= U24_LIMIT ||
	    len >= U24_LIMIT || (len && !blob))
		return -EINVAL;
	uint8_t head[3];
	put_le(head, generation, 3);
	return blob_event(s, ts, tid, id, head, sizeof(head), blob, len);
}

int ctf_stream_sample(struct ctf_stream *s, uint64_t ts, uint32_t tid,
		      uint32_t generation, const uint8_t *blob, size_t len)
{
	int const rc = sample_event(s, ts, tid, CTF_EV_SAMPLE, generation, blob, len);
	if (!rc) {
		s->nsamples++; /* in the packet in flight, counted once written */
		s->group = 0;  /* the sample ends its group */
	}
	return rc;
}

int ctf_stream_event_sample(struct ctf_stream *s, uint64_t ts, uint32_t tid, uint32_t event,
			    uint32_t generation, const uint8_t *blob, size_t len)
{
	if (!event)
		return ctf_stream_sample(s, ts, tid, generation, blob, len);
	if (!s || s->kind != CTF_STREAM_SAMPLES || event >= s->w->n_events || generation >= U24_LIMIT ||
	    len >= U24_LIMIT || (len && !blob))
		return -EINVAL;
	uint8_t head[2 + 3];
	put_le(put_le(head, event, 2), generation, 3);
	int const rc = blob_event(s, ts, tid, CTF_EV_EVENT_SAMPLE, head, sizeof(head), blob, len);
	if (!rc) {
		s->nsamples++;
		s->group = 0;
	}
	return rc;
}

int ctf_stream_sample_segment(struct ctf_stream *s, uint64_t ts, uint32_t tid,
			      uint32_t generation, const uint8_t *blob, size_t len)
{
	return sample_event(s, ts, tid, CTF_EV_SAMPLE_SEGMENT, generation, blob, len);
}

int ctf_stream_sample_full(struct ctf_stream *s, uint64_t ts, uint32_t tid,
			   uint32_t generation, const uint8_t *blob, size_t len)
{
	return sample_event(s, ts, tid, CTF_EV_SAMPLE_FULL, generation, blob, len);
}

int ctf_stream_runtime(struct ctf_stream *s, uint64_t ts, const struct ctf_runtime_info *info)
{
	if (!s || !info || s->kind != CTF_STREAM_PROCESS || s->w->version < CTF_TRACE_VERSION_RUNTIME)
		return -EINVAL;
	const char *name = info->name ? info->name : "";
	size_t const ln = strlen(name);
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_RUNTIME, 1 + 4 + 5 * 8 + ln + 1, &rc);
	if (!p)
		return rc;
	p = put_le(p, info->runtime, 1);
	p = put_le(p, info->version, 4);
	p = put_le(p, info->eval_start, 8);
	p = put_le(p, info->eval_end, 8);
	p = put_le(p, info->chains, 8);
	p = put_le(p, info->dropped, 8);
	p = put_le(p, info->stale, 8);
	put_str(p, name, ln);
	return 0;
}

int ctf_stream_runtime_code(struct ctf_stream *s, uint64_t ts, uint8_t runtime, uint64_t code,
			    uint32_t fingerprint, uint32_t first_line, const char *name, const char *file,
			    const uint8_t *line_table, size_t line_table_len)
{
	if (!s || s->kind != CTF_STREAM_PROCESS || s->w->version < CTF_TRACE_VERSION_RUNTIME ||
	    line_table_len > UINT32_MAX || (line_table_len && !line_table))
		return -EINVAL;
	name = name ? name : "";
	file = file ? file : "";
	size_t const ln = strlen(name), lf = strlen(file);
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_RUNTIME_CODE, 1 + 8 + 4 + 4 + ln + 1 + lf + 1 + 4 + line_table_len,
				 &rc);
	if (!p)
		return rc;
	p = put_le(p, runtime, 1);
	p = put_le(p, code, 8);
	p = put_le(p, fingerprint, 4);
	p = put_le(p, first_line, 4);
	p = put_str(p, name, ln);
	p = put_str(p, file, lf);
	p = put_le(p, line_table_len, 4);
	if (line_table_len)
		memcpy(p, line_table, line_table_len);
	return 0;
}

int ctf_stream_runtime_frames(struct ctf_stream *s, uint64_t ts, uint32_t tid, uint8_t runtime,
			      const uint8_t *blob, size_t len)
{
	if (!s || s->kind != CTF_STREAM_SAMPLES || s->w->version < CTF_TRACE_VERSION_RUNTIME ||
	    len >= U24_LIMIT || (len && !blob))
		return -EINVAL;
	return blob_event(s, ts, tid, CTF_EV_RUNTIME_FRAMES, &runtime, 1, blob, len);
}

int ctf_stream_kernel_chain(struct ctf_stream *s, uint64_t ts, uint32_t tid, const uint64_t *ips, size_t n)
{
	if (!s || s->kind != CTF_STREAM_SAMPLES || !s->w->kernel || n > UINT16_MAX || (n && !ips))
		return -EINVAL;
	int rc;
	uint8_t *p = event_begin(s, ts, tid, CTF_EV_KERNEL_CHAIN, 4 + 8 * n, &rc);
	if (!p)
		return rc;
	p = put_le(p, n, 4);
	for (size_t i = 0; i < n; i++)
		p = put_le(p, ips[i], 8);
	return 0;
}

int ctf_stream_off_cpu(struct ctf_stream *s, uint64_t ts, uint32_t tid, uint64_t duration_ns)
{
	if (!s || s->kind != CTF_STREAM_SAMPLES || !s->w->off_cpu)
		return -EINVAL;
	int rc;
	uint8_t *p = event_begin(s, ts, tid, CTF_EV_OFF_CPU, 8, &rc);
	if (!p)
		return rc;
	put_le(p, duration_ns, 8);
	return 0;
}

int ctf_stream_kernel_symbols(struct ctf_stream *s, uint64_t ts, const uint8_t *build_id, size_t build_id_len,
			      const struct ctf_kernel_symbol *syms, size_t n)
{
	if (!s || s->kind != CTF_STREAM_PROCESS || !s->w->kernel || build_id_len > UINT8_MAX ||
	    (build_id_len && !build_id) || n > UINT32_MAX || (n && !syms))
		return -EINVAL;
	size_t len = 1 + build_id_len + 4;
	for (size_t i = 0; i < n; i++)
		len += 16 + strlen(syms[i].name ? syms[i].name : "") + 1 +
		       strlen(syms[i].module ? syms[i].module : "") + 1;
	int rc;
	uint8_t *p = event_begin(s, ts, 0, CTF_EV_KERNEL_SYMBOLS, len, &rc);
	if (!p)
		return rc;
	p = put_le(p, build_id_len, 1);
	if (build_id_len)
		memcpy(p, build_id, build_id_len);
	p += build_id_len;
	p = put_le(p, n, 4);
	for (size_t i = 0; i < n; i++) {
		const char *name = syms[i].name ? syms[i].name : "";
		const char *mod = syms[i].module ? syms[i].module : "";
		p = put_le(p, syms[i].start, 8);
		p = put_le(p, syms[i].end, 8);
		p = put_str(p, name, strlen(name));
		p = put_str(p, mod, strlen(mod));
	}
	return 0;
}

int ctf_stream_discarded(struct ctf_stream *s, uint64_t n)
{
	if (!s)
		return -EINVAL;
	s->discarded += n;
	return 0;
}

int ctf_stream_group_begin(struct ctf_stream *s, uint32_t tid)
{
	if (!s || s->kind != CTF_STREAM_SAMPLES)
		return -EINVAL;
	/* A packet never mixes threads: the group begins the next one. */
	if (s->nevents && tid != s->tid) {
		int const rc = packet_write(s);
		if (rc)
			return rc;
	}
	group_open(s);
	return 0;
}

void ctf_stream_group_cancel(struct ctf_stream *s)
{
	if (!s || !s->group)
		return;
	s->group = 0;
	if (s->err)
		return;
	s->used = s->group_start;
	s->nevents = s->group_events;
	s->nsamples = s->group_samples;
	s->last_ts = s->group_prev_ts;
}

int ctf_stream_joins(const struct ctf_stream *s, uint32_t tid, size_t bytes)
{
	return s && !s->err && s->nsamples && s->tid == tid && bytes <= s->cap - s->used;
}

int ctf_stream_flush(struct ctf_stream *s)
{
	if (!s)
		return -EINVAL;
	return packet_write(s);
}

int ctf_stream_sync(struct ctf_stream *s)
{
	if (!s)
		return -EINVAL;
	if (s->err)
		return s->err;
	if (!s->nevents)
		return 0;
	fill_packet_header(s, s->ts_begin, s->last_ts);
	size_t len;
	int const rc = put_packet(s, &len);
	if (!rc)
		s->synced = len;
	return rc;
}

int ctf_stream_close(struct ctf_stream *s)
{
	if (!s)
		return 0;
	int rc = packet_write(s);
	if (same_file(s->w, s->fd, s->dev, s->ino) && close(s->fd) < 0 && !rc)
		rc = -errno;
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	free(s->buf);
	free(s);
	return rc;
}
