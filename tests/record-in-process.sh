#!/bin/sh
# tests/record.sh with the in-process sampler (--in-process): the
# preloaded hook, the fallback where perf events are refused.
SAMPLER=--in-process
export SAMPLER
exec sh "${top_srcdir:?}/tests/record.sh"
