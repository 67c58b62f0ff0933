#!/bin/sh
# tests/stress.sh, every scenario but the full disk, recorded with libstackcap built with
# ASan+UBSan (capture/local.mk) after the sanitizer's runtime.
export STRESS_SAN=asan
export STRESS_ONLY="${STRESS_ONLY:-threads forks dlopen recurse overflow sigalt blockprof longjmp vfork ownprof itimer killself selfprof eintr fds}"
exec sh "${top_srcdir:?}/tests/stress.sh"
