/* Event source: babeltrace2 (src.ctf.fs -> flt.utils.muxer -> our sink).
 *
 * The reference way to read a stackcap trace: a generic CTF reader, so it
 * also proves the trace is plain CTF.  babeltrace2 reads directories, so
 * the trace is staged in a private directory with one subdirectory per
 * pass: symlinks to intact stream files, inflated copies of .zst files and
 * cut copies of files that end inside a packet (babeltrace2 then reads
 * every complete packet and never sees a partial one). */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <babeltrace2/babeltrace.h>

#include "common/ctf-layout.h"
#include "common/grow.h"
#include "trace/reader-internal.h"
#include "trace/bt2-event.h"
#include "trace/bt2-graph.h"
#include "common/zstd-frame.h"

struct bt2_source {
	struct source_report *rep;
	char root[4096];
	char proc[4200];
	char samples[4200];
	int n_proc, n_samples;
	/* the run in progress */
	raw_emit_fn emit;
	void *ctx;
	int emit_rc;              /* EMIT's nonzero return */
	uint8_t *blob;
	size_t blob_cap;
	/* events_discarded of each stream's first packet, by stream id */
	struct first_discards { uint64_t stream_id, count; } *first;
	size_t n_first, cap_first;
	char *err;
	size_t errlen;
};

/* ---- babeltrace2 messages -> raw events ------------------------------------ */

static int handle_event(struct bt2_source *s, const bt_message *msg)
{
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(bt_message_event_borrow_event_const(msg)));
	int const kind = su_bt2_stackcap_kind(name);
	if (kind < 0)
		return 0; /* an event class this reader does not know: skipped */
	struct raw_event ev;
	int rc = su_bt2_stackcap_event(msg, (enum raw_kind)kind, &ev, &s->blob, &s->blob_cap);
	if (rc)
		return rc;
	rc = s->emit(s->ctx, &ev);
	if (rc)
		s->emit_rc = rc;
	return 0;
}

/* ---- the babeltrace2 graph ----------------------------------------------- */

/* The count of a stream's first packet (remember_first_discards). */
static uint64_t first_discards(struct bt2_source *r, uint64_t stream_id)
{
	for (size_t i = 0; i < r->n_first; i++)
		if (r->first[i].stream_id == stream_id)
			return r->first[i].count;
	return 0;
}

/* Each message of the graph (trace/bt2-graph.h): 0, 1 to stop, -errno. */
static int on_message(void *arg, const bt_message *m)
{
	struct bt2_source *r = arg;
	switch (bt_message_get_type(m)) {
	case BT_MESSAGE_TYPE_EVENT: {
		int const rc = handle_event(r, m);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
		break;
	}
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS: {
		struct raw_event ev = { .kind = RAW_DISCARDED };
		if (bt_message_discarded_events_get_count(m, &ev.discarded) != BT_PROPERTY_AVAILABILITY_AVAILABLE)
			ev.discarded = first_discards(r, bt_stream_get_id(bt_message_discarded_events_borrow_stream_const(m)));
		if (ev.discarded) {
			int const erc = r->emit(r->ctx, &ev);
			if (erc)
				r->emit_rc = erc;
		}
		break;
	}
	default:
		break;
	}
	return r->emit_rc ? 1 : 0;
}

/* Run one graph src.ctf.fs(DIR) -> flt.utils.muxer -> on_message. */
static int run_graph(struct bt2_source *r, const char *dir)
{
	return su_bt2_read_ctf(&dir, 1, "the trace", on_message, r, r->err, r->errlen);
}

/* ---- staging ------------------------------------------------------------- */

uint64_t su_ctf_complete_packets(int fd, uint64_t size)
{
	uint64_t off = 0;
	uint8_t h[CTF_PACKET_PREAMBLE];
	while (off + sizeof(h) <= size) {
		if (pread(fd, h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
			break;
		uint32_t const magic = su_ld32(h + CTF_PH_MAGIC);
		uint64_t const bits = su_ld64(h + CTF_PACKET_HEADER_SIZE + CTF_PC_PACKET_SIZE);
		uint64_t const bytes = bits / 8;
		if (magic != CTF_MAGIC || bits % 8 || bytes < sizeof(h) || bytes > size - off)
			break;
		off += bytes;
	}
	return off;
}

/* babeltrace2 (2.0) gives no count for the events a stream's first packet
 * says were discarded (a CTF counter need not start at 0), but ours counts
 * from the stream's start (docs/trace-format.md): keep that number from
 * the first packet header of FD, for the count-less discarded-events
 * message that comes before it. */
static int remember_first_discards(struct bt2_source *r, int fd)
{
	uint8_t h[CTF_PACKET_PREAMBLE];
	if (pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return 0;
	struct first_discards d;
	d.stream_id = su_ld64(h + CTF_PH_INSTANCE_ID);
	d.count = su_ld64(h + CTF_PACKET_HEADER_SIZE + CTF_PC_DISCARDED);
	if (!d.count)
		return 0;
	if (SU_GROW(r->first, r->cap_first, r->n_first + 1))
		return -ENOMEM;
	r->first[r->n_first++] = d;
	return 0;
}

/* Copy the first LEN bytes of SRC into the new file DST. */
static int copy_prefix(const char *src, const char *dst, uint64_t len)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	char buf[65536];
	int rc = 0;
	while (len > 0) {
		ssize_t n = read(in, buf, len < sizeof(buf) ? len : sizeof(buf));
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			rc = -errno ? -errno : -EIO;
			break;
		}
		len -= (uint64_t)n;
	}
	close(in);
	if (close(out) && !rc)
		rc = -errno;
	return rc;
}

static int rm_rf_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	char p[8192];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (e->d_type == DT_DIR)
			rm_rf_dir(p);
		else
			unlink(p);
	}
	closedir(d);
	return rmdir(path) ? -errno : 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Stage one stream file NAME of DIR into TO (proc or samples dir). */
static int stage_file(struct bt2_source *r, const char *dir, const char *name, const char *to)
{
	char src[8192], dst[8192];
	snprintf(src, sizeof(src), "%s/%s", dir, name);
	int const zst = has_suffix(name, ".zst");
	snprintf(dst, sizeof(dst), "%s/%.*s", to, (int)(strlen(name) - (zst ? 4 : 0)), name);
	/* As the native source: no symlink followed, no FIFO or device read. */
	int const fd0 = su_open_regular(src, O_NOFOLLOW);
	if (fd0 < 0) {
		su_reader_warn(r->rep->warn, "%s: %s: file skipped", src, errno == ELOOP ? "a symbolic link, not followed" :
			       errno == EINVAL ? "not a regular file" : strerror(errno));
		r->rep->truncated_files++;
		return 0;
	}
	close(fd0);
	if (zst) {
		int rc = ctf_zstd_inflate_file(src, dst);
		if (rc == -EBADMSG) {
			su_reader_warn(r->rep->warn, "%s: corrupt or truncated zstd frame: only the packets before it are read", src);
			r->rep->truncated_files++;
		} else if (rc) {
			su_reader_warn(r->rep->warn, "%s: cannot inflate: %s: file skipped", src, strerror(-rc));
			r->rep->truncated_files++;
			unlink(dst);
			return 0;
		}
		src[0] = 0;
		snprintf(src, sizeof(src), "%s", dst); /* validate the inflated copy in place */
	}
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		su_reader_warn(r->rep->warn, "%s: %s: file skipped", src, strerror(errno));
		r->rep->truncated_files++;
		return 0;
	}
	struct stat sb;
	uint64_t good = 0, size = 0;
	if (fstat(fd, &sb) == 0) {
		size = (uint64_t)sb.st_size;
		good = su_ctf_complete_packets(fd, size);
	}
	if (good >= CTF_PACKET_PREAMBLE && remember_first_discards(r, fd)) {
		close(fd);
		return -ENOMEM;
	}
	close(fd);
	if (good < size) {
		su_reader_warn(r->rep->warn, "%s/%s: cut or malformed packet at byte %llu of %llu: only the packets "
			       "before it are read",
		     dir, name, (unsigned long long)good, (unsigned long long)size);
		r->rep->truncated_files++;
	}
	if (zst) {
		if (good < size && truncate(dst, (off_t)good))
			return -errno;
		return 0;
	}
	if (good == size)
		return symlink(src, dst) ? -errno : 0;
	return copy_prefix(src, dst, good);
}

static int stage(struct bt2_source *r, const char *dir, struct bt2_source *sg)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(sg->root, sizeof(sg->root), "%s/stackunwind.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sg->root)) {
		int const e = errno;
		su_set_err(r->err, r->errlen, "cannot create a staging directory in %s: %s", tmp && *tmp ? tmp : "/tmp",
			   strerror(e));
		sg->root[0] = 0;
		return -e;
	}
	snprintf(sg->proc, sizeof(sg->proc), "%s/proc", sg->root);
	snprintf(sg->samples, sizeof(sg->samples), "%s/samples", sg->root);
	char meta[8192], link_to[8192];
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	if (mkdir(sg->proc, 0700) || mkdir(sg->samples, 0700))
		return -errno;
	snprintf(link_to, sizeof(link_to), "%s/metadata", sg->proc);
	if (symlink(meta, link_to))
		return -errno;
	snprintf(link_to, sizeof(link_to), "%s/metadata", sg->samples);
	if (symlink(meta, link_to))
		return -errno;

	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	int rc = 0;
	char n_failed[256] = "";
	while (!rc && (e = readdir(d))) {
		const char *n = e->d_name;
		snprintf(n_failed, sizeof(n_failed), "%s", n);
		if (n[0] == '.' || strcmp(n, "metadata") == 0 || ctf_side_dir(n))
			continue;
		if (strncmp(n, "proc-", 5) == 0) {
			rc = stage_file(r, dir, n, sg->proc);
			sg->n_proc++;
		} else if (strncmp(n, "samples-", 8) == 0) {
			rc = stage_file(r, dir, n, sg->samples);
			sg->n_samples++;
		} else {
			su_reader_warn(r->rep->warn, "%s/%s: not a stackcap stream file: ignored", dir, n);
		}
	}
	closedir(d);
	if (rc)
		su_err_context(r->err, r->errlen, rc, "%s", n_failed);
	return rc;
}

/* ---- the source ------------------------------------------------------------ */

static void bt2_close(void *h)
{
	struct bt2_source *s = h;
	if (!s)
		return;
	if (s->root[0])
		rm_rf_dir(s->root);
	free(s->blob);
	free(s->first);
	free(s);
}

static int bt2_open(const char *dir, struct source_report *rep, void **h, char *err, size_t errlen)
{
	struct bt2_source *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->rep = rep;
	s->err = err;
	s->errlen = errlen;
	int const rc = stage(s, dir, s);
	if (rc) {
		if (s->root[0]) /* else the staging directory's own message */
			su_err_context(err, errlen, rc, "cannot stage the trace in %s", s->root);
		bt2_close(s);
		return rc;
	}
	*h = s;
	return 0;
}

static int bt2_run(void *h, enum source_pass pass, raw_emit_fn emit, void *ctx, char *err, size_t errlen)
{
	struct bt2_source *s = h;
	s->emit = emit;
	s->ctx = ctx;
	s->emit_rc = 0;
	s->err = err;
	s->errlen = errlen;
	if ((pass == PASS_PROCESS ? s->n_proc : s->n_samples) == 0)
		return 0;
	int rc = run_graph(s, pass == PASS_PROCESS ? s->proc : s->samples);
	return rc ? rc : s->emit_rc;
}

const struct event_source su_source_babeltrace2 = {
	.name = "babeltrace2",
	.open = bt2_open,
	.run = bt2_run,
	.close = bt2_close,
};
