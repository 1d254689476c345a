#!/usr/bin/env bash
# Builds mooncake's Debian packages from packaging/debian/ with
# dpkg-buildpackage, then checks them with lintian.
#
#   scripts/package.sh                   build from source: debhelper drives meson
#                                        (a full static build, ~5 min on 2 cores)
#   scripts/package.sh --prebuilt DIR    package the files of DIR, a release build
#                                        folder of this tree (build/): its
#                                        src/cli/mooncake, libmooncake, .pc file
#                                        and Python extension; no compile, what
#                                        CI's package test does. DIR may also be
#                                        given as DIR/src/cli/mooncake.
#   OUT_DIR=DIR scripts/package.sh       where the .deb files go (build-deb/)
#   LINTIAN=0 scripts/package.sh         skip lintian
#
# dpkg-buildpackage wants debian/ at the top of the source tree; the tree
# keeps it in packaging/debian/, so the build runs in a copy of the tree
# (without build folders and .git) with packaging/debian/ at debian/, and
# the copy is removed afterwards. Prints the paths of the packages built.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT_DIR:-$here/build-deb}
prebuilt=""

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --prebuilt) [ $# -ge 2 ] || usage; prebuilt=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "package.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

die() { echo "package.sh: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dpkg-parsechangelog dh; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev debhelper; scripts/setup.sh does)"
done

# One version: meson.build's is the truth, the changelog must follow it.
version=$(sed -n "s/^ *version: '\([^']*\)'.*/\1/p" "$here/meson.build" | head -1)
deb_version=$(dpkg-parsechangelog -l "$here/packaging/debian/changelog" -S Version)
[ "$version" = "$deb_version" ] ||
  die "meson.build is version $version but packaging/debian/changelog says $deb_version: add a changelog entry (dch -v $version)"

if [ -n "$prebuilt" ]; then
  [ -e "$prebuilt" ] || die "--prebuilt $prebuilt does not exist"
  # The binary given (build/src/cli/mooncake): its build folder.
  [ -d "$prebuilt" ] || prebuilt=$(dirname "$prebuilt")/../..
  prebuilt=$(cd "$prebuilt" && pwd)
  [ -f "$prebuilt/meson-private/coredata.dat" ] || die "--prebuilt $prebuilt is not a meson build folder"
  bin=$prebuilt/src/cli/mooncake
  [ -x "$bin" ] || die "--prebuilt: $bin is not an executable"
  file -L "$bin" | grep -q 'statically linked' ||
    die "--prebuilt $bin is not statically linked (a sanitizer build?); the package ships the static binary"
  says=$("$bin" version | head -1)
  [ "$says" = "mooncake $version" ] || die "--prebuilt $bin says '$says', this tree is mooncake $version"
  # The library and module of the same build, of the same version.
  for f in src/engine/libmooncake.so.$version src/engine/libmooncake.a meson-private/mooncake.pc; do
    [ -f "$prebuilt/$f" ] || die "--prebuilt: $prebuilt/$f is missing (a build of another version, or not built?)"
  done
  pc_version=$(sed -n 's/^Version: //p' "$prebuilt/meson-private/mooncake.pc")
  [ "$pc_version" = "$version" ] || die "--prebuilt: mooncake.pc says version $pc_version, this tree is $version"
  ext=$(ls "$prebuilt"/src/python/mooncake/_store.*.so 2>/dev/null || true)
  [ -n "$ext" ] || die "--prebuilt: $prebuilt has no Python extension src/python/mooncake/_store.*.so (pybind11-dev and python3-dev missing at setup?)"
  for f in "$prebuilt/src/engine/libmooncake.so.$version" $ext; do
    if readelf -d "$f" | grep -q 'R\(UN\)\?PATH'; then
      die "--prebuilt: $f has a build-tree RUNPATH; the package would ship it"
    fi
  done
fi
[ -s "$here/subprojects/cpp-httplib/httplib.h" ] || [ -n "$prebuilt" ] ||
  die "subprojects/cpp-httplib/httplib.h is missing: run scripts/setup.sh first"

stage=$(mktemp -d "${TMPDIR:-/tmp}/mooncake-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
src="$stage/mooncake-$version"
mkdir "$src"
tar -C "$here" --exclude=./.git --exclude='./build*' --exclude='./obj-*' --exclude=./debian \
  --exclude='__pycache__' -cf - . | tar -C "$src" -xf -
cp -r "$here/packaging/debian" "$src/debian"
# Unit tests read the shared trace at ../shared beside the tree (as in CI):
# give the copy the same neighbour.
[ -d "$here/../shared" ] && ln -s "$(cd "$here/../shared" && pwd)" "$stage/shared"

start_s=$(date +%s)
mkdir -p "$out"
if ! (cd "$src" && MOONCAKE_PREBUILT="$prebuilt" dpkg-buildpackage -b -us -uc -jauto) \
    > "$stage/build.log" 2>&1; then
  cp "$stage/build.log" "$out/build.log"
  tail -60 "$stage/build.log" >&2
  die "dpkg-buildpackage failed; its whole log: $out/build.log"
fi
echo "package.sh: dpkg-buildpackage took $(($(date +%s) - start_s)) s" >&2

changes=$(cd "$stage" && ls ./*.changes)
debs=$(cd "$stage" && ls ./*.deb ./*.ddeb 2>/dev/null || true)
for f in $changes $debs $(cd "$stage" && ls ./*.buildinfo); do
  cp "$stage/$f" "$out/"
done
if [ "${LINTIAN:-1}" != 0 ]; then
  command -v lintian >/dev/null || die "lintian is missing (apt-get install lintian; scripts/setup.sh does)"
  # Errors fail the build; warnings are printed (README: the ones we keep).
  lintian --fail-on error --tag-display-limit 0 "$out/$(basename "$changes")" >&2 ||
    die "lintian reported errors"
fi
for f in $debs; do echo "$out/$(basename "$f")"; done
