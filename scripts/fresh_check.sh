#!/usr/bin/env bash
# Runs COMMAND as root in a fresh, minimal Debian 12 (bookworm) root with only
# git and ca-certificates added, in a clone of this repository's HEAD: what a
# newcomer who follows the README has. CI runs the quick start this way
# (scripts/test.sh), so a package the scripts forget to install fails the run.
#
#   scripts/fresh_check.sh 'bash scripts/quickstart.sh'
#   scripts/fresh_check.sh 'MOONCAKE_SKIP_SANITIZE=1 bash scripts/test.sh'
#
# The root comes from debootstrap, from the Debian archive this machine's apt
# uses. The bare root (debootstrap output, nothing of ours) is cached as a
# tarball in $FRESH_CACHE_DIR (default /var/cache/mooncake-fresh); each run
# unpacks a new copy under $FRESH_WORK_DIR (default /var/tmp) and removes it
# after. COMMAND runs in its own mount and PID namespaces: every mount it needs
# (/proc, /sys, /dev, /dev/shm) and every process it leaves behind go away with
# the namespace, even when this script is killed. Uncommitted changes are not
# in the clone: commit first.
#
# Env: FRESH_TIMEOUT (seconds COMMAND may run; 3600), FRESH_KEEP=1 (keep the
# root for inspection), FRESH_MIRROR (override the archive URL),
# FRESH_CCACHE_DIR (a ccache directory of this machine, mounted into the root
# and used by its compiles when the root has ccache: scripts/test.sh passes
# its own, so the root compiles only what the release build did not).
# Exit status: COMMAND's; 124 when FRESH_TIMEOUT ran out; 3 when the fresh root
# could not be made (not root, no debootstrap, archive unreachable).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 'COMMAND'" >&2; exit 2; }
command=$1
here=$(cd "$(dirname "$0")/.." && pwd)
suite=bookworm
cache_dir=${FRESH_CACHE_DIR:-/var/cache/mooncake-fresh}
work_parent=${FRESH_WORK_DIR:-/var/tmp}
timeout_s=${FRESH_TIMEOUT:-3600}
case "$timeout_s" in ''|*[!0-9]*) echo "fresh_check: FRESH_TIMEOUT must be seconds, not '$timeout_s'" >&2; exit 2;; esac

say() { echo "fresh_check: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "must run as root (debootstrap, chroot, mounts)"; exit 3; }

rev=$(git -C "$here" rev-parse HEAD)
if [ -n "$(git -C "$here" status --porcelain --untracked-files=no)" ]; then
  say "note: uncommitted changes are not in the fresh clone (it is HEAD, ${rev:0:12})"
fi

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
    { say "cannot install debootstrap"; exit 3; }
fi

# The first binary archive of $suite that apt here uses (deb822 or one-line).
archive_url() {
  [ -n "${FRESH_MIRROR:-}" ] && { echo "$FRESH_MIRROR"; return; }
  local f url
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    url=$(awk -v s="$suite" '
      /^$/ { if (deb && uris != "" && suites ~ ("(^| )" s "( |$)")) { print uris; exit } deb=0; uris=""; suites="" }
      /^Types:/ { deb = ($0 ~ /(^|[ :])deb( |$)/) }
      /^URIs:/ { uris = $2 }
      /^Suites:/ { suites = substr($0, 9) }
      END { if (deb && uris != "" && suites ~ ("(^| )" s "( |$)")) print uris }' "$f" | head -1)
    [ -n "$url" ] && { echo "$url"; return; }
  done
  url=$(awk -v s="$suite" '$1 == "deb" && $0 ~ (" " s " ") { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1)
  echo "${url:-http://deb.debian.org/debian}"
}

# The bare root, made once per machine and cached (nothing of ours in it).
mkdir -p "$cache_dir"
tarball="$cache_dir/$suite-minbase-git.tar"
exec 8>"$cache_dir/.lock"
flock -w 1800 8 || { say "timed out waiting for $cache_dir/.lock"; exit 3; }
if [ ! -s "$tarball" ]; then
  mirror=$(archive_url)
  say "making the bare $suite root with debootstrap from $mirror (cached in $tarball)"
  boot=$(mktemp -d "$work_parent/mooncake-debootstrap.XXXXXX")
  if ! debootstrap --variant=minbase --include=git,ca-certificates "$suite" "$boot" "$mirror" \
      >"$boot.log" 2>&1; then
    tail -20 "$boot.log" >&2
    rm -rf --one-file-system "$boot" "$boot.log"
    say "debootstrap failed"
    exit 3
  fi
  tar -C "$boot" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf --one-file-system "$boot" "$boot.log"
fi
flock -u 8

root=$(mktemp -d "$work_parent/mooncake-fresh.XXXXXX")
chmod 755 "$root"   # mktemp makes it 0700; apt's _apt user must traverse it
cleanup() {
  local status=$?
  if [ "${FRESH_KEEP:-0}" = 1 ]; then
    say "kept the root at $root"
  elif findmnt -rn -o TARGET | grep -q "^$root"; then
    # Cannot happen with the private namespace; never delete through a mount.
    say "mounts remain under $root; not deleting it"
    status=1
  else
    rm -rf --one-file-system "$root"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

tar -C "$root" -xf "$tarball"
# Same archive, same apt settings as this machine; same name service.
rm -f "$root/etc/apt/sources.list"
cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/"
rm -f "$root"/etc/apt/sources.list.d/mooncake-deb-src.*   # setup.sh adds its own
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
cp -a /etc/apt/apt.conf.d/. "$root/etc/apt/apt.conf.d/"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
git -c protocol.file.allow=always clone -q --no-hardlinks "$here" "$root/root/mooncake"
git -C "$root/root/mooncake" checkout -q "$rev"
say "running in a fresh $suite root at ${rev:0:12}: $command"

# Inside new mount and PID namespaces: mount what a Debian system has, then
# chroot. When COMMAND ends (or this script dies), the namespace's processes
# are killed and its mounts vanish with it.
ccache_env=()
if [ -n "${FRESH_CCACHE_DIR:-}" ] && [ -d "$FRESH_CCACHE_DIR" ]; then
  mkdir -p "$root/var/cache/host-ccache"
  ccache_env=(CCACHE_DIR=/var/cache/host-ccache CCACHE_COMPILERCHECK=content)
  say "compiling through this machine's ccache ($FRESH_CCACHE_DIR)"
fi
set +e
timeout --kill-after=30 "$timeout_s" \
  unshare --mount --pid --fork --propagation private --kill-child \
  /bin/bash -c '
    set -e
    c=$1 r=$2 host_ccache=$3; shift 3
    mount -t proc proc "$r/proc"
    mount -t sysfs sysfs "$r/sys"
    mount --rbind /dev "$r/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    [ -z "$host_ccache" ] || mount --bind "$host_ccache" "$r/var/cache/host-ccache"
    exec chroot "$r" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 CI="${CI:-}" MOONCAKE_IN_FRESH_ROOT=1 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" \
      /bin/bash -c "cd /root/mooncake && $c" </dev/null
  ' fresh "$command" "$root" "${ccache_env:+$FRESH_CCACHE_DIR}" "${ccache_env[@]}"
status=$?
set -e
case $status in
  0) say "PASS: '$command' in a fresh $suite root";;
  124) say "FAIL: '$command' ran past FRESH_TIMEOUT (${timeout_s}s)";;
  *) say "FAIL: '$command' exited $status in a fresh $suite root";;
esac
exit $status
