/* SPDX-License-Identifier: MIT */
/*
 * ctf-metadata.c: the TSDL metadata of a stackcap trace (format version
 * CTF_TRACE_VERSION, docs/trace-format.md) and its one-time, atomic
 * installation in a trace directory shared by several processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "capture/ctf-writer.h"
#include "capture/ctf-internal.h"
#include "common/io.h"

static const char metadata_types[] =
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 24; align = 8; signed = false; } := uint24_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n";

/* Everything after the clock: both stream classes and their events.  The
 * event header is LTTng's compact form, so LTTng-aware readers feel at
 * home; see docs/trace-format.md for the compact/extended rule. */
static const char metadata_streams[] =
	"typealias integer { size = 27; align = 1; signed = false;\n"
	"\tmap = clock.monotonic.value; } := uint27_clock_monotonic_t;\n"
	"typealias integer { size = 64; align = 8; signed = false;\n"
	"\tmap = clock.monotonic.value; } := uint64_clock_monotonic_t;\n"
	"\n"
	"struct packet_context {\n"
	"\tuint64_clock_monotonic_t timestamp_begin;\n"
	"\tuint64_clock_monotonic_t timestamp_end;\n"
	"\tuint64_t content_size;\n"
	"\tuint64_t packet_size;\n"
	"\tuint64_t events_discarded;\n"
	"\tuint32_t pid;\n"
	"\tuint32_t tid;\n"
	"};\n"
	"\n"
	"struct event_header_compact {\n"
	"\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"\tvariant <id> {\n"
	"\t\tstruct { uint27_clock_monotonic_t timestamp; } compact;\n"
	"\t\tstruct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended;\n"
	"\t} v;\n"
	"} align(8);\n"
	"\n"
	"stream {\n"
	"\tid = 0;\n"
	"\tevent.header := struct event_header_compact;\n"
	"\tpacket.context := struct packet_context;\n"
	"};\n"
	"\n"
	"stream {\n"
	"\tid = 1;\n"
	"\tevent.header := struct event_header_compact;\n"
	"\tpacket.context := struct packet_context;\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"process_start\";\n"
	"\tid = 0;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint32_t pid;\n"
	"\t\tuint32_t ppid;\n"
	"\t\tstring comm;\n"
	"\t\tstring exe;\n"
	"\t\tint64_t clock_offset_ns;\n"
	"\t\tuint32_t frequency_hz;\n"
	"\t\tuint32_t stack_cap;\n"
	"\t\tuint8_t policy;\n"
	"\t\tuint8_t codec_version;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"maps\";\n"
	"\tid = 1;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint32_t generation;\n"
	"\t\tuint32_t _entries_length;\n"
	"\t\tstruct {\n"
	"\t\t\tuint64_t start;\n"
	"\t\t\tuint64_t end;\n"
	"\t\t\tuint64_t offset;\n"
	"\t\t\tuint64_t bias;\n"
	"\t\t\tuint8_t flags;\n"
	"\t\t\tuint8_t _build_id_length;\n"
	"\t\t\tuint8_t build_id[_build_id_length];\n"
	"\t\t\tstring path;\n"
	"\t\t} entries[_entries_length];\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"drops\";\n"
	"\tid = 2;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint32_t tid;\n"
	"\t\tuint64_t ring_full;\n"
	"\t\tuint64_t nested;\n"
	"\t\tuint64_t no_stack_bounds;\n"
	"\t\tuint64_t other;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"process_end\";\n"
	"\tid = 3;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint64_t samples;\n"
	"\t\tuint64_t drops;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"sample\";\n"
	"\tid = 0;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tuint24_t generation;\n"
	"\t\tuint24_t _blob_length;\n"
	"\t\tuint8_t blob[_blob_length];\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"sample_full\";\n"
	"\tid = 1;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tuint24_t generation;\n"
	"\t\tuint24_t _blob_length;\n"
	"\t\tuint8_t blob[_blob_length];\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"sample_segment\";\n"
	"\tid = 2;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tuint24_t generation;\n"
	"\t\tuint24_t _blob_length;\n"
	"\t\tuint8_t blob[_blob_length];\n"
	"\t};\n"
	"};\n";

/* Version 2: the runtime unwinders' events (capture/runtime.h). */
static const char metadata_runtime[] =
	"\n"
	"event {\n"
	"\tname = \"runtime\";\n"
	"\tid = 4;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint8_t runtime;\n"
	"\t\tuint32_t version;\n"
	"\t\tuint64_t eval_start;\n"
	"\t\tuint64_t eval_end;\n"
	"\t\tuint64_t chains;\n"
	"\t\tuint64_t dropped;\n"
	"\t\tuint64_t stale;\n"
	"\t\tstring name;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"runtime_code\";\n"
	"\tid = 5;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint8_t runtime;\n"
	"\t\tuint64_t code;\n"
	"\t\tuint32_t fingerprint;\n"
	"\t\tuint32_t first_line;\n"
	"\t\tstring name;\n"
	"\t\tstring file;\n"
	"\t\tuint32_t _line_table_length;\n"
	"\t\tuint8_t line_table[_line_table_length];\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"runtime_frames\";\n"
	"\tid = 3;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tuint8_t runtime;\n"
	"\t\tuint24_t _blob_length;\n"
	"\t\tuint8_t blob[_blob_length];\n"
	"\t};\n"
	"};\n";

/* Kernel frames (stackcap record, docs/trace-format.md "Kernel frames"):
 * declared only by recordings that keep them, so every other trace is
 * byte for byte as before. */
static const char metadata_kernel[] =
	"\n"
	"event {\n"
	"\tname = \"kernel_symbols\";\n"
	"\tid = 6;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint8_t _build_id_length;\n"
	"\t\tuint8_t build_id[_build_id_length];\n"
	"\t\tuint32_t _symbols_length;\n"
	"\t\tstruct {\n"
	"\t\t\tuint64_t start;\n"
	"\t\t\tuint64_t end;\n"
	"\t\t\tstring name;\n"
	"\t\t\tstring module;\n"
	"\t\t} symbols[_symbols_length];\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"kernel_chain\";\n"
	"\tid = 4;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tuint32_t _ips_length;\n"
	"\t\tuint64_t ips[_ips_length];\n"
	"\t};\n"
	"};\n";

/* Named events (stackcap record -e, docs/trace-format.md "Events"):
 * declared only by recordings that name their events, with the table in
 * the env. */
static const char metadata_events[] =
	"\n"
	"event {\n"
	"\tname = \"event_sample\";\n"
	"\tid = 5;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tinteger { size = 16; align = 8; signed = false; } event_index;\n"
	"\t\tuint24_t generation;\n"
	"\t\tuint24_t _blob_length;\n"
	"\t\tuint8_t blob[_blob_length];\n"
	"\t};\n"
	"};\n";

/* The env lines of the event table: stackcap_events = N, then
 * stackcap_event_I = "NAME" (names printable, no quote nor backslash:
 * record/events.c makes them so; any other byte is written as '_'). */
static char *events_env(const char *const *events, size_t n)
{
	size_t len = 64;
	for (size_t i = 0; i < n; i++)
		len += 48 + strlen(events[i]);
	char *t = malloc(len), *p = t;
	if (!t)
		return NULL;
	p += sprintf(p, "\tstackcap_events = %zu;\n", n);
	for (size_t i = 0; i < n; i++) {
		p += sprintf(p, "\tstackcap_event_%zu = \"", i);
		for (const char *c = events[i]; *c; c++)
			*p++ = *c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\' ? '_' : *c;
		p += sprintf(p, "\";\n");
	}
	return t;
}

/* Off-CPU time (stackcap record --off-cpu, docs/trace-format.md
 * "Version 5"): declared only by recordings of it. */
static const char metadata_off_cpu[] =
	"\n"
	"event {\n"
	"\tname = \"off_cpu\";\n"
	"\tid = 6;\n"
	"\tstream_id = 1;\n"
	"\tfields := struct {\n"
	"\t\tuint64_t duration;\n"
	"\t};\n"
	"};\n";

static void uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* The whole metadata text, malloc'd.  Deterministic for given (uuid,
 * offset): processes sharing a directory compare it byte for byte. */
static char *metadata_text(const uint8_t uuid[16], int64_t offset_ns, int version,
			   const char *sampler, int kernel, const char *const *events, size_t n_events, int off_cpu,
			   size_t *len)
{
	char *ev_lines = n_events ? events_env(events, n_events) : NULL;
	if (n_events && !ev_lines)
		return NULL;
	char sampler_line[64] = "";
	if (sampler)
		snprintf(sampler_line, sizeof(sampler_line), "\tstackcap_sampler = \"%.32s\";\n", sampler);
	char u[37];
	uuid_str(uuid, u);
	/* CTF wants offset_s + offset (ns, in [0, 1e9)); floor division so a
	 * negative offset still gives a non-negative ns part. */
	int64_t off_s = offset_ns / 1000000000;
	int64_t off_ns = offset_ns % 1000000000;
	if (off_ns < 0) {
		off_ns += 1000000000;
		off_s -= 1;
	}
	char *text = NULL;
	int n = asprintf(&text,
		"/* CTF 1.8 */\n"
		"/* stackcap trace, format version %d: docs/trace-format.md */\n\n"
		"%s\n"
		"trace {\n"
		"\tmajor = 1;\n"
		"\tminor = 8;\n"
		"\tuuid = \"%s\";\n"
		"\tbyte_order = le;\n"
		"\tpacket.header := struct {\n"
		"\t\tuint32_t magic;\n"
		"\t\tuint8_t uuid[16];\n"
		"\t\tuint32_t stream_id;\n"
		"\t\tuint64_t stream_instance_id;\n"
		"\t};\n"
		"};\n\n"
		"env {\n"
		"\tstackcap_trace_version = %d;\n"
		"\ttracer_name = \"stackcap\";\n"
		"\ttracer_major = 0;\n"
		"\ttracer_minor = 1;\n"
		"\tstackcap_packets_whole = 1;\n"
		"%s%s"
		"};\n\n"
		"clock {\n"
		"\tname = \"monotonic\";\n"
		"\tuuid = \"%s\";\n"
		"\tdescription = \"CLOCK_MONOTONIC\";\n"
		"\tfreq = 1000000000;\n"
		"\tprecision = 1;\n"
		"\toffset_s = %lld;\n"
		"\toffset = %lld;\n"
		"\tabsolute = FALSE;\n"
		"};\n\n"
		"%s%s%s%s%s",
		version, metadata_types, u, version, sampler_line, ev_lines ? ev_lines : "", u,
		(long long)off_s, (long long)off_ns, metadata_streams,
		version >= CTF_TRACE_VERSION_RUNTIME ? metadata_runtime : "", kernel ? metadata_kernel : "",
		n_events ? metadata_events : "", off_cpu ? metadata_off_cpu : "");
	free(ev_lines);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return text;
}

/* 1: `metadata` exists and equals text; 0: absent; -EEXIST: differs. */
static int metadata_compare(int dirfd, const char *text, size_t len)
{
	int fd = openat(dirfd, "metadata", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = 1;
	size_t off = 0;
	uint8_t buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0) {
			if (off != len)
				rc = -EEXIST;
			break;
		}
		if ((size_t)n > len - off || memcmp(buf, text + off, (size_t)n)) {
			rc = -EEXIST;
			break;
		}
		off += (size_t)n;
	}
	close(fd);
	return rc;
}

/* Write metadata through a temporary file so no reader ever sees half of
 * it; link() never replaces another process's file, which we then compare. */
static int metadata_write(int dirfd, const char *text, size_t len, uint64_t *written)
{
	int rc = metadata_compare(dirfd, text, len);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	char tmp[64];
	uint32_t r;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
		r = 0;
	snprintf(tmp, sizeof tmp, ".metadata.%ld.%08x.tmp", (long)getpid(), r);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = su_write_all(fd, text, len);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc) {
		if (linkat(dirfd, tmp, dirfd, "metadata", 0) == 0) {
			*written = len;
		} else if (errno == EEXIST) {
			rc = metadata_compare(dirfd, text, len) == 1 ? 0 : -EEXIST;
		} else if (errno == EPERM || errno == EOPNOTSUPP) {
			/* No hard links here (e.g. vfat): rename, which may
			 * replace an identical file racing with us. */
			if (renameat(dirfd, tmp, dirfd, "metadata") == 0) {
				*written = len;
				return 0;
			}
			rc = -errno;
		} else {
			rc = -errno;
		}
	}
	unlinkat(dirfd, tmp, 0);
	return rc;
}

int ctf_metadata_install(int dirfd, const uint8_t uuid[16], int64_t offset_ns, int version,
			 const char *sampler, int kernel, const char *const *events, size_t n_events, int off_cpu,
			 uint64_t *written)
{
	size_t len;
	char *text = metadata_text(uuid, offset_ns, version, sampler, kernel, events, n_events, off_cpu, &len);
	if (!text)
		return -ENOMEM;
	*written = 0;
	int rc = metadata_write(dirfd, text, len, written);
	free(text);
	return rc;
}
