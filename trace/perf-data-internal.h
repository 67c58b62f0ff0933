/* What the files of the perf.data reader share (docs/perf-data.md): perf's
 * ABI, the reader's state (struct pr) and the functions one part calls in
 * another.  The reader is split by what each part knows:
 *   perf-data.c    the file: header, attributes, feature sections, the
 *                  entry points su_perf_data_read*()
 *   perf-procs.c   the process model: interned paths and their ELF files,
 *                  processes, maps generations, MMAP/COMM/FORK/EXIT
 *   perf-sample.c  one record: its attribute, its time, a SAMPLE decoded
 *                  into the model, the dispatch by record type
 *   perf-stream.c  the record stream: perf's FINISHED_ROUND order,
 *                  compressed records, the data section, and the live
 *                  stream (su_perf_stream) record/ feeds
 * Internal to trace/: nothing outside these four files includes it. */
#ifndef STACKCAP_PERF_DATA_INTERNAL_H
#define STACKCAP_PERF_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

#include "common/grow.h"
#include "trace/perf-ahead.h"
#include "trace/mem-ranges.h"
#include "trace/perf-data.h"
#include "trace/reader-internal.h"


/* ---- perf's ABI (linux/perf_event.h, tools/perf/util/header.h) ------------ */

#define PERF_MAGIC2 0x32454c4946524550ull /* "PERFILE2" */
#define PERF_MAGIC2_SWAPPED 0x50455246494c4532ull
#define FILE_HEADER_SIZE 104u
#define PIPE_HEADER_SIZE 16u

enum {
	S_IP = 1u << 0, S_TID = 1u << 1, S_TIME = 1u << 2, S_ADDR = 1u << 3,
	S_READ = 1u << 4, S_CALLCHAIN = 1u << 5, S_ID = 1u << 6, S_CPU = 1u << 7,
	S_PERIOD = 1u << 8, S_STREAM_ID = 1u << 9, S_RAW = 1u << 10,
	S_BRANCH_STACK = 1u << 11, S_REGS_USER = 1u << 12, S_STACK_USER = 1u << 13,
	S_IDENTIFIER = 1u << 16,
};
enum { F_TOTAL_TIME_ENABLED = 1, F_TOTAL_TIME_RUNNING = 2, F_ID = 4, F_GROUP = 8, F_LOST = 16 };
#define BRANCH_HW_INDEX (1ull << 17)
#define ATTR_FREQ (1ull << 10)
#define ATTR_SAMPLE_ID_ALL (1ull << 18)
#define ATTR_EXCLUDE_KERNEL (1ull << 5)
#define ATTR_EXCLUDE_CALLCHAIN_KERNEL (1ull << 21)
#define ATTR_EXCLUDE_CALLCHAIN_USER (1ull << 22)
/* Call chain context markers (PERF_CONTEXT_*): the entries that follow
 * PERF_CONTEXT_USER, up to the next marker, are user addresses. */
#define CONTEXT_USER ((uint64_t)-512)
#define CONTEXT_KERNEL ((uint64_t)-128)
#define CONTEXT_MAX ((uint64_t)-4095)

enum {
	R_MMAP = 1, R_LOST = 2, R_COMM = 3, R_EXIT = 4, R_THROTTLE = 5, R_FORK = 7, R_SAMPLE = 9,
	R_MMAP2 = 10, R_LOST_SAMPLES = 13, R_SWITCH = 14, R_SWITCH_CPU_WIDE = 15,
	R_HEADER_ATTR = 64, R_HEADER_TRACING_DATA = 66, R_HEADER_BUILD_ID = 67,
	R_FINISHED_ROUND = 68, R_AUXTRACE = 71, R_HEADER_FEATURE = 80, R_COMPRESSED = 81,
};
#define MISC_CPUMODE_MASK 7u
#define MISC_KERNEL 1u
#define MISC_MMAP_DATA (1u << 13)
#define MISC_COMM_EXEC (1u << 13)
#define MISC_MMAP_BUILD_ID (1u << 14)
#define MISC_BUILD_ID_SIZE (1u << 15)

enum { FEAT_BUILD_ID = 2, FEAT_OSRELEASE = 4, FEAT_CMDLINE = 11, FEAT_EVENT_DESC = 12, FEAT_DIR_FORMAT = 24,
       FEAT_COMPRESSED = 27 };

/* ---- the model being built -------------------------------------------------- */

/* An interned path, with what the reader learnt of its file. */
struct path_info {
	char *path;
	uint64_t hash;
	uint8_t table_id_len;        /* from the build-id feature section */
	uint8_t table_id[SU_BUILD_ID_MAX];
};

struct pmap {
	uint64_t start, end, pgoff, bias;
	uint32_t flags;
	uint8_t id_len;
	uint8_t id[SU_BUILD_ID_MAX];
	const char *path;            /* interned */
	uint64_t dev, ino;           /* MMAP2 without a build-id: the file's */
};

struct proc {
	struct su_process p;
	struct pmap *m;
	size_t n, cap;
	int dirty;                   /* maps changed since CUR */
	struct su_maps *cur;
	uint32_t next_gen;
	/* Every mapping, data too (attr.mmap_data): where a sample's stack
	 * ends.  Freed when the process ends or execs. */
	struct su_mem_ranges mem;
	/* Its maps generations: their indexes in r->gens (perf_proc_release). */
	size_t *gen_at;
	size_t n_gen_at, cap_gen_at;
	/* Threads the stream saw start (FORK records of threads) and not end
	 * yet, and whether its main thread has ended: a process whose main
	 * thread left by pthread_exit goes on until its last thread ends. */
	uint32_t threads;
	int leader_exited;
};

struct attr {
	uint64_t type, sample_type, read_format, flags, branch_sample_type;
	uint64_t sample_regs_user, period_or_freq;
	uint32_t sample_stack_user;
	uint16_t sample_max_stack;   /* call chain entries at most (0: the kernel's default) */
	uint32_t nregs;              /* popcount(sample_regs_user) */
	/* The sample's values that are our registers: the K-th of them at
	 * USED_AT[K] among the NREGS, our USED_REG[K]. */
	uint8_t n_used, used_at[24], used_reg[24];
	uint32_t used_mask;          /* 1 << each USED_REG */
	int regs_dwarf;              /* the registers perf record --call-graph dwarf takes on x86-64 */
	const char *name;            /* the event's name (a live stream's, given; a file's,
				      * from HEADER_EVENT_DESC), or NULL */
	char *desc_name;             /* a file's: NAME, owned */
};

struct qev {
	uint64_t ts, seq;
	const uint8_t *rec;
};

/* Decompressed records (perf record -z), freed once no queued event
 * points into them. */
/* perf -z: one record inflates to at most this (perf's own buffers are its
 * mmap size, 512 KiB by default), and the inflated records waiting for a
 * FINISHED_ROUND hold at most about COMPRESSED_HELD_MAX. */
#define COMPRESSED_RECORD_MAX (64u << 20)
#define COMPRESSED_HELD_MAX (64u << 20)

struct chunk {
	struct chunk *next;
	uint64_t last_seq;          /* of the last event queued from it */
	size_t len, cap;            /* CAP: of DATA, an inflated chunk used again (0: freed) */
	uint8_t data[];
};

/* perf record -z's zstd stream (perf-stream.c). */
struct perf_zstream {
	ZSTD_DCtx *dctx;
	uint8_t *rem;                /* 64 KiB: an event cut at a chunk end */
	size_t rem_len;
};

void perf_zstream_free(struct perf_zstream *z);

struct pr {
	/* A LOST record was read: EXIT records may be missing. */
	int records_lost;
	const struct su_reader_opts *opts;
	const struct su_reader_callbacks *cb;
	struct su_reader_stats *st;
	char *err;
	size_t errlen;
	const char *name;
	const struct su_warn_hook *warn; /* NULL: none */

	const uint8_t *map;          /* the whole file, read-only private */
	uint64_t file_size;
	uint64_t data_off, data_size;

	struct attr *attrs;
	size_t n_attrs;
	struct id_attr { uint64_t id; size_t attr; } *ids;  /* sorted by id */
	size_t n_ids, cap_ids;
	int id_pos;                  /* u64 index of the id in a sample, or -1 */
	int id_from_end;             /* u64 index from the end of a sample_id trailer, or 0 */

	struct path_info **paths;    /* open addressing */
	size_t n_paths, cap_paths;

	struct proc **procs;         /* every section, in creation order */
	size_t n_procs, cap_procs;
	struct { uint32_t pid; struct proc *p; } *live; /* pid -> current section */
	size_t n_live, cap_live;

	struct su_maps **gens;       /* every generation built (freed at the end) */
	size_t n_gens, cap_gens;

	struct qev *q;
	size_t nq, capq;
	struct qev *q_merge;         /* the queue's sort merges into this one, then they swap */
	size_t cap_merge;
	struct perf_ahead *ahead;    /* the thread mapping the file ahead (perf-ahead.h), or NULL */
	uint64_t seq, max_ts, next_flush;

	struct perf_zstream z;       /* perf record -z's stream */
	struct chunk *spare;         /* inflated chunks delivered, to inflate into again */
	struct chunk *chunks, *chunks_tail;
	size_t chunk_bytes;          /* inflated bytes held in chunks */
	int warned_chunks;

	/* A stack or user call chain [0], a kernel call chain [1], not
	 * 8-aligned in the file. */
	uint64_t *scratch[2];
	size_t scratch_cap[2];

	char osrelease[128];
	/* This machine's kernel symbols, naming a file's kernel frames when
	 * its kernel is this one (perf-sample.c); NULL when not (yet). */
	struct su_kernel *kernel;
	int kernel_tried;
	/* Being read on another thread from the header on
	 * (perf_kernel_syms_ahead), until a sample first needs it; then
	 * KERNEL, and the end (perf_kernel_syms_end) says whether the read
	 * failed. */
	struct su_kernel *kernel_ahead;
	int here_tried, here;        /* perf_recorded_here() */

	uint64_t bad_samples, unknown_ids, compat_regs;
	/* A live stream (su_perf_stream): LOST and THROTTLE records told per
	 * process, thread exits; NULL for a file. */
	const struct su_perf_stream_callbacks *live_cb;
	uint64_t now;                /* time of the record being delivered */
	int cb_rc;
	int malformed;               /* the data section ended at a damaged record */
	int attrs_done;              /* pipe mode: the attributes checked, records follow */
	/* perf record --threads: the header file says HEADER_DIR_FORMAT; its
	 * data section, then the DIR/data.N files merged in steps of time
	 * (perf_run_dir); no round flushed. */
	int dir_format, dir_mode;
	uint64_t read_base;          /* bytes of the files read before this one (progress) */
	uint64_t dir_flushed;        /* the time up to which events were delivered */
	uint64_t dir_slack;          /* the most a file's record came before one ahead of it */
	uint64_t dir_late;           /* records that came after later ones were delivered */
	/* The data.N mappings, by address (perf_run_dir): a sample's words
	 * there stay as the file's (su_sample.words_stay). */
	struct stay_range { const uint8_t *lo, *hi; } *stay;
	size_t n_stay;
};

/* perf record --threads: one DIR/data.N, mapped (NULL when it could not
 * be: warned of already). */
struct perf_dir_file {
	unsigned n;
	char *path;
	const uint8_t *map;
	uint64_t size;
};

/* ---- across the files ------------------------------------------------------- */

/* perf-data.c */
void perf_attr_parse(struct attr *a, const uint8_t *e, size_t avail);
void perf_id_positions(struct pr *r);
void perf_pr_free(struct pr *r);
/* Pipe mode: REC (LEN bytes) taken in when it is a part of the header
 * (HEADER_ATTR, HEADER_FEATURE, HEADER_BUILD_ID): 1; 0 when it is not
 * one; -errno, with a message, when it is damaged. */
int perf_pipe_header(struct pr *r, const uint8_t *rec, size_t len);
/* Pipe mode, at the first record after the attributes: they are checked
 * as a file's are.  @return 0, or -errno with a message. */
int perf_pipe_attrs_done(struct pr *r);

/* perf-procs.c */
struct path_info *perf_intern(struct pr *r, const char *s, size_t n);
int perf_recorded_here(struct pr *r);
uint32_t perf_attr_stack_cap(const struct attr *a, int chain);
struct proc *perf_proc_get(struct pr *r, uint32_t pid);
struct su_maps *perf_proc_maps(struct pr *r, struct proc *p);
/* P's mappings and maps generations freed (its su_process stays). */
void perf_proc_release(struct pr *r, struct proc *p);
void perf_maps_free(struct su_maps *m);
void perf_on_mmap(struct pr *r, const uint8_t *rec, size_t len, int v2);
void perf_on_comm(struct pr *r, const uint8_t *rec, size_t len);
void perf_on_fork_exit(struct pr *r, const uint8_t *rec, size_t len, int fork);

/* perf-sample.c */
size_t perf_trailer_size(const struct attr *a);
/* The attribute whose id section holds ID, or NULL. */
const struct attr *perf_attr_of_id(const struct pr *r, uint64_t id);
const struct attr *perf_record_attr(struct pr *r, const uint8_t *rec, size_t len);
uint64_t perf_record_time(struct pr *r, const uint8_t *rec, size_t len);
void perf_deliver(struct pr *r, const uint8_t *rec, size_t len);
/* This machine's kernel symbols read on a thread of their own from now
 * on (su_kallsyms_ahead), when R's events have kernel call chains that
 * they name (a file's header read: attributes, build-ids, release). */
void perf_kernel_syms_ahead(struct pr *r);
/* Every lookup done (called once, R->cb_rc 0): a read ahead that failed
 * is said, or its -ENOMEM set in R->cb_rc. */
void perf_kernel_syms_end(struct pr *r);

/* perf-stream.c */
void perf_run_data(struct pr *r);
/* After DIR/data's data section (perf_run_data, R->dir_mode): the N
 * files of the directory, merged in time order; every event delivered. */
void perf_run_dir(struct pr *r, const struct perf_dir_file *f, size_t n);
/* Pipe mode: the records from FD's offset 16 on, read front to back.
 * @return 0 (damage and a cut end are warned of, R->malformed), or -errno
 * with a message in R's error (no attributes, out of memory). */
int perf_run_pipe(struct pr *r, int fd);
/* Pipe mode from a regular file, mapped (R's map, data_off 16,
 * data_size): the same records without a copy.  @return as
 * perf_run_pipe. */
int perf_run_pipe_map(struct pr *r);

#endif
