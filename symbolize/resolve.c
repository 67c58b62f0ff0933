/* Resolving frames (resolve.h): the module of each maps entry, cached;
 * symbols, else a JIT's name, else module+offset; every string made safe
 * to print once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"
#include "symbolize/resolve.h"
#include "symbolize/perfmap.h"
#include "symbolize/pyline.h"

#define ENTRY_SLOTS 512

/* An escaped string, by the content of its original. */
struct escaped {
	char *orig;
	char *text;
};

struct su_resolver {
	struct su_modcache *modules;
	unsigned sym_flags;          /* su_symbolize_flags' */
	struct su_perfmaps *perfmaps;
	/* The module of a maps entry, by entry address: maps live until the
	 * reader's end callback, so an address never names another entry. */
	struct {
		const struct su_map_entry *e;
		struct su_module *m;
		const char *name;        /* the entry's module name, safe */
	} emod[ENTRY_SLOTS];
	struct escaped *esc;         /* each text escaped so far */
	size_t n_esc, cap_esc;
	struct su_hmap esc_map;      /* original text -> its entry in ESC */
	/* The last comm asked for (LAST_COMM_LEN 0: none) and its safe text
	 * (NULL: itself): a thread's samples come in runs, and checking each
	 * sample's comm for bytes to escape was 2.6% of stackunwind stacks.
	 * By content: a comm changed in place or at a reused address is
	 * checked anew. */
	char last_comm[64];
	size_t last_comm_len;
	const char *last_comm_safe;
	struct su_symframe sym[SU_RESOLVE_MAX_SYM];
};

struct su_resolver *su_resolver_new(struct su_modcache *modules, const char *symfs, const char *jit_dir)
{
	struct su_resolver *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->modules = modules;
	r->perfmaps = su_perfmaps_new(symfs, jit_dir);
	if (!r->perfmaps) {
		free(r);
		return NULL;
	}
	su_modcache_set_finalizers(modules, NULL, su_symbolize_cache_free);
	su_modcache_set_savers(modules, NULL, su_symbolize_cache_save);
	return r;
}

void su_resolver_names_only(struct su_resolver *r)
{
	r->sym_flags |= SU_SYMBOLIZE_NAMES_ONLY;
}

void su_resolver_free(struct su_resolver *r)
{
	if (!r)
		return;
	su_perfmaps_free(r->perfmaps);
	for (size_t i = 0; i < r->n_esc; i++) {
		free(r->esc[i].orig);
		free(r->esc[i].text);
	}
	free(r->esc);
	su_hmap_free(&r->esc_map);
	free(r);
}

struct esc_key {
	const struct su_resolver *r;
	const char *s;
};

static int esc_eq(const void *arg, uint32_t i)
{
	const struct esc_key *k = arg;
	return !strcmp(k->r->esc[i].orig, k->s);
}

const char *su_resolver_text(struct su_resolver *r, const char *s)
{
	if (!s || !su_text_needs_escape(s))
		return s;
	if (su_hmap_reserve(&r->esc_map) || r->n_esc >= UINT32_MAX || SU_GROW(r->esc, r->cap_esc, r->n_esc + 1))
		return NULL;
	uint64_t const hash = su_fnv1a_str(s);
	struct esc_key key = { r, s };
	size_t const slot = su_hmap_find(&r->esc_map, hash, esc_eq, &key);
	if (su_hmap_used(&r->esc_map, slot))
		return r->esc[su_hmap_value(&r->esc_map, slot)].text;
	size_t const len = su_text_escape(NULL, 0, s);
	char *orig = strdup(s), *text = malloc(len + 1);
	if (!orig || !text) {
		free(orig);
		free(text);
		return NULL;
	}
	su_text_escape(text, len + 1, s);
	r->esc[r->n_esc] = (struct escaped){ orig, text };
	su_hmap_set(&r->esc_map, slot, hash, (uint32_t)r->n_esc++);
	return text;
}

const char *su_resolver_comm(struct su_resolver *r, const struct su_process *p)
{
	const char *const s = p && p->comm && p->comm[0] ? p->comm : "[unknown]";
	if (r->last_comm_len && !strcmp(s, r->last_comm))
		return r->last_comm_safe ? r->last_comm_safe : s;
	const char *const t = su_resolver_text(r, s);
	size_t const len = strlen(s) + 1;
	r->last_comm_len = t && len <= sizeof(r->last_comm) ? len : 0;
	if (r->last_comm_len) {
		memcpy(r->last_comm, s, len);
		r->last_comm_safe = t == s ? NULL : t;
	}
	return t;
}

/* ---- frames ------------------------------------------------------------------ */

/* The module of maps entry E, and its safe name (*NAME). */
static struct su_module *entry_module(struct su_resolver *r, const struct su_map_entry *e, const char **name)
{
	size_t const slot = ((uintptr_t)e >> 4) % ENTRY_SLOTS;
	if (r->emod[slot].e == e) {
		*name = r->emod[slot].name;
		return r->emod[slot].m;
	}
	struct su_module *m = su_modcache_get(r->modules, e);
	const char *n = su_resolver_text(r, e->path[0] ? e->path : e->flags & SU_MAP_ANON ? "[anon]" : "[unknown]");
	if (!m || !n)
		return NULL;
	r->emod[slot].e = e;
	r->emod[slot].m = m;
	r->emod[slot].name = n;
	*name = n;
	return m;
}

static const struct su_map_entry *frame_entry(const struct su_maps *maps, const struct su_frame *f)
{
	return f->map >= 0 && maps && (uint64_t)f->map < maps->count ? &maps->entries[f->map] : NULL;
}

struct su_module *su_resolver_module(struct su_resolver *r, const struct su_maps *maps,
				     const struct su_frame *f, const struct su_map_entry **entry)
{
	const char *name;
	*entry = frame_entry(maps, f);
	return *entry ? entry_module(r, *entry, &name) : NULL;
}

/* An interpreter's frame (SU_FRAME_RUNTIME): its code object's name, file
 * and line from the trace's runtime_code events; an object never
 * described keeps no name (function NULL), never another's. */
static int resolve_runtime(struct su_resolver *r, const struct su_maps *maps, const struct su_frame *f,
			   struct su_resolved *out)
{
	const struct su_runtime *rt = maps ? maps->runtime : NULL;
	const struct su_rt_code *c = su_runtime_code(rt, f->pc, f->rt_fp);
	out->kind = SU_RESOLVED_PYTHON;
	out->module_name = "[python]";
	out->elf_addr = f->pc;
	out->nsym = 1;
	r->sym[0] = (struct su_symframe){ .func_offset = f->rt_pos >= 0 ? (uint64_t)f->rt_pos : 0 };
	if (!c)
		return 0;
	r->sym[0].function = su_resolver_text(r, c->name);
	r->sym[0].file = su_resolver_text(r, c->file);
	r->sym[0].decl_file = r->sym[0].file;
	r->sym[0].decl_line = c->first_line;
	if (!r->sym[0].function || !r->sym[0].file) {
		*out = (struct su_resolved){ .kind = SU_RESOLVED_UNKNOWN, .pc = f->pc, .activation = f->activation,
					     .module_name = "[unknown]", .sym = r->sym };
		return -ENOMEM;
	}
	/* 3.11's location table is 3.12's and 3.13's too. */
	if (rt->kind == 1 && (rt->version >> 16) >= 0x030b && (rt->version >> 16) <= 0x030d)
		r->sym[0].line = su_pyline_311(c->line_table, c->line_table_len, c->first_line, f->rt_pos);
	return 0;
}

/* A kernel frame (SU_FRAME_KERNEL): named by the trace's own kernel
 * symbols (maps->kernel), never by the analyzing machine's; an address
 * no recorded symbol covers keeps no name (nsym 0). */
static int resolve_kernel(struct su_resolver *r, const struct su_maps *maps, const struct su_frame *f,
			  struct su_resolved *out)
{
	const struct su_kernel *k = maps ? maps->kernel : NULL;
	uint64_t const pc = su_frame_lookup_pc(f);
	out->kind = SU_RESOLVED_KERNEL;
	out->module_name = "[kernel.kallsyms]";
	out->elf_addr = f->pc;
	struct su_ksym y;
	if (!su_kernel_find(k, pc, &y))
		return 0;
	r->sym[0] = (struct su_symframe){ .function = su_resolver_text(r, y.name), .func_offset = f->pc - y.start };
	if (y.module && y.module[0])
		out->module_name = su_resolver_text(r, y.module);
	if (!r->sym[0].function || !out->module_name) {
		*out = (struct su_resolved){ .kind = SU_RESOLVED_UNKNOWN, .pc = f->pc, .activation = f->activation,
					     .module_name = "[unknown]", .sym = r->sym };
		return -ENOMEM;
	}
	out->nsym = 1;
	return 0;
}

int su_resolve(struct su_resolver *r, uint32_t pid, const struct su_maps *maps, const struct su_frame *f,
	       struct su_resolved *out)
{
	*out = (struct su_resolved){ .kind = SU_RESOLVED_UNKNOWN, .pc = f->pc, .activation = f->activation,
				     .module_name = "[unknown]", .sym = r->sym };
	if (f->how == SU_FRAME_RUNTIME)
		return resolve_runtime(r, maps, f, out);
	if (f->how == SU_FRAME_KERNEL)
		return resolve_kernel(r, maps, f, out);
	const struct su_map_entry *e = frame_entry(maps, f);
	const char *name = NULL;
	struct su_module *m = e ? entry_module(r, e, &name) : NULL;
	if (!m)
		return 0;
	out->kind = SU_RESOLVED_MODULE;
	out->entry = e;
	out->module = m;
	out->module_name = name;
	uint64_t const bias = su_module_bias(m, e);
	out->elf_addr = f->pc - bias;
	int clean = 0;
	size_t const n = m->status == SU_MODULE_OK
		? su_symbolize_flags(m, su_frame_lookup_pc(f) - bias, r->sym, SU_RESOLVE_MAX_SYM, &clean, r->sym_flags) : 0;
	if (n && r->sym[n - 1].function) {
		/* The symbolizer's strings, escaped in place unless it found
		 * them clean (nearly always). */
		for (size_t i = 0; i < n && !clean; i++) {
			struct su_symframe *y = &r->sym[i];
			if ((y->function && !(y->function = su_resolver_text(r, y->function))) ||
			    (y->file && !(y->file = su_resolver_text(r, y->file))) ||
			    (y->decl_file && !(y->decl_file = su_resolver_text(r, y->decl_file))))
				goto oom;
		}
		out->kind = SU_RESOLVED_SYMBOLS;
		out->nsym = n;
		return 0;
	}
	if (m->status != SU_MODULE_NO_FILE)
		return 0;
	uint64_t start = 0;
	const char *map = NULL;
	const char *jit = su_perfmap_lookup(r->perfmaps, pid, su_frame_lookup_pc(f), &start, &map);
	if (!jit)
		return 0;
	r->sym[0] = (struct su_symframe){ .function = su_resolver_text(r, jit), .func_offset = f->pc - start };
	out->jit_map = su_resolver_text(r, map ? map : "[unknown]");
	if (!r->sym[0].function || !out->jit_map)
		goto oom;
	out->kind = SU_RESOLVED_JIT;
	out->nsym = 1;
	return 0;
oom:
	*out = (struct su_resolved){ .kind = SU_RESOLVED_UNKNOWN, .pc = f->pc, .activation = f->activation,
				     .module_name = "[unknown]", .sym = r->sym };
	return -ENOMEM;
}

/* ---- samples in execve ------------------------------------------------------ */

/* The kernel functions of execve from which on the program's image may be
 * gone: the mm is replaced in begin_new_exec (flush_old_exec before Linux
 * 5.8), called by a binary format's loader, run by bprm_execve
 * (exec_binprm, search_binary_handler before 5.9). */
static const char *const exec_functions[] = {
	"bprm_execve", "exec_binprm", "search_binary_handler", "load_elf_binary",
	"begin_new_exec", "flush_old_exec",
};

static int in_exec(struct su_resolver *r, const struct su_sample *s, const struct su_frame *f, size_t nk)
{
	for (size_t i = 0; i < nk; i++) {
		struct su_resolved k;
		if (f[i].how != SU_FRAME_KERNEL || su_resolve(r, s->pid, s->maps, &f[i], &k) != 0 ||
		    k.kind != SU_RESOLVED_KERNEL || !k.nsym || !k.sym[k.nsym - 1].function)
			continue;
		for (size_t j = 0; j < sizeof(exec_functions) / sizeof(*exec_functions); j++)
			if (!strcmp(k.sym[k.nsym - 1].function, exec_functions[j]))
				return 1;
	}
	return 0;
}

size_t su_resolver_exec_end(struct su_resolver *r, const struct su_sample *s, const struct su_frame *frames,
			    size_t n, enum su_unwind_end *end)
{
	size_t const nk = s->kernel_chain ? s->n_kernel_chain : 0;
	if (r && (*end == SU_END_BAD_STACK || *end == SU_END_NO_MAP) && nk && n == nk + 1 && in_exec(r, s, frames, nk)) {
		*end = SU_END_EXEC;
		return nk;
	}
	return n;
}
