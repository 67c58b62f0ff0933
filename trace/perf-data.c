/* Reading a perf.data file (file mode, this machine's byte order) into the
 * trace model (docs/perf-data.md): the file's header, its attributes and
 * feature sections, and the entry points.  The records of the data section
 * are read by perf-stream.c, decoded by perf-sample.c into the process
 * model of perf-procs.c (perf-data-internal.h says who holds what).
 *
 * The data section is mapped, not read: queued events are file offsets, so
 * memory holds one round of 32-byte index entries, never sample bytes. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "trace/kallsyms.h"
#include "trace/perf-data-internal.h"

static void set_err(struct pr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct pr *r, const char *fmt, ...)
{
	va_list ap;
	if (!r->err || !r->errlen || r->err[0])
		return;
	int n = snprintf(r->err, r->errlen, "%s: ", r->name);
	if (n < 0 || (size_t)n >= r->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* ---- header, attributes, features ------------------------------------------------ */

/* By id, then attribute (a stable order for equal ids). */
static int id_cmp(const void *a, const void *b)
{
	const struct id_attr *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->attr > y->attr) - (x->attr < y->attr);
}

/* SAMPLE_TYPE spelled as perf report --header does (IP|TID|TIME|...). */
static void sample_type_name(uint64_t t, char *buf, size_t len)
{
	static const char *const names[] = {
		"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD",
		"STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT",
		"DATA_SRC", "IDENTIFIER", "TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX",
		"CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT",
	};
	size_t n = 0;
	buf[0] = 0;
	for (unsigned b = 0; b < 64 && n < len; b++) {
		if (!(t >> b & 1))
			continue;
		int const k = b < sizeof(names) / sizeof(names[0])
				      ? snprintf(buf + n, len - n, "%s%s", n ? "|" : "", names[b])
				      : snprintf(buf + n, len - n, "%sbit%u", n ? "|" : "", b);
		if (k < 0)
			return;
		n += (size_t)k;
	}
}

/* Whether samples of A carry what unwinding needs: the user registers
 * (rip and rsp among them) and a copy of the user stack; or the user call
 * chain the kernel walked (perf record -g). */
static int attr_unwindable(const struct attr *a)
{
	if ((a->sample_type & S_CALLCHAIN) && !(a->flags & ATTR_EXCLUDE_CALLCHAIN_USER) &&
	    !((a->sample_type & S_REGS_USER) && (a->sample_type & S_STACK_USER)))
		return 1;
	if (!(a->sample_type & S_REGS_USER) || !(a->sample_type & S_STACK_USER))
		return 0;
	uint32_t const need = 1u << STACKCAP_REG_RIP | 1u << STACKCAP_REG_RSP;
	return (a->used_mask & need) == need;
}

/* PERF_REG_X86_* -> ours (STACKCAP_REG_*); -1: not an unwinding register. */
static const int8_t perf_reg_to_ours[24] = {
	STACKCAP_REG_RAX, STACKCAP_REG_RBX, STACKCAP_REG_RCX, STACKCAP_REG_RDX,
	STACKCAP_REG_RSI, STACKCAP_REG_RDI, STACKCAP_REG_RBP, STACKCAP_REG_RSP,
	STACKCAP_REG_RIP, -1 /* flags */, -1 /* cs */, -1 /* ss */,
	-1, -1, -1, -1 /* ds es fs gs */,
	STACKCAP_REG_R8, STACKCAP_REG_R9, STACKCAP_REG_R10, STACKCAP_REG_R11,
	STACKCAP_REG_R12, STACKCAP_REG_R13, STACKCAP_REG_R14, STACKCAP_REG_R15,
};

/* What perf record --call-graph dwarf asks of an x86-64 kernel: all of
 * PERF_REG_X86_* below 24 but ds, es, fs and gs (perf's PERF_REGS_MASK). */
#define PERF_REGS_DWARF_X86_64 0xff0fffull

/* One perf_event_attr (AVAIL bytes at E: its own size field may say less). */
void perf_attr_parse(struct attr *a, const uint8_t *e, size_t avail)
{
	uint8_t raw[256] = { 0 };
	uint32_t const asz = su_ld32(e + 4);
	size_t const n = asz && asz < avail ? asz : avail;
	memcpy(raw, e, n < sizeof(raw) ? n : sizeof(raw));
	a->type = su_ld32(raw);
	a->period_or_freq = su_ld64(raw + 16);
	a->sample_type = su_ld64(raw + 24);
	a->read_format = su_ld64(raw + 32);
	a->flags = su_ld64(raw + 40);
	a->branch_sample_type = su_ld64(raw + 72);
	a->sample_regs_user = su_ld64(raw + 80);
	a->sample_stack_user = su_ld32(raw + 88);
	a->sample_max_stack = (uint16_t)(su_ld32(raw + 108) & 0xffff);
	a->nregs = a->n_used = 0;
	a->used_mask = 0;
	for (unsigned b = 0; b < 64; b++)
		if (a->sample_regs_user >> b & 1) {
			int8_t const o = b < 24 ? perf_reg_to_ours[b] : -1;
			if (o >= 0) { /* at most 24: one per bit below 24 */
				a->used_at[a->n_used] = (uint8_t)a->nregs;
				a->used_reg[a->n_used++] = (uint8_t)o;
				a->used_mask |= 1u << o;
			}
			a->nregs++;
		}
	a->regs_dwarf = a->sample_regs_user == PERF_REGS_DWARF_X86_64;
}

/* Where a sample's id sits, from the first attr (perf requires them equal). */
void perf_id_positions(struct pr *r)
{
	uint64_t const t = r->attrs[0].sample_type;
	r->id_pos = t & S_IDENTIFIER ? 0 : t & S_ID ? !!(t & S_IP) + !!(t & S_TID) + !!(t & S_TIME) + !!(t & S_ADDR) : -1;
	r->id_from_end = t & S_IDENTIFIER ? 1 : t & S_ID ? 1 + !!(t & S_CPU) + !!(t & S_STREAM_ID) : 0;
}

static int attrs_check(struct pr *r);

static int read_attrs(struct pr *r, uint64_t attr_size, uint64_t off, uint64_t size)
{
	if (attr_size < 64 + 16 || attr_size > 4096 || size % attr_size || size / attr_size == 0 ||
	    size / attr_size > 4096 || off > r->file_size || size > r->file_size - off) {
		set_err(r, "bad attribute section (entry size %" PRIu64 ", %" PRIu64 " bytes at %" PRIu64 ")",
			attr_size, size, off);
		return -EINVAL;
	}
	r->n_attrs = size / attr_size;
	r->attrs = calloc(r->n_attrs, sizeof(*r->attrs));
	if (!r->attrs)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_attrs; i++) {
		const uint8_t *e = r->map + off + i * attr_size;
		perf_attr_parse(&r->attrs[i], e, attr_size - 16);
		/* The ids of this attr's events (one per cpu or thread). */
		uint64_t const ids_off = su_ld64(e + attr_size - 16), ids_size = su_ld64(e + attr_size - 8);
		if (ids_size % 8 || ids_off > r->file_size || ids_size > r->file_size - ids_off) {
			set_err(r, "attribute %zu: bad id section (%" PRIu64 " bytes at %" PRIu64 ")",
				i, ids_size, ids_off);
			return -EINVAL;
		}
		size_t const nid = ids_size / 8;
		/* Attributes may share an id section; all of them together
		 * still hold no more ids than the file has words. */
		if (r->n_ids + nid > r->file_size / 8) {
			set_err(r, "attribute %zu: more event ids than the file holds (id sections overlap)", i);
			return -EINVAL;
		}
		if (su_grow((void **)&r->ids, &r->cap_ids, r->n_ids + nid + 1, sizeof(*r->ids)))
			return -ENOMEM;
		for (size_t k = 0; k < nid; k++) {
			r->ids[r->n_ids].id = su_ld64(r->map + ids_off + 8 * k);
			r->ids[r->n_ids].attr = i;
			r->n_ids++;
		}
	}
	return attrs_check(r);
}

/* Once every attribute is known: ids sorted for lookup, where a sample's
 * id sits, and whether anything can be unwound.  @return 0 or -EINVAL
 * (a message in R's error). */
static int attrs_check(struct pr *r)
{
	if (r->n_ids)
		qsort(r->ids, r->n_ids, sizeof(*r->ids), id_cmp);
	perf_id_positions(r);
	if (r->n_attrs > 1 && r->id_pos < 0) {
		set_err(r, "%zu events without sample ids: cannot tell their samples apart", r->n_attrs);
		return -EINVAL;
	}
	/* A recording without --call-graph dwarf has nothing to unwind: say
	 * so and how to record, rather than read zero samples. */
	size_t i = 0;
	while (i < r->n_attrs && !attr_unwindable(&r->attrs[i]))
		i++;
	if (i == r->n_attrs) {
		char types[256];
		sample_type_name(r->attrs[0].sample_type, types, sizeof(types));
		set_err(r, "recorded without call graphs: its samples hold %s, no user registers and stack "
			   "to unwind, no user call chain; record with `perf record --call-graph dwarf` (or -g)",
			types);
		return -EINVAL;
	}
	return 0;
}

/* HEADER_BUILD_ID: (header, pid, build_id[24], filename) records. */
static void read_build_ids(struct pr *r, const uint8_t *p, uint64_t size)
{
	uint64_t off = 0;
	while (size - off >= 8 + 4 + 24) {
		uint16_t const misc = su_ld16(p + off + 4), len = su_ld16(p + off + 6);
		if (len < 8 + 4 + 24 + 1 || len > size - off) {
			su_reader_warn(r->warn, "%s: damaged build-id table: the rest is ignored", r->name);
			return;
		}
		const uint8_t *id = p + off + 12;
		size_t idlen = 20;
		if (misc & MISC_BUILD_ID_SIZE)
			idlen = id[20] <= 20 ? id[20] : 20;
		const char *fname = (const char *)p + off + 36;
		size_t const flen = strnlen(fname, len - 36);
		struct path_info *pi = perf_intern(r, fname, flen);
		if (pi && idlen && !pi->table_id_len) {
			pi->table_id_len = (uint8_t)idlen;
			memcpy(pi->table_id, id, idlen);
		}
		off += len;
	}
}

/* HEADER_EVENT_DESC: u32 nr, u32 attr_size, then per event its attr, u32
 * nr_ids, a perf_header_string (u32 len, len bytes, NUL-padded) and its
 * ids.  Each attribute of the file gets its event's name (perf's evsel
 * name: what `perf script -F event` prints), found by its ids, else by
 * its position.  A file of one event named cpu-clock (perf's dummy events
 * aside) keeps none: that is
 * what a sample without a name is (su_sample_event), as in a stackcap
 * trace recorded without -e. */
static void read_event_desc(struct pr *r, const uint8_t *p, uint64_t size)
{
	if (size < 8)
		return;
	uint32_t const nr = su_ld32(p), asz = su_ld32(p + 4);
	uint64_t off = 8;
	for (uint32_t i = 0; i < nr; i++) {
		if (asz > size - off || size - off - asz < 8)
			goto damaged;
		off += asz;
		uint32_t const nid = su_ld32(p + off), slen = su_ld32(p + off + 4);
		off += 8;
		if (slen > size - off || (uint64_t)nid * 8 > size - off - slen)
			goto damaged;
		const char *str = (const char *)p + off;
		size_t const len = strnlen(str, slen);
		off += slen;
		const struct attr *at = nid ? perf_attr_of_id(r, su_ld64(p + off)) : NULL;
		long a = at ? at - r->attrs : -1;
		off += (uint64_t)nid * 8;
		if (a < 0 && i < r->n_attrs)
			a = (long)i;
		if (a < 0 || r->attrs[a].desc_name || !len)
			continue;
		if (!(r->attrs[a].desc_name = strndup(str, len)))
			return;
		/* Printable names only: bytes outside ASCII's printable range as '_'. */
		for (char *c = r->attrs[a].desc_name; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
				*c = '_';
		r->attrs[a].name = r->attrs[a].desc_name;
	}
	/* perf's own tracking events (`dummy:HG` of perf record -a) take no
	 * samples: they do not count. */
	size_t named = 0, cpu = 0;
	for (size_t i = 0; i < r->n_attrs; i++)
		if (!r->attrs[i].name || strncmp(r->attrs[i].name, "dummy:", 6)) {
			named++;
			cpu = i;
		}
	if (named == 1 && r->attrs[cpu].name && !strcmp(r->attrs[cpu].name, "cpu-clock"))
		r->attrs[cpu].name = NULL;
	return;
damaged:
	su_reader_warn(r->warn, "%s: damaged event descriptions: the rest of the events are unnamed", r->name);
}

/* Feature FEAT's SIZE bytes at P: a file's feature section, or a pipe's
 * HEADER_FEATURE record. */
static void read_feature(struct pr *r, unsigned feat, const uint8_t *p, uint64_t size)
{
	if (feat == FEAT_BUILD_ID) {
		read_build_ids(r, p, size);
	} else if (feat == FEAT_OSRELEASE && size >= 4) {
		uint32_t const slen = su_ld32(p);
		if (slen <= size - 4)
			snprintf(r->osrelease, sizeof(r->osrelease), "%.*s", (int)strnlen((const char *)p + 4, slen),
				 (const char *)p + 4);
	} else if (feat == FEAT_EVENT_DESC) {
		read_event_desc(r, p, size);
	} else if (feat == FEAT_DIR_FORMAT) {
		r->dir_format = 1;
	}
	/* FEAT_COMPRESSED: checked when a compressed record is met. */
}

static int read_features(struct pr *r, const uint8_t *bits)
{
	uint64_t const sec = r->data_off + r->data_size;
	unsigned n = 0;
	for (unsigned feat = 0; feat < 256; feat++) {
		if (!(bits[feat / 8] >> (feat % 8) & 1))
			continue;
		uint64_t const at = sec + 16u * n++;
		if (at > r->file_size || r->file_size - at < 16) {
			su_reader_warn(r->warn, "%s: feature sections cut short: build-ids and the rest are ignored", r->name);
			return 1;
		}
		uint64_t const off = su_ld64(r->map + at), size = su_ld64(r->map + at + 8);
		if (off > r->file_size || size > r->file_size - off) {
			su_reader_warn(r->warn, "%s: feature %u points outside the file: ignored", r->name, feat);
			continue;
		}
		read_feature(r, feat, r->map + off, size);
	}
	return 0;
}

/* ---- pipe mode (perf record -o -): the header as records ------------------------- */

int perf_pipe_header(struct pr *r, const uint8_t *rec, size_t len)
{
	switch (su_ld32(rec)) {
	case R_HEADER_ATTR: {
		/* The attr (its own size field says how long), then the ids of
		 * its events. */
		uint32_t const asz = len >= 16 ? su_ld32(rec + 12) : 0;
		if (asz < 64 || asz > len - 8 || (len - 8 - asz) % 8) {
			set_err(r, "damaged event attribute record (%zu bytes, attr size %u)", len, asz);
			return -EINVAL;
		}
		if (r->attrs_done) {
			su_reader_warn(r->warn, "%s: an event attribute after the records it describes: ignored", r->name);
			return 1;
		}
		if (r->n_attrs >= 4096) {
			set_err(r, "more than 4096 event attributes");
			return -EINVAL;
		}
		size_t const nid = (len - 8 - asz) / 8;
		struct attr *na = realloc(r->attrs, (r->n_attrs + 1) * sizeof(*na));
		if (!na)
			return -ENOMEM;
		r->attrs = na;
		memset(&na[r->n_attrs], 0, sizeof(*na));
		perf_attr_parse(&na[r->n_attrs], rec + 8, asz);
		if (su_grow((void **)&r->ids, &r->cap_ids, r->n_ids + nid + 1, sizeof(*r->ids)))
			return -ENOMEM;
		for (size_t k = 0; k < nid; k++)
			r->ids[r->n_ids++] = (struct id_attr){ .id = su_ld64(rec + 8 + asz + 8 * k), .attr = r->n_attrs };
		r->n_attrs++;
		return 1;
	}
	case R_HEADER_FEATURE:
		if (len >= 16 && su_ld64(rec + 8) < 256)
			read_feature(r, (unsigned)su_ld64(rec + 8), rec + 16, len - 16);
		return 1;
	case R_HEADER_BUILD_ID: /* one entry of a file's table, as a record */
		read_build_ids(r, rec, len);
		return 1;
	}
	return 0;
}

int perf_pipe_attrs_done(struct pr *r)
{
	r->attrs_done = 1;
	if (!r->n_attrs) {
		set_err(r, "no event attribute before the first record (HEADER_ATTR): not a stream of perf record -o -");
		return -EINVAL;
	}
	return attrs_check(r);
}

static void free_chunks(struct chunk *c)
{
	while (c) {
		struct chunk *const next = c->next;
		free(c);
		c = next;
	}
}

void perf_pr_free(struct pr *r)
{
	for (size_t i = 0; i < r->n_procs; i++) {
		free(r->procs[i]->p.comm);
		free(r->procs[i]->p.exe);
		free(r->procs[i]->m);
		free(r->procs[i]->gen_at);
		su_mem_ranges_free(&r->procs[i]->mem);
		free(r->procs[i]);
	}
	free(r->procs);
	free(r->live);
	for (size_t i = 0; i < r->n_gens; i++)
		perf_maps_free(r->gens[i]);
	free(r->gens);
	for (size_t i = 0; i < r->cap_paths; i++)
		if (r->paths[i]) {
			free(r->paths[i]->path);
			free(r->paths[i]);
		}
	free(r->paths);
	for (size_t i = 0; r->attrs && i < r->n_attrs; i++)
		free(r->attrs[i].desc_name);
	free(r->attrs);
	free(r->ids);
	free(r->q);
	free(r->q_merge);
	free(r->scratch[0]);
	free(r->scratch[1]);
	free_chunks(r->chunks);
	free_chunks(r->spare);
	perf_zstream_free(&r->z);
	su_kernel_free(r->kernel_ahead); /* never needed: waits for its read */
	su_kernel_free(r->kernel);
}

/* A regular file at PATH that starts with perf's magic. */
static int probe_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	struct stat sb;
	uint64_t magic = 0;
	int ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		 pread(fd, &magic, 8, 0) == 8 && (magic == PERF_MAGIC2 || magic == PERF_MAGIC2_SWAPPED);
	close(fd);
	return ok;
}

int su_perf_data_probe(const char *path)
{
	struct stat ds;
	if (stat(path, &ds) == 0 && S_ISDIR(ds.st_mode)) { /* perf record --threads */
		char *data;
		if (asprintf(&data, "%s/data", path) < 0)
			return 0;
		int const ok = probe_file(data);
		free(data);
		return ok;
	}
	return probe_file(path);
}

/* ---- perf record --threads: a directory, DIR/data and DIR/data.N ---------------------- */

static int dir_file_cmp(const void *a, const void *b)
{
	unsigned const x = ((const struct perf_dir_file *)a)->n, y = ((const struct perf_dir_file *)b)->n;
	return (x > y) - (x < y);
}

/* DIR's data.N files (N a number), in number order, into *FILES (paths
 * malloc'ed, not mapped yet).  @return how many, or -errno. */
static long dir_files(const char *dir, struct perf_dir_file **files)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	size_t n = 0, cap = 0;
	struct perf_dir_file *f = NULL;
	struct dirent *e;
	long rc = 0;
	while ((e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, "data.", 5) || !isdigit((unsigned char)e->d_name[5]))
			continue;
		unsigned long const k = strtoul(e->d_name + 5, &end, 10);
		if (*end || k > UINT32_MAX)
			continue;
		if (SU_GROW(f, cap, n + 1) || asprintf(&f[n].path, "%s/%s", dir, e->d_name) < 0) {
			rc = -ENOMEM;
			break;
		}
		f[n].n = (unsigned)k;
		f[n].map = NULL;
		f[n].size = 0;
		n++;
	}
	closedir(d);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			free(f[i].path);
		free(f);
		return rc;
	}
	if (n)
		qsort(f, n, sizeof(*f), dir_file_cmp);
	*files = f;
	return (long)n;
}

/* After DIR/data's data section: each data.N mapped, then merged
 * (perf_run_dir).  The files stay mapped until the consumer is done:
 * queued events and held words point into them.  A file that cannot be
 * read is warned of, and the others read. */
static void read_dir_files(struct pr *r, struct perf_dir_file *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int const fd = su_open_regular(f[i].path, O_NOFOLLOW);
		struct stat sb;
		if (fd < 0 || fstat(fd, &sb)) {
			su_reader_warn(r->warn, "%s: %s: its events are missing", f[i].path, strerror(errno));
			r->malformed = 1;
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (sb.st_size > 0) {
			void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (m == MAP_FAILED) {
				su_reader_warn(r->warn, "%s: cannot map it (%s): its events are missing", f[i].path,
					       strerror(errno));
				r->malformed = 1;
			} else {
				madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
				f[i].map = m;
				f[i].size = (uint64_t)sb.st_size;
			}
		}
		close(fd);
	}
	perf_run_dir(r, f, n);
	r->st->bytes_on_disk = r->read_base;
}

/* The build-ids of the user-space files of the build-id table (those
 * perf record saw samples in) to the consumer (su_reader_callbacks
 * hit_files).  @return its return. */
static int hit_files(struct pr *r)
{
	uint8_t (*ids)[SU_BUILD_ID_MAX] = NULL;
	uint8_t *lens = NULL;
	size_t n = 0, cap_ids = 0, cap_lens = 0;
	for (size_t i = 0; i < r->cap_paths; i++) {
		const struct path_info *pi = r->paths[i];
		if (!pi || !pi->table_id_len || pi->path[0] != '/')
			continue; /* [kernel.kallsyms], [vdso], ... */
		if (SU_GROW(ids, cap_ids, n + 1) || SU_GROW(lens, cap_lens, n + 1))
			break; /* only a hint: what fits */
		memcpy(ids[n], pi->table_id, pi->table_id_len);
		lens[n++] = pi->table_id_len;
	}
	int const rc = n ? r->cb->hit_files(r->cb->arg, (const uint8_t (*)[SU_BUILD_ID_MAX])ids, lens, n) : 0;
	free(ids);
	free(lens);
	return rc;
}

/* FD's R->file_size bytes mapped read-only (*MAP, *SIZE for the unmap,
 * R->map).  @return 0, or -errno with a message. */
static int map_file(struct pr *r, int fd, void **map, uint64_t *size)
{
	void *const m = mmap(NULL, r->file_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		int const e = errno;
		set_err(r, "cannot map the file: %s", strerror(e));
		return -e;
	}
	*map = m;
	*size = r->file_size;
	r->map = m;
	return 0;
}

/* R's mapping (the whole file) read front to back, once. */
static void map_hints(struct pr *r, const struct su_reader_opts *opts)
{
	void *const map = (void *)(uintptr_t)r->map;
	madvise(map, r->file_size, MADV_SEQUENTIAL);
	/* Pages read from disk come in 2 MB folios, each mapped by one page
	 * table entry: 1.5 us a megabyte against 45-60 for single pages, in
	 * this run and the next ones, while the page cache keeps them
	 * (perf-ahead.h).  Only a hint: ignored where THP is off. */
	madvise(map, r->file_size, MADV_HUGEPAGE);
	/* Another core maps the pages ahead, when the consumer has cores to
	 * spare and the file enough pages to map (perf-ahead.h). */
	if (opts && opts->map_ahead && r->data_size >= (4u << 20))
		r->ahead = perf_ahead_start(r->map, r->file_size, r->data_off);
}

static int read_fd(int fd, const char *name, const char *dir, const struct su_reader_opts *opts,
		   const struct su_reader_callbacks *cb, struct su_reader_stats *stats, char *err, size_t errlen)
{
	struct pr r = { .opts = opts, .cb = cb, .st = stats, .err = err, .errlen = errlen, .name = name,
			.warn = opts ? &opts->warn : NULL };
	int rc = 0, ended = 0;
	void *map = MAP_FAILED;
	uint64_t map_size = 0;
	struct perf_dir_file *files = NULL;
	long n_files = 0;
	struct stat sb;

	if (err && errlen)
		err[0] = 0;
	memset(stats, 0, sizeof(*stats));
	if (fstat(fd, &sb)) {
		set_err(&r, "%s", strerror(errno));
		return -errno;
	}
	/* A pipe (perf record -o - | stackunwind folded -) is read once,
	 * front to back: pipe mode only. */
	int const regular = S_ISREG(sb.st_mode);
	r.file_size = regular ? (uint64_t)sb.st_size : 0;
	stats->bytes_on_disk = r.file_size;
	uint8_t hdr[FILE_HEADER_SIZE];
	ssize_t const got = su_read_full(fd, hdr, 16, regular ? 0 : -1);
	if (got != 16) {
		if (got < 0) {
			set_err(&r, "%s", strerror((int)-got));
			return (int)got;
		}
		set_err(&r, "not a perf.data %s (%" PRIu64 " bytes)", regular ? "file" : "stream",
			regular ? r.file_size : (uint64_t)got);
		return -EINVAL;
	}
	uint64_t const magic = su_ld64(hdr), hsize = su_ld64(hdr + 8);
	if (magic == PERF_MAGIC2_SWAPPED) {
		set_err(&r, "perf.data of the other byte order: not supported");
		return -ENOTSUP;
	}
	if (magic != PERF_MAGIC2) {
		set_err(&r, "not a perf.data file (no PERFILE2 magic)");
		return -EINVAL;
	}
	int partial = 0;
	if (hsize == PIPE_HEADER_SIZE) {
		/* perf record -o -: the header's parts come as records. */
		r.data_off = PIPE_HEADER_SIZE;
		if (regular) {
			/* Saved from a pipe (perf record -o - > FILE): mapped as a
			 * file-mode perf.data is, not read into chunks (a copy of
			 * every byte: 54 against 30 ms on 270 MB). */
			if ((rc = map_file(&r, fd, &map, &map_size)) != 0)
				return rc;
			r.data_size = r.file_size - PIPE_HEADER_SIZE;
			map_hints(&r, opts);
			rc = perf_run_pipe_map(&r);
		} else {
			rc = perf_run_pipe(&r, fd);
			stats->bytes_on_disk = stats->bytes_read; /* a stream's size: what came through */
		}
		if (rc)
			goto out;
		goto read;
	}
	if (!regular) {
		set_err(&r, "a perf.data file (not pipe mode: its header points across the whole file) is read from "
			"its path, not from a pipe");
		return -ESPIPE;
	}
	if (hsize != FILE_HEADER_SIZE || r.file_size < FILE_HEADER_SIZE) {
		set_err(&r, "bad perf.data header (size %" PRIu64 ", expected %u)", hsize, FILE_HEADER_SIZE);
		return -EINVAL;
	}
	if ((rc = map_file(&r, fd, &map, &map_size)) != 0)
		return rc;
	memcpy(hdr, r.map, FILE_HEADER_SIZE);
	uint64_t const attr_size = su_ld64(hdr + 16);
	r.data_off = su_ld64(hdr + 40);
	r.data_size = su_ld64(hdr + 48);
	if (r.data_off < FILE_HEADER_SIZE || r.data_off > r.file_size || (r.data_off & 7)) {
		set_err(&r, "bad data section offset %" PRIu64, r.data_off);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = read_attrs(&r, attr_size, su_ld64(hdr + 24), su_ld64(hdr + 32))) != 0)
		goto out;
	if (r.data_size == 0 && r.file_size > r.data_off) {
		su_reader_warn(r.warn, "%s: data size is 0 (perf record did not finish?): reading to the end of the file",
			       name);
		r.data_size = r.file_size - r.data_off;
		partial = 1;
	} else if (r.data_size > r.file_size - r.data_off) {
		su_reader_warn(r.warn, "%s: data section cut short (%" PRIu64 " of %" PRIu64 " bytes): reading what is there",
			       name, r.file_size - r.data_off, r.data_size);
		r.data_size = r.file_size - r.data_off;
		partial = 1;
	} else {
		partial |= read_features(&r, hdr + 72);
	}
	map_hints(&r, opts);
	/* With a core to spare, as for the pages: kallsyms read meanwhile. */
	if (opts && opts->map_ahead && !opts->user_only)
		perf_kernel_syms_ahead(&r);
	if (cb->hit_files && (rc = hit_files(&r)) != 0)
		goto out;
	/* perf record --threads: the events are in DIR/data.N (also when
	 * perf was killed before writing the features that say so). */
	if (dir) {
		n_files = dir_files(dir, &files);
		if (n_files < 0) {
			rc = (int)n_files;
			set_err(&r, "its data.N files cannot be listed: %s", strerror(-rc));
			goto out;
		}
		r.dir_mode = n_files > 0 || r.dir_format;
	}
	perf_run_data(&r);
	if (r.dir_mode)
		read_dir_files(&r, files, (size_t)n_files);
read:
	if (r.cb_rc) {
		rc = r.cb_rc;
		goto out;
	}
	ended = 1;
	if (cb->end)
		rc = cb->end(cb->arg);
	perf_kernel_syms_end(&r); /* the lookups are done: did the kernel's symbols come? */
	if (r.cb_rc == -ENOMEM && rc >= 0) {
		set_err(&r, "out of memory reading this machine's kernel symbols");
		rc = -ENOMEM;
		goto out;
	}
	stats->bad_blobs = r.bad_samples + r.unknown_ids;
	if (r.bad_samples)
		su_reader_warn(r.warn, "%s: %" PRIu64 " damaged records skipped", name, r.bad_samples);
	if (r.unknown_ids)
		su_reader_warn(r.warn, "%s: %" PRIu64 " samples of an unknown event id skipped", name, r.unknown_ids);
	if (r.compat_regs)
		su_reader_warn(r.warn, "%s: %" PRIu64 " samples of 32-bit tasks not unwound (no-user)", name, r.compat_regs);
	stats->truncated_files = r.malformed || partial;
	if (!rc && (stats->truncated_files || stats->bad_blobs))
		rc = 1;
out:
	if (!ended && cb->stop)
		cb->stop(cb->arg);
	/* Every lookup is done: was the kept copy of kallsyms damaged? */
	const char *kpath = NULL;
	int const damaged = su_kallsyms_cache_damaged(r.kernel, &kpath);
	if (damaged == 1)
		su_reader_warn(r.warn, "%s: the kept copy of this machine's kernel symbols (%s) is damaged where frames "
			       "were looked up: they were named from /proc/kallsyms, and a good copy kept", name, kpath);
	else if (damaged)
		su_reader_warn(r.warn, "%s: kernel frames not named: the kept copy of this machine's kernel symbols (%s) is "
			       "damaged where they were looked up, and /proc/kallsyms is not readable; the copy is deleted",
			       name, kpath);
	/* The consumer let go of every sample (cb->end or cb->stop). */
	perf_ahead_stop(r.ahead);
	r.ahead = NULL;
	if (map != MAP_FAILED)
		munmap(map, map_size);
	for (long i = 0; i < n_files; i++) {
		if (files[i].map)
			munmap((void *)(uintptr_t)files[i].map, files[i].size);
		free(files[i].path);
	}
	free(files);
	perf_pr_free(&r);
	return rc;
}

int su_perf_data_read_fd(int fd, const char *name, const struct su_reader_opts *opts,
			 const struct su_reader_callbacks *cb,
			 struct su_reader_stats *stats, char *err, size_t errlen)
{
	return read_fd(fd, name, NULL, opts, cb, stats, err, errlen);
}

int su_perf_data_read(const char *path, const struct su_reader_opts *opts,
		      const struct su_reader_callbacks *cb,
		      struct su_reader_stats *stats, char *err, size_t errlen)
{
	/* "-": standard input, a stream of perf record -o - (its own copy of
	 * the descriptor, closed after); a directory: perf record --threads,
	 * its header in DIR/data. */
	int const in = !strcmp(path, "-");
	struct stat ds;
	int const is_dir = !in && stat(path, &ds) == 0 && S_ISDIR(ds.st_mode);
	char *data = NULL;
	if (is_dir && asprintf(&data, "%s/data", path) < 0)
		return -ENOMEM;
	int fd = in ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)
		    : open(is_dir ? data : path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	free(data);
	if (fd < 0) {
		int const e = errno;
		memset(stats, 0, sizeof(*stats));
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	/* A pipe of 64 KB (Linux's default) moved 1 GB/s here, a switch
	 * between writer and reader each 64 KB: asked for 1 MB (the default
	 * limit, /proc/sys/fs/pipe-max-size), fewer switches.  Only a hint. */
	struct stat sb;
	if (in && fstat(fd, &sb) == 0 && S_ISFIFO(sb.st_mode))
		(void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
	int rc = read_fd(fd, in ? "standard input" : path, is_dir ? path : NULL, opts, cb, stats, err, errlen);
	close(fd);
	return rc;
}
