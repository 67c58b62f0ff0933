/* Copying babeltrace2 trace IR from an upstream iterator to our own output
 * (a filter may only send objects it created): trace classes, clock
 * classes, stream classes, event classes and their field classes, traces,
 * streams and packets, and the field values of every message.
 *
 * Field classes: integers (signed, unsigned), enumerations, reals,
 * strings, booleans, bit arrays, structures, static and dynamic arrays
 * (with or without a length field) and variants (with or without a
 * selector): every kind src.ctf.fs makes from CTF 1.8 (stackcap and LTTng
 * traces).  Options (CTF 2 only) are refused with a message.
 *
 * An event class may get extra payload members, appended after the copied
 * ones (the unwind filter's callstack). */
#ifndef STACKCAP_PLUGIN_IR_COPY_H
#define STACKCAP_PLUGIN_IR_COPY_H

#include <stdint.h>
#include <babeltrace2/babeltrace.h>

struct ir_copy;

/* Called when an event class is first mapped: may append members to the
 * (copied) payload structure PAYLOAD (NULL when the event class has
 * none: then return the structure to use, or NULL for none).  Returns
 * the payload to set, or NULL with *ERR set on error.  TAG is stored with
 * the mapping (ir_copy_event_tag). */
typedef bt_field_class *(*ir_extend_payload_fn)(void *arg, bt_trace_class *tc, const bt_event_class *in_ec,
						 bt_field_class *payload, int *tag, int *err);

struct ir_copy *ir_copy_new(bt_self_component *self, ir_extend_payload_fn extend, void *arg);
void ir_copy_free(struct ir_copy *c);

/* The message for downstream that mirrors IN (same type, fields copied),
 * or NULL on error (a cause appended to the current thread's error).
 * For an event message, *TAG is the tag of its event class (0: none). */
bt_message *ir_copy_message(struct ir_copy *c, bt_self_message_iterator *it, const bt_message *in, int *tag);

/* The last error's text (for logs). */
const char *ir_copy_error(const struct ir_copy *c);

#endif
