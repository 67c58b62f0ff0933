/* Profile exports of `stackunwind export`: speedscope JSON and pprof.
 *
 * Workers unwind and symbolize; for each sample they append a record
 * (export_rec_sample, then per frame an export_rec_frame followed by its
 * su_symframe inline chain) to their batch's byte buffer; a chain of
 * frames a worker met before (its chain cache, as folded's) is a record
 * naming that one, its frames neither symbolized again nor hashed again
 * into locations (~50 frames a sample of a deep program).  The main thread
 * hands the batches, in sample order, to export_model_add (over our own
 * traces at -j N the parts' records go in that order through
 * cli/ordered.h, from whichever part writes), which builds one model
 * with everything deduplicated: strings, mappings, functions, locations
 * (mapping, address) with their inline chain, threads, samples as
 * location lists.  Ids are given in order of first appearance, so the
 * files are byte-identical for any -j.  The writers read the model only.
 *
 * What goes where in each format: docs/export.md. */
#ifndef STACKCAP_CLI_EXPORT_H
#define STACKCAP_CLI_EXPORT_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include "common/hash.h"
#include "trace/trace-model.h"
#include "symbolize/symbolize.h"

/* ---- records: worker -> main thread (raw bytes, same process) -------------- */

struct export_rec_sample {
	uint64_t time_ns;
	const struct su_process *process;  /* NULL when unknown */
	const char *comm;                  /* its name, safe to print (symbolize/resolve.h) */
	uint32_t pid, tid;
	uint32_t nframes;                  /* export_rec_frame records that follow (none with REPEAT) */
	uint8_t end;                       /* enum su_unwind_end */
	/* The frames are those of the worker's record that named the same
	 * CHAIN_SLOT and CHAIN_VERSION before: no frame records follow. */
	uint8_t repeat;
	uint64_t off_cpu_ns;               /* su_sample.off_cpu_ns */
	/* The worker's chain cache slot holding this chain, and the slot's
	 * version (bumped when it takes another chain): with frames, the
	 * model keeps their locations for the repeats that will name them
	 * (in the same worker's later records, emitted after this one).
	 * NULL: not kept. */
	const void *chain_slot;
	uint64_t chain_version;
};

struct export_rec_frame {
	uint64_t pc;
	const struct su_map_entry *map;    /* NULL: the pc is in no recorded mapping */
	const char *module_name;           /* MAP's name, safe to print (symbolize/resolve.h) */
	/* MAP's module (debuginfo/module.h), or NULL: its load bias and the
	 * build-id of its file (kept as long as MODULE_NAME). */
	const struct su_module *module;
	uint8_t activation;                /* the leaf: symbolized at pc, not pc - 1 */
	uint8_t module_ok;                 /* the binary was found and opened */
	uint16_t nsym;                     /* struct su_symframe that follow, innermost first */
	/* An interpreter's frame (SU_FRAME_RUNTIME; PC is its code object):
	 * which object and where in it, so that two positions, or two objects
	 * at one address, are two locations.  0 otherwise. */
	uint32_t rt_fp;
	int32_t rt_pos;
};

/* ---- the model ------------------------------------------------------------- */

/* Indexes below are 0-based positions in the model's arrays; pprof ids are
 * index + 1.  String 0 is "". */
struct export_mapping {
	uint64_t start, limit, offset, bias;
	uint32_t filename, build_id;       /* strings */
	uint8_t has_functions, has_filenames, has_line_numbers, has_inline_frames;
	uint8_t is_main;                   /* a mapping of a main executable (SU_MAP_MAIN) */
};

struct export_function {
	uint32_t name, filename;           /* strings; FILENAME: where it is declared */
	uint32_t start_line;               /* 0: unknown */
};

struct export_line {
	uint32_t function;
	uint32_t line, column;             /* 0: unknown */
};

#define EXPORT_NO_MAPPING UINT32_MAX

struct export_location {
	uint64_t address;                  /* the pc; a caller's: its return address - 1 */
	uint32_t mapping;                  /* EXPORT_NO_MAPPING: none */
	uint32_t first_line, nlines;       /* inline chain in LINES, innermost first; 0: unknown */
	uint8_t activation;                /* the leaf (ADDRESS is its pc) */
	uint8_t pseudo;                    /* 1: the "[truncated]"-like root of a stack that
	                                    * stopped early; its one line names why;
	                                    * ADDRESS is then the enum su_unwind_end */
	uint32_t rt_fp;                    /* as in struct export_rec_frame */
	int32_t rt_pos;
};

struct export_thread {
	uint32_t pid, tid;
	uint32_t comm;                     /* string */
	const struct su_process *process;  /* key only (valid while reading) */
	uint32_t seq;                      /* its su_process.seq: the key with PROCESS_BY_ID */
	uint8_t known;                     /* PROCESS was not NULL */
	uint64_t period_ns;                /* 1e9 / sampling frequency; 0: not sampled */
	int64_t clock_offset_ns;           /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	uint64_t first_ns, last_ns;
	uint64_t samples;
};

struct export_sample {
	uint64_t time_ns;
	uint64_t loc_off;                  /* in LOCS: location indexes, leaf first */
	uint32_t nlocs;
	uint32_t thread;
	uint64_t off_cpu_ns;               /* an off-CPU stack: its blocked time */
	uint64_t locs_hash;                /* of its list (export_locs_hash), computed once a list */
};

/* The hash of a list of NLOCS location indexes. */
static inline uint64_t export_locs_hash(const uint32_t *locs, uint32_t nlocs)
{
	uint64_t h = SU_FNV_SEED;
	for (uint32_t i = 0; i < nlocs; i++)
		h = su_fnv1a_add(h, locs[i]);
	return h;
}

struct export_model {
	int no_inline;                     /* keep only the real function of each address */
	/* Threads told apart by their process's pid and section
	 * (su_process.seq), not by its object: the parts of a -j read of our
	 * own trace each have objects of their own for one process. */
	int process_by_id;
	char **strings;
	size_t n_strings, cap_strings;
	struct export_mapping *mappings;
	size_t n_mappings, cap_mappings;
	struct export_function *functions;
	size_t n_functions, cap_functions;
	struct export_line *lines;
	size_t n_lines, cap_lines;
	struct export_location *locations;
	size_t n_locations, cap_locations;
	struct export_thread *threads;
	size_t n_threads, cap_threads;
	struct export_sample *samples;
	size_t n_samples, cap_samples;
	size_t n_off_cpu;                  /* samples with off_cpu_ns */
	uint32_t *locs;
	size_t n_locs, cap_locs;
	void *index;                       /* export-model.c's hash tables */
};

/* A model; NULL + errno when out of memory. */
struct export_model *export_model_new(int no_inline);
void export_model_free(struct export_model *m);

/* Add the records in BUF (whole samples).  @return 0, -ENOMEM, or -EINVAL
 * when BUF does not hold whole records. */
int export_model_add(struct export_model *m, const void *buf, size_t len);

/* The string of index I. */
static inline const char *export_str(const struct export_model *m, uint32_t i)
{
	return m->strings[i];
}

/* Index of S in M's strings (added when new): made valid UTF-8 first
 * (each invalid byte becomes U+FFFD).  (uint32_t)-1 when out of memory. */
uint32_t export_model_string(struct export_model *m, const char *s);

/* S (LEN bytes) as valid UTF-8: a malloc'ed copy with every byte that is
 * not part of a well-formed sequence replaced by U+FFFD (EF BF BD). */
char *export_utf8_sanitize(const char *s, size_t len);

/* "basename+0xELFADDR" of an address no symbol covers, into BUF. */
void export_unknown_name(const struct export_model *m, const struct export_location *loc,
			 char *buf, size_t size);

/* ---- writers ------------------------------------------------------------- */

struct export_info {
	const char *name;                  /* the profile's name (the trace path) */
	const char *exporter;              /* "stackunwind VERSION" */
};

/* Write M to F.  @return 0, or -errno (ERR says what failed). */
int export_speedscope_write(const struct export_model *m, const struct export_info *info, FILE *f,
			    char *err, size_t errlen);
int export_pprof_write(struct export_model *m, const struct export_info *info, FILE *f,
		       char *err, size_t errlen);

/* ---- the output file ------------------------------------------------------ */

/* `stackunwind export`'s output: opened before reading, so a path that
 * cannot be written fails at once; written and closed at the end, removed
 * when the run fails and it is a regular file ("-": standard output). */
struct export_out {
	FILE *f;
	const char *path;
	char *buf;                         /* F's stdio buffer (EXPORT_OUT_BUF bytes), or NULL */
	int regular;                       /* PATH is a regular file: removed when the run fails */
};
#define EXPORT_OUT_BUF (1u << 20)

/* @return 0, or -errno with ERR saying why. */
int export_out_open(struct export_out *x, const char *path, char *err, size_t errlen);

/* Write M (pprof when PPROF, else speedscope) and close.  @return 0, or
 * -errno with ERR saying why (the file is removed). */
int export_out_finish(struct export_out *x, struct export_model *m, int pprof,
		      const struct export_info *info, char *err, size_t errlen);

/* Close and remove an output not finished (nothing when finished). */
void export_out_abort(struct export_out *x);

/* JSON string literal of S (already valid UTF-8), quotes included. */
void export_json_string(FILE *f, const char *s);

#endif
