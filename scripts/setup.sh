#!/usr/bin/env bash
# Installs everything mooncake needs on a fresh Debian 12 machine (as root) and
# builds it. Idempotent: a second run only rebuilds what changed.
#
#   scripts/setup.sh              release build in build/ (static mooncake binary)
#   BUILD_DIR=b scripts/setup.sh  another build folder
#   MESON_ARGS="-Dsanitize=true" scripts/setup.sh   extra meson options
#   SETUP_TARGETS="src/cli/mooncake" scripts/setup.sh   only these ninja targets
#                                 (default: all, tests and benchmarks too)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

PACKAGES=(
  build-essential meson ninja-build pkg-config file
  libcli11-dev libtomlplusplus-dev doctest-dev libsqlite3-dev zlib1g-dev libssl-dev
  libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev
  openssl procps python3 groff-base groff curl iproute2 nftables redis-server dpkg-dev prometheus
  debhelper lintian systemd zsh bash-completion python3-yaml python3-kubernetes
  clang libclang-rt-14-dev
  pybind11-dev python3-pybind11 python3-dev python3-pytest python3-mesonpy python3-redis python3-pip
  python3-torch python3-numpy
  etcd-server etcd-client liburing-dev fio
  # Meson compiles through ccache when it is installed: test.sh's fresh-root
  # quick start then reuses the objects of the identical release build
  # (and the Python module those of the same sources) instead of
  # compiling them a second and third time.
  ccache
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
elif [ -n "${MESON_ARGS:-}" ]; then
  # An existing folder takes options changed since it was set up (a no-op
  # when they are the same).
  # shellcheck disable=SC2086
  meson configure "$build_dir" ${MESON_ARGS} >/dev/null
fi
# shellcheck disable=SC2086
ninja -C "$build_dir" ${SETUP_TARGETS:-}

# ---- Python module mooncake.store (issue 19) -------------------------------
# Builds a wheel of the package (meson-python and pybind11 from Debian, no
# download; incremental in $build_dir-python) and installs it for Debian's
# python3, into /usr/local/lib/python3.11/dist-packages, so that
# `python3 -c 'from mooncake.store import MooncakeDistributedStore'` works in
# a new shell. A python3 earlier on PATH (pyenv, a venv) of the same version
# gets the same wheel. Skipped by SETUP_SKIP_PYTHON=1 and for a sanitizer
# build (the wheel is the same either way).
if [ "${SETUP_SKIP_PYTHON:-0}" != 1 ] && [[ "${MESON_ARGS:-}" != *sanitize=true* ]]; then
  wheel_dir="$build_dir/python-wheel"
  case $build_dir in /*) py_build="$build_dir-python" ;; *) py_build="$here/$build_dir-python" ;; esac
  rm -rf "$wheel_dir"
  /usr/bin/python3 -m pip wheel -q --no-build-isolation --no-deps --no-index -w "$wheel_dir" \
    --config-settings=builddir="$py_build" "$here"
  wheel=$(ls "$wheel_dir"/mooncake-*.whl)
  /usr/bin/python3 -m pip install -q --root-user-action=ignore --no-deps --no-index --force-reinstall \
    --break-system-packages "$wheel"
  path_python=$(command -v python3 || true)
  tag='import sys; print(sys.implementation.cache_tag)'
  if [ -n "$path_python" ] && [ "$(readlink -f "$path_python")" != "$(readlink -f /usr/bin/python3)" ] &&
     [ "$("$path_python" -c "$tag" 2>/dev/null)" = "$(/usr/bin/python3 -c "$tag")" ]; then
    "$path_python" -m pip install -q --root-user-action=ignore --no-deps --no-index --force-reinstall "$wheel" ||
      echo "setup: could not install mooncake.store for $path_python (Debian's python3 has it)" >&2
  fi
fi
# ---- end of the Python module block ----------------------------------------
