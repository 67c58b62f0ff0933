/* SPDX-License-Identifier: MIT */
/* The per-sample formatters of stackunwind, the pipeline's callback
 * (pipeline.h), run by each worker with its own context (worker.h):
 *  - stacks: perf script's text, a header (comm pid/tid time) and a line
 *    per frame (address, symbol+offset, module, file:line; inlined
 *    functions first), each frame's text cached per (module, address);
 *  - folded and flamegraph: one folded line (export/folded.h);
 *  - export: records for the export model (cli/export.h).
 * Names come from the resolver (symbolize/resolve.h): these only print. */
#ifndef STACKCAP_CLI_FORMAT_H
#define STACKCAP_CLI_FORMAT_H

#include "cli/pipeline.h"
#include "cli/worker.h"

/* The text of sample U, as the command of CTX (a struct worker) wants it. */
pipeline_format_fn format_sample_of;

#endif
