#!/bin/sh
# bench/compare-builds.sh OLD_BUILD NEW_BUILD TRACE... : `stackunwind stacks
# -j 1` and `folded -j 1` of two builds on the same traces (perf.data files
# or stackcap trace directories), runs alternated (old, new, old, new...)
# so both see the same machine; per trace and output the median of RUNS
# (default 5) wall times and CPU times (user + sys), and new/old ratios.
# Outputs are compared too: a difference is said (a speed-up must not
# change what is printed).  Numbers go to docs/BENCHMARKS.md with the
# machine and date this prints.
set -eu
OLD=${1:?usage: bench/compare-builds.sh OLD_BUILD NEW_BUILD TRACE...}
NEW=${2:?usage: bench/compare-builds.sh OLD_BUILD NEW_BUILD TRACE...}
shift 2
RUNS=${RUNS:-5}
command -v /usr/bin/time >/dev/null || { echo "bench/compare-builds.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
export STACKCAP_CACHE_DIR="$w/cache"

echo "machine: $(nproc) cores, $(sed -n 's/^model name[ 	]*: //p' /proc/cpuinfo | head -n 1), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-24s %-7s %9s %9s %7s %9s %9s %7s %s\n' trace output "old wall" "new wall" ratio "old cpu" "new cpu" ratio outputs
for t in "$@"; do
	for mode in stacks folded; do
		"$OLD/cli/stackunwind" "$mode" -j 1 "$t" >"$w/old.out" 2>/dev/null || true
		"$NEW/cli/stackunwind" "$mode" -j 1 "$t" >"$w/new.out" 2>/dev/null || true
		same=identical
		cmp -s "$w/old.out" "$w/new.out" || same=DIFFERENT
		: >"$w/times"
		i=0
		while [ "$i" -lt "$RUNS" ]; do
			for b in old new; do
				[ "$b" = old ] && B=$OLD || B=$NEW
				/usr/bin/time -f "%e %U %S" -o "$w/t" "$B/cli/stackunwind" "$mode" -j 1 "$t" >/dev/null 2>&1 || true
				echo "$b $(cat "$w/t")" >>"$w/times"
			done
			i=$((i + 1))
		done
		awk -v t="$(basename "$t")" -v m="$mode" -v same="$same" '
			function median(s,   a, n) { n = split(s, a, " "); asort(a); return a[int((n + 1) / 2)] }
			{ wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " ($3 + $4) }
			END {
				ow = median(wall["old"]); nw = median(wall["new"]); oc = median(cpu["old"]); nc = median(cpu["new"])
				printf "%-24s %-7s %9.3f %9.3f %6.2fx %9.3f %9.3f %6.2fx %s\n", t, m, ow, nw, (nw > 0 ? ow / nw : 0),
					oc, nc, (nc > 0 ? oc / nc : 0), same
			}' "$w/times"
	done
done
