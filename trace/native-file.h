/* One stream file of a stackcap trace read alone, item by item, by our own
 * parser (trace/source-native.c: plain or zstd frame by frame, every
 * length checked, the first defect ends the file with a warning): for the
 * babeltrace2 source component (plugin/source-trace.c), which gives each
 * file its own stream and decodes payloads itself. */
#ifndef STACKCAP_NATIVE_FILE_H
#define STACKCAP_NATIVE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include "trace/stackcap-reader.h"

struct su_native_file;

struct su_native_item {
	enum { SU_NATIVE_EVENT = 1, SU_NATIVE_DISCARDED } type;
	uint64_t ts;                /* event time; DISCARDED: the previous packet's end */
	unsigned id;                /* event id in its stream class */
	const uint8_t *payload;     /* EVENT: its payload, up to the packet's content end */
	const uint8_t *end;
	uint64_t discarded;         /* DISCARDED: events lost before this packet */
	/* the packet holding the item */
	uint64_t packet;            /* 1, 2, ...: changes when a new packet starts */
	uint64_t packet_begin, packet_end;
	uint32_t pid, tid;
	uint64_t instance_id;       /* stream_instance_id */
	int stream_class;           /* 0 process, 1 samples */
};

/* Open stream file NAME of trace directory DIR (its kind from the name);
 * warnings go to WARN (copied; NULL: none).  A file that cannot be read
 * is an empty one (warned).  NULL + errno. */
struct su_native_file *su_native_file_open(const char *dir, const char *name, const struct su_warn_hook *warn);
void su_native_file_close(struct su_native_file *f);

/* The next item.  @return 1, 0 at the end (or after the first defect), or
 * -ENOMEM.  After an EVENT, call su_native_file_consumed() with the bytes
 * its payload took, or su_native_file_defect() if it is malformed. */
int su_native_file_next(struct su_native_file *f, struct su_native_item *it);
void su_native_file_consumed(struct su_native_file *f, size_t n);
void su_native_file_defect(struct su_native_file *f, const char *what);

/* Nonzero when the file was cut or corrupt (a warning said where). */
int su_native_file_damaged(const struct su_native_file *f);

#endif
