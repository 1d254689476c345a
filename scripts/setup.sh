#!/usr/bin/env bash
# Installs everything mooncake needs on a fresh Debian 12 machine (as root) and
# builds it. Idempotent: a second run only rebuilds what changed.
#
#   scripts/setup.sh              release build in build/ (static mooncake binary)
#   BUILD_DIR=b scripts/setup.sh  another build folder
#   MESON_ARGS="-Dsanitize=true" scripts/setup.sh   extra meson options
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

PACKAGES=(
  build-essential meson ninja-build pkg-config file
  libcli11-dev libtomlplusplus-dev doctest-dev libsqlite3-dev zlib1g-dev libssl-dev
  libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev
  python3 groff-base groff curl iproute2 redis-server dpkg-dev prometheus
  debhelper lintian systemd zsh bash-completion python3-yaml python3-kubernetes
  clang libclang-rt-14-dev
)

need_install=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need_install+=("$p")
done

# cpp-httplib: Debian's -dev package ships only declarations plus a shared
# library. A static binary needs the full single header, which the Debian
# source package carries. Fetch it once into subprojects/ (not committed).
httplib_dir="$here/subprojects/cpp-httplib"
need_httplib=0
[ -s "$httplib_dir/httplib.h" ] || need_httplib=1

if [ ${#need_install[@]} -gt 0 ] || [ $need_httplib -eq 1 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing packages (${need_install[*]:-cpp-httplib source}); run as root" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [ $need_httplib -eq 1 ] && ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # Add source entries mirroring the binary ones so 'apt-get source' works.
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        > /etc/apt/sources.list.d/mooncake-deb-src.sources
    else
      grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
        > /etc/apt/sources.list.d/mooncake-deb-src.list
    fi
  fi
  apt-get update -q
  if [ ${#need_install[@]} -gt 0 ]; then
    apt-get install -y -q --no-install-recommends "${need_install[@]}"
  fi
fi

if [ $need_httplib -eq 1 ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get source -q --download-only cpp-httplib >/dev/null &&
     dpkg-source -x --skip-debianization ./*.dsc src >/dev/null)
  mkdir -p "$httplib_dir"
  cp "$tmp/src/httplib.h" "$httplib_dir/httplib.h"
  rm -rf "$tmp"
fi

[ "${SETUP_SKIP_BUILD:-0}" = 1 ] && exit 0
build_dir=${BUILD_DIR:-build}
if [ ! -f "$build_dir/build.ninja" ]; then
  # shellcheck disable=SC2086
  meson setup "$build_dir" --buildtype=release ${MESON_ARGS:-}
fi
ninja -C "$build_dir"
