/* babeltrace2 event messages -> the reader core's raw events
 * (trace/reader-internal.h): the one conversion of a stackcap trace's
 * events, used by the babeltrace2 event source (trace/source-babeltrace2.c)
 * and the unwind filter (plugin/filter-unwind.c), and the field access the
 * LTTng join (trace/lttng-join.c) reads its events with. */
#ifndef STACKCAP_BT2_EVENT_H
#define STACKCAP_BT2_EVENT_H

#include <stdint.h>
#include <babeltrace2/babeltrace.h>
#include "trace/reader-internal.h"

/* Member NAME of structure ST (NULL when ST is NULL or not a structure,
 * or has no such member). */
const bt_field *su_bt2_member(const bt_field *st, const char *name);
/* Integer member NAME into *OUT: 0, -ENOENT when absent, -EINVAL when not an integer. */
int su_bt2_u64(const bt_field *st, const char *name, uint64_t *out);
/* Integer member NAME, or DFLT. */
uint64_t su_bt2_u64_or(const bt_field *st, const char *name, uint64_t dflt);
/* String member NAME, or NULL. */
const char *su_bt2_str(const bt_field *st, const char *name);
/* Array member NAME (NULL if absent or not an array), its length in *N. */
const bt_field *su_bt2_array(const bt_field *st, const char *name, uint64_t *n);
/* The unsigned integer array member NAME copied into BUF (at most CAP
 * bytes).  @return its length (0 when absent or not unsigned integers). */
uint64_t su_bt2_bytes(const bt_field *st, const char *name, uint8_t *buf, uint64_t cap);
/* The unsigned integer array member NAME copied into *BUF (grown to *CAP
 * bytes as needed).  @return its length, -ENOENT when absent, or -ENOMEM. */
int64_t su_bt2_copy_bytes(const bt_field *st, const char *name, uint8_t **buf, size_t *cap);
/* A stackcap blob of payload ST into *BUF (grown to *CAP bytes as
 * needed): BLOB_BYTES bytes of the little-endian 64-bit words BLOB_WORDS
 * (docs/lttng.md: babeltrace2 decodes 8 bytes a field), or, in traces
 * written before, the bytes of BLOB.  @return its length, -ENOENT when
 * absent, -EINVAL when BLOB_BYTES does not fit the words, or -ENOMEM. */
int64_t su_bt2_copy_blob(const bt_field *st, uint8_t **buf, size_t *cap);
/* The event's default clock value (0 without a clock). */
uint64_t su_bt2_event_ts(const bt_message *msg);

/* The raw kind of a stackcap trace's event class NAME, or -1 when it is
 * not one (docs/trace-format.md). */
int su_bt2_stackcap_kind(const char *name);

/* The raw event of MSG, an event of a stackcap trace of kind KIND
 * (su_bt2_stackcap_kind).  Blobs are copied into *BLOB (grown, of *CAP
 * bytes), valid until the next call; process strings and maps are
 * malloc'ed for the core to take.  @return 0 or -ENOMEM. */
int su_bt2_stackcap_event(const bt_message *msg, enum raw_kind kind, struct raw_event *ev, uint8_t **blob,
			  size_t *cap);

/* The event table of TRACE's environment (stackcap_events and
 * stackcap_event_I, versions 4 and 5: docs/trace-format.md) into *OUT (N
 * malloc'ed names, a name missing from the table as "eventI"), or none
 * (*OUT NULL, *N 0).  @return 0 or -ENOMEM. */
int su_bt2_event_table(const bt_trace *trace, char ***out, size_t *n);

#endif
