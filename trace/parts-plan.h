/* Which part reads which files of one of our traces, when -j N reads it
 * in N parts at once (su_reader_opts.plan): made once, before the parts
 * start, from one listing of the directory, and shared by them.
 *
 * A system-wide trace holds thousands of processes, each a process stream
 * file and a sample stream file or two of a few hundred bytes.  Each part
 * used to open and read every one of them (the process streams whole, the
 * sample streams' packet headers): on a 4,245-process trace -j 2 spent
 * 1.7x -j 1's CPU and was no faster.  With the plan a process whose
 * samples are small beside the trace is one part's: the other parts never
 * open its files.  The processes left (a few busy ones) are every part's,
 * their sample packets taken first come (su_reader_opts.claims).
 *
 * The owner is chosen by the pid in the file names (proc-<pid>-<seq>,
 * samples-<pid>-<slot>: docs/trace-format.md); a part checks that the
 * files it reads hold that pid, and warns otherwise (the caller then reads
 * the trace whole).  The trace's kernel symbols are in one process stream
 * only: the parts meet after their process streams (su_parts_plan_meet)
 * and each takes the symbols whichever part read. */
#ifndef STACKCAP_PARTS_PLAN_H
#define STACKCAP_PARTS_PLAN_H

#include <stddef.h>
#include <stdint.h>

struct su_parts_plan;

/* A plan for reading DIR in PARTS parts.  NULL with errno set: the
 * directory could not be listed, or no memory. */
struct su_parts_plan *su_parts_plan_new(const char *dir, unsigned parts);

/* Frees the plan and the kernel symbols the parts shared: after every
 * part's read has returned. */
void su_parts_plan_free(struct su_parts_plan *p);

/* The sample stream files' count and bytes (whether parts are worth it). */
size_t su_parts_plan_sample_files(const struct su_parts_plan *p);
uint64_t su_parts_plan_sample_bytes(const struct su_parts_plan *p);

/* A part will not come (its thread did not start): the parts waiting at
 * the meeting go on without it (their reads are then not used). */
void su_parts_plan_cancel(struct su_parts_plan *p);

/* Part PART's read has returned (every part's, whatever it returned): if
 * it failed before it met the others after its process streams (a trace
 * that changed under it, no file descriptors left...), they no longer
 * wait for it. */
void su_parts_plan_part_done(struct su_parts_plan *p, unsigned part);

#endif
