/* The reader core fed one event at a time: for consumers that get events
 * already merged in time order from elsewhere (the babeltrace2 filter
 * plugin/filter-unwind.c), where su_stackcap_trace_read()'s two passes
 * over a directory are not possible.
 *
 * Unlike the two passes, a sample may arrive before the maps event of its
 * generation (the writer stamps a maps snapshot when it writes it, up to a
 * writer period after samples encoded against it): ask
 * su_reader_can_decode() first and hold the sample (and every later one,
 * since a blob may refer to the previous sample of its thread) until it
 * says yes, or give up and push it anyway (counted in stats.no_maps). */
#ifndef STACKCAP_READER_PUSH_H
#define STACKCAP_READER_PUSH_H

#include "trace/reader-internal.h"

struct su_reader;

/* A reader delivering to CB (copied; CB->end is never called) and counting
 * into its own stats.  OPTS may be NULL (its source is ignored).  NULL +
 * errno on failure. */
struct su_reader *su_reader_new(const struct su_reader_opts *opts, const struct su_reader_callbacks *cb);
void su_reader_free(struct su_reader *r);

/* Push EV (the reader takes what raw_event says it takes, even on error).
 * A decoded sample is delivered through cb->sample before this returns;
 * process_start and maps through their callbacks.
 * @return 0, a callback's nonzero return, or -ENOMEM. */
int su_reader_push(struct su_reader *r, const struct raw_event *ev);

/* Nonzero when EV (a RAW_SAMPLE*) has its process section and the maps
 * generation it names: pushed now it is decoded, not skipped. */
int su_reader_can_decode(const struct su_reader *r, const struct raw_event *ev);

/* Nonzero when every code object that EV (a RAW_RUNTIME_FRAMES) names has
 * its runtime_code event in: the writer writes it to the process stream
 * after the first sample that meets the object, so the frames may come
 * first.  An object never described (gone before the writer read it)
 * keeps this 0: hold, then give up as for maps. */
int su_reader_can_name_runtime(const struct su_reader *r, const struct raw_event *ev);

/* The trace's event table (versions 4 and 5: docs/trace-format.md): the
 * reader takes NAMES (N malloc'ed strings in a malloc'ed array) and names
 * each later sample by its event index; a table set before is freed.
 * Without one every sample is the default event (su_sample.event NULL). */
void su_reader_set_events(struct su_reader *r, char **names, size_t n);

/* The counts so far (drops: the latest totals of every thread). */
void su_reader_get_stats(const struct su_reader *r, struct su_reader_stats *stats);

#endif
