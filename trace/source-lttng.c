/* Event source: an LTTng-UST trace holding `stackcap:*` events
 * (docs/lttng.md), read with babeltrace2 (src.ctf.fs over every trace below
 * the directory -> flt.utils.muxer -> our sink), turned into the raw
 * events of the stackcap reader core by the LTTng join
 * (trace/lttng-join.h, shared with the babeltrace2 filter).
 *
 * One pass (event_source.one_pass: babeltrace2 decoding every event twice
 * was half of reading a trace): module and code_ranges events go to the
 * join, which turns each process into a process_start and each generation
 * into a maps event once settled (lttng-join.h); samples go to the core
 * with vpid/vtid as pid/tid as soon as their generation is in.  A sample
 * that comes before it (the writer thread writes code_ranges after the
 * samples that meet the code) waits, with every later one (a blob may
 * refer to its thread's previous sample), until it is in, or until the
 * trace time has moved HOLD_NS past it, or too many wait, or the trace
 * ends: then every generation is settled and what waits is delivered. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <babeltrace2/babeltrace.h>

#include "common/grow.h"
#include "trace/reader-internal.h"
#include "trace/lttng-reader.h"
#include "trace/lttng-join.h"
#include "trace/bt2-event.h"
#include "trace/bt2-graph.h"

/* How long the join waits for a generation to settle, in trace time
 * (lttng-join.h); a sample waits twice that, since its generation's event
 * may come after it (by a writer period) and waits WAIT_NS from there.
 * What waits holds at most HELD_MAX bytes (~50,000 samples): past that
 * the first goes, decoded or counted as not decodable. */
#define WAIT_NS (5ull * 1000000000u)
#define HOLD_NS (2 * WAIT_NS)
#define HELD_MAX (64u << 20)

/* A sample waiting, with what came with it; blobs copied. */
struct held {
	struct raw_event ev, seg, rt;
	int has_seg, has_rt;
};

struct lt_source {
	struct source_report *rep;
	char dir[4096];
	char **traces;                 /* trace directories below dir */
	size_t n_traces, cap_traces;
	char **staged;                 /* private copies of damaged traces (removed at close) */
	size_t n_staged, cap_staged;
	raw_emit_fn emit;
	void *ctx;
	int emit_rc;
	struct su_lttng_join *join;
	uint64_t samples_seen;
	struct held *held;             /* a ring: HELD_HEAD, N_HELD of CAP_HELD */
	size_t held_head, n_held, cap_held;
	size_t held_bytes;             /* of the waiting samples, blobs included */
	uint64_t now;                  /* the latest event's time */
	char *err;
	size_t errlen;
};

/* ---- samples waiting for their generation --------------------------------- */

static size_t held_size(const struct held *h)
{
	return sizeof(*h) + h->ev.blob_len + (h->has_seg ? h->seg.blob_len : 0) + (h->has_rt ? h->rt.blob_len : 0);
}

static void held_free(struct held *h)
{
	free((void *)h->ev.blob);
	if (h->has_seg)
		free((void *)h->seg.blob);
	if (h->has_rt)
		free((void *)h->rt.blob);
}

static int copy_blob(struct raw_event *dst, const struct raw_event *src)
{
	*dst = *src;
	dst->blob = NULL;
	if (!src->blob_len)
		return 0;
	uint8_t *b = malloc(src->blob_len);
	if (!b)
		return -ENOMEM;
	memcpy(b, src->blob, src->blob_len);
	dst->blob = b;
	return 0;
}

/* Sample EV with X waits at the end of the ring. */
static int hold(struct lt_source *s, const struct raw_event *ev, const struct su_lttng_extra *x)
{
	if (s->n_held == s->cap_held) {
		size_t const ncap = s->cap_held ? 2 * s->cap_held : 64;
		struct held *n = malloc(ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < s->n_held; i++)
			n[i] = s->held[(s->held_head + i) % s->cap_held];
		free(s->held);
		s->held = n;
		s->held_head = 0;
		s->cap_held = ncap;
	}
	struct held *h = &s->held[(s->held_head + s->n_held) % s->cap_held];
	*h = (struct held){ .has_seg = x->has_seg, .has_rt = x->has_rt };
	int rc = copy_blob(&h->ev, ev);
	if (!rc && x->has_seg && (rc = copy_blob(&h->seg, &x->seg)) != 0)
		h->has_seg = 0;
	if (!rc && x->has_rt && (rc = copy_blob(&h->rt, &x->rt)) != 0)
		h->has_rt = 0;
	if (rc) {
		held_free(h);
		return rc;
	}
	s->held_bytes += held_size(h);
	s->n_held++;
	return 0;
}

/* The sample with its segment and runtime frames to the core. */
static int deliver(struct lt_source *s, const struct raw_event *ev, const struct raw_event *seg,
		   const struct raw_event *rt)
{
	int rc = seg ? s->emit(s->ctx, seg) : 0;
	if (!rc && rt)
		rc = s->emit(s->ctx, rt);
	if (!rc)
		rc = s->emit(s->ctx, ev);
	return rc;
}

static int ready(struct lt_source *s, const struct raw_event *ev, const struct raw_event *rt)
{
	return reader_can_decode(s->ctx, ev) && (!rt || reader_can_name_runtime(s->ctx, rt));
}

/* Settled generations to the core, then the waiting samples that can go,
 * in order; FORCE (the trace ended): every generation, every sample. */
static int settle(struct lt_source *s, int force)
{
	int rc = su_lttng_join_flush(s->join, s->now, WAIT_NS, force, s->emit, s->ctx);
	while (!rc && s->n_held) {
		struct held *h = &s->held[s->held_head];
		if (!force && s->now < h->ev.ts + HOLD_NS && s->held_bytes <= HELD_MAX &&
		    !ready(s, &h->ev, h->has_rt ? &h->rt : NULL))
			break;
		rc = deliver(s, &h->ev, h->has_seg ? &h->seg : NULL, h->has_rt ? &h->rt : NULL);
		s->held_bytes -= held_size(h);
		held_free(h);
		s->held_head = (s->held_head + 1) % s->cap_held;
		s->n_held--;
	}
	return rc;
}

/* ---- babeltrace2 messages ------------------------------------------------ */

static int handle_event(struct lt_source *s, const bt_message *msg)
{
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(bt_message_event_borrow_event_const(msg)));
	enum su_lttng_event const kind = su_lttng_event_of(name);
	if (kind == SU_LTTNG_OTHER)
		return 0; /* the user's own events */
	uint32_t vpid, vtid;
	if (su_lttng_event_ids(msg, &vpid, &vtid)) {
		if (kind == SU_LTTNG_MODULES)
			return 0;
		su_set_err(s->err, s->errlen, "stackcap events without the vpid and vtid contexts: record with "
			   "`lttng add-context -u -t vpid -t vtid` (docs/lttng.md)");
		return -EINVAL;
	}
	uint64_t const ts = su_bt2_event_ts(msg);
	if (ts > s->now)
		s->now = ts;
	int const sample = kind == SU_LTTNG_SAMPLE || kind == SU_LTTNG_SEGMENT || kind == SU_LTTNG_RUNTIME_FRAMES;
	int rc;
	if (!sample) {
		rc = su_lttng_join_add(s->join, msg, kind, vpid, ts);
		if (!rc)
			rc = settle(s, 0);
	} else {
		s->samples_seen += kind == SU_LTTNG_SAMPLE || kind == SU_LTTNG_SEGMENT;
		struct raw_event ev;
		struct su_lttng_extra x;
		rc = su_lttng_join_sample(s->join, msg, kind, vpid, vtid, ts, &ev, &x);
		if (rc > 0) {
			const struct raw_event *const rt = x.has_rt ? &x.rt : NULL;
			if (!s->n_held && ready(s, &ev, rt))
				rc = deliver(s, &ev, x.has_seg ? &x.seg : NULL, rt);
			else if (!(rc = hold(s, &ev, &x)))
				rc = settle(s, 0);
		}
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		s->emit_rc = rc;
	return 0;
}

/* Each message of the graph (trace/bt2-graph.h): 0, 1 to stop, -errno. */
static int on_message(void *arg, const bt_message *m)
{
	struct lt_source *s = arg;
	bt_message_type const t = bt_message_get_type(m);
	if (t == BT_MESSAGE_TYPE_EVENT) {
		int const rc = handle_event(s, m);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
	} else if (t == BT_MESSAGE_TYPE_DISCARDED_EVENTS) {
		/* LTTng's ring buffer was full: records lost. */
		struct raw_event ev = { .kind = RAW_DISCARDED };
		if (bt_message_discarded_events_get_count(m, &ev.discarded) == BT_PROPERTY_AVAILABILITY_AVAILABLE &&
		    ev.discarded) {
			int const erc = s->emit(s->ctx, &ev);
			if (erc)
				s->emit_rc = erc;
		}
	}
	return s->emit_rc ? 1 : 0;
}

/* src.ctf.fs, one per trace below DIR (babeltrace2 2.0's component does
 * not search subdirectories) -> flt.utils.muxer -> on_message. */
static int run_graph(struct lt_source *s)
{
	return su_bt2_read_ctf((const char *const *)s->traces, s->n_traces, "the LTTng trace", on_message, s, s->err,
			       s->errlen);
}

/* ---- damaged stream files ------------------------------------------------- */

/* LTTng's packet header and context put magic and packet_size where ours
 * do (docs/trace-format.md): su_ctf_complete_packets() finds where the
 * complete packets of a stream file end. */

static void rm_staged(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		char p[8192];
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int copy_prefix(const char *src, const char *dst, uint64_t len)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		int const e = -errno;
		close(in);
		return e;
	}
	char buf[65536];
	int rc = 0;
	while (len > 0 && !rc) {
		ssize_t const n = read(in, buf, len < sizeof(buf) ? len : sizeof(buf));
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else if (write(out, buf, (size_t)n) != n)
			rc = -EIO;
		else
			len -= (uint64_t)n;
	}
	close(in);
	if (close(out) && !rc)
		rc = -errno;
	return rc;
}

/* If a stream file of trace directory *DIR ends inside a packet, replace
 * *DIR by a private copy (metadata and intact files linked, damaged ones
 * cut after their last complete packet, no index: it would name the lost
 * packets), so babeltrace2 reads every complete packet.  @return 0 or
 * -errno. */
static int stage_if_damaged(struct lt_source *s, char **dir)
{
	DIR *d = opendir(*dir);
	if (!d)
		return 0;
	char *stage = NULL;
	struct dirent *e;
	int rc = 0;
	char src[8192], dst[8192];
	/* Two rounds: find damage; then, if any, build the copy. */
	for (int round = 0; round < 2 && !rc; round++) {
		int damaged = 0;
		rewinddir(d);
		while (!rc && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(src, sizeof(src), "%s/%s", *dir, e->d_name);
			struct stat sb;
			if (lstat(src, &sb) || !S_ISREG(sb.st_mode))
				continue;
			uint64_t good = (uint64_t)sb.st_size;
			if (strcmp(e->d_name, "metadata") != 0) {
				int const fd = su_open_regular(src, O_NOFOLLOW);
				if (fd >= 0) {
					good = su_ctf_complete_packets(fd, (uint64_t)sb.st_size);
					close(fd);
				}
			}
			if (good < (uint64_t)sb.st_size) {
				damaged = 1;
				if (round == 1) {
					su_reader_warn(s->rep->warn, "%s: cut or malformed packet at byte %llu of %llu: only the "
						       "packets before it are read", src, (unsigned long long)good,
						       (unsigned long long)sb.st_size);
					s->rep->truncated_files++;
				}
			}
			if (round == 1) {
				snprintf(dst, sizeof(dst), "%s/%s", stage, e->d_name);
				rc = good < (uint64_t)sb.st_size ? copy_prefix(src, dst, good)
								  : (symlink(src, dst) ? -errno : 0);
			}
		}
		if (round == 0) {
			if (!damaged)
				break;
			const char *tmp = getenv("TMPDIR");
			char tpl[4200];
			snprintf(tpl, sizeof(tpl), "%s/stackunwind-lttng.XXXXXX", tmp && *tmp ? tmp : "/tmp");
			if (!mkdtemp(tpl) || !(stage = strdup(tpl)) ||
			    su_grow((void **)&s->staged, &s->cap_staged, s->n_staged + 1, sizeof(*s->staged))) {
				rc = -errno ? -errno : -ENOMEM;
				free(stage);
				stage = NULL;
				break;
			}
			s->staged[s->n_staged++] = stage;
		}
	}
	closedir(d);
	if (!rc && stage) {
		char *const copy = strdup(stage);
		if (!copy)
			return -ENOMEM;
		free(*dir);
		*dir = copy;
	}
	return rc;
}

/* ---- what babeltrace2 may open ------------------------------------------- */

static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	       S_ISSOCK(m) ? "a socket" : S_ISLNK(m) ? "a symbolic link" : "not a regular file";
}

/* src.ctf.fs opens the files of a trace directory and of its index/
 * itself, blocking: a FIFO there (or a symlink to one) makes it wait for
 * ever, a device or a link out of the directory makes it read what the
 * trace does not hold.  So every entry of DIR (the trace directory ROOT,
 * whose realpath is REAL, or a directory below it) must be a regular file
 * or a directory, or a symlink to a regular file inside ROOT; checked with
 * lstat/stat and realpath only, no file is opened.  @return 0, or -EINVAL
 * with ERR saying which entry, -errno when DIR cannot be listed. */
static int check_trace_files(const char *dir, const char *real, int depth, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		int const e = errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	size_t const rl = strlen(real);
	struct dirent *e;
	int rc = 0;
	char p[8192];
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct stat sb;
		if (lstat(p, &sb)) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", p, strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			if (depth > 0)
				rc = check_trace_files(p, real, depth - 1, err, errlen);
		} else if (S_ISLNK(sb.st_mode)) {
			char *const to = realpath(p, NULL);
			struct stat tb;
			if (!to || stat(to, &tb) || !S_ISREG(tb.st_mode) || strncmp(to, real, rl) || to[rl] != '/') {
				snprintf(err, errlen, "%s: a symbolic link %s: refused, the trace is not read", p,
					 !to ? "to nothing" : stat(to, &tb) || !S_ISREG(tb.st_mode) ?
					 "to something not a regular file" : "leaving the trace directory");
				rc = -EINVAL;
			}
			free(to);
		} else if (!S_ISREG(sb.st_mode)) {
			snprintf(err, errlen, "%s: %s, not a regular file: refused, the trace is not read", p,
				 file_kind(sb.st_mode));
			rc = -EINVAL;
		}
	}
	closedir(d);
	return rc;
}

/* ---- the source ----------------------------------------------------------- */

static int find_lttng_ust(struct lt_source *s, const char *dir, int depth);

static void lt_close(void *h)
{
	struct lt_source *s = h;
	if (!s)
		return;
	su_lttng_join_free(s->join);
	for (; s->n_held; s->n_held--, s->held_head = (s->held_head + 1) % s->cap_held)
		held_free(&s->held[s->held_head]);
	free(s->held);
	for (size_t i = 0; i < s->n_traces; i++)
		free(s->traces[i]);
	free(s->traces);
	for (size_t i = 0; i < s->n_staged; i++) {
		rm_staged(s->staged[i]);
		free(s->staged[i]);
	}
	free(s->staged);
	free(s);
}

static int lt_open(const char *dir, struct source_report *rep, void **h, char *err, size_t errlen)
{
	struct lt_source *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->rep = rep;
	if (!(s->join = su_lttng_join_new())) {
		snprintf(err, errlen, "out of memory");
		lt_close(s);
		return -ENOMEM;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	int const n = find_lttng_ust(s, dir, 6);
	if (n <= 0) {
		snprintf(err, errlen, n < 0 ? "out of memory" : "%s holds no LTTng-UST trace", dir);
		lt_close(s);
		return n < 0 ? -ENOMEM : -ENOENT;
	}
	for (size_t i = 0; i < s->n_traces; i++) {
		char *const real = realpath(s->traces[i], NULL);
		int const frc = real ? check_trace_files(s->traces[i], real, 4, err, errlen) : -errno;
		if (!real)
			snprintf(err, errlen, "%s: %s", s->traces[i], strerror(-frc));
		free(real);
		if (frc) {
			lt_close(s);
			return frc < 0 ? frc : -EINVAL;
		}
	}
	for (size_t i = 0; i < s->n_traces; i++) {
		int const rc = stage_if_damaged(s, &s->traces[i]);
		if (rc) {
			snprintf(err, errlen, "cannot stage the damaged trace %s: %s", s->traces[i], strerror(-rc));
			lt_close(s);
			return rc;
		}
	}
	*h = s;
	return 0;
}

static int lt_run(void *h, enum source_pass pass, raw_emit_fn emit, void *ctx, char *err, size_t errlen)
{
	struct lt_source *s = h;
	(void)pass; /* one pass: process, maps and samples */
	s->emit = emit;
	s->ctx = ctx;
	s->emit_rc = 0;
	s->err = err;
	s->errlen = errlen;
	int rc = run_graph(s);
	if (rc)
		return rc;
	if (s->emit_rc)
		return s->emit_rc;
	if (!su_lttng_join_has_generations(s->join)) {
		su_set_err(s->err, s->errlen, "no stackcap:code_ranges event (%llu stackcap:sample events): enable "
			   "`stackcap:*` in the LTTng session and record with stackcap record --lttng or "
			   "liblttng-stackcap.so (docs/lttng.md)",
			(unsigned long long)s->samples_seen);
		return -ENODATA;
	}
	/* The trace ended: every generation, then what waits. */
	rc = settle(s, 1);
	if (rc == -ENOMEM)
		su_set_err(s->err, s->errlen, "out of memory");
	return rc;
}

const struct event_source su_source_lttng = {
	.name = "lttng",
	.open = lt_open,
	.run = lt_run,
	.close = lt_close,
	.no_process_end = 1,
	.one_pass = 1,
};

/* ---- probing and the entry point ------------------------------------------ */

/* Does the CTF metadata file PATH (LTTng writes it packetized: text inside
 * binary packet headers) name the lttng-ust tracer? */
static int metadata_is_lttng_ust(const char *path)
{
	int fd = su_open_regular(path, O_NOFOLLOW);
	if (fd < 0)
		return 0;
	char buf[16384];
	ssize_t const n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	static const char needle[] = "tracer_name = \"lttng-ust\"";
	for (ssize_t i = 0; i + (ssize_t)sizeof(needle) - 1 <= n; i++)
		if (buf[i] == 't' && memcmp(buf + i, needle, sizeof(needle) - 1) == 0)
			return 1;
	return 0;
}

/* LTTng-UST traces at DIR or below it (session dir, ust/uid/N/64-bit/):
 * counted, and added to S when not NULL.  @return how many, or -ENOMEM. */
static int find_lttng_ust(struct lt_source *s, const char *dir, int depth)
{
	char p[8192];
	snprintf(p, sizeof(p), "%s/metadata", dir);
	if (metadata_is_lttng_ust(p)) {
		if (!s)
			return 1;
		if (su_grow((void **)&s->traces, &s->cap_traces, s->n_traces + 1, sizeof(*s->traces)) ||
		    !(s->traces[s->n_traces] = strdup(dir)))
			return -ENOMEM;
		s->n_traces++;
		return 1;
	}
	if (depth <= 0)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat sb;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			int const n = find_lttng_ust(s, p, depth - 1);
			if (n < 0) {
				found = n;
				break;
			}
			found += n;
			if (found && !s)
				break;
		}
	}
	closedir(d);
	return found;
}

int su_lttng_trace_probe(const char *dir)
{
	struct stat sb;
	return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && find_lttng_ust(NULL, dir, 6) > 0;
}

int su_lttng_trace_read(const char *dir, const struct su_reader_opts *opts, const struct su_reader_callbacks *cb,
			struct su_reader_stats *stats, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	if (!su_lttng_trace_probe(dir)) {
		snprintf(err, errlen, "%s holds no LTTng-UST trace (no metadata naming tracer \"lttng-ust\")", dir);
		return -EINVAL;
	}
	return su_reader_run_source(dir, &su_source_lttng, opts, cb, stats, err, errlen);
}
