/* SPDX-License-Identifier: MIT */
/*
 * stackcap convert PERF.DATA -o DIR [--zstd] [--force]
 *
 * Re-encodes the samples of a perf.data file (perf record --call-graph
 * dwarf) into a stackcap trace: perf's stack bytes classified against the
 * recorded maps with policy F2 and encoded with our codec (top-elided
 * delta against the previous sample of the thread), exactly as the
 * capture library's writer would have, so a user sees on their own data
 * what the codec saves.  Read back by stackunwind like any trace.
 *
 * The encoding is record/encode.c's, the one `stackcap record`'s kernel
 * copy uses: per process section one process stream (process_start and
 * each maps generation, written when the first sample needing it comes,
 * with its timestamp) and one sample stream per thread, in time order.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/convert.h"
#include "cli/warn.h"
#include "common/io.h"
#include "capture/ctf-writer.h"
#include "record/encode.h"
#include "record/keep-jit-maps.h"
#include "trace/perf-data.h"
#include "trace/trace-read.h"

#define PROG "stackcap convert"

struct conv {
	struct rec_encoder *enc;
	struct su_reader_stats *st;
	struct rec_jitmaps *jit;
};

static int on_jit(void *arg, uint32_t pid, int other_view)
{
	return rec_jitmaps_seen(arg, pid, other_view);
}

static void say_line(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, PROG ": %s\n", line);
}

static int on_sample(void *arg, const struct su_sample *s)
{
	struct conv *c = arg;
	return rec_encoder_sample(c->enc, s);
}

/* A perf.data's EXIT: the process's section ends (its streams closed: a
 * system-wide recording names thousands of processes). */
static int on_thread_exit(void *arg, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct conv *c = arg;
	if (pid == tid) /* its perf map taken now: a later process may reuse the pid */
		rec_jitmaps_exit(c->jit, pid);
	return rec_encoder_thread_exit(c->enc, pid, tid, time);
}

/* Ends and perf's lost-event count, once every sample is written. */
static int on_end(void *arg)
{
	struct conv *c = arg;
	int rc = c->st->drops ? rec_encoder_lost(c->enc, UINT32_MAX, c->st->drops, 0) : 0;
	return rc ? rc : rec_encoder_finish(c->enc, 0);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " PERF.DATA -o DIR [--zstd] [--force]\n"
		   "       " PROG " -h\n\n"
		   "  re-encodes the samples of a perf.data (perf record --call-graph dwarf)\n"
		   "  with stackcap's codec into the trace directory DIR (PERF.DATA -: a\n"
		   "  perf record -o - stream on standard input)\n"
		   "\n"
		   "  -o, --output DIR       the trace directory to write (required)\n"
		   "      --zstd             zstd-compress the stream files\n"
		   "      --force            replace an existing output directory\n"
		   "  -h, --help             this text\n");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int stackcap_convert(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "zstd", no_argument, NULL, 'z' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	int zstd = 0, force = 0, ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'o': out = optarg; break;
		case 'z': zstd = 1; break;
		case 'f': force = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc || !out) {
		usage(stderr);
		return 2;
	}
	const char *in = argv[optind]; /* "-": standard input, perf record -o - */
	FILE *probe = strcmp(in, "-") ? fopen(in, "r") : NULL;
	if (!probe && strcmp(in, "-")) { /* missing or unreadable: say so, not "not a perf.data" */
		fprintf(stderr, PROG ": %s: %s\n", in, strerror(errno));
		return 1;
	}
	if (probe)
		fclose(probe);
	if (su_trace_probe(in) != SU_TRACE_PERF) {
		fprintf(stderr, PROG ": %s is not a perf.data file\n", in);
		return 1;
	}
	struct stat sb;
	if (stat(out, &sb) == 0) {
		if (!force) {
			fprintf(stderr, PROG ": %s exists (--force replaces it)\n", out);
			return 1;
		}
		if (nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS)) {
			fprintf(stderr, PROG ": cannot remove %s: %s\n", out, strerror(errno));
			return 1;
		}
	}
	su_nofile_raise(); /* two stream files per process in progress */
	struct su_reader_stats st;
	struct conv c = { .st = &st };
	struct ctf_writer *w;
	struct ctf_writer_opts wo = { .sz = sizeof(wo), .zstd = zstd, .own_fds = 1 };
	int rc = ctf_writer_open(out, &wo, &w);
	/* The perf maps of its processes' JIT code, in /tmp as they
	 * left them, kept in the trace (record/keep-jit-maps.h). */
	struct rec_jitmaps *jit = c.jit = rc == 0 ? rec_jitmaps_new(out) : NULL;
	struct rec_encoder_opts const eo = { .jit = jit ? on_jit : NULL, .jit_arg = jit };
	if (rc == 0 && (rc = rec_encoder_new(w, &eo, &c.enc)) != 0)
		ctf_writer_close(w);
	if (rc) {
		rec_jitmaps_finish(jit, NULL);
		fprintf(stderr, PROG ": cannot create %s: %s\n", out, strerror(-rc));
		return 1;
	}
	struct su_reader_callbacks cb = { .arg = &c, .sample = on_sample, .end = on_end, .thread_exit = on_thread_exit };
	char err[1024];
	/* The user stacks only: a perf.data names no kernel symbols of its own
	 * (stackunwind takes this machine's when the kernel is the same). */
	struct su_reader_opts ro = { .warn = cli_warn_hook(PROG), .user_only = 1 };
	int rrc = su_perf_data_read(in, &ro, &cb, &st, err, sizeof(err));
	struct rec_encoder_stats es;
	rec_encoder_get_stats(c.enc, &es);
	uint64_t const samples = es.samples, blob_bytes = es.blob_bytes;
	uint64_t const no_user = es.no_user, chain_only = es.chain_only;
	int const erc = rec_encoder_free(c.enc);
	if (erc && !rc)
		rc = erc;
	uint64_t const written = ctf_writer_bytes_written(w);
	int const crc = ctf_writer_close(w);
	if (crc && !rc)
		rc = crc;
	if (rrc >= 0 && !samples && chain_only) {
		snprintf(err, sizeof(err), "%s: recorded with call chains (perf record -g), not stacks: nothing to "
			 "re-encode; record with `perf record --call-graph dwarf` (stackunwind reads this file as it is)", in);
		rrc = -EINVAL;
	}
	struct rec_jitmaps_stats js;
	rec_jitmaps_finish(jit, &js);
	if (rrc < 0) {
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rrc));
		/* Nothing usable was written: leave no half trace behind. */
		nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		return 1;
	}
	if (rc) {
		fprintf(stderr, PROG ": writing %s: %s\n", out, strerror(-rc));
		return 1;
	}
	fprintf(stderr,
		PROG ": %" PRIu64 " samples: %s %" PRIu64 " bytes -> %s %" PRIu64 " bytes (%.1fx smaller); "
		"stacks %" PRIu64 " -> %" PRIu64 " bytes (%.1fx)\n",
		samples, in, st.bytes_on_disk, out, written,
		written ? (double)st.bytes_on_disk / (double)written : 0,
		st.raw_stack_bytes, blob_bytes, blob_bytes ? (double)st.raw_stack_bytes / (double)blob_bytes : 0);
	rec_jitmaps_summary(&js, out, say_line, NULL);
	if (no_user)
		fprintf(stderr, PROG ": %" PRIu64 " samples without user state (kernel threads, exiting tasks) not converted\n",
			no_user);
	if (chain_only)
		fprintf(stderr, PROG ": %" PRIu64 " samples with a call chain but no stack (perf record -g) not converted\n",
			chain_only);
	return rrc ? 3 : 0;
}
