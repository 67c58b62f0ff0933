/* `stackcap convert`: a perf.data file re-encoded as a stackcap trace. */
#ifndef STACKCAP_CLI_CONVERT_H
#define STACKCAP_CLI_CONVERT_H

/* ARGV[0] is "convert".  @return the exit status (0, 1 error, 2 usage,
 * 3 some of the perf.data could not be read). */
int stackcap_convert(int argc, char **argv);

#endif
