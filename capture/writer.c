/* SPDX-License-Identifier: MIT */
/*
 * writer.c: the writer thread.  It wakes every few milliseconds (or when a
 * ring passes half full), writes new maps snapshots, drains every thread's
 * ring, applies the second codec stage (top-elided delta against the
 * previous sample of the same thread) and writes CTF events.  All the
 * allocation and I/O of the library happens here, off the traced threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/capture-internal.h"
#include "common/io.h"
#include "capture/ctf-writer.h"
#include "capture/runtime.h"
#include "common/grow.h"
#include "common/proc-stat.h"

#define WRITER_PERIOD_MS 20
/* Samples per packet before the writer cuts one: each packet starts with a
 * self-contained sample, so a lost packet loses only its own samples. */
#define SAMPLES_PER_PACKET 128
/* Packets in flight are written at least this often, and the process
 * stream as soon as it holds new maps: a process killed without warning
 * (SIGKILL) loses only its last moments, and its samples stay readable. */
#define FLUSH_PERIOD_NS (250 * 1000000ull)
#define SUMMARY_LEN 128
/* writer_pause asks the thread to leave; the thread leaves (or the asker
 * takes it back after a timeout): one exchange decides. */
enum { PAUSE_NONE, PAUSE_ASKED, PAUSE_LEFT };

struct wthread {
	struct ctf_stream *stream;
	uint64_t stream_last_ts;     /* time of the last event in `stream` */
	struct stackcap_image prev, cur;
	int have_prev;
	unsigned in_packet;
	uint64_t reported_drops;
};

static struct {
	pthread_t thread;
	int started;
	_Atomic int stop;
	struct ctf_writer *ctf;
	struct ctf_stream *proc;
	unsigned slot;
	unsigned proc_seq;      /* the process section's number: > 0 after an exec */
	int error;
	uint8_t *blob;               /* second-stage output */
	size_t blob_cap;
	uint64_t samples_written;
	uint64_t decode_errors;
	uint64_t last_flush_ns;
	int maps_written;            /* this cycle: flush the process stream */
	_Atomic int finish;          /* writer_finish_bounded() asked */
	int finished;                /* the trace was ended by the writer thread */
	int paused;                  /* stopped for a fork (writer_pause) */
	_Atomic int pause;           /* PAUSE_*: the fork hand-shake */
	/* What stackcap_get_stats reports, published by the writer: other
	 * threads never touch W.ctf, which the writer closes and frees. */
	_Atomic uint64_t bytes_pub;
	_Atomic int error_pub;
	/* Futex words, not fds: the program may close every fd it did not
	 * open (close_range) and reuse the numbers; a wake-up written into
	 * one of its pipes would be data, a read would steal its data. */
	_Atomic uint32_t wake_seq;   /* bumped by writer_wake */
	_Atomic uint32_t acked;      /* the writer thread says: finished */
	int summary_fd;              /* from its O_EXCL creation; -1: none */
	dev_t summary_dev;
	ino_t summary_ino;
	uint64_t summary_samples;    /* last running summary written */
	char summary_path[4200];
	uint64_t last_ts;
	/* Streams of exited threads, reused by new threads so that thread
	 * churn does not make a file per thread. */
	struct free_stream {
		struct ctf_stream *stream;
		uint64_t last_ts;
	} *free_streams;
	size_t n_free, cap_free;
} W;

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, (uint32_t *)word, op, val, timeout, NULL, 0);
}

/* Async-signal-safe: an atomic add and a syscall. */
void writer_wake(void)
{
	atomic_fetch_add(&W.wake_seq, 1);
	futex(&W.wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void note_error(int rc)
{
	if (rc < 0 && !W.error)
		W.error = rc;
}

static void publish_stats(void)
{
	if (W.ctf)
		atomic_store(&W.bytes_pub, ctf_writer_bytes_written(W.ctf));
	atomic_store(&W.error_pub, W.error);
}

/* Event times must not go back within a stream; the writer's own events
 * use the latest time it has seen. */
static uint64_t writer_ts(void)
{
	uint64_t const now = capture_now_ns();
	if (now > W.last_ts)
		W.last_ts = now;
	return W.last_ts;
}

/* LTTng mode: record S's code_ranges.  The session may enable
 * stackcap:code_ranges a little after stackcap:sample (each event class is
 * enabled on its own): while it is off, a generation that samples named
 * (or the current one) is tried again each cycle, up to 5 s.
 * @return 0 when done, 1 to try again. */
#define LTTNG_RANGES_ATTEMPTS (5000 / WRITER_PERIOD_MS)
static int lttng_emit(const struct snapshot *s)
{
	const struct snapshot_module *vdso = NULL;
	for (uint32_t i = 0; i < s->count && !vdso; i++)
		if (s->modules[i].flags & CTF_MAP_VDSO)
			vdso = &s->modules[i];
	return capture_lttng_sink.code_ranges(s->generation, s->ranges, s->count, vdso ? vdso->build_id : NULL,
					      vdso ? vdso->build_id_len : 0, &stackcap_g.cfg);
}

static int lttng_ranges(struct snapshot *s)
{
	if (lttng_emit(s))
		return 0;
	const struct snapshot *cur = snapshot_enter();
	int const needed = s == cur || atomic_load(&s->sampled) > 0;
	snapshot_leave();
	return needed && ++s->attempts < LTTNG_RANGES_ATTEMPTS;
}

static int write_maps(struct snapshot *s, void *arg)
{
	(void)arg;
	if (stackcap_g.cfg.lttng)
		return lttng_ranges(s);
	struct ctf_map_entry *e = calloc(s->count ? s->count : 1, sizeof(*e));
	if (!e) {
		note_error(-ENOMEM);
		return 0;
	}
	for (uint32_t i = 0; i < s->count; i++) {
		const struct snapshot_module *m = &s->modules[i];
		e[i] = (struct ctf_map_entry){ .start = m->start, .end = m->end, .offset = m->offset,
			.bias = m->bias, .flags = m->flags, .build_id_len = m->build_id_len,
			.build_id = m->build_id, .path = m->path };
	}
	note_error(ctf_stream_maps(W.proc, writer_ts(), s->generation, e, s->count));
	W.maps_written = 1;
	free(e);
	return 0;
}

static int image_alloc(struct stackcap_image *img, uint64_t words)
{
	img->words = malloc(words * 8);
	img->kept = NULL;
	img->capacity = words;
	return img->words ? 0 : -ENOMEM;
}

/* The writer state of T, created at its first record (time FIRST_TS).
 * A stream freed by an exited thread is reused when its last event is not
 * later than FIRST_TS: events of a stream must stay in time order. */
static struct wthread *wthread_get(struct thread_state *t, uint64_t first_ts)
{
	if (t->writer_priv)
		return t->writer_priv;
	struct wthread *w = calloc(1, sizeof(*w));
	uint64_t const cap_words = stackcap_g.cfg.stack_cap / 8 + 1;
	if (!w || image_alloc(&w->prev, cap_words) || image_alloc(&w->cur, cap_words))
		goto oom;
	for (size_t i = 0; i < W.n_free; i++) {
		if (W.free_streams[i].last_ts <= first_ts) {
			w->stream = W.free_streams[i].stream;
			w->stream_last_ts = W.free_streams[i].last_ts;
			W.free_streams[i] = W.free_streams[--W.n_free];
			t->writer_priv = w;
			return w;
		}
	}
	char name[64];
	/* After an exec the pid and the slot numbers start again: the
	 * section's number keeps the names apart (as record/encode.c). */
	if (W.proc_seq)
		snprintf(name, sizeof(name), "samples-%d-%u-%u", (int)getpid(), W.slot++, W.proc_seq);
	else
		snprintf(name, sizeof(name), "samples-%d-%u", (int)getpid(), W.slot++);
	int const rc = ctf_writer_open_stream(W.ctf, CTF_STREAM_SAMPLES, name, (uint32_t)getpid(), &w->stream);
	if (rc < 0) {
		note_error(rc);
		goto fail;
	}
	t->writer_priv = w;
	return w;
oom:
	note_error(-ENOMEM);
fail:
	if (w) {
		free(w->prev.words);
		free(w->cur.words);
		free(w);
	}
	return NULL;
}

/* Zero the words of IMG that POLICY does not keep (the encoder's own test
 * over the copied range), as the signal handler would have. */
static void filter_image(struct stackcap_image *img, const struct stackcap_code_ranges *ranges,
			 enum stackcap_policy policy, uint64_t also_lo, uint64_t also_hi)
{
	uint64_t const hi = img->sp + 8 * img->nwords;
	for (uint64_t i = 0; i < img->nwords; i++)
		if (!stackcap_codec_classify(img->words[i], ranges, img->sp, hi, policy) &&
		    !stackcap_codec_in_also(img->words[i], also_lo, also_hi, policy)) {
			img->words[i] = 0;
			if (img->kept)
				img->kept[i >> 3] &= (uint8_t)~(1u << (i & 7));
		}
	img->policy = policy;
}

/* write_record's events, in the group it began. */
static void write_group(struct wthread *w, pid_t tid, const struct ring_rec *rec,
			const struct stackcap_code_ranges *ranges, size_t len)
{
	if (rec->rt_len) {
		/* A runtime unwinder's frames (runtime.h), before the sample. */
		int const rrc = capture_rt_write(W.proc, writer_ts(), w->stream, rec->ts, (uint32_t)tid,
						 (const uint8_t *)(rec + 1) + len + rec->seg_len, rec->rt_len);
		if (rrc < 0) {
			note_error(rrc);
			return;
		}
	}
	size_t r = stackcap_codec_decode((const uint8_t *)(rec + 1), len, ranges, NULL, &w->cur);
	if (stackcap_codec_is_error(r)) {
		W.decode_errors++;
		return;
	}
	uint64_t also_lo = 0, also_hi = 0;
	if (rec->seg_len) {
		/* Its range: the sample keeps the pointers into it (encoder's
		 * also_lo/also_hi), so the re-encoding below must too. */
		struct stackcap_codec_header sh;
		if (!stackcap_codec_is_error(stackcap_codec_peek((const uint8_t *)(rec + 1) + len, rec->seg_len, &sh)) &&
		    !sh.sp_is_delta && sh.nwords <= (UINT64_MAX - sh.sp_or_delta) / 8) {
			also_lo = sh.sp_or_delta;
			also_hi = sh.sp_or_delta + 8 * sh.nwords;
		}
		/* The interrupted stack of an alternate-stack handler: its own
		 * self-contained blob, just before the sample. */
		int const src = ctf_stream_sample_segment(w->stream, rec->ts, (uint32_t)tid, rec->generation,
							  (const uint8_t *)(rec + 1) + len, rec->seg_len);
		if (src < 0) {
			note_error(src);
			return;
		}
	}
	if (stackcap_g.cfg.full_copy) {
		/* The ring holds the unfiltered copy: store it as is, then
		 * filter it as the handler would have, so the sample event and
		 * its elision are exactly those of an ordinary recording. */
		int const frc = ctf_stream_sample_full(w->stream, rec->ts, (uint32_t)tid, rec->generation,
							(const uint8_t *)(rec + 1), len);
		if (frc < 0) {
			note_error(frc);
			return;
		}
		filter_image(&w->cur, ranges, stackcap_g.cfg.policy, also_lo, also_hi);
	}
	uint64_t const k = w->have_prev ? stackcap_image_common_top(&w->cur, &w->prev) : 0;
	struct stackcap_codec_input in = {
		.words = w->cur.words, .nwords = w->cur.nwords, .sp = w->cur.sp, .regs = w->cur.regs,
		.ranges = ranges, .policy = w->cur.policy, .encoding = STACKCAP_WORDS_RELATIVE,
		.elide_top = k, .ref_sp = w->prev.sp, .has_ref = w->have_prev,
		.also_lo = also_lo, .also_hi = also_hi,
	};
	size_t const need = STACKCAP_CODEC_BOUND(w->cur.nwords);
	if (need > W.blob_cap) {
		uint8_t *nb = realloc(W.blob, need);
		if (!nb) {
			note_error(-ENOMEM);
			return;
		}
		W.blob = nb;
		W.blob_cap = need;
	}
	size_t out = stackcap_codec_encode(W.blob, W.blob_cap, &in);
	/* Not after a sample of its thread in the packet in flight (the
	 * packet filled by bytes, or the events just written began one): it
	 * refers to none, so that the packet decodes alone. */
	if (!stackcap_codec_is_error(out) && in.has_ref &&
	    !ctf_stream_joins(w->stream, (uint32_t)tid, CTF_SAMPLE_EVENT_MAX(out))) {
		in.has_ref = 0;
		in.elide_top = 0;
		out = stackcap_codec_encode(W.blob, W.blob_cap, &in);
	}
	if (stackcap_codec_is_error(out)) {
		W.decode_errors++;
		return;
	}
	int const rc = ctf_stream_sample(w->stream, rec->ts, (uint32_t)tid, rec->generation, W.blob, out);
	if (rc < 0) {
		note_error(rc);
		w->have_prev = 0;
		return;
	}
	w->stream_last_ts = rec->ts;
	W.samples_written++;
	struct stackcap_image const tmp = w->prev;
	w->prev = w->cur;
	w->cur = tmp;
	w->have_prev = 1;
	if (++w->in_packet >= SAMPLES_PER_PACKET) {
		note_error(ctf_stream_flush(w->stream));
		w->in_packet = 0;
		w->have_prev = 0;
	}
}

/* One record: decode, elide the top shared with the previous sample,
 * write.  A record that does not decode is counted, never written. */
static void write_record(struct wthread *w, pid_t tid, const struct ring_rec *rec)
{
	const struct snapshot *snap = snapshot_lookup(rec->generation);
	const struct stackcap_code_ranges *ranges = snap ? &snap->set : NULL;
	size_t const len = rec->size - sizeof(*rec) - rec->seg_len - rec->rt_len;
	/* The sample and the events it comes with go in one packet; a
	 * record that fails half-way leaves none of them. */
	int const grc = ctf_stream_group_begin(w->stream, (uint32_t)tid);
	if (grc < 0) {
		note_error(grc);
		return;
	}
	write_group(w, tid, rec, ranges, len);
	ctf_stream_group_cancel(w->stream); /* no-op once the sample is written */
}

static void drain_thread(struct thread_state *t)
{
	const struct ring_rec *rec;
	struct wthread *w = NULL;
	if (stackcap_g.cfg.lttng) {
		/* Only runtime frames are committed here: their code objects. */
		while ((rec = ring_peek(&t->ring))) {
			capture_rt_lttng_codes((const uint8_t *)(rec + 1), rec->rt_len);
			ring_pop(&t->ring, rec);
		}
		return;
	}
	while ((rec = ring_peek(&t->ring))) {
		if (!w && !(w = wthread_get(t, rec->ts))) {
			ring_pop(&t->ring, rec); /* cannot write: drop, counted below */
			atomic_fetch_add(&t->dropped_ring_full, 1);
			continue;
		}
		write_record(w, t->tid, rec);
		ring_pop(&t->ring, rec);
	}
	if (!w)
		w = t->writer_priv;
	uint64_t const drops = atomic_load(&t->dropped_ring_full) + atomic_load(&t->dropped_nested);
	if (w && drops != w->reported_drops) {
		struct ctf_drops d = { .tid = (uint32_t)t->tid,
			.ring_full = atomic_load(&t->dropped_ring_full),
			.nested = atomic_load(&t->dropped_nested) };
		note_error(ctf_stream_drops(W.proc, writer_ts(), &d));
		note_error(ctf_stream_discarded(w->stream, drops - w->reported_drops));
		w->reported_drops = drops;
	}
}

/* Retire T's writer state; its stream goes to the free list (KEEP) or is
 * closed. */
static void wthread_close(struct thread_state *t, int keep)
{
	struct wthread *w = t->writer_priv;
	if (!w)
		return;
	if (keep)
		(void)SU_GROW(W.free_streams, W.cap_free, W.n_free + 1); /* else closed below */
	if (keep && W.n_free < W.cap_free) {
		/* The next thread starts a new packet (tid switch) with a
		 * self-contained sample. */
		note_error(ctf_stream_flush(w->stream));
		W.free_streams[W.n_free++] = (struct free_stream){ w->stream, w->stream_last_ts };
	} else {
		note_error(ctf_stream_close(w->stream));
	}
	free(w->prev.words);
	free(w->cur.words);
	free(w);
	t->writer_priv = NULL;
}

/* LTTng mode: the current generation again about once a second, for a
 * session started after it was first recorded (docs/lttng.md). */
#define LTTNG_RANGES_REPEAT_NS 1000000000ull

static void lttng_repeat_ranges(int now)
{
	static uint64_t last;
	static pid_t rt_described; /* the runtime described once in this process */
	uint64_t const t = capture_now_ns();
	/* The runtime's description each cycle until it is recorded, not only
	 * with the repeat: the runtime is found, or the session enables the
	 * event, after the first cycle; a program shorter than the repeat had
	 * it only at its exit, lost when LTTng-UST is torn down first. */
	if (!now && t - last < LTTNG_RANGES_REPEAT_NS) {
		if (rt_described != stackcap_g.pid && capture_rt_lttng_info())
			rt_described = stackcap_g.pid;
		return;
	}
	last = t;
	const struct snapshot *cur = snapshot_enter();
	if (cur)
		lttng_emit(cur);
	snapshot_leave();
	if (capture_rt_lttng_info())
		rt_described = stackcap_g.pid;
}

static void summary_running(void);

/* Write the packets in flight when the period is over, and the process
 * stream when it got maps (see FLUSH_PERIOD_NS).  Each packet starts with
 * a self-contained sample: the next one is not elided. */
static void flush_if_due(void)
{
	uint64_t const now = capture_now_ns();
	int const due = now - W.last_flush_ns >= FLUSH_PERIOD_NS;
	if (W.maps_written || due)
		note_error(ctf_stream_flush(W.proc));
	W.maps_written = 0;
	if (!due)
		return;
	W.last_flush_ns = now;
	for (struct thread_state *t = atomic_load(&stackcap_g.threads); t; t = t->next) {
		struct wthread *w = t->writer_priv;
		if (w && w->in_packet) {
			note_error(ctf_stream_flush(w->stream));
			w->in_packet = 0;
			w->have_prev = 0;
		}
	}
	summary_running();
}

/* One pass: maps, reclaim, drain, retire exited threads. */
static void writer_cycle(int final)
{
	snapshot_refresh(0);
	snapshot_for_each_unwritten(write_maps, NULL);
	/* The process stream (process_start, maps) goes to disk before the
	 * samples that need it: a disk that fills at the next sample packet
	 * still leaves them readable (the first cycle's packet, written
	 * before the process stream, filled a 128 KiB disk: no sample could
	 * be decoded). */
	if (W.maps_written && W.proc && !stackcap_g.cfg.lttng) {
		note_error(ctf_stream_flush(W.proc));
		W.maps_written = 0;
	}
	if (stackcap_g.cfg.lttng)
		lttng_repeat_ranges(final);
	snapshot_reclaim();
	struct thread_state *prev = NULL;
	struct thread_state *t = atomic_load(&stackcap_g.threads);
	while (t) {
		struct thread_state *const next = t->next;
		int const exited = atomic_load(&t->exited);
		drain_thread(t);
		if (exited) {
			/* Unlink: only this thread edits `next`; pushes only
			 * swap the head.  Under the lock, which a walker of the
			 * list (stackcap_shutdown, stackcap_get_stats) holds
			 * for its whole walk: once unlinked, nobody is on t. */
			int unlinked = 0;
			pthread_mutex_lock(&capture_threads_lock);
			if (prev) {
				prev->next = next;
				unlinked = 1;
			} else {
				struct thread_state *head = t;
				unlinked = atomic_compare_exchange_strong(&stackcap_g.threads, &head, next);
			}
			if (unlinked) {
				atomic_fetch_add(&stackcap_g.samples_total, atomic_load(&t->samples));
				atomic_fetch_add(&stackcap_g.drops_total, atomic_load(&t->dropped_ring_full) +
									  atomic_load(&t->dropped_nested));
			}
			pthread_mutex_unlock(&capture_threads_lock);
			if (unlinked) {
				wthread_close(t, !final);
				munmap(t->ring.buf, t->ring.size);
				free(t);
				t = next;
				continue;
			}
		}
		if (final)
			wthread_close(t, 0);
		prev = t;
		t = next;
	}
	if (!final && !stackcap_g.cfg.lttng)
		flush_if_due();
	publish_stats();
}

static void close_free_streams(void)
{
	for (size_t i = 0; i < W.n_free; i++)
		note_error(ctf_stream_close(W.free_streams[i].stream));
	free(W.free_streams);
	W.free_streams = NULL;
	W.n_free = W.cap_free = 0;
}

/* The summary line `stackcap record` reads, at offset 0 of a file made at
 * start: rewriting its first bytes needs no new space, so even a full
 * disk gets it. */
static void summary_write(const char *line)
{
	char buf[SUMMARY_LEN];
	memset(buf, ' ', sizeof(buf));
	size_t n = strlen(line);
	if (n > sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	memcpy(buf, line, n);
	buf[sizeof(buf) - 1] = '\n';
	/* The fd of its creation, while it is still that file; else the
	 * same file by name (no symlink followed, identity checked). */
	struct stat st;
	if (!ctf_fd_is_file(W.summary_fd, W.summary_dev, W.summary_ino)) {
		int const fd = open(W.summary_path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return;
		if (fstat(fd, &st) != 0 || st.st_dev != W.summary_dev || st.st_ino != W.summary_ino) {
			close(fd);
			return;
		}
		W.summary_fd = fd; /* the old number is the program's now: not closed */
	}
	ssize_t const r = pwrite(W.summary_fd, buf, sizeof(buf), 0);
	(void)r;
}

static void summary_close(void)
{
	if (ctf_fd_is_file(W.summary_fd, W.summary_dev, W.summary_ino))
		close(W.summary_fd);
	W.summary_fd = -1;
}

/* Samples in packets on disk: what the trace holds. */
static uint64_t samples_on_disk(void)
{
	struct ctf_writer_stats st;
	ctf_writer_get_stats(W.ctf, &st);
	return st.samples;
}

/* While the process runs, its summary counts what the trace holds so far:
 * a process that ends without a word (SIGKILL, a raw exit_group) is
 * reported with the samples that were written before. */
static void summary_running(void)
{
	if (!W.ctf)
		return;
	uint64_t const s = samples_on_disk();
	if (s == W.summary_samples)
		return;
	W.summary_samples = s;
	uint64_t drops = atomic_load(&stackcap_g.drops_total) + atomic_load(&stackcap_g.dropped_no_stack);
	for (struct thread_state *t = atomic_load(&stackcap_g.threads); t; t = t->next)
		drops += atomic_load(&t->dropped_ring_full) + atomic_load(&t->dropped_nested);
	char line[SUMMARY_LEN];
	snprintf(line, sizeof(line), "started %d samples %llu drops %llu", (int)getpid(), (unsigned long long)s,
		 (unsigned long long)drops);
	summary_write(line);
}

/* The end of the trace: last drain, process_end, files closed, summary. */
static int finish_trace(void)
{
	/* LTTng mode: no trace files; the last events go to the session. */
	if (stackcap_g.cfg.lttng) {
		writer_cycle(1);
		return W.error;
	}
	if (!W.ctf)
		return W.error;
	writer_cycle(1);
	close_free_streams();
	uint64_t samples = W.samples_written, drops = atomic_load(&stackcap_g.drops_total) +
						       atomic_load(&stackcap_g.dropped_no_stack);
	for (struct thread_state *t = atomic_load(&stackcap_g.threads); t; t = t->next)
		drops += atomic_load(&t->dropped_ring_full) + atomic_load(&t->dropped_nested);
	note_error(capture_rt_write_info(W.proc, writer_ts(), 0));
	note_error(ctf_stream_process_end(W.proc, writer_ts(), samples, drops + W.decode_errors));
	/* The sample streams are closed (written): what the trace holds. */
	samples = samples_on_disk();
	uint64_t const bytes = ctf_writer_bytes_written(W.ctf);
	note_error(ctf_writer_close(W.ctf));
	atomic_store(&W.bytes_pub, bytes);
	atomic_store(&W.error_pub, W.error);
	W.ctf = NULL;
	W.proc = NULL;
	char line[SUMMARY_LEN];
	snprintf(line, sizeof(line), "samples %llu drops %llu bytes %llu error %d", (unsigned long long)samples,
		 (unsigned long long)drops, (unsigned long long)bytes, W.error);
	summary_write(line);
	summary_close();
	free(W.blob);
	W.blob = NULL;
	W.blob_cap = 0;
	return W.error;
}

/* How often the writer looks whether the program's threads are all gone. */
#define ALONE_CHECK_NS (200 * 1000000ull)

/* Whether the program has ended without exit(): its main thread left by
 * pthread_exit (the thread group's leader is a zombie) and no thread but
 * this writer remains.  glibc ends the process (exit(0)) when its last
 * thread ends: the writer, counted as one, would keep it alive forever.
 * Asked only once the main thread was seen leaving (stackcap_g.main_left):
 * opening a file of ours is a moment where a program closing every fd
 * could take the number.  One read of /proc/self/stat. */
static int program_gone(void)
{
	int const fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[1024];
	ssize_t const n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char state;
	long threads;
	return su_proc_stat_parse(buf, &state, &threads) == 0 && state == 'Z' && threads == 2;
}

/* The trace ended by this thread, and whoever waits for it told
 * (writer_finish_bounded). */
static void finish_here(void)
{
	finish_trace();
	W.finished = 1;
	atomic_store(&W.acked, 1);
	futex(&W.acked, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

/* The program has ended (program_gone): end the trace as its exit would
 * have, then the writer returns and glibc ends the process, exit(0), as
 * the program alone would have.  Its atexit handlers and destructors run
 * in this thread: with the signals open, as in any last thread.
 * @return 1 when ended. */
static int program_ended(void)
{
	if (!capture_stop_from_writer())
		return 0;
	finish_here();
	sigset_t none;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	return 1;
}

static void *writer_main(void *arg)
{
	(void)arg;
	/* The writer must never be sampled nor receive the sampling signal. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* A wake-up during a cycle is not lost: the wait returns at once
	 * when the word moved since it was read, before that cycle. */
	uint32_t seen = atomic_load(&W.wake_seq);
	uint64_t last_alone_check = 0;
	while (!atomic_load(&W.stop) && !atomic_load(&W.finish)) {
		/* writer_pause asks; leaving is ours to say (see there). */
		int asked = PAUSE_ASKED;
		if (atomic_compare_exchange_strong(&W.pause, &asked, PAUSE_LEFT))
			return NULL;
		struct timespec const period = { 0, WRITER_PERIOD_MS * 1000000L };
		futex(&W.wake_seq, FUTEX_WAIT_PRIVATE, seen, &period);
		seen = atomic_load(&W.wake_seq);
		writer_cycle(0);
		if (!stackcap_g.cfg.lttng && atomic_load(&stackcap_g.main_left)) {
			uint64_t const now = capture_now_ns();
			if (now - last_alone_check >= ALONE_CHECK_NS) {
				last_alone_check = now;
				if (program_gone() && program_ended())
					return NULL;
			}
		}
	}
	if (atomic_load(&W.finish) && !atomic_load(&W.stop))
		finish_here();
	return NULL;
}

static int open_proc_stream(void)
{
	char name[64];
	int rc = -EEXIST;
	/* A new process section after exec keeps the pid: number them. */
	for (unsigned seq = 0; rc == -EEXIST && seq < 1000; seq++) {
		snprintf(name, sizeof(name), "proc-%d-%u", (int)getpid(), seq);
		rc = ctf_writer_open_stream(W.ctf, CTF_STREAM_PROCESS, name, (uint32_t)getpid(), &W.proc);
		W.proc_seq = seq;
	}
	return rc;
}

static void read_comm(char *comm, size_t n)
{
	comm[0] = '\0';
	FILE *f = fopen("/proc/self/comm", "re");
	if (f) {
		if (fgets(comm, (int)n, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
}

int writer_start(void)
{
	const struct stackcap_config *c = &stackcap_g.cfg;
	if (c->lttng) {
		/* No trace directory: the thread only publishes and records
		 * code-range generations and retires exited threads. */
		atomic_store(&W.stop, 0);
		int const prc = -capture_own_pthread_create(&W.thread, writer_main, NULL);
		if (prc == 0)
			W.started = 1;
		return prc;
	}
	struct ctf_writer_opts o = { .sz = sizeof(o), .zstd = c->zstd,
				     .clock_offset_ns = c->clock_offset_ns, .runtime_frames = c->runtime_frames };
	memcpy(o.uuid, c->uuid, sizeof(o.uuid));
	W.summary_fd = -1;
	int rc = ctf_writer_open(c->output_dir, &o, &W.ctf);
	if (rc < 0)
		return rc;
	/* A summary saying "started" until the trace ends: `stackcap record`
	 * tells the processes that never finished theirs.  (Hidden: babeltrace2
	 * skips dot files.) */
	snprintf(W.summary_path, sizeof(W.summary_path), "%s/.summary-%d-%lld", c->output_dir, (int)getpid(),
		 (long long)capture_now_ns());
	int const sfd = open(W.summary_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	struct stat sst;
	if (sfd >= 0 && fstat(sfd, &sst) != 0) {
		close(sfd);
	} else if (sfd >= 0) {
		/* Kept: reopening by name could follow a planted link. */
		W.summary_fd = sfd;
		W.summary_dev = sst.st_dev;
		W.summary_ino = sst.st_ino;
		W.summary_samples = 0;
		char line[64];
		snprintf(line, sizeof(line), "started %d", (int)getpid());
		summary_write(line);
	}
	rc = open_proc_stream();
	if (rc < 0)
		goto fail;
	char comm[64], exe[PATH_MAX];
	read_comm(comm, sizeof(comm));
	char link[32];
	ssize_t const n = readlink(su_proc_self_path(link, sizeof(link), "exe"), exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	struct ctf_process_info info = {
		.pid = (uint32_t)getpid(), .ppid = (uint32_t)getppid(), .comm = comm, .exe = exe,
		.clock_offset_ns = c->clock_offset_ns, .frequency_hz = c->no_sampling ? 0 : c->frequency_hz,
		.stack_cap = (uint32_t)c->stack_cap, .policy = (uint8_t)c->policy,
		.codec_version = STACKCAP_CODEC_VERSION,
	};
	rc = ctf_stream_process_start(W.proc, writer_ts(), &info);
	if (rc == 0)
		rc = capture_rt_write_info(W.proc, writer_ts(), 1);
	if (rc < 0)
		goto fail;
	atomic_store(&W.acked, 0);
	atomic_store(&W.stop, 0);
	atomic_store(&W.finish, 0);
	W.finished = 0;
	W.last_flush_ns = capture_now_ns();
	W.maps_written = 1; /* process_start goes to disk at the first cycle */
	rc = -capture_own_pthread_create(&W.thread, writer_main, NULL);
	if (rc < 0)
		goto fail;
	W.started = 1;
	return 0;
fail:
	ctf_writer_close(W.ctf);
	W.ctf = NULL;
	W.proc = NULL;
	summary_close();
	return rc;
}

int writer_stop(void)
{
	if (W.started) {
		atomic_store(&W.stop, 1);
		writer_wake();
		pthread_join(W.thread, NULL);
		W.started = 0;
	}
	if (W.finished)
		return W.error;
	return finish_trace();
}

/* How long fork() waits for the writer thread to leave. */
#define PAUSE_TIMEOUT_MS 200

void writer_pause(void)
{
	/* Not when the trace is being finished: that thread goes on alone.
	 * Not in LTTng mode: lttng-ust's fork wrapper holds its locks
	 * through fork(), a tracepoint of the writer waits for them, and the
	 * process has lttng-ust's threads anyway. */
	if (!W.started || atomic_load(&W.finish) || stackcap_g.cfg.lttng)
		return;
	/* Bounded: another library's fork preparation may hold a lock the
	 * writer is waiting for.  Then the writer goes on through the fork,
	 * as it did before: whoever wins the exchange on W.pause decides. */
	atomic_store(&W.pause, PAUSE_ASKED);
	writer_wake();
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += PAUSE_TIMEOUT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	if (pthread_timedjoin_np(W.thread, NULL, &until) != 0) {
		int asked = PAUSE_ASKED;
		if (atomic_compare_exchange_strong(&W.pause, &asked, PAUSE_NONE))
			return; /* still at work: it stays */
		/* It left just now, holding nothing: the join is immediate. */
		pthread_join(W.thread, NULL);
	}
	atomic_store(&W.pause, PAUSE_NONE);
	W.started = 0;
	W.paused = 1;
}

void writer_resume(void)
{
	if (!W.paused)
		return;
	W.paused = 0;
	/* If it cannot start, the rings fill and drops are counted; the
	 * destructor still drains them (writer_stop). */
	if (capture_own_pthread_create(&W.thread, writer_main, NULL) == 0)
		W.started = 1;
}

int writer_finish_bounded(int timeout_ms)
{
	int expected = 0;
	if (!W.started || stackcap_g.cfg.lttng || !atomic_compare_exchange_strong(&W.finish, &expected, 1))
		return 0;
	writer_wake();
	/* One deadline for the whole wait: called from _exit with signals
	 * open, the wait may be interrupted again and again (a timer of ours,
	 * the program's own itimer); restarting the full timeout each time
	 * would never end while the writer is stuck. */
	uint64_t const deadline = capture_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		if (atomic_load(&W.acked))
			return 0;
		uint64_t const now = capture_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		uint64_t const left = deadline - now;
		struct timespec const ts = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };
		futex(&W.acked, FUTEX_WAIT_PRIVATE, 0, &ts); /* EINTR, EAGAIN: look again */
	}
}

void writer_get_stats(uint64_t *bytes, int *error)
{
	*bytes = atomic_load(&W.bytes_pub);
	*error = atomic_load(&W.error_pub);
}

void writer_reset_after_fork(void)
{
	/* The parent's writer (buffers, open files) is abandoned, not
	 * closed: flushing it here would write the parent's data twice. */
	memset(&W, 0, sizeof(W));
	W.summary_fd = -1;
}
