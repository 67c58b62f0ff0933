/* Runtime frames in their native stack (unwind.h, su_runtime_splice).
 *
 * A runtime unwinder recorded the interpreter's frames innermost first,
 * each marked when it began a native call of the interpreter loop
 * (CPython: is_entry).  So the frames up to and including the first entry
 * frame were run by the innermost native interpreter-loop frame (a pc in
 * the runtime's [eval_start, eval_end)), the next group by the next one,
 * and so on.  Each such native frame is replaced by its group: C called
 * from Python and Python called back from C stay in their true order.
 *
 * Matching: from the outermost end when the native unwind reached the
 * outermost frame and the runtime chain is whole (a sample taken while an
 * interpreter loop is entering or leaving its frame has one native frame
 * more or fewer at the innermost end, where it then shows as native);
 * from the innermost end otherwise (the native stack was cut: groups left
 * over are outer, appended).  Groups left over at the innermost end go
 * just before the innermost matched frame, so no runtime frame is lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind-internal.h"
#include "compress/rt-frames.h"

#define SPLICE_MAX_RT 1024

static int in_eval(const struct su_runtime *rt, const struct su_frame *f)
{
	uint64_t const pc = su_frame_lookup_pc(f);
	return f->how != SU_FRAME_RUNTIME && pc >= rt->eval_start && pc < rt->eval_end;
}

size_t su_runtime_splice(struct su_unwinder *u, const struct su_sample *s, struct su_frame *frames, size_t n,
			 size_t max, enum su_unwind_end *end)
{
	const struct su_runtime *rt = s->maps ? s->maps->runtime : NULL;
	if (!rt || !s->runtime_frames || rt->eval_end <= rt->eval_start || !n)
		return n;
	static __thread struct rt_frame pf[SPLICE_MAX_RT];
	static __thread size_t gs[SPLICE_MAX_RT + 1], ge[SPLICE_MAX_RT + 1];
	struct rt_frames_dec d;
	if (rt_frames_open(&d, s->runtime_frames, s->runtime_frames_len))
		return n;
	size_t np = 0;
	int r;
	while (np < SPLICE_MAX_RT && (r = rt_frames_next(&d, &pf[np])) == 1)
		np++;
	if (!np || (np < SPLICE_MAX_RT && r < 0))
		return n;
	/* Groups, innermost first: [gs[k], ge[k]). */
	size_t ng = 0;
	for (size_t i = 0, st = 0; i < np; i++)
		if (pf[i].entry || i + 1 == np) {
			gs[ng] = st;
			ge[ng++] = i + 1;
			st = i + 1;
		}
	size_t ne = 0;
	for (size_t i = 0; i < n; i++)
		ne += in_eval(rt, &frames[i]);
	int const whole = !(d.flags & (RT_FRAMES_TRUNCATED | RT_FRAMES_UNREADABLE)) && np < SPLICE_MAX_RT;
	int const from_outer = *end == SU_END_OUTERMOST && whole;
	/* Group of the k-th eval frame from the innermost (k < ne), or -1;
	 * left-over groups [lo_a, lo_b). */
	size_t const matched = ne < ng ? ne : ng;
	size_t lo_a = 0, lo_b = 0;
	long shift; /* group = k + shift */
	if (from_outer) {
		shift = (long)ng - (long)ne;
		lo_a = 0, lo_b = ng > ne ? ng - ne : 0;
	} else {
		shift = 0;
		lo_a = matched, lo_b = ng;
	}
	/* Room: every native frame and every runtime frame at most once (a
	 * native frame replaced by its group is not kept; groups are each
	 * written once, matched or left over).  The count of the left-over
	 * groups, not their frames, was added here before: a sample whose
	 * left-over groups held more frames than there were groups wrote
	 * past the buffer (an LTTng trace without LTTng's state dump showed
	 * it: no native frame found, every group left over). */
	size_t const total = n + np;
	if (total > u->splice_cap) {
		struct su_frame *nb = realloc(u->splice, total * sizeof(*nb));
		if (!nb)
			return n;
		u->splice = nb;
		u->splice_cap = total;
	}
	struct su_frame *out = u->splice;
	size_t o = 0, k = 0;
	int leftovers_done = lo_a == lo_b;
	for (size_t i = 0; i < n; i++) {
		if (!in_eval(rt, &frames[i])) {
			out[o++] = frames[i];
			continue;
		}
		long const g = (long)k + shift;
		k++;
		if (g < 0 || (size_t)g >= ng || ((size_t)g >= lo_a && (size_t)g < lo_b)) {
			out[o++] = frames[i];
			continue;
		}
		if (!leftovers_done && from_outer) {
			for (size_t h = lo_a; h < lo_b; h++)
				for (size_t j = gs[h]; j < ge[h]; j++)
					out[o++] = (struct su_frame){ .pc = pf[j].code, .map = -1, .how = SU_FRAME_RUNTIME,
								      .activation = 1, .rt_fp = pf[j].fp,
								      .rt_pos = pf[j].pos };
			leftovers_done = 1;
		}
		for (size_t j = gs[g]; j < ge[g]; j++)
			out[o++] = (struct su_frame){ .pc = pf[j].code, .map = -1, .how = SU_FRAME_RUNTIME,
						      .activation = 1, .rt_fp = pf[j].fp, .rt_pos = pf[j].pos };
	}
	if (!leftovers_done)
		for (size_t h = lo_a; h < lo_b; h++)
			for (size_t j = gs[h]; j < ge[h]; j++)
				out[o++] = (struct su_frame){ .pc = pf[j].code, .map = -1, .how = SU_FRAME_RUNTIME,
							      .activation = 1, .rt_fp = pf[j].fp, .rt_pos = pf[j].pos };
	if (o > max) {
		o = max;
		*end = SU_END_MAX_FRAMES;
	}
	memcpy(frames, out, o * sizeof(*frames));
	return o;
}
