/* SPDX-License-Identifier: MIT */
/* stackunwind stacks -j N on our own traces: the trace read in N parts at
 * once (su_reader_opts.parts), each part's thread decoding, unwinding and
 * formatting the samples of its packets into texts of its own, and those
 * texts written out in the order a read in one part gives
 * (su_order_key): the same output as -j 1, without one thread decoding
 * every sample for the others (the pipeline's limit, cli/pipeline.h).
 *
 * Each part's samples come in that order.  A part hands over its texts a
 * chunk at a time (a packet's samples, or fewer), with the key of its
 * next sample: every sample of its before that key is handed over.  A
 * sample is written once every other part has handed over what comes
 * before it; whichever part hands over a chunk writes what can be, and a
 * part that has handed over ORDERED_PENDING chunks not yet written waits
 * (memory stays bounded however long the trace). */
#ifndef STACKCAP_CLI_ORDERED_H
#define STACKCAP_CLI_ORDERED_H

#include "export/text.h"
#include "trace/stackcap-reader.h"

struct ordered;

/* For PARTS parts, writing to FD.  NULL: out of memory. */
struct ordered *ordered_new(unsigned parts, int fd);

/* For PARTS parts, their texts (their own bytes: none by reference) given
 * to SINK(ARG, BYTES, LEN) instead of written to a file: in the same
 * order, one call at a time, from whichever part writes (stackunwind
 * export: the parts' records into the one model).  A nonzero return of
 * SINK (-errno) is kept as the error.  NULL: out of memory. */
struct ordered *ordered_new_sink(unsigned parts, int (*sink)(void *arg, const char *buf, size_t len), void *arg);

/* Part K's text to format its next sample into, KEY its place: a new
 * chunk when KEY is in another packet than the sample before it or the
 * chunk is full (the one before handed over, and written, waited for,
 * if too many are).  NULL: stop (another part failed or
 * ordered_cancel()). */
struct text *ordered_text(struct ordered *o, unsigned k, const struct su_order_key *key);

/* Part K's sample begun by ordered_text() is in its text. */
void ordered_mark(struct ordered *o, unsigned k);

/* Part K read all of its samples: its last chunk handed over. */
void ordered_done(struct ordered *o, unsigned k);

/* Wait until every part is done and every text written, or until
 * cancelled and no text is being written: a sink's texts may point to
 * what a part's reader frees at its end (processes, maps), so each part
 * waits here before (from its reader's end or stop callback). */
void ordered_drain(struct ordered *o);

/* Stop: ordered_text() returns NULL from now on, parts waiting go on. */
void ordered_cancel(struct ordered *o);

/* Once every part is done (or cancelled): write what can be written.
 * @return the samples written in all (in order: the first N of the
 * whole read's), and *ERR the first write error (-errno) or out of
 * memory, else 0. */
uint64_t ordered_finish(struct ordered *o, int *err);

void ordered_free(struct ordered *o);

#endif
