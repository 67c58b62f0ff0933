#!/bin/sh
# fresh-debian.sh 'COMMAND': run COMMAND (with sh -c) in a clean clone of
# this repository's HEAD (committed state only) on a bare Debian bookworm,
# as a new user would: debootstrap --variant=minbase, root, nothing but apt.
# The chroot is set up as a machine would be: /proc, /sys, a private /dev
# (device nodes, its own devpts, a tmpfs /dev/shm), / a mount point, and
# this machine's network settings copied in (resolver, CA certificates, apt
# sources and proxy settings: they belong to the network, not the project).
# ../shared (the project's shared directory) is placed beside the clone, as
# on CI.  Everything is torn down after, on failure and interrupt too.
# The exit status is COMMAND's.  Takes minutes: not part of `make check`;
# run it before resolving an issue that changes what the project installs
# or what its tests need.
#
# Needs root and debootstrap (apt-get install debootstrap).  The minbase
# is debootstrapped once and kept as a tarball in $STACKCAP_FRESH_CACHE
# (default /var/cache/stackcap-fresh; delete it to refresh), with the
# .deb files apt downloads; every run unpacks a pristine copy into a
# private directory under $TMPDIR.
# Mirror: $STACKCAP_FRESH_MIRROR, else this machine's first apt URI.
set -eu

me=$(basename "$0")
die() { echo "$me: $*" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: $me 'COMMAND'  (e.g. $me './check.sh')"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, mount, chroot): run it as root, e.g. sudo $0 '$1'"
command -v debootstrap >/dev/null 2>&1 ||
	die "debootstrap is missing: apt-get install debootstrap"
for t in unshare chroot mount umount mknod git tar; do
	command -v "$t" >/dev/null 2>&1 || die "$t is missing"
done

# Run in a private mount namespace: nothing mounted here is seen by (or
# propagates to) the machine, and the kernel drops it all if we are killed.
if [ -z "${STACKCAP_FRESH_NS:-}" ]; then
	STACKCAP_FRESH_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi

cmd=$1
top=$(git rev-parse --show-toplevel) || die "not inside a git repository"
head=$(git -C "$top" rev-parse HEAD)
# The shared directory beside the checkout (the main one, for a worktree).
shared=${STACKCAP_FRESH_SHARED:-}
if [ -z "$shared" ]; then
	common=$(cd "$top" && cd "$(git rev-parse --git-common-dir)" && pwd)
	for d in "$top/../shared" "$(dirname "$common")/../shared"; do
		[ -d "$d" ] && { shared=$d; break; }
	done
fi

cache=${STACKCAP_FRESH_CACHE:-/var/cache/stackcap-fresh}
suite=bookworm
base=$cache/$suite-minbase.tar
mirror=${STACKCAP_FRESH_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$mirror" ] || mirror=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/stackcap-fresh.XXXXXX")
root=$work/root
mounted=""   # mount points, innermost first (unmounted in this order)

teardown() {
	st=$?
	trap - EXIT INT TERM HUP
	for m in $mounted; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			echo "$me: could not unmount $m" >&2
	done
	# Only once nothing is mounted under it.
	if ! grep -q " $work" /proc/self/mounts; then
		rm -rf "$work"
	else
		echo "$me: $work left in place: still mounted" >&2
	fi
	exit "$st"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mnt() {   # mnt MOUNTPOINT mount-arguments...
	m=$1
	shift
	mkdir -p "$m"
	mount "$@" "$m"
	mounted="$m $mounted"
}

if [ ! -f "$base" ]; then
	echo "== $me: debootstrap --variant=minbase $suite from $mirror (once; kept in $base)" >&2
	mkdir -p "$cache"
	boot=$work/debootstrap
	debootstrap --variant=minbase "$suite" "$boot" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
	rm -rf "$boot/var/cache/apt/archives/"*.deb
	tar -C "$boot" --numeric-owner -cf "$base.tmp" .
	mv "$base.tmp" "$base"
	rm -rf "$boot"
fi

echo "== $me: a pristine $suite minbase in $root" >&2
mkdir -p "$root"
tar -C "$root" --numeric-owner -xpf "$base"

# / a mount point of its own (as on a machine; some tools check it).
mnt "$root" --bind "$root"
mnt "$root/proc" -t proc proc
mnt "$root/sys" -t sysfs sysfs
# A private /dev: the usual nodes, its own devpts and shm.
mnt "$root/dev" -t tmpfs -o mode=0755,nosuid devtmp
for spec in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
	set -- $spec
	mknod -m 666 "$root/dev/$1" c "$2" "$3"
done
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
mnt "$root/dev/pts" -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts
ln -s pts/ptmx "$root/dev/ptmx"
mnt "$root/dev/shm" -t tmpfs -o mode=1777,nosuid,nodev shm
# Downloaded .deb files are kept across runs (as a caching proxy would);
# what is installed starts from nothing every time.
mkdir -p "$cache/apt-archives/partial"
mnt "$root/var/cache/apt/archives" --bind "$cache/apt-archives"

# The network's settings, not the project's.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
if [ -f /etc/hosts ]; then cp /etc/hosts "$root/etc/hosts"; fi
if [ -d /etc/ssl/certs ]; then
	mkdir -p "$root/etc/ssl/certs"
	cp -rL /etc/ssl/certs/. "$root/etc/ssl/certs/" 2>/dev/null || true
fi
# The site's own CAs (a proxy's): kept when ca-certificates is installed
# in the chroot and rebuilds the bundle.
if [ -d /usr/local/share/ca-certificates ]; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
# The machine's apt sources replace debootstrap's one line.
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	if [ -f "$f" ]; then
		[ -z "${cleared:-}" ] && rm -f "$root/etc/apt/sources.list" && cleared=1
		cp "$f" "$root$f"
	fi
done
for f in /etc/apt/apt.conf /etc/apt/apt.conf.d/*; do
	# proxy, validity and index settings (Acquire::...), nothing else
	if [ -f "$f" ] && grep -qi '^[[:space:]]*Acquire' "$f"; then cp "$f" "$root$f"; fi
done

# The clone (committed state only) and the shared directory beside it.
mkdir -p "$root/src"
git clone -q --no-hardlinks "$top" "$root/src/stackcap"
git -C "$root/src/stackcap" -c advice.detachedHead=false checkout -q "$head"
if [ -n "$shared" ]; then
	cp -a "$shared" "$root/src/shared"
fi

echo "== $me: in $root/src/stackcap at $(git -C "$top" log -1 --format='%h %s' | cut -c 1-60): $cmd" >&2
set +e
env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
	${no_proxy:+no_proxy=$no_proxy} \
	chroot "$root" /bin/sh -c 'cd /src/stackcap && exec /bin/sh -c "$1"' sh "$cmd"
status=$?
set -e
echo "== $me: '$cmd' exited $status" >&2
exit "$status"
