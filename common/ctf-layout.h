/* SPDX-License-Identifier: MIT */
/*
 * ctf-layout.h: the binary layout of a stackcap CTF stream file
 * (docs/trace-format.md), the one definition the writer
 * (capture/ctf-writer.c) and the readers (trace/source-native.c,
 * trace/source-babeltrace2.c) share.  The metadata text that declares the
 * same layout to babeltrace2 is capture/ctf-metadata.c.  All fields are
 * little-endian.
 */
#ifndef STACKCAP_COMMON_CTF_LAYOUT_H
#define STACKCAP_COMMON_CTF_LAYOUT_H

#include <stdint.h>

/* Value of the metadata's env.stackcap_trace_version.  Readers reject any
 * other value. */
#define CTF_TRACE_VERSION 1
/* Version 2 = version 1 + the runtime events (runtime, runtime_code,
 * runtime_frames): written only by recordings that ask for runtime frames
 * (ctf_writer_opts.runtime_frames), so every other trace stays version 1. */
#define CTF_TRACE_VERSION_RUNTIME 2
/* Version 3 = version 2 + the kernel events (kernel_chain,
 * kernel_symbols): written only by recordings that keep kernel frames
 * (ctf_writer_opts.kernel_frames). */
#define CTF_TRACE_VERSION_KERNEL 3
/* Version 4 = version 3 + named events: the event table in the env
 * (stackcap_events, stackcap_event_I) and event_sample: written only by
 * recordings that name their events (ctf_writer_opts.events), stackcap
 * record -e. */
#define CTF_TRACE_VERSION_EVENTS 4
/* Version 5 = version 4's events (the event table where events are named)
 * and version 3's (the kernel ones where kernel_frames) + the off-CPU
 * event (off_cpu): written only by recordings of off-CPU time
 * (ctf_writer_opts.off_cpu). */
#define CTF_TRACE_VERSION_OFF_CPU 5

/* A trace directory's one entry that is not CTF: the perf maps of its
 * processes' JIT code, DIR/CTF_JIT_DIR/perf-PID.map, copied by the
 * recorder (record/keep-jit-maps.h).  A directory: CTF readers
 * (babeltrace2) take only regular files for streams; ours skip it. */
#define CTF_JIT_DIR "jit"
/* Another: the binaries and debug files its frames need, by build-id
 * (DIR/CTF_DEBUG_DIR/.build-id/xx/rest, rest.debug), copied by
 * `stackunwind archive` (cli/archive.h); read as a --debug-dir. */
#define CTF_DEBUG_DIR "debug"

/* Is NAME, an entry of a trace directory, one of those two (no stream)? */
static inline int ctf_side_dir(const char *name)
{
	return __builtin_strcmp(name, CTF_JIT_DIR) == 0 || __builtin_strcmp(name, CTF_DEBUG_DIR) == 0;
}

/* The stream classes (a packet header's stream_id). */
enum ctf_stream_kind {
	CTF_STREAM_PROCESS = 0, /* stream class 0: process_start, maps, drops, process_end */
	CTF_STREAM_SAMPLES = 1, /* stream class 1: sample */
};

/* Packet header (32 bytes): byte offsets of its fields. */
#define CTF_MAGIC 0xC1FC1FC1u
enum {
	CTF_PH_MAGIC = 0,        /* u32 CTF_MAGIC */
	CTF_PH_UUID = 4,         /* 16 bytes, the trace's */
	CTF_PH_STREAM_ID = 20,   /* u32 enum ctf_stream_kind */
	CTF_PH_INSTANCE_ID = 24, /* u64 stream_instance_id */
	CTF_PACKET_HEADER_SIZE = 32,
};
/* Packet context (48 bytes, after the header): offsets from its start. */
enum {
	CTF_PC_TS_BEGIN = 0,     /* u64 ns */
	CTF_PC_TS_END = 8,       /* u64 ns */
	CTF_PC_CONTENT_SIZE = 16, /* u64 bits */
	CTF_PC_PACKET_SIZE = 24, /* u64 bits */
	CTF_PC_DISCARDED = 32,   /* u64 events_discarded, a running total */
	CTF_PC_PID = 40,         /* u32 */
	CTF_PC_TID = 44,         /* u32 (0 in process streams) */
	CTF_PACKET_CONTEXT_SIZE = 48,
};
/* Header and context, before a packet's first event. */
#define CTF_PACKET_PREAMBLE (CTF_PACKET_HEADER_SIZE + CTF_PACKET_CONTEXT_SIZE)

/* Event header: compact, a u32 of the id (5 bits) and the low 27 bits of
 * the timestamp above it (the stream clock's wrap rule); or extended, the
 * byte CTF_EV_EXTENDED_MARK, a u32 id and a u64 timestamp. */
#define CTF_EV_COMPACT_SIZE 4u
#define CTF_EV_EXTENDED_SIZE 13u
#define CTF_EV_EXTENDED_MARK 31u
#define CTF_EV_COMPACT_MAX_ID 30u
#define CTF_EV_TS_BITS 27

/* Event ids of the process stream class. */
enum ctf_process_event {
	CTF_EV_PROCESS_START = 0,
	CTF_EV_MAPS = 1,
	CTF_EV_DROPS = 2,
	CTF_EV_PROCESS_END = 3,
	CTF_EV_RUNTIME = 4,        /* version 2 */
	CTF_EV_RUNTIME_CODE = 5,   /* version 2 */
	CTF_EV_KERNEL_SYMBOLS = 6, /* version 3 */
};
/* Event ids of the sample stream class. */
enum ctf_sample_event {
	CTF_EV_SAMPLE = 0,
	CTF_EV_SAMPLE_FULL = 1,
	CTF_EV_SAMPLE_SEGMENT = 2,
	CTF_EV_RUNTIME_FRAMES = 3, /* version 2 */
	CTF_EV_KERNEL_CHAIN = 4,   /* version 3 */
	CTF_EV_EVENT_SAMPLE = 5,   /* version 4 */
	CTF_EV_OFF_CPU = 6,        /* version 5 */
};

/* Flags of a maps entry. */
#define CTF_MAP_ANON 0x1u /* anonymous / JIT code */
#define CTF_MAP_MAIN 0x2u /* the main executable */
#define CTF_MAP_VDSO 0x4u

#endif
