#!/bin/sh
# tests/stress.sh, every scenario but the full disk, recorded with libstackcap built with
# TSan (capture/local.mk) after the sanitizer's runtime.  The same groups
# as under ASan; what TSan itself changes (signals delivered at libc calls
# only, threads after a multi-threaded fork) is in docs/RELIABILITY.md.
export STRESS_SAN=tsan
export STRESS_ONLY="${STRESS_ONLY:-threads forks dlopen recurse overflow sigalt blockprof longjmp vfork ownprof itimer killself selfprof eintr fds}"
exec sh "${top_srcdir:?}/tests/stress.sh"
