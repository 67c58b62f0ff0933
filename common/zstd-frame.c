/* SPDX-License-Identifier: MIT */
/*
 * zstd-frame.c: turn a zstd stream file (one frame per packet) back into a
 * plain CTF stream file, keeping every complete packet before any damage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <zstd.h>

#include "common/io.h"
#include "common/zstd-frame.h"

int ctf_zstd_inflate_file(const char *src, const char *dst)
{
	int in = -1, out = -1, rc = 0;
	ZSTD_DCtx *dctx = NULL;
	size_t inlen = ZSTD_DStreamInSize(), outlen = ZSTD_DStreamOutSize();
	uint8_t *ibuf = NULL, *obuf = NULL;
	uint64_t out_off = 0, good = 0; /* good: end of the last whole frame */
	size_t last = 0;                /* 0: at a frame boundary */

	if (!src || !dst)
		return -EINVAL;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto done;
	}
	dctx = ZSTD_createDCtx();
	ibuf = malloc(inlen);
	obuf = malloc(outlen);
	if (!dctx || !ibuf || !obuf) {
		rc = -ENOMEM;
		goto done;
	}
	for (int eof = 0; !eof;) {
		ssize_t n = read(in, ibuf, inlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		eof = n == 0;
		ZSTD_inBuffer ib = { ibuf, (size_t)n, 0 };
		/* At EOF, keep calling with no input to drain buffered output. */
		for (;;) {
			ZSTD_outBuffer ob = { obuf, outlen, 0 };
			if (ib.pos == ib.size && (!eof || last == 0))
				break;
			size_t ret = ZSTD_decompressStream(dctx, &ob, &ib);
			if (ZSTD_isError(ret)) {
				rc = -EBADMSG;
				break;
			}
			rc = su_write_all(out, obuf, ob.pos);
			if (rc)
				break;
			out_off += ob.pos;
			last = ret;
			if (ret == 0)
				good = out_off;
			if (eof && ob.pos == 0 && ret != 0) {
				rc = -EBADMSG; /* truncated mid-frame */
				break;
			}
		}
		if (rc)
			break;
	}
	/* Drop the output of a bad or partial frame: dst stays valid. */
	if (out_off != good && ftruncate(out, (off_t)good) < 0 && !rc)
		rc = -errno;
done:
	if (out >= 0 && close(out) < 0 && !rc)
		rc = -errno;
	close(in);
	ZSTD_freeDCtx(dctx);
	free(ibuf);
	free(obuf);
	return rc;
}
