/* The interface between tdata-dlopen and its plugin, libtdata-plugin.so. */
#ifndef STACKCAP_TDATA_PLUGIN_H
#define STACKCAP_TDATA_PLUGIN_H

#include <stdint.h>

#define TDATA_PLUGIN_NAME  "libtdata-plugin.so"
#define TDATA_PLUGIN_ENTRY "plugin_entry"

/* Burns SECONDS of thread CPU time in plugin_hot; returns a meaningless value. */
typedef uint64_t (*tdata_plugin_entry_fn)(double seconds);
uint64_t plugin_entry(double seconds);

#endif /* STACKCAP_TDATA_PLUGIN_H */
