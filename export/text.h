/* SPDX-License-Identifier: MIT */
/* A growable text buffer for outputs built in memory (a batch of samples,
 * a folded line), with the number formats they print by hand: printf was
 * 70% of `stackunwind stacks`.  Out of memory sets OOM and drops the rest;
 * the caller checks OOM once at the end. */
#ifndef STACKCAP_EXPORT_TEXT_H
#define STACKCAP_EXPORT_TEXT_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Text kept once and written into many outputs by reference (a stacks
 * chain's lines, ~6 KB, in every sample that repeats the chain: copying
 * them was a quarter to a third of `stackunwind stacks`).  Counted: its
 * owner's reference and one per text that holds it; the contents do not
 * change while a text holds it, so another thread may write it out. */
struct text_shared {
	_Atomic uint32_t refs;
	uint32_t cap;
	/* The text that took a reference last, while its contents were
	 * HELD_GEN (only the owner's thread puts it into texts). */
	const struct text *held_by;
	uint64_t held_gen;
	char s[];
};

/* LEN bytes of S, placed at AT of the text's own bytes. */
struct text_ref {
	size_t at;
	const char *s;
	size_t len;
};

struct text {
	char *buf;
	size_t len, cap;
	int oom;
	uint64_t gen;   /* which contents: the owner changes it when it empties BUF to
			 * fill it anew (stackunwind folded merges repeated lines of one) */
	/* BY_REF: its owner writes it out with text_write() and empties it
	 * with text_clear(), so shared text goes in by reference: REFS in
	 * order of AT, REF_BYTES their bytes, HOLDS the shared texts they
	 * keep.  Otherwise shared text is copied into BUF. */
	int by_ref;
	struct text_ref *refs;
	size_t n_refs, cap_refs, ref_bytes;
	struct text_shared **holds;
	size_t n_holds, cap_holds;
};

/* Room for N more bytes (and a NUL).  @return 0, or -1 with OOM set. */
int text_reserve(struct text *t, size_t n);
void text_put(struct text *t, const char *s, size_t n);
void text_puts(struct text *t, const char *s);
void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* V in decimal, at least MIN_DIGITS digits (zeros in front). */
void text_u64(struct text *t, uint64_t v, int min_digits);
/* "0x" and V in lowercase hex, as printf's "0x%" PRIx64. */
void text_x64(struct text *t, uint64_t v);
/* A pid or tid as perf prints it: signed, so the kernel's "no task any
 * more" (a task sampled after release_task) is -1, not 4294967295; so is
 * a signed -1 read as 64 bits (LTTng's vpid). */
void text_id(struct text *t, uint64_t id);

/* A shared text of LEN bytes of S (room for CAP >= LEN), one reference
 * (the caller's).  NULL: out of memory. */
struct text_shared *text_shared_new(const char *s, size_t len, size_t cap);
/* Let go of one reference to SH (NULL: none); the last frees it. */
void text_shared_drop(struct text_shared *sh);
/* SH (NULL: none) to hold LEN bytes of S instead: changed in place when
 * no text holds it and it has room, else let go of and a new one made.
 * @return the shared text to keep, NULL when out of memory (SH let go). */
struct text_shared *text_shared_set(struct text_shared *sh, const char *s, size_t len);
/* Is SH held by no text (its owner may change its contents)? */
int text_shared_alone(struct text_shared *sh);
/* SH's first LEN bytes into T: by reference when T->by_ref, else copied.
 * Only SH's owner's thread. */
void text_put_shared(struct text *t, struct text_shared *sh, size_t len);
/* T's bytes, its own and those it refers to. */
static inline size_t text_size(const struct text *t)
{
	return t->len + t->ref_bytes;
}
/* Write all of T to FD, in order (writev; EINTR and short writes go on).
 * @return 0 or -errno. */
int text_write(const struct text *t, int fd);
/* Pieces of texts gathered for one writev. */
struct text_iov {
	struct iovec iov[IOV_MAX];
	int n;
};
/* T's own bytes [OWN_FROM, OWN_TO) and references [REF_FROM, REF_TO)
 * (those put while its own length was in that range), in order, into V;
 * V written to FD first whenever it is full.  @return 0 or -errno. */
int text_write_range(const struct text *t, size_t own_from, size_t own_to, size_t ref_from, size_t ref_to,
		     struct text_iov *v, int fd);
/* V's pieces to FD, V emptied.  @return 0 or -errno. */
int text_iov_flush(struct text_iov *v, int fd);
/* Empty T (its references let go); GEN is the owner's to change. */
void text_clear(struct text *t);
/* Free what T holds. */
void text_free(struct text *t);

#endif
