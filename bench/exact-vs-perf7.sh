#!/bin/sh
# bench/exact-vs-perf7.sh BUILD_DIR PERF.DATA: our frames beside perf 7's,
# sample by sample, on one perf.data (record one with `perf record -k
# monotonic -e cpu-clock --call-graph dwarf -a` while the machine does what
# it does: docs/BENCHMARKS.md, "A system-wide perf.data of a mixed
# machine").  `stackunwind stacks` against `perf script` of perf 7.x (the
# trixie chroot of PERF7_SH, default /work/shared/tools/perf7.sh, reading
# this machine's binaries through --symfs=/hostroot), user frames only
# (perf 7 prints a caller's address minus one: undone before comparing,
# inlined frames at one address counted once).  Prints, per sample class:
# the same frames; ours longer with the rest equal (perf 7 stopped); perf 7
# longer; a frame different (with the first few of each), and per program
# how many of ours ended early and how.  Then the names of the frames both
# have: the same, perf 7's [unknown], different.  Exactness, not speed:
# perf 7 may take minutes on a file with big C++ binaries (its inline
# lookups).  Needs python3 (scripts/install-deps.sh) and root for the
# chroot.
set -eu
B=${1:?usage: bench/exact-vs-perf7.sh BUILD_DIR PERF.DATA}
DATA=${2:?usage: bench/exact-vs-perf7.sh BUILD_DIR PERF.DATA}
B=$(cd "$B" && pwd)
DATA=$(cd "$(dirname "$DATA")" && pwd)/$(basename "$DATA")
PERF7=${PERF7_SH:-/work/shared/tools/perf7.sh}
command -v python3 >/dev/null || { echo "$0: python3 missing: scripts/install-deps.sh installs it" >&2; exit 1; }
[ -x "$PERF7" ] || { echo "$0: $PERF7 missing (perf 7 in a trixie chroot); PERF7_SH=PATH names it" >&2; exit 1; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT

"$B/cli/stackunwind" stacks -j 1 "$DATA" >"$w/ours" 2>"$w/ours.err"
tail -n 1 "$w/ours.err" >&2
case $DATA in
/tmp/*) P7DATA=$DATA ;;
*) P7DATA=/hostroot$DATA ;;
esac
t0=$(date +%s)
"$PERF7" perf script --symfs=/hostroot -i "$P7DATA" -F comm,tid,time,ip,sym,dso >"$w/perf7" 2>"$w/perf7.err"
echo "perf 7 script: $(($(date +%s) - t0)) s" >&2

python3 - "$w/ours" "$w/perf7" <<'EOF'
import collections, sys

def samples(path, ours):
    out = []
    cur = None
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line.strip():
            continue
        if not line[0].isspace():
            cur = [line.split()[0], [], None]
            out.append(cur)
            continue
        f = line.split()
        ip = int(f[0], 16)
        rest = line.strip()[len(f[0]):].strip()
        if ip == 0 and rest.startswith('['):
            cur[2] = rest.split()[0]          # our end marker
            continue
        if ip >= 0xffff800000000000:
            continue                          # kernel frames
        name = rest[:rest.find(' (')] if ' (' in rest else rest
        if ours and '+0x' in name:
            name = name[:name.rfind('+0x')]
        if cur[1] and cur[1][-1][0] == ip:
            continue                          # an inlined frame at the same address
        cur[1].append((ip, name))
    return out

a = samples(sys.argv[1], True)
b = samples(sys.argv[2], False)
if len(a) != len(b):
    sys.exit('sample counts differ: ours %d, perf 7 %d' % (len(a), len(b)))
kinds = collections.Counter()
ends = collections.Counter()
examples = collections.defaultdict(list)
names = collections.Counter()
renamed = collections.Counter()
for (comm, fa, end), (_, fb, _) in zip(a, b):
    ia = [ip for ip, _ in fa]
    ib = [ip + (1 if i else 0) for i, (ip, _) in enumerate(fb)]
    if end:
        ends[(comm, end)] += 1
    if ia == ib:
        kind = 'the same frames'
    else:
        n = 0
        while n < min(len(ia), len(ib)) and ia[n] == ib[n]:
            n += 1
        if n == len(ib):
            kind = 'ours longer, the rest equal'
        elif n == len(ia):
            kind = 'perf 7 longer'
        else:
            kind = 'a frame different'
        if kind != 'ours longer, the rest equal' and len(examples[kind]) < 5:
            examples[kind].append((comm, n, fa[n:n + 2], fb[n:n + 2]))
    kinds[kind] += 1
    ours_at = {}
    for ip, name in fa:
        ours_at.setdefault(ip, name)
    for i, (ip, name) in enumerate(fb):
        mine = ours_at.get(ip + (1 if i else 0))
        if mine is None:
            continue
        kind = 'the same' if mine == name else "perf 7's [unknown]" if name == '[unknown]' else 'different'
        names[kind] += 1
        if kind == 'different':
            renamed[(mine, name)] += 1
print('samples: %d' % len(a))
for k in ('the same frames', 'ours longer, the rest equal', 'perf 7 longer', 'a frame different'):
    print('  %-30s %d' % (k, kinds[k]))
for k, ex in examples.items():
    print('  %s, first ones:' % k)
    for e in ex:
        print('    %s at frame %d: ours %s, perf 7 %s' % e)
print('our early ends, by program:')
for (comm, end), n in ends.most_common(15):
    print('  %-20s %-14s %d' % (comm, end, n))
print('names of the frames both have: ' + ', '.join('%s %d' % kv for kv in names.most_common()))
for (mine, name), n in renamed.most_common(8):
    print('  %6d ours %s, perf 7 %s' % (n, mine[:70], name[:70]))
EOF
