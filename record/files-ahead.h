/* Stream files created ahead, on a thread of the recorder's own.
 *
 * A system-wide recording creates two files for each process it sees
 * (docs/trace-format.md): at ~150 processes a second on a slow file
 * system (a journal-less ext4 after many deletions: its inode allocator
 * looks for recently deleted inodes, 60% of the recorder's time) a
 * creation sometimes held the thread that drains the rings past what
 * they hold, and samples were lost (bench/sys-record.sh,
 * docs/BENCHMARKS.md).  The thread here keeps a few files ready, made
 * with O_TMPFILE (an inode, no name yet); the writer names one with
 * linkat() when a stream needs it, which fails as O_EXCL would on an
 * existing name.  Where O_TMPFILE or naming a file so is refused, the
 * writer creates its files itself, as before. */
#ifndef STACKCAP_FILES_AHEAD_H
#define STACKCAP_FILES_AHEAD_H

struct rec_files_ahead;

/* Start keeping files ready in directory DIR.  NULL: not here (no
 * memory, no thread, DIR refuses O_TMPFILE, or an open-file limit under
 * 1,024 that the files kept ready would take from the streams). */
struct rec_files_ahead *rec_files_ahead_start(const char *dir);

/* A ready file named FNAME in directory DIRFD (DIR's), opened for
 * writing (none ready: the one the thread is making, waited for), or
 * -EAGAIN (the thread cannot make them, or naming it failed for another
 * reason than the name: the caller creates it itself), -EEXIST (the
 * name is taken), or another -errno: what ctf_writer_set_create wants. */
int rec_files_ahead_take(void *fa, int dirfd, const char *fname);

/* Stop the thread and close the files not taken (their inodes go). */
void rec_files_ahead_stop(struct rec_files_ahead *fa);

#endif
