/* SPDX-License-Identifier: MIT */
/*
 * zstd-frame.h: the zstd framing of stream files (docs/trace-format.md):
 * with --zstd each packet is one zstd frame, so a file is readable up to
 * its first damaged frame.  The writer (capture/ctf-writer.c) compresses;
 * readers that need a plain file (trace/source-babeltrace2.c: src.ctf.fs
 * reads no zstd) inflate one here.
 */
#ifndef STACKCAP_COMMON_ZSTD_FRAME_H
#define STACKCAP_COMMON_ZSTD_FRAME_H

/* Decompress a zstd stream file into a plain stream file (dst is created or
 * truncated).  Streaming, bounded memory.  A corrupt or truncated frame
 * gives -EBADMSG, and dst then holds exactly the complete packets before
 * it, so it is still a valid stream file.  @return 0 or -errno. */
int ctf_zstd_inflate_file(const char *src, const char *dst);

#endif
