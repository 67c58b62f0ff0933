/* A walk kept for the next sample of its thread: when that sample's walk
 * reaches a state the kept one had, and the words the rest of the kept walk
 * read are the same, the rest of its frames are copied rather than unwound
 * again (unwind-internal.h says why that is exact).  The kept words are a
 * copy of those read, one by one (a span from the lowest to the highest
 * read held ~116 words a compare on xz's perf.data, where ~44 were read):
 * the sample they came from is gone by the next one. */
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind-internal.h"

void uw_kept_free(struct uw_kept_walk *k)
{
	free(k->frames);
	free(k->kf);
	free(k->reads);
	memset(k, 0, sizeof(*k));
}

static void kept_empty(struct uw_kept_walk *k)
{
	k->maps = NULL;
	k->n = 0;
}

/* The image's [lo, hi), as uw_seg_init computes it. */
static void image_bounds(const struct su_sample *s, uint64_t *lo, uint64_t *hi)
{
	struct uw_seg g;
	uw_seg_init(&g, s->image);
	*lo = g.lo;
	*hi = g.hi;
}

/* The words of an image starting at LO that hold the bytes [MIN, END):
 * [*A, *E), word-aligned as the image is. */
static void word_span(uint64_t lo, uint64_t min, uint64_t end, uint64_t *a, uint64_t *e)
{
	*a = min - ((min - lo) & 7);
	*e = end + ((8 - ((end - lo) & 7)) & 7);
}

/* The registers NEED of states A and B: the same known, undefined and
 * unknown (and why), the same values. */
static int regs_equal(const struct uw_regs *a, const struct uw_regs *b, uint32_t need)
{
	if (((a->known ^ b->known) & need) || ((a->undef ^ b->undef) & need) ||
	    a->v[STACKCAP_REG_RIP] != b->v[STACKCAP_REG_RIP])
		return 0;
	for (uint32_t m = a->known & need; m; m &= m - 1) {
		unsigned const r = (unsigned)__builtin_ctz(m);
		if (a->v[r] != b->v[r])
			return 0;
	}
	uint32_t const why = ~(a->known | a->undef) & need;
	for (uint32_t m = why; m; m &= m - 1) {
		unsigned const r = (unsigned)__builtin_ctz(m);
		if (a->why[r] != b->why[r])
			return 0;
	}
	return 1;
}

int uw_kept_matches(const struct uw_kept_walk *k, size_t j, const struct uw_regs *cur, uint64_t pc,
		    uint8_t activation, const struct su_sample *sample, size_t n, size_t max, uint64_t *trusted)
{
	if (!k->maps || k->maps != sample->maps || k->generation != sample->maps->generation ||
	    j == 0 || j >= k->n || sample->segment || k->end == SU_END_MAX_FRAMES)
		return 0;
	if (k->n - j > max - n) /* the copied frames must fit as they did */
		return 0;
	if (k->frames[j].pc != pc || k->frames[j].activation != activation || !regs_equal(&k->kf[j].r, cur, k->kf[j].need))
		return 0;
	uint64_t lo, hi;
	image_bounds(sample, &lo, &hi);
	if ((uint8_t)(sample->stack_capped != 0) != k->capped ||
	    (uint8_t)(sample->image->policy != STACKCAP_POLICY_ALL) != k->filtered || ((lo ^ k->lo) & 7))
		return 0;
	const struct uw_kept_frame *f = &k->kf[j];
	/* Every read that failed past the kept image's top fails here too. */
	if (f->fail_end <= hi)
		return 0;
	if (f->ok_end <= f->min_read)
		return f->min_read >= lo; /* no word read */
	/* Every word read is inside this image ([lo, hi), in whole words)
	 * and the same. */
	if (f->min_read < lo || f->ok_end > hi)
		return 0;
	uint64_t a, e;
	word_span(lo, f->min_read, f->ok_end, &a, &e);
	if (e > hi)
		return 0;
	/* The image's top ELIDED words are those of its thread's image
	 * before it, at the same stack top (su_sample.decode_no): when the
	 * kept words were taken from that image, those there are this
	 * image's already. */
	const struct stackcap_image *img = sample->image;
	uint64_t same_from = UINT64_MAX;
	if (k->decode_no && sample->decode_no == k->decode_no + 1 && sample->pid == k->pid && sample->tid == k->tid &&
	    img->elided && img->elided <= img->nwords && hi == k->hi && (hi - lo) / 8 == img->nwords)
		same_from = hi - 8 * img->elided;
	/* The first reads, all at or above SAME_FROM, are there. */
	size_t trust = 0;
	if (same_from != UINT64_MAX) {
		size_t t_hi = f->rn; /* the first read below: in [trust, t_hi] */
		while (trust < t_hi) {
			size_t const mid = trust + (t_hi - trust) / 2;
			if (k->reads[mid].low >= same_from)
				trust = mid + 1;
			else
				t_hi = mid;
		}
	}
	uint64_t skipped = trust;
	for (const struct uw_kept_read *r = &k->reads[trust], *const e_r = &k->reads[f->rn]; r < e_r; r++) {
		if (r->at >= same_from) {
			skipped++;
			continue;
		}
		if (img->words[(r->at - lo) / 8] != r->word)
			return 0;
	}
	*trusted += skipped;
	return 1;
}

/* Each frame's own reads into suffixes over the walk: frames UPTO down
 * to 0 take in frame i + 1's suffix (already one). */
static void make_suffixes(struct uw_kept_frame *kf, const struct su_frame *frames, size_t upto)
{
	for (size_t i = upto + 1; i-- > 0;) {
		const struct uw_kept_frame *o = &kf[i + 1];
		struct uw_kept_frame *f = &kf[i];
		if (o->min_read < f->min_read)
			f->min_read = o->min_read;
		if (o->ok_end > f->ok_end)
			f->ok_end = o->ok_end;
		if (o->fail_end < f->fail_end)
			f->fail_end = o->fail_end;
		f->fp_after = o->fp_after + (frames[i + 1].how == SU_FRAME_FP);
		/* What the next frame's state needs of this one: its step's
		 * inputs, and what it passed on; the pc and sp always. */
		f->need = f->uses | (o->need & f->keeps) | 1u << STACKCAP_REG_RIP | 1u << STACKCAP_REG_RSP;
	}
}

/* Room for N kept reads in K.  @return 0, or -1. */
static int reads_reserve(struct uw_kept_walk *k, size_t n)
{
	if (n <= k->rcap)
		return 0;
	size_t const cap = n < 64 ? 64 : n + n / 2;
	struct uw_kept_read *r = realloc(k->reads, cap * sizeof(*r));
	if (!r)
		return -1;
	k->reads = r;
	k->rcap = cap;
	return 0;
}

/* The words at the N word addresses AT (SAMPLE's image starts at LO and
 * holds them: the walk read them there) into OUT, the last first, after
 * reads whose lowest address is LOW. */
static void gather(struct uw_kept_read *out, const uint64_t *at, size_t n, const struct su_sample *sample,
		   uint64_t lo, uint64_t low)
{
	const uint64_t *const w = sample->image->words;
	for (size_t i = n; i-- > 0;) {
		uint64_t const a = at[i];
		if (a < low)
			low = a;
		*out++ = (struct uw_kept_read){ .at = a, .word = w[(a - lo) / 8], .low = low };
	}
}

/* Copy the words the walk read, its NRD reads at RD, from SAMPLE's image
 * (a read below it by frames >= 1, KF[1]'s suffix: nothing worth
 * keeping).  @return 0, or -1. */
static int keep_reads(struct uw_kept_walk *k, const struct su_sample *sample, uint64_t lo, const uint64_t *rd,
		      size_t nrd)
{
	if (k->kf[1].min_read < lo || reads_reserve(k, nrd) != 0)
		return -1;
	gather(k->reads, rd, nrd, sample, lo, UINT64_MAX);
	k->nreads = nrd;
	for (size_t i = 0; i < k->n; i++)
		k->kf[i].rn = (uint32_t)(nrd - k->kf[i].rn);
	return 0;
}

static int kept_reserve(struct uw_kept_walk *k, size_t n)
{
	if (n > k->fcap) {
		struct su_frame *fr = realloc(k->frames, n * sizeof(*fr));
		if (!fr)
			return -1;
		k->frames = fr;
		k->fcap = n;
	}
	if (n > k->kcap) {
		struct uw_kept_frame *kf = realloc(k->kf, n * sizeof(*kf));
		if (!kf)
			return -1;
		k->kf = kf;
		k->kcap = n;
	}
	return 0;
}

static void kept_head(struct uw_kept_walk *k, const struct su_sample *sample, uint64_t lo, uint64_t hi)
{
	k->maps = sample->maps;
	k->generation = sample->maps->generation;
	k->lo = lo;
	k->hi = hi;
	k->capped = sample->stack_capped != 0;
	k->filtered = sample->image->policy != STACKCAP_POLICY_ALL;
	k->pid = sample->pid;
	k->tid = sample->tid;
	k->decode_no = sample->decode_no;
}

int uw_kept_store(struct uw_kept_walk *k, const struct su_sample *sample, const struct su_frame *frames,
		  size_t n, struct uw_kept_frame **kf, size_t *kf_cap, enum su_unwind_end end, const uint64_t *rd,
		  size_t nrd)
{
	kept_empty(k);
	if (n < 2 || sample->segment || !sample->maps || end == SU_END_MAX_FRAMES)
		return 0;
	/* The last frame's own reads are those of the step that ended the
	 * walk; the suffixes run from it. */
	(*kf)[n - 1].fp_after = 0;
	/* The step that ended the walk: what it read, and the pc and sp it
	 * made (its end: the pc undefined, 0, unreadable; no progress). */
	(*kf)[n - 1].need = (*kf)[n - 1].uses | 1u << STACKCAP_REG_RIP | 1u << STACKCAP_REG_RSP;
	make_suffixes(*kf, frames, n - 2);
	/* The walk's states become the slot's; the slot's old array is the
	 * next walk's (fast_unwind grows it if short). */
	struct uw_kept_frame *const t = k->kf;
	size_t const tcap = k->kcap;
	k->kf = *kf;
	k->kcap = *kf_cap;
	*kf = t;
	*kf_cap = tcap;
	if (kept_reserve(k, n) != 0)
		return -1;
	memcpy(k->frames, frames, n * sizeof(*frames));
	uint64_t lo, hi;
	image_bounds(sample, &lo, &hi);
	kept_head(k, sample, lo, hi);
	k->n = n;
	k->end = (uint8_t)end;
	if (keep_reads(k, sample, lo, rd, nrd) != 0) {
		kept_empty(k);
		return -1;
	}
	return 0;
}

int uw_kept_splice(struct uw_kept_walk *k, size_t j, const struct su_sample *sample,
		   const struct su_frame *frames, const struct uw_kept_frame *kf, size_t n, const uint64_t *rd,
		   size_t nrd)
{
	size_t const total = n + (k->n - j);
	if (n != j) {
		if (kept_reserve(k, total) != 0) {
			kept_empty(k);
			return -1;
		}
		memmove(&k->kf[n], &k->kf[j], (k->n - j) * sizeof(*k->kf));
		memmove(&k->frames[n], &k->frames[j], (k->n - j) * sizeof(*k->frames));
	}
	/* This sample's frames [0, n] and their states; frame N's own
	 * state is the one matched, its suffix the kept walk's. */
	memcpy(k->frames, frames, (n + 1) * sizeof(*frames));
	memcpy(k->kf, kf, n * sizeof(*kf));
	k->kf[n].r = kf[n].r;
	k->n = total;
	/* The reads: the kept ones of frame N's suffix (frame J's, compared
	 * equal or the image's own top), then this walk's NRD before frame
	 * N's, the last first. */
	size_t const keep = k->kf[n].rn;
	if (reads_reserve(k, keep + nrd) != 0) {
		kept_empty(k);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		k->kf[i].rn = (uint32_t)(keep + nrd - k->kf[i].rn);
	k->nreads = keep + nrd;
	uint64_t lo, hi;
	image_bounds(sample, &lo, &hi);
	gather(k->reads + keep, rd, nrd, sample, lo, keep ? k->reads[keep - 1].low : UINT64_MAX);
	make_suffixes(k->kf, k->frames, n - 1);
	kept_head(k, sample, lo, hi);
	if (k->kf[1].min_read < lo) {
		kept_empty(k);
		return -1;
	}
	return 0;
}
