/* Event source: our own parser of the stream files (docs/trace-format.md).
 *
 * Each stream file of a pass is read one packet at a time into its own
 * buffer (plain files with pread, .zst files through libzstd's streaming
 * decoder, one frame per packet); a binary heap merges the files on the
 * next event's timestamp.  Ties go the way babeltrace2's muxer sends them
 * (lower stream_instance_id first), then by file name; a file keeps its
 * own order.  The files are untrusted: every length is checked against the
 * packet, and the first defect of a file ends that file (with a warning)
 * after every event before it was delivered. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "common/ctf-layout.h"
#include "common/io.h"
#include "trace/reader-internal.h"

#define PKT_HDR CTF_PACKET_PREAMBLE
#define PKT_READ 65536u                 /* first read of a plain packet */
#define PKT_MAX (64u << 20)             /* a bigger packet is corrupt */
#define ZIN_SIZE 65536u                 /* compressed bytes read at a time */
#define ZHELD_MAX (128u << 20)          /* inflated packets held at once, all files */
#define TS27_MASK ((UINT64_C(1) << CTF_EV_TS_BITS) - 1)

/* Every version's events included (an older trace has none of the later
 * ones). */
static const unsigned n_event_ids[2] = { CTF_EV_KERNEL_SYMBOLS + 1, CTF_EV_OFF_CPU + 1 };

/* NEXT_RESET: another part's packet was skipped whole; its thread starts
 * anew (delivered as a RAW_SAMPLE of others, without blob). */
enum next_item { NEXT_NONE, NEXT_EVENT, NEXT_DISCARDED, NEXT_RESET };

struct nfile {
	char *name;
	int kind;                 /* stream class it must hold: 0 proc, 1 samples */
	int zst;
	uint64_t id;              /* raw_event.stream_id */
	int fd;
	int done;
	uint64_t size;            /* bytes on disk */
	uint64_t foff;            /* next byte of the file to read */
	uint64_t frame_off;       /* zst: file offset of the current packet's frame */
	uint64_t poff;            /* plain-stream offset of BUF[0] (poff + pos: a byte's offset) */
	uint64_t next_poff;
	uint8_t *buf;
	size_t cap;
	size_t pos, end;          /* cursor, content end (in BUF) */
	/* Plain files: BUF holds the file's bytes from WIN_OFF, WIN_LEN of
	 * them, read ahead of the packet (packets of ~8 KB, reads of 64 KB):
	 * the next packet is taken from there without a read. */
	uint64_t win_off;
	size_t win_len;
	int have_pkt;             /* a packet was seen (instance id, discarded) */
	uint64_t instance_id;
	uint64_t cur_ts;          /* the stream clock (compact rule) */
	uint64_t last_ts;         /* events never go below this */
	uint64_t ts_end;
	uint64_t prev_end;
	uint64_t discarded;       /* running total seen */
	uint64_t pending_discard;
	uint32_t pid, tid;
	/* the next item to deliver */
	enum next_item next;
	uint64_t key;             /* its time */
	unsigned ev_id;
	size_t ev_off;            /* payload offset in buf */
	size_t hdr_off;           /* header offset, for messages */
	size_t order;             /* index in the pass, sorted by name */
	uint64_t packets;         /* packets loaded so far */
	int others;               /* the current packet is another part's (su_reader_opts.parts) */
	/* Read in parts with a plan (trace/parts-plan.h): the plan gives
	 * the file, named for NAME_PID, to one part (another part's is never
	 * opened here).  COUNTED: its figures (processes, ends, drops,
	 * discarded) are this part's to count. */
	int planned;
	uint32_t name_pid;
	int name_has_pid;         /* read in parts by a plan: NAME_PID from the name */
	int counted;
	/* Skipping another part's packet up to its last sample (advance):
	 * where to come back to, and the stream clock there. */
	int skipping;
	int reset;                /* skipped whole: NEXT_RESET to deliver */
	size_t resume_pos;
	uint64_t resume_cur_ts, resume_last_ts;
	uint64_t pkt_begin;       /* timestamp_begin of the current packet */
};

/* The shared zstd input: which file and file offset it holds. */
struct zin {
	uint8_t *buf;
	size_t len, pos;
	struct nfile *owner;
	uint64_t base;
};

struct native_source {
	struct source_report *rep;
	/* The samples' event, its fields set anew for each (deliver_sample):
	 * zeroing the whole struct each time, as rep stos, was most of
	 * deliver's time. */
	struct raw_event sample_ev;
	char *dir;
	uint8_t uuid[16];
	int have_uuid;            /* from the metadata or the first packet */
	struct nfile *files[2];   /* PASS_PROCESS, PASS_SAMPLES */
	size_t n_files[2];
	ZSTD_DCtx *dctx;
	struct zin zin;
	struct nfile **heap;
	size_t n_heap;
	char *err;
	size_t errlen;
	int parts_warned;         /* the files are not those the parts counted: said */
	int plan_warned;          /* a file holds another pid than its name's: said */
};

/* 24-bit little-endian field (compact event headers). */
static inline uint32_t le24(const uint8_t *p)
{
	return su_ld16(p) | (uint32_t)p[2] << 16;
}

/* ---- files ------------------------------------------------------------------ */

static void file_release(struct nfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->buf);
	f->buf = NULL;
	f->cap = 0;
	f->win_len = 0;
}

/* A plain file whose window now holds the rest of it needs its fd no
 * more: closed, so a pass over a system-wide trace (thousands of small
 * files, each in the merge at once) holds open only its bigger files,
 * not one fd per file (1,024 is the usual limit). */
static void window_whole(struct nfile *f)
{
	if (!f->zst && f->fd >= 0 && f->win_len && f->win_off + f->win_len >= f->size) {
		close(f->fd);
		f->fd = -1;
	}
}

/* The first defect of F: warn, count, deliver nothing more of it.  OFF is
 * the plain-stream offset of the defect. */
static void defect(struct native_source *s, struct nfile *f, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void defect(struct native_source *s, struct nfile *f, uint64_t off, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (f->zst)
		su_reader_warn(s->rep->warn, "%s/%s: %s at byte %llu of the inflated stream (zstd frame at byte "
			       "%llu): the rest of the file is skipped", s->dir, f->name, what,
			       (unsigned long long)off, (unsigned long long)f->frame_off);
	else
		su_reader_warn(s->rep->warn, "%s/%s: %s at byte %llu: the rest of the file is skipped",
			       s->dir, f->name, what, (unsigned long long)off);
	s->rep->truncated_files++;
	f->done = 1;
	f->next = NEXT_NONE;
	file_release(f);
}

static int buf_reserve(struct nfile *f, size_t need)
{
	if (need <= f->cap)
		return 0;
	size_t n = f->cap ? f->cap : need < PKT_READ ? need : PKT_READ;
	while (n < need)
		n *= 2;
	uint8_t *nb = realloc(f->buf, n);
	if (!nb)
		return -ENOMEM;
	f->buf = nb;
	f->cap = n;
	return 0;
}

/* zstd: inflate the current frame of F into DST until WANT bytes are out
 * (stop_at_end 0) or the frame ends.  @return bytes written, -EBADMSG on
 * a corrupt or truncated frame (message in WHY), -ENOMEM, -EIO. */
static ssize_t zread(struct native_source *s, struct nfile *f, uint8_t *dst, size_t want,
		     int *frame_end, const char **why)
{
	struct zin *zi = &s->zin;
	ZSTD_outBuffer ob = { dst, want, 0 };
	*frame_end = 0;
	while (ob.pos < ob.size) {
		if (zi->owner != f || zi->pos == zi->len) {
			ssize_t n = su_read_full(f->fd, zi->buf, ZIN_SIZE, (off_t)f->foff);
			if (n < 0) {
				*why = "read error";
				return -EIO;
			}
			zi->owner = f;
			zi->base = f->foff;
			zi->len = (size_t)n;
			zi->pos = 0;
			if (n == 0) {
				*why = "truncated zstd frame";
				return -EBADMSG;
			}
		}
		ZSTD_inBuffer ib = { zi->buf, zi->len, zi->pos };
		size_t const ret = ZSTD_decompressStream(s->dctx, &ob, &ib);
		zi->pos = ib.pos;
		f->foff = zi->base + ib.pos;
		if (ZSTD_isError(ret)) {
			zi->owner = NULL;
			if (ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
				return -ENOMEM;
			*why = ZSTD_getErrorName(ret);
			return -EBADMSG;
		}
		if (ret == 0) {
			*frame_end = 1;
			break;
		}
	}
	return (ssize_t)ob.pos;
}

/* zstd: after a packet, its frame must end with no more content (one frame
 * per packet), which also checks the frame's checksum before we trust it. */
static int zframe_end(struct native_source *s, struct nfile *f, const char **why)
{
	uint8_t extra[16];
	int end = 0;
	ssize_t n = zread(s, f, extra, sizeof(extra), &end, why);
	if (n < 0)
		return (int)n;
	if (n > 0) {
		*why = "zstd frame holds more than one packet";
		return -EBADMSG;
	}
	return 0;
}

/* zstd: the input holds all of F's next frame, from its first byte
 * (f->foff) at ZI->buf + *AT, *LEN bytes long (found from its block
 * headers, nothing inflated).  @return 0, 1 when not (a frame bigger than
 * one read, or damaged: it is read the usual way), -EIO. */
static int zframe_locate(struct native_source *s, struct nfile *f, size_t *at, size_t *len)
{
	struct zin *zi = &s->zin;
	for (int fresh = 0; fresh < 2; fresh++) {
		if (zi->owner == f && f->foff >= zi->base && f->foff - zi->base <= zi->len) {
			*at = (size_t)(f->foff - zi->base);
			*len = ZSTD_findFrameCompressedSize(zi->buf + *at, zi->len - *at);
			if (!ZSTD_isError(*len))
				return 0;
			if (*at == 0)
				return 1;
		}
		ssize_t const n = su_read_full(f->fd, zi->buf, ZIN_SIZE, (off_t)f->foff);
		if (n < 0) {
			zi->owner = NULL;
			return -EIO;
		}
		zi->owner = f;
		zi->base = f->foff;
		zi->len = (size_t)n;
		zi->pos = 0;
	}
	return 1;
}

/* zstd: the packet header of the LEN-byte frame at FRAME into DST
 * (PKT_HDR bytes), inflating the frame's first block only: our writers
 * put the header alone in it (a frame of an older writer has one block,
 * inflated whole).  The block's extent comes from its 3-byte header
 * (RFC 8878 3.1.1.2): only its input is given to the decoder, which then
 * cannot go on into the next.  @return 0, 1 when the header is not had so
 * (read the frame the usual way). */
static int zhead(struct native_source *s, const uint8_t *frame, size_t len, uint8_t *dst)
{
	/* The frame header (RFC 8878 3.1.1.1): magic, descriptor, window
	 * descriptor unless single-segment, dictionary id, content size.
	 * (zstd.h has ZSTD_frameHeaderSize only among its unstable calls.) */
	if (len < 6 || su_ld32(frame) != ZSTD_MAGICNUMBER)
		return 1;
	uint8_t const fhd = frame[4];
	unsigned const single = fhd >> 5 & 1, fcs = fhd >> 6;
	size_t const hs = 5 + !single + (size_t)(fhd & 3 ? 1u << ((fhd & 3) - 1) : 0) +
			  (size_t)(fcs ? 1u << fcs : single);
	if (hs > len || len - hs < 3)
		return 1;
	uint32_t const bh = le24(frame + hs);
	uint32_t const type = bh >> 1 & 3, size = bh >> 3;
	size_t const in = hs + 3 + (type == 1 ? 1 : size); /* RLE: one byte */
	if (type == 3 || in > len)
		return 1;
	ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
	ZSTD_inBuffer ib = { frame, in, 0 };
	ZSTD_outBuffer ob = { dst, PKT_HDR, 0 };
	while (ob.pos < ob.size) {
		size_t const pos = ib.pos, out = ob.pos;
		size_t const r = ZSTD_decompressStream(s->dctx, &ob, &ib);
		if (ZSTD_isError(r) || r == 0 || (ib.pos == pos && ob.pos == out))
			break;
	}
	ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
	return ob.pos == PKT_HDR ? 0 : 1;
}

/* A file holds pid PID, not its name's: the plan gave each pid's files to
 * one part by the names (or, a busy pid's, to every part), and the part
 * reading this pid's other files, or its process stream, may not have
 * it.  Said once: the caller reads the trace whole. */
static void plan_mismatch(struct native_source *s, const struct nfile *f, uint32_t pid)
{
	if (s->plan_warned)
		return;
	s->plan_warned = 1;
	su_reader_warn(s->rep->warn, "%s/%s: holds pid %u, not its name's %u: read in parts by the names, the pid "
		       "may be another part's", s->dir, f->name, pid, f->name_pid);
}

#define WHOLE_FILE (16u << 10)  /* bytes: a sample file this small is one part's */
#define BY_INDEX UINT64_MAX      /* a claim: the file is the part's its index says */

/* Is F's packet being loaded (its N-th) this part's to read
 * (su_reader_opts.parts)?  Taken when no part took it or a later one of
 * the file: each part goes through every packet in order, so each
 * packet is taken by exactly one (a small file's all by one part). */
static int packet_mine(struct native_source *s, const struct nfile *f, uint64_t n)
{
	size_t const i = (size_t)(f - s->files[1]);
	if (f->planned) /* the plan's: another part's is never opened */
		return 1;
	if (s->rep->claims && s->n_files[1] != s->rep->n_claims && !s->parts_warned) {
		/* Files added or gone since the parts counted them: which
		 * counter is whose file is no longer sure.  The warning makes
		 * the caller read the trace again whole. */
		s->parts_warned = 1;
		su_reader_warn(s->rep->warn, "%s: %zu sample stream files, not the %zu counted: the trace changed while "
			       "read in parts", s->dir, s->n_files[1], s->rep->n_claims);
	}
	if (!s->rep->claims || i >= s->rep->n_claims)
		return (n - 1) % s->rep->parts == s->rep->part;
	_Atomic uint64_t *const c = &s->rep->claims[i];
	uint64_t seen = atomic_load_explicit(c, memory_order_relaxed);
	/* A small file (a few packets: a short process of a system-wide
	 * trace) is one part's, by its index: a process's samples split
	 * between parts would have each part work out its maps, modules and
	 * first unwinds; and first come would give them all to the part
	 * that starts first (each part looks at every file's first packet
	 * before it reads on).  The first part at a file decides for all
	 * (a file still being written may have grown for the next). */
	if (seen == 0 && n == 1) {
		uint64_t const want = f->size <= WHOLE_FILE ? BY_INDEX : 1;
		if (atomic_compare_exchange_strong_explicit(c, &seen, want, memory_order_relaxed, memory_order_relaxed))
			return want == 1 || i % s->rep->parts == s->rep->part;
	}
	if (seen == BY_INDEX)
		return i % s->rep->parts == s->rep->part;
	while (seen < n)
		if (atomic_compare_exchange_weak_explicit(c, &seen, n, memory_order_relaxed, memory_order_relaxed))
			return 1;
	return 0;
}

/* Read the next packet of F into its buffer and check its header and
 * context.  @return 1 loaded, 0 end of file or defect (F done), -ENOMEM. */
static int load_packet(struct native_source *s, struct nfile *f)
{
	uint64_t const off = f->next_poff;
	const char *why = NULL;
	size_t got;
	f->poff = off;
	f->frame_off = f->foff;
	if (f->foff >= f->size) {
		f->done = 1;
		f->next = NEXT_NONE;
		file_release(f);
		return 0;
	}
	/* A big packet grew the buffer: give the memory back (unless it is
	 * the file's rest, its fd closed). */
	if (f->cap > 16 * PKT_READ && f->fd >= 0) {
		free(f->buf);
		f->buf = NULL;
		f->cap = 0;
		f->win_len = 0;
	}
	/* A plain file shorter than a first read: its bytes alone.  A
	 * system-wide trace's files are mostly ~1 KB and a pass holds all of
	 * them open at once: 64 KB each was 28 MB of heap for 430 files, its
	 * page faults, growth (a thread's arena: a page or two per mprotect)
	 * and frees. */
	uint64_t const rem = f->size - f->foff;
	if (buf_reserve(f, !f->zst && rem < PKT_READ ? (size_t)rem : PKT_READ))
		return -ENOMEM;
	/* Another part's packet (su_reader_opts.parts), decided before it is
	 * read: where each sample's packet holds its side events
	 * (stackcap_packets_whole) nothing in it is needed but its header,
	 * and of a zstd frame only the block holding the header is inflated. */
	int const others = f->kind == 1 && s->rep->parts > 1 && !packet_mine(s, f, f->packets + 1);
	int const skip_whole = others && s->rep->packets_whole;
	int fend = 0;
	size_t base = 0; /* the packet's first byte in BUF */
	size_t zat = 0, zlen = 0; /* skip_whole, zstd: the frame in the input, when found */
	if (f->zst && skip_whole) {
		int const zrc = zframe_locate(s, f, &zat, &zlen);
		if (zrc < 0) {
			defect(s, f, off, "read error");
			return 0;
		}
		if (zrc || zhead(s, s->zin.buf + zat, zlen, f->buf))
			zlen = 0; /* the usual way */
	}
	if (f->zst && zlen) {
		got = PKT_HDR;
	} else if (f->zst) {
		ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
		ssize_t n = zread(s, f, f->buf, PKT_HDR, &fend, &why);
		if (n == -ENOMEM)
			return -ENOMEM;
		if (n < 0) {
			defect(s, f, off, "%s", why);
			return 0;
		}
		got = (size_t)n;
		if (got < PKT_HDR) {
			defect(s, f, off, "zstd frame ends inside the packet header");
			return 0;
		}
	} else {
		if (f->win_len && f->foff >= f->win_off && f->foff - f->win_off + PKT_HDR <= f->win_len) {
			base = (size_t)(f->foff - f->win_off);
		} else {
			ssize_t n = su_read_full(f->fd, f->buf, rem < PKT_READ ? (size_t)rem : PKT_READ, (off_t)f->foff);
			f->win_len = 0;
			if (n < 0) {
				defect(s, f, off, "read error (%s)", strerror((int)-n));
				return 0;
			}
			f->win_off = f->foff;
			f->win_len = (size_t)n;
			window_whole(f);
		}
		got = f->win_len - base;
		if (got < PKT_HDR) {
			defect(s, f, off, "cut packet header (%zu of %u bytes)", got, PKT_HDR);
			return 0;
		}
	}
	const uint8_t *h = f->buf + base;
	uint32_t const magic = su_ld32(h + CTF_PH_MAGIC);
	uint32_t const cls = su_ld32(h + CTF_PH_STREAM_ID);
	uint64_t const inst = su_ld64(h + CTF_PH_INSTANCE_ID);
	const uint8_t *ctx = h + CTF_PACKET_HEADER_SIZE;
	uint64_t const begin = su_ld64(ctx + CTF_PC_TS_BEGIN), end = su_ld64(ctx + CTF_PC_TS_END);
	uint64_t const content_bits = su_ld64(ctx + CTF_PC_CONTENT_SIZE), packet_bits = su_ld64(ctx + CTF_PC_PACKET_SIZE);
	uint64_t const discarded = su_ld64(ctx + CTF_PC_DISCARDED);
	uint32_t const pid = su_ld32(ctx + CTF_PC_PID), tid = su_ld32(ctx + CTF_PC_TID);
	if (magic != CTF_MAGIC) {
		/* No file bytes in the message: the file may be anything. */
		defect(s, f, off, "bad packet magic (not a stackcap packet)");
		return 0;
	}
	if (!s->have_uuid) {
		memcpy(s->uuid, h + CTF_PH_UUID, 16);
		s->have_uuid = 1;
	} else if (memcmp(s->uuid, h + CTF_PH_UUID, 16)) {
		defect(s, f, off, "packet of another trace (uuid differs)");
		return 0;
	}
	if (cls != (uint32_t)f->kind) {
		defect(s, f, off, "packet of stream class %u in a %s stream file", cls,
		       f->kind ? "samples" : "process");
		return 0;
	}
	if (f->name_has_pid && pid != f->name_pid)
		plan_mismatch(s, f, pid);
	if (f->have_pkt && inst != f->instance_id) {
		defect(s, f, off, "stream_instance_id changes within the file");
		return 0;
	}
	if (packet_bits % 8 || content_bits % 8 || content_bits > packet_bits ||
	    content_bits / 8 < PKT_HDR) {
		defect(s, f, off, "bad packet sizes (content %llu, packet %llu bits)",
		       (unsigned long long)content_bits, (unsigned long long)packet_bits);
		return 0;
	}
	uint64_t const psize = packet_bits / 8;
	if (psize > PKT_MAX) {
		defect(s, f, off, "packet of %llu bytes (more than %u)", (unsigned long long)psize, PKT_MAX);
		return 0;
	}
	if (!f->zst && psize > f->size - f->foff) {
		defect(s, f, off, "packet of %llu bytes cut by the end of the file (%llu bytes left)",
		       (unsigned long long)psize, (unsigned long long)(f->size - f->foff));
		return 0;
	}
	if (end < begin || (f->have_pkt && begin < f->last_ts)) {
		defect(s, f, off, "packet timestamps go back in time");
		return 0;
	}
	if (f->zst && zlen) {
		/* Another part's frame: gone past, its events not inflated. */
		s->zin.pos = zat + zlen;
		f->foff = s->zin.base + s->zin.pos;
		goto skipped;
	}
	/* A plain packet is on disk; an inflated one may be KBs claiming
	 * 64 MiB, and every file of the pass holds its current packet. */
	if (f->zst && psize > PKT_READ) {
		uint64_t held = psize;
		for (size_t i = 0; i < s->n_files[f->kind]; i++)
			if (&s->files[f->kind][i] != f && s->files[f->kind][i].zst)
				held += s->files[f->kind][i].cap;
		if (held > ZHELD_MAX) {
			defect(s, f, off, "packet of %llu bytes: with the other files' packets, more than %u MiB "
			       "inflated at once", (unsigned long long)psize, ZHELD_MAX >> 20);
			return 0;
		}
	}
	/* H and CTX die here: the buffer may move. */
	if (!f->zst && got < psize && base) {
		/* The packet runs past the window: it moves to the front. */
		memmove(f->buf, f->buf + base, got);
		f->win_off += base;
		f->win_len = got;
		base = 0;
	}
	if (buf_reserve(f, (size_t)psize))
		return -ENOMEM;
	if (f->zst) {
		if (got < psize) {
			if (fend) {
				defect(s, f, off, "zstd frame ends inside the packet");
				return 0;
			}
			ssize_t n = zread(s, f, f->buf + got, (size_t)psize - got, &fend, &why);
			if (n == -ENOMEM)
				return -ENOMEM;
			if (n < 0) {
				defect(s, f, off, "%s", why);
				return 0;
			}
			if (got + (size_t)n < psize) {
				defect(s, f, off, "zstd frame ends inside the packet");
				return 0;
			}
		}
		int rc = fend ? 0 : zframe_end(s, f, &why);
		if (rc == -ENOMEM)
			return -ENOMEM;
		if (rc) {
			defect(s, f, off, "%s", why);
			return 0;
		}
	} else {
		if (got < psize) {
			ssize_t n = su_read_full(f->fd, f->buf + got, (size_t)psize - got, (off_t)(f->foff + got));
			if (n < 0 || (size_t)n < psize - got) {
				f->win_len = 0;
				defect(s, f, off, "cut packet");
				return 0;
			}
			f->win_len = (size_t)psize;
			window_whole(f);
		}
		f->foff += psize;
	}
skipped:
	f->next_poff = off + psize;
	f->poff = off - base; /* the offset of BUF's first byte: poff + pos is the byte's */
	f->pos = base + PKT_HDR;
	f->end = base + (size_t)(content_bits / 8);
	f->cur_ts = begin;
	f->last_ts = begin;
	f->ts_end = end;
	f->pid = pid;
	f->tid = tid;
	/* CTF's running total: report the increase, as babeltrace2 does. */
	if (discarded > f->discarded) {
		f->pending_discard = discarded - f->discarded;
		f->discarded = discarded;
		/* Dated at the previous packet's end (advance), after this
		 * packet's begin: the file's items then go back in time, and
		 * the merge puts this packet's first samples after other
		 * files' later ones.  A read in parts for that order
		 * (su_order_key: stacks) cannot know it: said, it is read
		 * again whole. */
		if (s->rep->parts > 1 && s->rep->order && f->have_pkt && f->prev_end > begin && !s->parts_warned) {
			s->parts_warned = 1;
			su_reader_warn(s->rep->warn, "%s: discarded events dated %llu, after the packet at %llu begins "
				       "(%llu): the order of a read in parts is not sure", f->name,
				       (unsigned long long)f->prev_end, (unsigned long long)off,
				       (unsigned long long)begin);
		}
	} else if (discarded < f->discarded) {
		defect(s, f, off, "events_discarded goes down");
		return 0;
	}
	if (!f->have_pkt) {
		f->instance_id = inst;
		f->prev_end = begin;
	}
	f->have_pkt = 1;
	f->packets++;
	f->pkt_begin = begin;
	/* Another part's packet: with stackcap_packets_whole skipped whole,
	 * only its thread's state reset.  Else skipped up to its last sample
	 * (advance), whose side events went with it; what follows it is read
	 * (the kernel chain, runtime frames... written just before a sample
	 * may end the packet before the one holding it). */
	f->others = others;
	f->skipping = others && !skip_whole;
	if (skip_whole) {
		f->pos = f->end;
		f->reset = 1;
	} else if (f->others) {
		f->resume_pos = f->pos;
		f->resume_cur_ts = f->cur_ts;
		f->resume_last_ts = f->last_ts;
	}
	if (s->rep->bytes_read)
		*s->rep->bytes_read += f->foff - f->frame_off;
	return 1;
}

/* The payload size of a sample stream's event ID at P (AVAIL bytes
 * there), 0 when cut: the sizes deliver() checks and reads, event by
 * event (a new event or field changes both). */
static size_t sample_stream_payload(uint32_t id, const uint8_t *p, size_t avail)
{
	size_t n;
	switch (id) {
	case CTF_EV_EVENT_SAMPLE:
		if (avail < 8)
			return 0;
		n = 2 + 6 + (size_t)le24(p + 2 + 3);
		break;
	case CTF_EV_SAMPLE:
	case CTF_EV_SAMPLE_FULL:
	case CTF_EV_SAMPLE_SEGMENT:
		if (avail < 6)
			return 0;
		n = 6 + (size_t)le24(p + 3);
		break;
	case CTF_EV_RUNTIME_FRAMES:
		if (avail < 4)
			return 0;
		n = 4 + (size_t)le24(p + 1);
		break;
	case CTF_EV_KERNEL_CHAIN:
		if (avail < 4)
			return 0;
		n = 4 + (size_t)su_ld32(p) * 8;
		break;
	case CTF_EV_OFF_CPU:
		n = 8;
		break;
	default:
		return 0;
	}
	return n <= avail ? n : 0;
}

/* Stop skipping F's packet, if it was: back to its last sample seen (or
 * where the skip began), with the stream clock as it was there; a defect
 * met while skipping is then met again and reported where it is.
 * @return 1 when it was skipping. */
static int skip_rewind(struct nfile *f)
{
	if (!f->skipping)
		return 0;
	f->skipping = 0;
	f->pos = f->resume_pos;
	f->cur_ts = f->resume_cur_ts;
	f->last_ts = f->resume_last_ts;
	return 1;
}

/* Find F's next item: an increase of discarded events, or an event header
 * (decoded and checked; its payload is read when it is delivered).
 * @return 0 (F may be done), -ENOMEM. */
static int advance(struct native_source *s, struct nfile *f)
{
	for (;;) {
		if (f->done)
			return 0;
		if (f->pending_discard) {
			f->next = NEXT_DISCARDED;
			f->key = f->prev_end; /* babeltrace2 dates them at the previous packet's end */
			return 0;
		}
		if (f->reset) {
			f->reset = 0;
			f->next = NEXT_RESET;
			f->key = f->pkt_begin;
			return 0;
		}
		if (f->pos >= f->end) {
			if (skip_rewind(f))
				continue;
			if (f->buf && f->end) /* a packet was read: remember where it ended */
				f->prev_end = f->ts_end;
			int rc = load_packet(s, f);
			if (rc < 0)
				return rc;
			continue;
		}
		size_t const avail = f->end - f->pos;
		const uint8_t *p = f->buf + f->pos;
		uint64_t const at = f->poff + f->pos;
		uint32_t id;
		uint64_t ts;
		if (avail < CTF_EV_COMPACT_SIZE) {
			if (skip_rewind(f))
				continue;
			defect(s, f, at, "cut event header");
			return 0;
		}
		uint32_t const v = su_ld32(p);
		if ((v & 31) != CTF_EV_EXTENDED_MARK) {
			id = v & 31;
			uint64_t const low = v >> 5;
			ts = f->cur_ts;
			if (low < (ts & TS27_MASK))
				ts += TS27_MASK + 1; /* wrapped once */
			ts = (ts & ~TS27_MASK) | low;
			f->hdr_off = f->pos;
			f->pos += CTF_EV_COMPACT_SIZE;
		} else {
			if (avail < CTF_EV_EXTENDED_SIZE) {
				if (skip_rewind(f))
					continue;
				defect(s, f, at, "cut event header");
				return 0;
			}
			id = su_ld32(p + 1);
			ts = su_ld64(p + 5);
			f->hdr_off = f->pos;
			f->pos += CTF_EV_EXTENDED_SIZE;
		}
		if (id >= n_event_ids[f->kind]) {
			if (skip_rewind(f))
				continue;
			defect(s, f, at, "unknown event id %u", id);
			return 0;
		}
		if (ts < f->last_ts || ts > f->ts_end) {
			if (skip_rewind(f))
				continue;
			defect(s, f, at, "event timestamp %llu outside [%llu, %llu]", (unsigned long long)ts,
			       (unsigned long long)f->last_ts, (unsigned long long)f->ts_end);
			return 0;
		}
		if (f->skipping) {
			/* Another part's packet: its samples are that part's,
			 * and what comes before a sample goes with it.  Only
			 * the last sample (it clears the thread's pending side
			 * events) and what follows it are delivered. */
			size_t const len = sample_stream_payload(id, f->buf + f->pos, f->end - f->pos);
			if (!len && skip_rewind(f))
				continue; /* cut: the normal path says so */
			if (id == CTF_EV_SAMPLE || id == CTF_EV_EVENT_SAMPLE) {
				f->resume_pos = f->hdr_off;
				f->resume_cur_ts = f->cur_ts;
				f->resume_last_ts = f->last_ts;
			}
			f->cur_ts = ts;
			f->last_ts = ts;
			f->pos += len;
			continue;
		}
		f->cur_ts = ts;
		f->last_ts = ts;
		f->next = NEXT_EVENT;
		f->key = ts;
		f->ev_id = id;
		f->ev_off = f->pos;
		return 0;
	}
}

/* ---- payloads --------------------------------------------------------------- */

/* A NUL-terminated string at *P before END, malloc'ed into *OUT.
 * @return 0, 1 when cut, -ENOMEM. */
static int take_str(const uint8_t **p, const uint8_t *end, char **out)
{
	const uint8_t *nul = memchr(*p, 0, (size_t)(end - *p));
	if (!nul)
		return 1;
	size_t const n = (size_t)(nul - *p);
	char *s = malloc(n + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, *p, n + 1);
	*out = s;
	*p = nul + 1;
	return 0;
}

/* Decode the maps payload at [P, END).  @return 0, 1 when malformed, -ENOMEM. */
static int decode_maps(const uint8_t **pp, const uint8_t *end, struct su_maps **out)
{
	const uint8_t *p = *pp;
	enum { ENTRY_MIN = 8 * 4 + 1 + 1 + 1 };
	if (end - p < 8)
		return 1;
	uint32_t const gen = su_ld32(p), n = su_ld32(p + 4);
	p += 8;
	if (n > (size_t)(end - p) / ENTRY_MIN)
		return 1;
	struct su_maps *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->generation = gen;
	m->entries = calloc(n ? n : 1, sizeof(*m->entries));
	m->range_list = calloc(n ? n : 1, sizeof(*m->range_list));
	if (!m->entries || !m->range_list) {
		su_maps_free(m);
		return -ENOMEM;
	}
	int rc = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct su_map_entry *me = &m->entries[i];
		if (end - p < 34) {
			rc = 1;
			break;
		}
		me->start = su_ld64(p);
		me->end = su_ld64(p + 8);
		me->offset = su_ld64(p + 16);
		me->bias = su_ld64(p + 24);
		me->flags = p[32];
		unsigned const bl = p[33];
		p += 34;
		if ((size_t)(end - p) < bl) {
			rc = 1;
			break;
		}
		/* As the babeltrace2 source: a build-id too long to keep is none. */
		memcpy(me->build_id, p, bl < SU_BUILD_ID_MAX ? bl : SU_BUILD_ID_MAX);
		me->build_id_len = (uint8_t)(bl <= SU_BUILD_ID_MAX ? bl : 0);
		p += bl;
		m->count = i + 1; /* su_maps_free frees the paths so far */
		rc = take_str(&p, end, &me->path);
		if (rc) {
			m->count = i;
			break;
		}
		m->range_list[i] = (struct stackcap_code_range){ me->start, me->end, i };
	}
	if (rc) {
		su_maps_free(m);
		return rc;
	}
	*out = m;
	*pp = p;
	return 0;
}

/* A kernel_symbols event at *PP: 0, 1 (cut), -ENOMEM. */
static int decode_kernel(const uint8_t **pp, const uint8_t *end, struct su_kernel **out)
{
	const uint8_t *p = *pp;
	if (end - p < 1 || (size_t)(end - p) - 1 < (size_t)p[0] + 4)
		return 1;
	unsigned const bl = p[0];
	struct su_kernel *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	memcpy(k->build_id, p + 1, bl < SU_BUILD_ID_MAX ? bl : SU_BUILD_ID_MAX);
	k->build_id_len = (uint8_t)(bl <= SU_BUILD_ID_MAX ? bl : 0);
	p += 1 + bl;
	uint32_t const n = su_ld32(p);
	p += 4;
	/* Each symbol takes at least 18 bytes: a count beyond that is a lie. */
	if (n > (size_t)(end - p) / 18) {
		free(k);
		return 1;
	}
	k->syms = calloc(n ? n : 1, sizeof(*k->syms));
	if (!k->syms) {
		free(k);
		return -ENOMEM;
	}
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct su_ksym *y = &k->syms[i];
		if (end - p < 16) {
			rc = 1;
			break;
		}
		y->start = su_ld64(p);
		y->end = su_ld64(p + 8);
		p += 16;
		k->n = i + 1;
		rc = take_str(&p, end, &y->name);
		if (rc == 0)
			rc = take_str(&p, end, &y->module);
		/* Sorted, non-empty, not overlapping: else not ours to trust. */
		if (rc == 0 && (y->end <= y->start || (i && y->start < k->syms[i - 1].end)))
			rc = 1;
	}
	if (rc) {
		su_kernel_free(k);
		return rc;
	}
	*out = k;
	*pp = p;
	return 0;
}

/* F's next item, a sample (P its payload, END the packet's content end).
 * @return 0, EMIT's nonzero return. */
static int deliver_sample(struct native_source *s, struct nfile *f, const uint8_t *p, const uint8_t *end,
			  raw_emit_fn emit, void *ctx)
{
	uint64_t const at = f->poff + f->hdr_off;
	uint32_t event = 0;
	if (f->ev_id == CTF_EV_EVENT_SAMPLE) {
		/* Version 4: the event's index, then a sample. */
		if (end - p < 8) {
			defect(s, f, at, "cut event_sample event");
			return 0;
		}
		event = su_ld16(p);
		p += 2;
		f->ev_id = CTF_EV_SAMPLE;
	}
	if (end - p < 6) {
		defect(s, f, at, "cut sample event");
		return 0;
	}
	uint32_t const len = le24(p + 3);
	if ((size_t)(end - p) - 6 < len) {
		defect(s, f, at, "sample blob of %u bytes beyond the packet content", len);
		return 0;
	}
	struct raw_event *const ev = &s->sample_ev;
	ev->kind = f->ev_id == CTF_EV_SAMPLE ? RAW_SAMPLE :
		   f->ev_id == CTF_EV_SAMPLE_FULL ? RAW_SAMPLE_FULL : RAW_SAMPLE_SEGMENT;
	ev->ts = f->key;
	ev->pid = f->pid;
	ev->tid = f->tid;
	ev->stream_id = f->id;
	ev->generation = le24(p);
	ev->blob = p + 6;
	ev->blob_len = len;
	ev->others = f->others;
	ev->event = event;
	f->pos = (size_t)(p + 6 + len - f->buf);
	if (s->rep->order)
		*s->rep->order = (struct su_order_key){ .time = f->key, .instance = f->instance_id, .file = f->order,
							.packet = f->packets, .at = f->hdr_off };
	return emit(ctx, ev);
}

/* Deliver F's next item.  @return 0, EMIT's nonzero return, -ENOMEM. */
static int deliver(struct native_source *s, struct nfile *f, raw_emit_fn emit, void *ctx)
{
	if (f->next != NEXT_DISCARDED && f->next != NEXT_RESET && f->kind == 1 && f->ev_id != CTF_EV_RUNTIME_FRAMES &&
	    f->ev_id != CTF_EV_KERNEL_CHAIN && f->ev_id != CTF_EV_OFF_CPU)
		return deliver_sample(s, f, f->buf + f->ev_off, f->buf + f->end, emit, ctx);
	struct raw_event ev = {
		.ts = f->key,
		.pid = f->pid,
		.tid = f->tid,
		.stream_id = f->id,
		.uncounted = !f->counted,
	};
	if (f->next == NEXT_DISCARDED) {
		ev.kind = RAW_DISCARDED;
		ev.discarded = f->pending_discard;
		f->pending_discard = 0;
		return emit(ctx, &ev);
	}
	if (f->next == NEXT_RESET) {
		ev.kind = RAW_SAMPLE;
		ev.others = 1;
		return emit(ctx, &ev);
	}
	const uint8_t *p = f->buf + f->ev_off;
	const uint8_t *const end = f->buf + f->end;
	uint64_t const at = f->poff + f->hdr_off;
	int rc = 0;
	if (f->kind == 1 && f->ev_id == CTF_EV_RUNTIME_FRAMES) {
		uint32_t const len = end - p >= 4 ? le24(p + 1) : 0;
		if (end - p < 4 || (size_t)(end - p) - 4 < len) {
			defect(s, f, at, "cut runtime_frames event");
			return 0;
		}
		ev.kind = RAW_RUNTIME_FRAMES;
		ev.blob = p + 4;
		ev.blob_len = len;
		f->pos = (size_t)(p + 4 + len - f->buf);
		return emit(ctx, &ev);
	}
	if (f->kind == 1 && f->ev_id == CTF_EV_KERNEL_CHAIN) {
		uint32_t const n = end - p >= 4 ? su_ld32(p) : 0;
		if (end - p < 4 || ((size_t)(end - p) - 4) / 8 < n) {
			defect(s, f, at, "cut kernel_chain event");
			return 0;
		}
		ev.kind = RAW_KERNEL_CHAIN;
		ev.blob = p + 4;
		ev.blob_len = (size_t)n * 8;
		f->pos = (size_t)(p + 4 + ev.blob_len - f->buf);
		return emit(ctx, &ev);
	}
	if (f->kind == 1 && f->ev_id == CTF_EV_OFF_CPU) {
		if (end - p < 8) {
			defect(s, f, at, "cut off_cpu event");
			return 0;
		}
		ev.kind = RAW_OFF_CPU;
		ev.off_cpu_ns = su_ld64(p);
		f->pos = (size_t)(p + 8 - f->buf);
		return emit(ctx, &ev);
	}
	switch (f->ev_id) {
	case CTF_EV_PROCESS_START:
		ev.kind = RAW_PROCESS_START;
		if (end - p < 8)
			goto cut;
		ev.proc.pid = su_ld32(p);
		ev.proc.ppid = su_ld32(p + 4);
		if (f->name_has_pid && ev.proc.pid != f->name_pid)
			plan_mismatch(s, f, ev.proc.pid);
		p += 8;
		rc = take_str(&p, end, &ev.proc.comm);
		if (rc == 0) {
			rc = take_str(&p, end, &ev.proc.exe);
			if (rc == 0 && end - p < 18)
				rc = 1;
		}
		if (rc) {
			free(ev.proc.comm);
			free(ev.proc.exe);
			if (rc < 0)
				return rc;
			goto cut;
		}
		ev.proc.clock_offset_ns = (int64_t)su_ld64(p);
		ev.proc.frequency_hz = su_ld32(p + 8);
		ev.proc.stack_cap = su_ld32(p + 12);
		ev.proc.policy = p[16];
		ev.proc.codec_version = p[17];
		p += 18;
		break;
	case CTF_EV_MAPS:
		ev.kind = RAW_MAPS;
		rc = decode_maps(&p, end, &ev.maps);
		if (rc < 0)
			return rc;
		if (rc)
			goto cut;
		break;
	case CTF_EV_DROPS:
		ev.kind = RAW_DROPS;
		if (end - p < 36)
			goto cut;
		ev.drop_tid = su_ld32(p);
		ev.drops_total = su_ld64(p + 4) + su_ld64(p + 12) + su_ld64(p + 20) + su_ld64(p + 28);
		p += 36;
		break;
	case CTF_EV_RUNTIME:
		ev.kind = RAW_RUNTIME;
		if (end - p < 45)
			goto cut;
		ev.runtime.kind = p[0];
		ev.runtime.version = su_ld32(p + 1);
		ev.runtime.eval_start = su_ld64(p + 5);
		ev.runtime.eval_end = su_ld64(p + 13);
		ev.runtime.chains = su_ld64(p + 21);
		ev.runtime.dropped = su_ld64(p + 29);
		ev.runtime.stale = su_ld64(p + 37);
		p += 45;
		rc = take_str(&p, end, &ev.runtime.name);
		if (rc < 0)
			return rc;
		if (rc)
			goto cut;
		f->pos = (size_t)(p - f->buf);
		rc = emit(ctx, &ev);
		free(ev.runtime.name);
		return rc;
	case CTF_EV_RUNTIME_CODE: {
		ev.kind = RAW_RUNTIME_CODE;
		if (end - p < 17)
			goto cut;
		ev.rt_code.code = su_ld64(p + 1);
		ev.rt_code.fp = su_ld32(p + 9);
		ev.rt_code.first_line = su_ld32(p + 13);
		p += 17;
		rc = take_str(&p, end, &ev.rt_code.name);
		if (rc == 0)
			rc = take_str(&p, end, &ev.rt_code.file);
		if (rc == 0 && (end - p < 4 || (size_t)(end - p) - 4 < su_ld32(p)))
			rc = 1;
		int erc = 0;
		if (rc == 0) {
			ev.rt_code.line_table_len = su_ld32(p);
			ev.rt_code.line_table = (uint8_t *)(uintptr_t)(p + 4);
			p += 4 + ev.rt_code.line_table_len;
			f->pos = (size_t)(p - f->buf);
			erc = emit(ctx, &ev);
		}
		free(ev.rt_code.name);
		free(ev.rt_code.file);
		if (rc < 0)
			return rc;
		if (rc)
			goto cut;
		return erc;
	}
	case CTF_EV_KERNEL_SYMBOLS:
		ev.kind = RAW_KERNEL_SYMBOLS;
		rc = decode_kernel(&p, end, &ev.kernel);
		if (rc < 0)
			return rc;
		if (rc)
			goto cut;
		break;
	default: /* CTF_EV_PROCESS_END */
		ev.kind = RAW_PROCESS_END;
		if (end - p < 16)
			goto cut;
		p += 16;
		break;
	}
	f->pos = (size_t)(p - f->buf);
	return emit(ctx, &ev);
cut:
	defect(s, f, at, "malformed or cut event (id %u)", f->ev_id);
	return 0;
}

/* ---- the merge ----------------------------------------------------------------- */

/* A before B: time, then babeltrace2's muxer order, then file name. */
static inline int before(const struct nfile *a, const struct nfile *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if (a->instance_id != b->instance_id)
		return a->instance_id < b->instance_id;
	return a->order < b->order;
}

static void sift_down(struct nfile **h, size_t n, size_t i)
{
	struct nfile *const x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(h[c + 1], h[c]))
			c++;
		if (!before(h[c], x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static int file_open(struct native_source *s, struct nfile *f)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/%s", s->dir, f->name);
	/* Untrusted names: a symlink is not followed, a FIFO or device does
	 * not block the open, and only a regular file is read. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat sb;
	if (f->fd < 0 && errno == ELOOP) {
		su_reader_warn(s->rep->warn, "%s: a symbolic link: not followed, file skipped", path);
		s->rep->truncated_files++;
		f->done = 1;
		return 0;
	}
	if (f->fd < 0 || fstat(f->fd, &sb)) {
		su_reader_warn(s->rep->warn, "%s: %s: file skipped", path, strerror(errno));
		s->rep->truncated_files++;
		f->done = 1;
		file_release(f);
		return 0;
	}
	if (!S_ISREG(sb.st_mode)) {
		su_reader_warn(s->rep->warn, "%s: not a regular file: skipped", path);
		s->rep->truncated_files++;
		f->done = 1;
		file_release(f);
		return 0;
	}
	f->size = (uint64_t)sb.st_size;
	/* An empty file is read as empty, without a warning: a process that
	 * exec()s before its first flush leaves one (tests/stress.sh forks-exec). */
	return 0;
}

static void pass_close(struct native_source *s, int pi)
{
	for (size_t i = 0; i < s->n_files[pi]; i++)
		file_release(&s->files[pi][i]);
	s->zin.owner = NULL;
}

static int nat_run(void *h, enum source_pass pass, raw_emit_fn emit, void *ctx, char *err, size_t errlen)
{
	struct native_source *s = h;
	int const pi = pass == PASS_PROCESS ? 0 : 1;
	struct nfile *const files = s->files[pi];
	size_t const n = s->n_files[pi];
	int rc = 0;
	s->err = err;
	s->errlen = errlen;
	s->n_heap = 0;
	struct nfile *failed = NULL; /* the file whose reading failed */
	for (size_t i = 0; i < n && !rc; i++) {
		struct nfile *f = &files[i];
		if (f->done)
			continue; /* read by an earlier run */
		file_open(s, f);
		if ((rc = advance(s, f)) != 0)
			failed = f;
		if (!rc && !f->done)
			s->heap[s->n_heap++] = f;
	}
	for (size_t i = s->n_heap / 2; i-- > 0;)
		sift_down(s->heap, s->n_heap, i);
	while (!rc && s->n_heap) {
		struct nfile *f = s->heap[0];
		uint32_t const pid = f->pid, tid = f->tid;
		uint64_t const ts = f->key;
		rc = deliver(s, f, emit, ctx);
		if (!rc && !f->done) {
			f->next = NEXT_NONE;
			if ((rc = advance(s, f)) != 0)
				failed = f;
		}
		/* A system-wide trace has thousands of threads, each holding
		 * its last stack image until the reader hears it is done: at
		 * the end of its sample file, or at a packet of another thread
		 * there.  Where each packet decodes alone
		 * (stackcap_packets_whole) nothing needs that image past its
		 * packet; a thread met again (in another file: a trace of ours
		 * never does it) starts anew as at any packet. */
		if (!rc && s->rep->packets_whole && f->kind == 1 && (f->done || f->tid != tid || f->pid != pid)) {
			struct raw_event const end = { .kind = RAW_THREAD_END, .ts = ts, .pid = pid, .tid = tid,
						       .stream_id = f->id };
			rc = emit(ctx, &end);
		}
		if (f->done)
			s->heap[0] = s->heap[--s->n_heap];
		if (s->n_heap)
			sift_down(s->heap, s->n_heap, 0);
	}
	/* A stopped run is not resumed: the next run of this pass reads nothing. */
	for (size_t i = 0; i < n; i++)
		files[i].done = 1;
	pass_close(s, pi);
	if (rc == -ENOMEM)
		su_set_err(s->err, s->errlen, "out of memory");
	if (rc < 0 && failed)
		su_err_context(s->err, s->errlen, rc, "%s", failed->name);
	return rc;
}

/* ---- opening ------------------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The trace uuid of DIR/metadata (its first `uuid = "..."`), so a stream
 * file of another trace is caught even when it is read first. */
static void metadata_uuid(struct native_source *s)
{
	char path[8192], text[8192];
	snprintf(path, sizeof(path), "%s/metadata", s->dir);
	int fd = su_open_regular(path, O_NOFOLLOW);
	if (fd < 0)
		return;
	ssize_t n = su_read_full(fd, (uint8_t *)text, sizeof(text) - 1, 0);
	close(fd);
	if (n <= 0)
		return;
	text[n] = 0;
	const char *p = strstr(text, "uuid = \"");
	if (!p)
		return;
	p += 8;
	uint8_t u[16];
	for (int i = 0; i < 16; i++) {
		if (*p == '-')
			p++;
		int const hi = hexval(p[0]), lo = hi < 0 ? -1 : hexval(p[1]);
		if (hi < 0 || lo < 0)
			return;
		u[i] = (uint8_t)(hi << 4 | lo);
		p += 2;
	}
	if (*p != '"')
		return;
	memcpy(s->uuid, u, 16);
	s->have_uuid = 1;
}

static int has_suffix(const char *str, const char *suf)
{
	size_t n = strlen(str), m = strlen(suf);
	return n >= m && strcmp(str + n - m, suf) == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nfile *)a)->name, ((const struct nfile *)b)->name);
}

static void nat_close(void *h)
{
	struct native_source *s = h;
	if (!s)
		return;
	for (int pi = 0; pi < 2; pi++) {
		for (size_t i = 0; i < s->n_files[pi]; i++) {
			file_release(&s->files[pi][i]);
			free(s->files[pi][i].name);
		}
		free(s->files[pi]);
	}
	ZSTD_freeDCtx(s->dctx);
	free(s->zin.buf);
	free(s->heap);
	free(s->dir);
	free(s);
}

/* Add stream file NM of the directory to S (PF: its place in the parts'
 * plan, or NULL).  @return 0, -ENOMEM. */
static int add_file(struct native_source *s, const char *nm, const struct plan_file *pf, size_t cap[2], int *any_zst)
{
	int kind;
	if (nm[0] == '.' || strcmp(nm, "metadata") == 0 || ctf_side_dir(nm))
		return 0;
	if (strncmp(nm, "proc-", 5) == 0)
		kind = 0;
	else if (strncmp(nm, "samples-", 8) == 0)
		kind = 1;
	else {
		su_reader_warn(s->rep->warn, "%s/%s: not a stackcap stream file: ignored", s->dir, nm);
		return 0;
	}
	if (s->n_files[kind] == cap[kind]) {
		size_t nc = cap[kind] ? 2 * cap[kind] : 16;
		struct nfile *nf = realloc(s->files[kind], nc * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		s->files[kind] = nf;
		cap[kind] = nc;
	}
	struct nfile *f = &s->files[kind][s->n_files[kind]];
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->kind = kind;
	f->zst = has_suffix(nm, ".zst");
	*any_zst |= f->zst;
	if (!(f->name = strdup(nm)))
		return -ENOMEM;
	s->n_files[kind]++;
	/* Read in parts, a file's figures are counted by one part: the
	 * part the plan gives it, else the first. */
	unsigned const part = s->rep->parts > 1 ? s->rep->part : 0;
	f->counted = part == 0;
	if (pf && pf->has_pid) {
		/* Every part's too: the plan gave each pid's process
		 * stream to the part of its small files, by the names. */
		f->name_has_pid = 1;
		f->name_pid = pf->pid;
	}
	if (pf && pf->owner != PLAN_EVERY) {
		f->planned = 1;
		f->name_pid = pf->pid;
		f->counted = pf->owner == (int)part;
		f->done = !f->counted; /* another part's: never opened here */
	}
	return 0;
}

static int nat_open(const char *dir, struct source_report *rep, void **h, char *err, size_t errlen)
{
	struct native_source *s = calloc(1, sizeof(*s));
	size_t cap[2] = { 0, 0 };
	DIR *d = NULL;
	int any_zst = 0;
	if (!s || !(s->dir = strdup(dir)))
		goto nomem;
	s->rep = rep;
	if (rep->plan && rep->parts > 1) {
		/* The names the plan was made of: the parts agree on them. */
		for (size_t i = 0; i < rep->plan->n; i++)
			if (add_file(s, rep->plan->files[i].name, &rep->plan->files[i], cap, &any_zst))
				goto nomem;
	} else {
		d = opendir(dir);
		if (!d) {
			int const e = errno;
			snprintf(err, errlen, "%s: %s", dir, strerror(e));
			nat_close(s);
			return -e;
		}
		struct dirent *e;
		while ((e = readdir(d)))
			if (add_file(s, e->d_name, NULL, cap, &any_zst))
				goto nomem;
		closedir(d);
		d = NULL;
	}
	uint64_t id = 1;
	for (int pi = 0; pi < 2; pi++) {
		if (s->n_files[pi])
			qsort(s->files[pi], s->n_files[pi], sizeof(struct nfile), name_cmp);
		for (size_t i = 0; i < s->n_files[pi]; i++) {
			s->files[pi][i].order = i;
			s->files[pi][i].id = id++;
		}
	}
	size_t const nmax = s->n_files[0] > s->n_files[1] ? s->n_files[0] : s->n_files[1];
	s->heap = malloc((nmax ? nmax : 1) * sizeof(*s->heap));
	if (!s->heap)
		goto nomem;
	if (any_zst) {
		s->dctx = ZSTD_createDCtx();
		s->zin.buf = malloc(ZIN_SIZE);
		if (!s->dctx || !s->zin.buf)
			goto nomem;
		/* No frame needs a window beyond the biggest packet: a crafted one
		 * must not make zstd allocate more. */
		ZSTD_DCtx_setParameter(s->dctx, ZSTD_d_windowLogMax, 26);
	}
	metadata_uuid(s);
	*h = s;
	return 0;
nomem:
	if (d)
		closedir(d);
	snprintf(err, errlen, "out of memory");
	nat_close(s);
	return -ENOMEM;
}

const struct event_source su_source_native = {
	.name = "native",
	.open = nat_open,
	.run = nat_run,
	.close = nat_close,
};

/* ---- one file alone (trace/native-file.h) ------------------------------------------ */

#include "trace/native-file.h"

struct su_native_file {
	struct native_source s;
	struct nfile f;
	struct source_report rep;
	struct su_warn_hook warn;
	int opened;               /* file_open done: at the first read, not at su_native_file_open */
};

struct su_native_file *su_native_file_open(const char *dir, const char *name, const struct su_warn_hook *warn)
{
	struct su_native_file *nf = calloc(1, sizeof(*nf));
	if (!nf)
		return NULL;
	if (warn)
		nf->warn = *warn;
	nf->rep.warn = &nf->warn;
	nf->s.rep = &nf->rep;
	nf->f.fd = -1;
	nf->f.kind = strncmp(name, "samples-", 8) == 0;
	nf->f.zst = has_suffix(name, ".zst");
	nf->s.dir = strdup(dir);
	nf->f.name = strdup(name);
	if (!nf->s.dir || !nf->f.name)
		goto nomem;
	if (nf->f.zst) {
		nf->s.dctx = ZSTD_createDCtx();
		nf->s.zin.buf = malloc(ZIN_SIZE);
		if (!nf->s.dctx || !nf->s.zin.buf)
			goto nomem;
		ZSTD_DCtx_setParameter(nf->s.dctx, ZSTD_d_windowLogMax, 26);
	}
	metadata_uuid(&nf->s);
	/* Opened at its first read: babeltrace2 makes an iterator for every
	 * file of the trace before reading any (thousands on a system-wide
	 * trace), and a file read whole gives its fd back (window_whole). */
	return nf;
nomem:
	su_native_file_close(nf);
	errno = ENOMEM;
	return NULL;
}

void su_native_file_close(struct su_native_file *nf)
{
	if (!nf)
		return;
	file_release(&nf->f);
	free(nf->f.name);
	ZSTD_freeDCtx(nf->s.dctx);
	free(nf->s.zin.buf);
	free(nf->s.dir);
	free(nf);
}

int su_native_file_next(struct su_native_file *nf, struct su_native_item *it)
{
	struct nfile *f = &nf->f;
	memset(it, 0, sizeof(*it));
	if (!nf->opened) {
		nf->opened = 1;
		file_open(&nf->s, f);
	}
	if (f->next == NEXT_NONE) {
		int rc = advance(&nf->s, f);
		if (rc < 0)
			return rc;
	}
	if (f->done || f->next == NEXT_NONE)
		return 0;
	it->stream_class = f->kind;
	it->instance_id = f->instance_id;
	it->packet = f->packets;
	it->packet_begin = f->pkt_begin;
	it->packet_end = f->ts_end;
	it->pid = f->pid;
	it->tid = f->tid;
	it->ts = f->key;
	if (f->next == NEXT_DISCARDED) {
		it->type = SU_NATIVE_DISCARDED;
		it->discarded = f->pending_discard;
		f->pending_discard = 0;
	} else {
		it->type = SU_NATIVE_EVENT;
		it->id = f->ev_id;
		it->payload = f->buf + f->ev_off;
		it->end = f->buf + f->end;
	}
	f->next = NEXT_NONE;
	return 1;
}

void su_native_file_consumed(struct su_native_file *nf, size_t n)
{
	nf->f.pos = nf->f.ev_off + n;
}

void su_native_file_defect(struct su_native_file *nf, const char *what)
{
	defect(&nf->s, &nf->f, nf->f.poff + nf->f.hdr_off, "%s", what);
}

int su_native_file_damaged(const struct su_native_file *nf)
{
	return nf->rep.truncated_files;
}
