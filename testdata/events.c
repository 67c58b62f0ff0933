/* tdata-events: known counts of known events, for stackcap record -e.
 *
 * N rounds (default 1000, -n N); each round, under
 *
 *   main -> run_events -> event_round
 *
 * calls, in this order:
 *   write_once   one write(2) of one byte to /dev/null: a syscalls:sys_enter_write
 *                tracepoint hit, with libc's write above write_once;
 *   probe_hit    a function to put a uprobe on (tdata-events:probe_hit);
 *   sdt_site     an SDT marker tdata:tick (<sys/sdt.h>, no semaphore);
 *   guarded_site an SDT marker tdata:guarded behind its semaphore
 *                (events-sem.c): it fires only while a tracer raised
 *                the semaphore.
 * Those are every write(2) the program makes after exec: nothing is
 * printed but --chain's output.
 *
 * Usage: tdata-events [-k write|probe|sdt|guarded] [-n N] [--wait FILE] [--chain]
 *   --wait FILE: first wait until FILE exists (a tracer attached with -p
 *   creates it when ready), looking every 10 ms.
 *   --chain prints the chain of the -k event (default write), leaf first:
 *   write_once event_round run_events main (libc's write above it).
 *   --sdt says whether the SDT markers were built in (exit 0) or not
 *   (exit 1: systemtap-sdt-dev was missing at build time).
 */
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "tdata.h"
#include "tdata-events.h"

#ifdef HAVE_SYS_SDT_H
#include <sys/sdt.h>
#define TD_MARK(i) DTRACE_PROBE1(tdata, tick, i)
#else
#define TD_MARK(i) ((void)(i))
#endif

static volatile uint64_t sink;

TD_FRAME static void write_once(int fd)
{
	static const char c = 'x';
	if (write(fd, &c, 1) != 1)
		sink++;
	TD_KEEP();
}

TD_FRAME static void probe_hit(unsigned i)
{
	sink += i;
	TD_KEEP();
}

TD_FRAME static void sdt_site(unsigned i)
{
	TD_MARK(i);
	sink ^= i;
	TD_KEEP();
}

TD_FRAME static void event_round(int fd, unsigned i)
{
	write_once(fd);
	TD_KEEP();
	probe_hit(i);
	TD_KEEP();
	sdt_site(i);
	TD_KEEP();
	guarded_site(i);
	TD_KEEP();
}

TD_FRAME static void run_events(int fd, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		event_round(fd, i);
	TD_KEEP();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chain", no_argument, NULL, 'c' },
		{ "sdt", no_argument, NULL, 's' },
		{ "wait", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	const char *kind = "write", *wait_for = NULL;
	unsigned long n = 1000;
	int want_chain = 0, c;
	char *end;

	while ((c = getopt_long(argc, argv, "k:n:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': want_chain = 1; break;
		case 's':
#ifdef HAVE_SYS_SDT_H
			return 0;
#else
			fprintf(stderr, "%s: built without <sys/sdt.h> (apt-get install systemtap-sdt-dev)\n", argv[0]);
			return 1;
#endif
		case 'k': kind = optarg; break;
		case 'w': wait_for = optarg; break;
		case 'n':
			n = strtoul(optarg, &end, 10);
			if (*end || !*optarg || n > 100000000)
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	const char *leaf = !strcmp(kind, "write") ? "write_once" : !strcmp(kind, "probe") ? "probe_hit"
		: !strcmp(kind, "sdt") ? "sdt_site" : !strcmp(kind, "guarded") ? "guarded_site" : NULL;
	if (!leaf)
		goto usage;
	if (want_chain) {
		const char *const chain[] = { leaf, "event_round", "run_events", "main" };
		td_print_chain(chain, sizeof chain / sizeof chain[0]);
		return 0;
	}
	while (wait_for && access(wait_for, F_OK) != 0) {
		struct timespec const ms10 = { 0, 10 * 1000 * 1000 };
		nanosleep(&ms10, NULL);
	}
	int const fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("/dev/null");
		return 1;
	}
	run_events(fd, (unsigned)n);
	close(fd);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-k write|probe|sdt|guarded] [-n N] [--wait FILE] [--chain | --sdt]\n", argv[0]);
	return 2;
}
