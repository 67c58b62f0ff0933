/* tdata-dlopen: the hot function lives in a dlopen'ed plugin.
 *
 *   main -> load_and_run -> [dlopen, dlsym] plugin_entry -> plugin_hot
 *
 * plugin_entry and plugin_hot are in libtdata-plugin.so, which is not linked
 * in: it is found at run time as, in this order,
 *   1. the path given with -p PATH,
 *   2. the path in the environment variable TDATA_PLUGIN (if not empty),
 *   3. DIR/.libs/libtdata-plugin.so, then DIR/libtdata-plugin.so, where DIR
 *      is the directory of /proc/self/exe (libtool puts the module in .libs/
 *      of the build tree; this works from any working directory).
 * plugin_hot burns SECONDS of thread CPU time (default 1).
 *
 * --reload: after half of the time, dlclose the plugin, check that it is no
 * longer mapped, reserve its old address range with an inaccessible
 * placeholder mapping, dlopen it again (so it must land at a different
 * address), check that, and burn the other half.  The maps thus change twice
 * while the hot chain runs, and samples from the first half only symbolize
 * correctly with the maps recorded at their time.
 *
 * Exits 1 with a message on stderr if the plugin cannot be found or loaded or
 * a --reload check fails.
 *
 * Usage: tdata-dlopen [--chain] [--reload] [-p PATH] [SECONDS]
 */
#include <dlfcn.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tdata.h"
#include "tdata-plugin.h"

static const char *const chain[] = {
	"plugin_hot", "plugin_entry", "load_and_run", "main",
};

struct span {
	uintptr_t lo, hi; /* lo == hi: not mapped */
};

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("tdata-dlopen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* The address range covering every mapping of file REAL (a canonical path). */
static struct span mapped_span(const char *real)
{
	struct span s = { 0, 0 };
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");

	if (f == NULL)
		die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		int path_at = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 || path_at == 0)
			continue;
		if (strcmp(line + path_at, real) != 0)
			continue;
		if (s.lo == s.hi || lo < s.lo)
			s.lo = lo;
		if (hi > s.hi)
			s.hi = hi;
	}
	fclose(f);
	return s;
}

/* Where the plugin is (see the comment at the top); BUF has PATH_MAX bytes. */
static const char *find_plugin(const char *opt, char *buf)
{
	const char *env = getenv("TDATA_PLUGIN");
	char exe[PATH_MAX], *dir;
	ssize_t n;

	if (opt != NULL)
		return opt;
	if (env != NULL && env[0] != '\0')
		return env;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		die("/proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	dir = dirname(exe);
	snprintf(buf, PATH_MAX, "%s/.libs/%s", dir, TDATA_PLUGIN_NAME);
	if (access(buf, R_OK) == 0)
		return buf;
	snprintf(buf, PATH_MAX, "%s/%s", dir, TDATA_PLUGIN_NAME);
	if (access(buf, R_OK) == 0)
		return buf;
	die("cannot find %s in %s/.libs or %s; give its path with -p PATH or TDATA_PLUGIN",
	    TDATA_PLUGIN_NAME, dir, dir);
}

static tdata_plugin_entry_fn open_plugin(const char *path, void **handle)
{
	tdata_plugin_entry_fn fn;

	*handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (*handle == NULL)
		die("dlopen: %s", dlerror());
	fn = (tdata_plugin_entry_fn)dlsym(*handle, TDATA_PLUGIN_ENTRY);
	if (fn == NULL)
		die("dlsym(%s): %s", TDATA_PLUGIN_ENTRY, dlerror());
	return fn;
}

/* Unload the plugin and block its old range so the next load goes elsewhere. */
static void unload_and_block(void *handle, const char *real)
{
	struct span old = mapped_span(real), gone;
	void *p;

	if (old.lo == old.hi)
		die("%s is not in /proc/self/maps while loaded", real);
	if (dlclose(handle) != 0)
		die("dlclose: %s", dlerror());
	gone = mapped_span(real);
	if (gone.lo != gone.hi)
		die("%s still mapped after dlclose", real);
	p = mmap((void *)old.lo, old.hi - old.lo, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)old.lo)
		die("cannot reserve the plugin's old range %#lx-%#lx",
		    (unsigned long)old.lo, (unsigned long)old.hi);
}

TD_FRAME static uint64_t load_and_run(const char *path, double seconds, int reload)
{
	char real[PATH_MAX];
	void *handle;
	tdata_plugin_entry_fn entry = open_plugin(path, &handle);
	uint64_t r;
	uintptr_t first;

	if (!reload) {
		r = entry(seconds);
		TD_KEEP();
		return r;
	}

	if (realpath(path, real) == NULL)
		die("%s: %s", path, strerror(errno));
	first = mapped_span(real).lo;
	r = entry(seconds / 2);
	TD_KEEP();
	unload_and_block(handle, real);
	entry = open_plugin(path, &handle);
	if (mapped_span(real).lo == first)
		die("the reloaded plugin is at its old address %#lx", (unsigned long)first);
	r += entry(seconds - seconds / 2);
	TD_KEEP();
	return r;
}

/* Results land here so no computation is dead. */
static volatile uint64_t sink;

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chain", no_argument, NULL, 'c' },
		{ "reload", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	static char buf[PATH_MAX];
	const char *opt_path = NULL;
	double seconds = 1.0;
	int want_chain = 0, reload = 0, c;

	while ((c = getopt_long(argc, argv, "p:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			want_chain = 1;
			break;
		case 'r':
			reload = 1;
			break;
		case 'p':
			opt_path = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind + 1 < argc || (optind < argc && td_parse_seconds(argv[optind], &seconds) != 0))
		goto usage;
	if (want_chain) {
		td_print_chain(chain, sizeof chain / sizeof chain[0]);
		return 0;
	}

	sink = load_and_run(find_plugin(opt_path, buf), seconds, reload);
	TD_KEEP();
	return 0;
usage:
	fprintf(stderr, "usage: %s [--chain] [--reload] [-p PATH] [SECONDS]\n", argv[0]);
	return 2;
}
