/* The babeltrace2 graph both babeltrace2-based event sources run
 * (trace/source-babeltrace2.c, trace/source-lttng.c): src.ctf.fs on each
 * trace directory -> flt.utils.muxer -> a sink handing every message, in
 * time order, to a callback. */
#ifndef STACKCAP_BT2_GRAPH_H
#define STACKCAP_BT2_GRAPH_H

#include <stddef.h>
#include <babeltrace2/babeltrace.h>

/* Called with each message (borrowed): 0 to go on, a positive value to
 * stop reading, a negative -errno to fail. */
typedef int (*su_bt2_message_fn)(void *arg, const bt_message *msg);

/* Read the N CTF trace directories DIRS through FN; WHAT names them in
 * messages ("the trace").  @return 0 when read to the end or stopped, FN's
 * negative return, or -errno (-EIO: babeltrace2 failed, -ENOENT: its
 * plugins are missing); a message in ERR unless it already holds one. */
int su_bt2_read_ctf(const char *const *dirs, size_t n, const char *what, su_bt2_message_fn fn, void *arg,
		    char *err, size_t errlen);

/* Make libbabeltrace2 callable: loaded at the first call in the programs
 * that link trace/bt2-lazy.c (stackunwind, stackcap); nothing to do in
 * those that link the library.  su_bt2_read_ctf calls it: the only way
 * into babeltrace2 (every other bt_* call is made from its callbacks).
 * @return 0, or -1 with a message in ERR. */
int su_bt2_load(char *err, size_t errlen);

#endif
