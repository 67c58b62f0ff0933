#!/bin/sh
# Set up everything on a fresh Debian machine and run the main job.
# Today the main job is the codec benchmark; recording a demo program and
# writing a flamegraph come with the capture and export layers.
set -eu
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
./scripts/install-deps.sh
build=${BUILD_DIR:-$top/build}
mkdir -p "$build"
echo "== building (log: $build/quickstart-build.log)"
{ autoreconf -fi && cd "$build" && "$top/configure" && make -j2; } >"$build/quickstart-build.log" 2>&1 ||
	{ tail -n 30 "$build/quickstart-build.log"; echo "build failed"; exit 1; }
echo "== bench/codec: encoding this program's own stack at 2, 8 and 64 KiB"
"$build/bench/codec"
