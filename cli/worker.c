/* SPDX-License-Identifier: MIT */
/* Each thread's context (worker.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/worker.h"
#include "common/asan.h"
#include "common/grow.h"

int worker_init(struct worker *w, const struct options *o)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->modules = su_modcache_new(&o->di);
	if (!w->modules)
		return -ENOMEM;
	w->resolver = su_resolver_new(w->modules, o->di.symfs, o->jit_dir);
	if (w->resolver && o->folded) /* folded, flamegraph, report: names alone */
		su_resolver_names_only(w->resolver);
	w->unwinder = su_unwinder_new(o->unwinder, w->modules);
	w->frames = calloc(o->max_frames, sizeof(*w->frames));
	return w->unwinder && w->frames && w->resolver ? 0 : -ENOMEM;
}

void worker_fini(struct worker *w)
{
	su_unwinder_free(w->unwinder);
	su_resolver_free(w->resolver);
	su_modcache_free_at_exit(w->modules); /* the command ends: the process exits next */
	free(w->frames);
	free(w->bad);
	for (size_t i = 0; i < w->n_ftext; i++)
		free(w->ftext[i].text);
	free(w->ftext);
	su_hmap_free(&w->ftext_map);
	for (size_t i = 0; i < w->n_pctext; i++)
		free(w->pctext[i].text);
	free(w->pctext);
	su_hmap_free(&w->pctext_map);
	free(w->pctext_seen);
	if (w->chains)
		for (size_t i = 0; i < CHAIN_SLOTS; i++) {
			free(w->chains[i].frames);
			text_shared_drop(w->chains[i].text);
		}
	free(w->chains);
	text_free(&w->chain_lines);
	text_free(&w->frame_lines);
}

void worker_fini_at_exit(struct worker *w)
{
	if (SU_ASAN)
		worker_fini(w);
	else
		su_modcache_save_at_exit(w->modules);
}

void worker_note_module(struct worker *w, const struct su_module *m)
{
	if (m->status != SU_MODULE_NOT_FOUND && m->status != SU_MODULE_BUILD_ID_MISMATCH)
		return;
	for (size_t i = 0; i < w->n_bad; i++)
		if (w->bad[i].m == m)
			return;
	if (SU_GROW(w->bad, w->cap_bad, w->n_bad + 1))
		return; /* only the warning is lost */
	w->bad[w->n_bad++].m = m;
}

/* Every worker met its own copy of a module: deduplicated by path. */
void worker_warn_modules(struct worker *workers, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (size_t j = 0; j < workers[i].n_bad; j++) {
			const struct su_module *m = workers[i].bad[j].m;
			int seen = 0;
			for (unsigned a = 0; a <= i && !seen; a++)
				for (size_t b = 0; b < (a == i ? j : workers[a].n_bad) && !seen; b++)
					seen = !strcmp(workers[a].bad[b].m->recorded_path, m->recorded_path);
			if (seen)
				continue;
			char hex[2 * SU_BUILD_ID_MAX + 1] = "none recorded";
			for (unsigned k = 0; k < m->build_id_len; k++)
				snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
			const char *path = su_resolver_text(workers[i].resolver, m->recorded_path);
			fprintf(stderr, PROG ": warning: %s (build-id %s): %s; its frames show module+offset\n",
				path ? path : "?", hex,
				m->status == SU_MODULE_BUILD_ID_MISMATCH
					? "the file there has another build-id (rebuilt since the recording, or a "
					  "container's file recorded elsewhere?); give the right one with --debug-dir or "
					  "--symfs"
					: "not found (give it with --debug-dir or --symfs, or set DEBUGINFOD_URLS)");
		}
}

size_t worker_unwind(struct worker *w, const struct su_sample *s, const struct su_frame **frames,
		     enum su_unwind_end *end)
{
	*end = SU_END_ERROR;
	size_t n = su_unwind_view(w->unwinder, s, w->frames, w->o->max_frames, frames, end);
	/* (The same frames and end always give the same answer: a
	 * repeated chain stays one.) */
	n = su_resolver_exec_end(w->resolver, s, *frames, n, end);
	/* The previous sample's chain slot, if this one repeats its frames;
	 * this sample's formatting names its own (or none). */
	w->reuse_chain = su_unwind_repeats(w->unwinder) ? w->last_chain : NULL;
	w->last_chain = NULL;
	w->counts.samples++;
	w->counts.frames += n;
	if (*end == SU_END_OUTERMOST)
		w->counts.complete++;
	else if (*end == SU_END_TRUNCATED)
		w->counts.truncated++;
	else if (*end == SU_END_NO_USER)
		w->counts.no_user++;
	else if (*end == SU_END_EXEC)
		w->counts.exec++;
	else
		w->counts.incomplete++;
	return n;
}

int worker_resolve(struct worker *w, uint32_t pid, const struct su_maps *maps, const struct su_frame *f,
		   struct su_resolved *r)
{
	int const rc = su_resolve(w->resolver, pid, maps, f, r);
	if (r->module)
		worker_note_module(w, r->module);
	if (r->kind == SU_RESOLVED_UNKNOWN || r->kind == SU_RESOLVED_MODULE ||
	    (r->kind == SU_RESOLVED_PYTHON && !r->sym[0].function) || (r->kind == SU_RESOLVED_KERNEL && !r->nsym))
		w->counts.unknown_frames++;
	return rc;
}

static void sum_module_stats(struct worker *w, struct su_modcache_stats *total)
{
	struct su_modcache_stats st;
	su_modcache_get_stats(w->modules, &st);
	if (st.not_found > total->not_found)
		total->not_found = st.not_found;
	if (st.build_id_mismatch > total->build_id_mismatch)
		total->build_id_mismatch = st.build_id_mismatch;
	if (st.modules > total->modules)
		total->modules = st.modules;
}

void worker_totals(struct worker *workers, unsigned n, struct counts *c, struct su_modcache_stats *ms)
{
	for (unsigned i = 0; i < n; i++) {
		struct counts *k = &workers[i].counts;
		c->samples += k->samples;
		c->complete += k->complete;
		c->truncated += k->truncated;
		c->incomplete += k->incomplete;
		c->no_user += k->no_user;
		c->exec += k->exec;
		c->unknown_frames += k->unknown_frames;
		c->frames += k->frames;
		sum_module_stats(&workers[i], ms);
	}
}
