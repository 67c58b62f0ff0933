#!/bin/sh
# tests/stress.sh, a subset, recorded with libstackcap built with
# TSan (capture/local.mk) after the sanitizer's runtime.
export STRESS_SAN=tsan
# Only the groups that pass under TSan so far: forks, dlopen, vfork,
# ownprof, itimer and killself are still being worked on (issue 8).
export STRESS_ONLY="${STRESS_ONLY:-threads sigalt longjmp}"
exec sh "${top_srcdir:?}/tests/stress.sh"
