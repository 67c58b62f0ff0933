/* SPDX-License-Identifier: MIT */
/*
 * events.h: what `stackcap record -e EVENT` samples on, as perf events.
 *
 *   cpu-clock (the default), task-clock, page-faults, context-switches,
 *   ... (software counters: -F HZ, or -c N events per sample);
 *   SYS:NAME                a tracepoint (its id from tracefs): a stack per hit;
 *   BINARY:FUNCTION         a uprobe at FUNCTION's entry (its file offset
 *                           from the ELF symbol tables), made through the
 *                           uprobe PMU: no tracefs writes; BINARY a path,
 *                           a program in $PATH, or a library the command
 *                           loads (DT_NEEDED, breadth first) by file name
 *                           or stem ("libc");
 *   sdt:PROVIDER:NAME       an SDT marker (<sys/sdt.h>, .note.stapsdt) of
 *   sdt:BINARY:PROVIDER:NAME  the command and the libraries it loads, the
 *                           attached processes' files, or BINARY: a
 *                           uprobe at each of its sites, its
 *                           semaphore raised by the kernel (ref_ctr_offset).
 *
 *   NAME:u, NAME:k          a software event in user (kernel) mode only;
 *   NAME/period=N/, NAME/freq=HZ/  its own sampling period or frequency
 *                           (software events and tracepoints; modifiers
 *                           may follow: NAME/period=N/u).
 *
 * An event may need several perf events (an SDT marker at several sites):
 * each is a "site" of the event, all named alike in the trace.
 */
#ifndef STACKCAP_RECORD_EVENTS_H
#define STACKCAP_RECORD_EVENTS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

enum rec_event_kind { REC_EV_SOFTWARE, REC_EV_TRACEPOINT, REC_EV_UPROBE, REC_EV_SDT };

struct rec_event {
	char *name;             /* as the trace stores it (the spelling given, printable) */
	enum rec_event_kind kind;
	uint32_t type;          /* perf_event_attr.type */
	uint64_t config;
	char *path;             /* uprobe, SDT: the file (config1 points here) */
	uint64_t *offsets;      /* uprobe, SDT: file offsets of the sites */
	uint64_t *ref_ctr;      /* SDT: each site's semaphore (file offset, 0: none) */
	size_t n_sites;         /* 1 but for uprobes and SDT markers */
	/* perf's spellings: NAME/period=N/, NAME/freq=HZ/ (over -c, -F);
	 * NAME:u (user mode only), NAME:k (kernel mode only). */
	uint64_t period;
	uint32_t freq;
	int exclude_user, exclude_kernel;
};

/* Parse SPEC into E.  BINARIES (N of them) are where an SDT marker named
 * without its binary, or a library named without its path, is looked for
 * (the command, the attached processes' executables and libraries; and
 * the libraries each of them loads).  @return 0, or -1 with ERR saying which
 * event and why (unknown name, no such tracepoint, tracefs not readable,
 * no such function or marker, no uprobe PMU). */
int rec_event_parse(const char *spec, const char *const *binaries, size_t n, struct rec_event *e, char *err,
		    size_t errlen);

/* The attr of site SITE of E: BASE (the sampler's: sample type, stack
 * window, ...) with E's type and config; a software event sampled at FREQ
 * Hz, or every PERIOD events when PERIOD is not 0; a tracepoint, uprobe
 * or marker at every hit (or every PERIOD-th). */
void rec_event_attr(const struct rec_event *e, size_t site, const struct perf_event_attr *base, uint32_t freq,
		    uint64_t period, struct perf_event_attr *out);

/* The event fires in kernel mode (a tracepoint, a context switch):
 * exclude_kernel would lose every hit. */
int rec_event_in_kernel(const struct rec_event *e);

void rec_event_free(struct rec_event *e);

/* BIN as a file to probe: as given when it holds a '/' or names a file
 * here, else found in $PATH.  malloc'd absolute path, or NULL. */
char *rec_resolve_binary(const char *bin);

/* Is BIN (a path, or a name found in $PATH) a 64-bit ELF program with no
 * interpreter: statically linked, so ld.so loads nothing into it (nor
 * LD_PRELOAD's libraries)? */
int rec_binary_is_static(const char *bin);

/* The software events by name, for the usage text. */
extern const char rec_software_event_names[];

#endif
