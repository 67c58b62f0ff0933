/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "common/io.h"

int su_writev_all(int fd, struct iovec *v, int n)
{
	while (n) {
		ssize_t w = writev(fd, v, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		/* On from the byte after the last written. */
		size_t done = (size_t)w;
		while (n && done >= v->iov_len) {
			done -= v->iov_len;
			v++;
			n--;
		}
		if (n) {
			v->iov_base = (char *)v->iov_base + done;
			v->iov_len -= done;
		}
	}
	return 0;
}

int su_write_all(int fd, const void *data, size_t len)
{
	struct iovec v = { (void *)(uintptr_t)data, len };
	return len ? su_writev_all(fd, &v, 1) : 0;
}
