/* SPDX-License-Identifier: MIT */
/* The SVG flamegraph writer (flamegraph.h).
 *
 * Stacks are merged into a tree (node 0 is the root "all"); siblings are
 * sorted by name so the picture depends on the counts only.  Each frame
 * is one line of the SVG, drawn by its own <rect> and <text>, with its
 * sample range (data-s, data-n) and depth (data-d) for the script: the
 * picture is complete without the script, which adds hover details, click
 * to zoom, search and reset.  Frames narrower than min_width px are left
 * out (and counted): a huge profile stays a small file. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/hashmap.h"
#include "export/flamegraph.h"

#define PAD 10          /* px left and right of the frames */
#define ROW 16          /* px per stack level */
#define FONT 12         /* px, monospace */
#define CHARW 7.2       /* px per character of FONT px monospace (0.6 em) */
#define TOP 70          /* px above the frames: title, buttons, legend */
#define BOTTOM 34       /* px below: the details line */
#define NONE UINT32_MAX

struct node {
	uint32_t parent, first, next;  /* tree links (NONE: none) */
	uint32_t name, mod;            /* interned strings */
	uint32_t depth;
	uint64_t total;                /* samples in this frame and below */
	uint64_t start;                /* first sample of its range (layout) */
};

struct flame {
	/* interned strings, sanitized to valid UTF-8 without control bytes */
	char **str;
	size_t n_str, cap_str;
	struct su_hmap str_map;        /* string -> id */
	struct node *node;
	size_t n_node, cap_node;
	struct su_hmap child_map;      /* (parent, name, mod) -> node */
	uint64_t *mod_self;            /* by string id: samples whose leaf is in it */
	size_t n_mod_self;
	uint32_t *mod_index;           /* by string id: index in the script's MODS */
};

/* Length of the valid UTF-8 sequence at S (at most N bytes), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char const c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	if (cp == 0xfffe || cp == 0xffff)
		return 0; /* not XML characters */
	return len;
}

/* A copy of S[0..N) that XML accepts: bytes that are no character ('\0'
 * to ' ' but tab, invalid UTF-8) become '?'. */
static char *sanitize(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t const l = utf8_len(u + i, n - i);
		if (l == 0 || (l == 1 && u[i] < 0x20)) {
			d[i++] = '?';
			continue;
		}
		memcpy(d + i, u + i, l);
		i += l;
	}
	d[n] = 0;
	return d;
}

static int is_clean(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t const l = utf8_len(u + i, n - i);
		if (l == 0 || (l == 1 && u[i] < 0x20))
			return 0;
		i += l;
	}
	return 1;
}

struct str_key {
	const struct flame *f;
	const char *s;
	size_t n;
};

static int str_eq(const void *arg, uint32_t id)
{
	const struct str_key *k = arg;
	return !strncmp(k->f->str[id], k->s, k->n) && !k->f->str[id][k->n];
}

/* The id of string S[0..N), sanitized (see sanitize()). */
static long intern(struct flame *f, const char *s, size_t n)
{
	char *clean = NULL;
	long id = -ENOMEM;
	if (!is_clean(s, n)) {
		if (!(clean = sanitize(s, n)))
			return -ENOMEM;
		s = clean;
	}
	if (su_hmap_reserve(&f->str_map))
		goto out;
	uint64_t const hash = su_fnv1a(s, n);
	struct str_key key = { f, s, n };
	size_t const slot = su_hmap_find(&f->str_map, hash, str_eq, &key);
	if (su_hmap_used(&f->str_map, slot)) {
		id = su_hmap_value(&f->str_map, slot);
		goto out;
	}
	if (SU_GROW(f->str, f->cap_str, f->n_str + 1))
		goto out;
	char *copy = strndup(s, n);
	if (!copy)
		goto out;
	f->str[f->n_str] = copy;
	su_hmap_set(&f->str_map, slot, hash, (uint32_t)f->n_str);
	id = (long)f->n_str++;
out:
	free(clean);
	return id;
}

static uint64_t child_hash(uint32_t parent, uint32_t name, uint32_t mod)
{
	uint64_t h = (uint64_t)parent * 0x9E3779B97F4A7C15ull;
	h ^= ((uint64_t)name << 32 | mod) * 0xC2B2AE3D27D4EB4Full;
	return h ^ (h >> 31);
}

static long new_node(struct flame *f, uint32_t parent, uint32_t name, uint32_t mod)
{
	if (SU_GROW(f->node, f->cap_node, f->n_node + 1))
		return -ENOMEM;
	struct node *x = &f->node[f->n_node];
	*x = (struct node){ .parent = parent, .first = NONE, .next = NONE, .name = name, .mod = mod,
			    .depth = parent == NONE ? 0 : f->node[parent].depth + 1 };
	return (long)f->n_node++;
}

struct child_key {
	const struct flame *f;
	uint32_t parent, name, mod;
};

static int child_eq(const void *arg, uint32_t id)
{
	const struct child_key *k = arg;
	const struct node *x = &k->f->node[id];
	return x->parent == k->parent && x->name == k->name && x->mod == k->mod;
}

/* The child of PARENT named NAME in MOD, made if new. */
static long child(struct flame *f, uint32_t parent, uint32_t name, uint32_t mod)
{
	if (su_hmap_reserve(&f->child_map))
		return -ENOMEM;
	uint64_t const h = child_hash(parent, name, mod);
	struct child_key key = { f, parent, name, mod };
	size_t const slot = su_hmap_find(&f->child_map, h, child_eq, &key);
	if (su_hmap_used(&f->child_map, slot))
		return su_hmap_value(&f->child_map, slot);
	long const id = new_node(f, parent, name, mod);
	if (id >= 0)
		su_hmap_set(&f->child_map, slot, h, (uint32_t)id);
	return id;
}

struct frame_ref {
	uint32_t name, mod;
};

/* Add one stack: its frames, outermost first (leaf first with REVERSE). */
static int add_stack(struct flame *f, const char *key, uint64_t count, int reverse, struct frame_ref **buf,
		     size_t *cap)
{
	size_t n = 0;
	const char *p = key;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t const len = end ? (size_t)(end - p) : strlen(p);
		const char *sep = memchr(p, FLAME_MODSEP, len);
		size_t const nlen = sep ? (size_t)(sep - p) : len;
		long const name = intern(f, p, nlen);
		long const mod = intern(f, sep ? sep + 1 : "", sep ? len - nlen - 1 : 0);
		if (name < 0 || mod < 0)
			return -ENOMEM;
		if (SU_GROW(*buf, *cap, n + 1))
			return -ENOMEM;
		(*buf)[n++] = (struct frame_ref){ (uint32_t)name, (uint32_t)mod };
		if (!end)
			break;
		p = end + 1;
	}
	/* The leaf's module gets the sample (the legend's order). */
	uint32_t const leaf_mod = (*buf)[n - 1].mod;
	if (leaf_mod >= f->n_mod_self) {
		size_t const ncap = f->cap_str;
		uint64_t *nm = realloc(f->mod_self, ncap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		memset(nm + f->n_mod_self, 0, (ncap - f->n_mod_self) * sizeof(*nm));
		f->mod_self = nm;
		f->n_mod_self = ncap;
	}
	f->mod_self[leaf_mod] += count;
	uint32_t cur = 0;
	f->node[0].total += count;
	for (size_t i = 0; i < n; i++) {
		const struct frame_ref *r = &(*buf)[reverse ? n - 1 - i : i];
		long const c = child(f, cur, r->name, r->mod);
		if (c < 0)
			return (int)c;
		cur = (uint32_t)c;
		f->node[cur].total += count;
	}
	return 0;
}

/* ---- colours ------------------------------------------------------------------ */

struct rgb {
	unsigned r, g, b;
};

static struct rgb hsl(double h, double s, double l)
{
	double const c = (1 - fabs(2 * l - 1)) * s;
	double const hp = fmod(h, 360) / 60;
	double const x = c * (1 - fabs(fmod(hp, 2) - 1));
	double r = 0, g = 0, b = 0;
	if (hp < 1)
		r = c, g = x;
	else if (hp < 2)
		r = x, g = c;
	else if (hp < 3)
		g = c, b = x;
	else if (hp < 4)
		g = x, b = c;
	else if (hp < 5)
		r = x, b = c;
	else
		r = c, b = x;
	double const m = l - c / 2;
	return (struct rgb){ (unsigned)lround((r + m) * 255), (unsigned)lround((g + m) * 255),
			     (unsigned)lround((b + m) * 255) };
}

/* The hash colours are drawn from: FNV-1a steps from a seed a digit short
 * of FNV's offset basis, the one every flamegraph so far was drawn with
 * (another seed would change every colour). */
static uint64_t colour_hash(const char *s)
{
	return su_fnv1a_from(UINT64_C(1469598103934665603), s, strlen(s));
}

/* A stable hue per module (0-270 degrees: magenta is the search colour),
 * a shade per function; frames with no module are grey. */
static struct rgb frame_colour(const char *name, const char *mod)
{
	uint64_t const v = colour_hash(name);
	/* Off-CPU time beside CPU time (FLAME_OFF_CPU_MARK): blue, as in
	 * flamegraph.pl's off-CPU graphs, whatever the module. */
	size_t const nl = strlen(name), ml = sizeof(FLAME_OFF_CPU_MARK) - 1;
	if (nl >= ml && !memcmp(name + nl - ml, FLAME_OFF_CPU_MARK, ml))
		return hsl(215, 0.60, 0.55 + (double)(v % 15) / 100);
	if (!mod[0])
		return hsl(0, 0, 0.72 + (double)(v % 10) / 100);
	/* Interpreter frames (resolve.h SU_RESOLVED_PYTHON): one colour of
	 * their own, teal, whatever the module hues are. */
	if (!strcmp(mod, "[python]"))
		return hsl(175, 0.55, 0.45 + (double)(v % 15) / 100);
	/* Kernel frames (SU_RESOLVED_KERNEL): orange, as perf users know
	 * them from flamegraph.pl's kernel colour. */
	if (!strcmp(mod, "[kernel.kallsyms]"))
		return hsl(28, 0.85, 0.50 + (double)(v % 12) / 100);
	uint64_t const hm = colour_hash(mod);
	double const hue = (double)(hm % 1000) * 0.27;
	return hsl(hue, 0.55 + (double)(v % 30) / 100, 0.58 + (double)((v >> 16) % 16) / 100);
}

static struct rgb module_colour(const char *mod)
{
	uint64_t const hm = colour_hash(mod);
	return hsl((double)(hm % 1000) * 0.27, 0.7, 0.65);
}

/* ---- output ------------------------------------------------------------------ */

/* S escaped for XML text and attributes. */
static void xml_put(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fputc(*s, out);
		}
	}
}

/* S as a JavaScript string literal inside CDATA: anything but [A-Za-z0-9
 * ._+-/] ASCII as \uXXXX, so neither the quote nor "]]>" can appear. */
static void js_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char const c = *p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' || c == '.' ||
		    c == '_' || c == '+' || c == '-' || c == '/' || c >= 0x80)
			fputc(c, out); /* UTF-8 continues as is (sanitized) */
		else
			fprintf(out, "\\u%04x", c);
	}
	fputc('"', out);
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The label that fits W px: the name, or its start and "..", or nothing. */
static void put_label(FILE *out, const char *name, double w)
{
	double const fit = floor((w - 6) / CHARW);
	if (fit < 3)
		return;
	size_t const chars = utf8_chars(name);
	if ((double)chars <= fit) {
		xml_put(out, name);
		return;
	}
	size_t keep = (size_t)fit - 2, i = 0;
	char *cut = strdup(name);
	if (!cut)
		return;
	for (char *p = cut; *p; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && i++ == keep) {
			*p = 0;
			break;
		}
	}
	xml_put(out, cut);
	fputs("..", out);
	free(cut);
}

static void put_percent(FILE *out, uint64_t part, uint64_t total)
{
	fprintf(out, "%.2f%%", total ? 100.0 * (double)part / (double)total : 0.0);
}

/* N of UNIT (NULL: samples). */
static void put_count(FILE *out, uint64_t n, const char *unit)
{
	if (unit)
		fprintf(out, "%llu %s", (unsigned long long)n, unit);
	else
		fprintf(out, "%llu sample%s", (unsigned long long)n, n == 1 ? "" : "s");
}

/* The details of a frame: "name (module) — N samples, P%". */
static void put_details(FILE *out, const char *name, const char *mod, uint64_t n, uint64_t total,
			const char *unit)
{
	xml_put(out, name);
	if (mod[0]) {
		fputs(" (", out);
		xml_put(out, mod);
		fputc(')', out);
	}
	fputs(" \xe2\x80\x94 ", out);
	put_count(out, n, unit);
	fputs(", ", out);
	put_percent(out, n, total);
}

static const char style[] =
	"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#subtitle { fill: #555; text-anchor: middle; }\n"
	".f { cursor: pointer; }\n"
	".f:hover rect { stroke: #000; stroke-width: 0.6; }\n"
	".f text { pointer-events: none; }\n"
	".btn { cursor: pointer; fill: #1a5fb4; }\n"
	".btn:hover { text-decoration: underline; }\n"
	".hide { display: none; }\n"
	".dim { opacity: 0.45; }\n"
	"#matched { text-anchor: end; }\n";

/* The script: hover details, click to zoom (the clicked frame spans the
 * width, its ancestors stay dimmed, unrelated frames hide), search
 * (regex, or substring when the term is no regex) with the share of
 * samples matched, reset; Ctrl-F searches, Esc resets all. */
static const char script[] =
	"var svg = document.documentElement, frames = [], zoomed = null, term = null;\n"
	"var details, matched, unzoom, searchbtn;\n"
	"var W = WIDTH - 2 * PAD;\n"
	"function label(f, w) {\n"
	"  var fit = Math.floor((w - 6) / CHARW);\n"
	"  if (fit < 3) return '';\n"
	"  return f.name.length <= fit ? f.name : f.name.slice(0, fit - 2) + '..';\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  f.r.setAttribute('x', x.toFixed(2)); f.r.setAttribute('width', w.toFixed(2));\n"
	"  f.t.setAttribute('x', (x + 3).toFixed(2)); f.t.textContent = label(f, w);\n"
	"}\n"
	"function init() {\n"
	"  details = document.getElementById('details'); matched = document.getElementById('matched');\n"
	"  unzoom = document.getElementById('unzoom'); searchbtn = document.getElementById('search');\n"
	"  var gs = document.querySelectorAll('g.f');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.querySelector('rect'), m = +r.getAttribute('data-m');\n"
	"    var title = g.querySelector('title').textContent;\n"
	"    var suffix = (MODS[m] ? ' (' + MODS[m] + ')' : '') + ' \\u2014 ';\n"
	"    var f = { g: g, r: r, t: g.querySelector('text'), title: title,\n"
	"      name: title.slice(0, title.lastIndexOf(suffix)), fill: r.getAttribute('fill'),\n"
	"      s: +r.getAttribute('data-s'), n: +r.getAttribute('data-n'), d: +r.getAttribute('data-d') };\n"
	"    g.frame = f; frames.push(f);\n"
	"  }\n"
	"  var all = document.getElementById('frames');\n"
	"  all.addEventListener('mouseover', function (e) {\n"
	"    var g = e.target.closest('g.f'); if (g) details.textContent = g.frame.title; });\n"
	"  all.addEventListener('mouseout', function (e) {\n"
	"    var g = e.target.closest('g.f'); if (g) details.textContent = ' '; });\n"
	"  all.addEventListener('click', function (e) {\n"
	"    var g = e.target.closest('g.f'); if (g) zoom(g.frame); });\n"
	"  unzoom.addEventListener('click', function () { zoom(null); });\n"
	"  searchbtn.addEventListener('click', function () { if (term !== null) search(null); else ask(); });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) { e.preventDefault(); ask(); }\n"
	"    else if (e.key === 'Escape') { zoom(null); search(null); }\n"
	"  });\n"
	"}\n"
	"function zoom(z) {\n"
	"  if (z && z.d === 0) z = null; /* the root: the whole picture */\n"
	"  zoomed = z;\n"
	"  var s = z ? z.s : 0, n = z ? z.n : TOTAL, d = z ? z.d : 0;\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i], cl = f.g.classList;\n"
	"    if (f.d < d && f.s <= s && f.s + f.n >= s + n) {\n"
	"      cl.remove('hide'); cl.add('dim'); place(f, PAD, W);\n"
	"    } else if (f.d >= d && f.s >= s && f.s + f.n <= s + n) {\n"
	"      cl.remove('hide'); cl.remove('dim'); place(f, PAD + (f.s - s) * W / n, f.n * W / n);\n"
	"    } else {\n"
	"      cl.add('hide'); cl.remove('dim');\n"
	"    }\n"
	"  }\n"
	"  unzoom.classList.toggle('hide', !z);\n"
	"}\n"
	"function ask() {\n"
	"  var t = window.prompt('Search frames (regular expression or text):', term || '');\n"
	"  if (t) search(t);\n"
	"}\n"
	"function search(t) {\n"
	"  term = t;\n"
	"  var re = null;\n"
	"  if (t !== null) { try { re = new RegExp(t); } catch (e) { re = null; } }\n"
	"  var hits = [];\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i];\n"
	"    var hit = t !== null && (re ? re.test(f.name) : f.name.indexOf(t) >= 0);\n"
	"    f.r.setAttribute('fill', hit ? 'rgb(230,0,230)' : f.fill);\n"
	"    f.g.classList.toggle('match', hit);\n"
	"    if (hit) hits.push(f);\n"
	"  }\n"
	"  if (t === null) { matched.textContent = ' '; searchbtn.textContent = 'Search'; return; }\n"
	"  hits.sort(function (a, b) { return a.s - b.s || b.n - a.n; });\n"
	"  var covered = 0, end = -1;\n"
	"  for (var k = 0; k < hits.length; k++) {\n"
	"    var a = hits[k].s, b = hits[k].s + hits[k].n;\n"
	"    if (b <= end) continue;\n"
	"    covered += b - Math.max(a, end); end = b;\n"
	"  }\n"
	"  matched.textContent = 'Matched: ' + (TOTAL ? 100 * covered / TOTAL : 0).toFixed(2) + '%';\n"
	"  searchbtn.textContent = 'Reset Search';\n"
	"}\n"
	"/* The script comes before the frames: start once they are parsed. */\n"
	"if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);\n"
	"else init();\n";

struct layout {
	double scale;          /* px per sample */
	uint32_t max_depth;
	uint64_t total;
};

static double row_y(const struct flame_opts *o, const struct layout *L, uint32_t depth)
{
	return o->icicle ? TOP + (double)depth * ROW : TOP + (double)(L->max_depth - depth) * ROW;
}

static int cmp_sibling(const struct flame *f, uint32_t a, uint32_t b)
{
	const struct node *x = &f->node[a], *y = &f->node[b];
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	int c = strcmp(f->str[x->name], f->str[y->name]);
	return c ? c : strcmp(f->str[x->mod], f->str[y->mod]);
}

static int cmp_sibling_q(const void *a, const void *b, void *f)
{
	return cmp_sibling(f, *(const uint32_t *)a, *(const uint32_t *)b);
}

static int cmp_mod(const void *a, const void *b, void *ctx)
{
	const struct flame *f = ctx;
	uint32_t const x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (f->mod_self[x] != f->mod_self[y])
		return f->mod_self[x] > f->mod_self[y] ? -1 : 1;
	return strcmp(f->str[x], f->str[y]);
}

static void write_legend(FILE *out, struct flame *f, const struct flame_opts *o, uint64_t total)
{
	uint32_t *mods = malloc((f->n_str ? f->n_str : 1) * sizeof(*mods));
	size_t n = 0;
	if (!mods)
		return;
	for (uint32_t i = 0; i < f->n_str; i++)
		if (i < f->n_mod_self && f->mod_self[i] && f->str[i][0])
			mods[n++] = i;
	qsort_r(mods, n, sizeof(*mods), cmp_mod, f);
	double x = PAD;
	double const y = TOP - 14;
	fputs("<g id=\"legend\">\n", out);
	for (size_t i = 0; i < n; i++) {
		const char *m = f->str[mods[i]];
		char pct[32];
		snprintf(pct, sizeof(pct), " %.1f%%", total ? 100.0 * (double)f->mod_self[mods[i]] / (double)total : 0.0);
		double const w = 14 + CHARW * (double)(utf8_chars(m) + strlen(pct)) + 14;
		if (x + w > o->width - PAD - CHARW * 10 && i + 1 < n) {
			fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">+%zu more</text>\n", x, y + 9, n - i);
			break;
		}
		struct rgb const c = module_colour(m);
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"rgb(%u,%u,%u)\"/>", x, y,
			c.r, c.g, c.b);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\"><title>samples whose leaf is in ", x + 14, y + 9);
		xml_put(out, m);
		fputs("</title>", out);
		xml_put(out, m);
		fprintf(out, "%s</text>\n", pct);
		x += w;
	}
	fputs("</g>\n", out);
	free(mods);
}

static int write_svg(FILE *out, struct flame *f, const struct flame_opts *o, struct flame_result *res)
{
	struct layout L = { .total = f->node[0].total };
	L.scale = L.total ? (double)(o->width - 2 * PAD) / (double)L.total : 0;
	/* A child is never wider than its parent: visibility is by width alone. */
	for (size_t i = 0; i < f->n_node; i++) {
		int const vis = i == 0 || (double)f->node[i].total * L.scale >= o->min_width;
		if (vis) {
			res->frames++;
			if (f->node[i].depth > L.max_depth)
				L.max_depth = f->node[i].depth;
		} else {
			res->omitted++;
		}
	}
	res->samples = L.total;
	uint32_t *stack = malloc(f->n_node * sizeof(*stack));
	f->mod_index = malloc(f->n_str * sizeof(*f->mod_index));
	if (!stack || !f->mod_index) {
		free(stack);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->n_str; i++)
		f->mod_index[i] = NONE;
	double const height = TOP + (double)(L.max_depth + 1) * ROW + BOTTOM;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%.0f\" viewBox=\"0 0 %u %.0f\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n",
		o->width, height, o->width, height);
	fputs("<!-- stackunwind flamegraph: hover for details, click a frame to zoom, "
	      "Search (or Ctrl-F) to highlight, Esc to reset -->\n", out);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", style);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n\"use strict\";\n"
		"var WIDTH = %u, PAD = %d, CHARW = %.1f, TOTAL = %llu;\nvar MODS = [",
		o->width, PAD, CHARW, (unsigned long long)L.total);
	/* The modules, in the order of their first frame: data-m indexes them. */
	uint32_t n_mods = 0;
	for (size_t i = 0; i < f->n_node; i++) {
		uint32_t const m = i == 0 ? 0 : f->node[i].mod;
		if (f->mod_index[m] != NONE)
			continue;
		f->mod_index[m] = n_mods;
		if (n_mods++)
			fputc(',', out);
		js_string(out, f->str[m]);
	}
	fprintf(out, "];\n%s]]></script>\n", script);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%.0f\" fill=\"#fdfdf8\"/>\n", o->width, height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"22\">", o->width / 2.0);
	xml_put(out, o->title ? o->title : "Flame Graph");
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"40\">", o->width / 2.0);
	put_count(out, L.total, o->unit);
	fprintf(out, "%s%s", o->reverse ? ", reversed (merged from the leaf)" : "",
		o->icicle ? ", icicle" : "");
	if (res->omitted)
		fprintf(out, "; %llu frames narrower than %g px left out", (unsigned long long)res->omitted,
			o->min_width);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"22\">Reset Zoom</text>\n", PAD);
	fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"22\" style=\"text-anchor: end\">Search</text>\n",
		o->width - PAD);
	write_legend(out, f, o, L.total);

	/* Frames in depth-first order, parents before children. */
	size_t sp = 0;
	stack[sp++] = 0;
	f->node[0].start = 0;
	fputs("<g id=\"frames\">\n", out);
	while (sp) {
		uint32_t const id = stack[--sp];
		struct node *x = &f->node[id];
		double const fx = PAD + (double)x->start * L.scale, w = (double)x->total * L.scale;
		const char *name = id == 0 ? "all" : f->str[x->name];
		const char *mod = id == 0 ? "" : f->str[x->mod];
		struct rgb const c = id == 0 ? (struct rgb){ 200, 200, 200 } : frame_colour(name, mod);
		fputs("<g class=\"f\"><title>", out);
		put_details(out, name, mod, x->total, L.total, o->unit);
		fprintf(out, "</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
			"fill=\"rgb(%u,%u,%u)\" data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\" data-m=\"%u\"/>"
			"<text x=\"%.2f\" y=\"%.0f\">",
			fx, row_y(o, &L, x->depth), w, ROW - 1, c.r, c.g, c.b, (unsigned long long)x->start,
			(unsigned long long)x->total, x->depth, f->mod_index[id == 0 ? 0 : x->mod], fx + 3,
			row_y(o, &L, x->depth) + 11.5);
		put_label(out, name, w);
		fputs("</text></g>\n", out);
		/* Children: their starts, then pushed last first. */
		size_t const base = sp;
		uint64_t cs = x->start;
		for (uint32_t k = x->first; k != NONE; k = f->node[k].next) {
			f->node[k].start = cs;
			cs += f->node[k].total;
			if ((double)f->node[k].total * L.scale >= o->min_width)
				stack[sp++] = k;
		}
		for (size_t a = base, b = sp; a + 1 < b; a++, b--) {
			uint32_t const t = stack[a];
			stack[a] = stack[b - 1];
			stack[b - 1] = t;
		}
	}
	free(stack);
	fputs("</g>\n", out);
	double const by = TOP + (double)(L.max_depth + 1) * ROW + 22;
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n", PAD, by);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%.0f\"> </text>\n", o->width - PAD, by);
	fputs("</svg>\n", out);
	return 0;
}

int flame_write(FILE *out, const struct flame_stack *stacks, size_t n, const struct flame_opts *opts,
		struct flame_result *res)
{
	struct flame_opts o = *opts;
	struct flame f = { 0 };
	struct frame_ref *buf = NULL;
	size_t cap = 0;
	uint32_t *order = NULL;
	int rc = -ENOMEM;
	if (!o.width)
		o.width = 1200;
	if (o.min_width < 0)
		o.min_width = 0.1;
	memset(res, 0, sizeof(*res));
	if (new_node(&f, NONE, 0, 0) < 0 || intern(&f, "", 0) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if ((rc = add_stack(&f, stacks[i].key, stacks[i].count, o.reverse, &buf, &cap)) < 0)
			goto out;
	rc = -ENOMEM;
	/* Siblings by name, then module: relink each parent's children. */
	if (f.n_node > 1) {
		order = malloc((f.n_node - 1) * sizeof(*order));
		if (!order)
			goto out;
		for (uint32_t i = 1; i < f.n_node; i++)
			order[i - 1] = i;
		qsort_r(order, f.n_node - 1, sizeof(*order), cmp_sibling_q, &f);
		for (size_t i = f.n_node - 1; i-- > 0;) {
			struct node *x = &f.node[order[i]];
			x->next = f.node[x->parent].first;
			f.node[x->parent].first = order[i];
		}
	}
	rc = write_svg(out, &f, &o, res);
out:
	free(order);
	free(buf);
	for (size_t i = 0; i < f.n_str; i++)
		free(f.str[i]);
	free(f.str);
	su_hmap_free(&f.str_map);
	free(f.node);
	su_hmap_free(&f.child_map);
	free(f.mod_self);
	free(f.mod_index);
	return rc;
}
