/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/io.h"

ssize_t su_read_full(int fd, void *dst, size_t len, off_t off)
{
	uint8_t *const d = dst;
	size_t got = 0;
	while (got < len) {
		ssize_t const n = off < 0 ? read(fd, d + got, len - got) : pread(fd, d + got, len - got, off + (off_t)got);
		if (n == 0)
			break;
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -errno;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return (ssize_t)got;
}

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

rlim_t su_nofile_raise(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return RLIM_INFINITY;
	rlim_t const top = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20) ? (1u << 20) : rl.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= top)
		return RLIM_INFINITY;
	rlim_t const was = rl.rlim_cur;
	rl.rlim_cur = top;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? was : RLIM_INFINITY;
}

void su_nofile_restore(rlim_t was)
{
	struct rlimit rl;
	if (was == RLIM_INFINITY || getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rl.rlim_cur = was;
	setrlimit(RLIMIT_NOFILE, &rl);
}

int su_copy_fd(int fd, int out, uint64_t max, uint64_t *bytes)
{
	off_t at = 0;
	for (uint64_t done = 0; done < max;) {
		size_t const want = max - done < (1u << 20) ? (size_t)(max - done) : 1u << 20;
		ssize_t const n = copy_file_range(fd, &at, out, NULL, want, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) && done == 0)
			break; /* not between these file systems: by hand, below */
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		done += (uint64_t)n;
		*bytes += (uint64_t)n;
		if (done >= max)
			return 0;
	}
	if (at != 0)
		return 0;
	char buf[1 << 16];
	for (uint64_t done = 0; done < max;) {
		size_t const want = max - done < sizeof(buf) ? (size_t)(max - done) : sizeof(buf);
		ssize_t const r = pread(fd, buf, want, (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		int const w = su_write_all(out, buf, (size_t)r);
		if (w)
			return w;
		done += (uint64_t)r;
		*bytes += (uint64_t)r;
	}
	return 0;
}

const char *su_proc_self_path(char *buf, size_t size, const char *rest)
{
	/* 1: /proc/thread-self exists, -1: not, 0: not asked yet (a race
	 * asks twice: the same answer). */
	static _Atomic int thread_self;
	int ts = atomic_load_explicit(&thread_self, memory_order_relaxed);
	if (!ts) {
		ts = access("/proc/thread-self", F_OK) == 0 ? 1 : -1;
		atomic_store_explicit(&thread_self, ts, memory_order_relaxed);
	}
	const char *const dir = ts > 0 ? "/proc/thread-self/" : "/proc/self/";
	size_t const dl = strlen(dir), rl = strlen(rest);
	if (size < dl + rl + 1) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	memcpy(buf, dir, dl);
	memcpy(buf + dl, rest, rl + 1);
	return buf;
}
