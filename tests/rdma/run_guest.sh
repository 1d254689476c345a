#!/bin/bash
# The meson test rdma_guest: runs tests/rdma/guest_suite.py inside a QEMU
# guest with a soft-RoCE device (../shared/tools/rdma_vm.sh, relative to the
# source root). Exit 77 (skipped) when the tool is absent or in the sanitizer
# build (the guest emulates the CPU; ASan there would take most of CI's budget).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
vm="$src/../shared/tools/rdma_vm.sh"
bin=${MOONCAKE_BIN:-$src/build/src/cli/mooncake}
if [ ! -x "$vm" ]; then
  echo "rdma_guest: skipped: $vm is absent (no soft-RoCE guest on this machine)"; exit 77
fi
if [ "${MC_SANITIZE:-false}" = true ]; then
  echo "rdma_guest: skipped in the sanitizer build (runs in the release build)"; exit 77
fi
cmd="MOONCAKE_BIN=$bin MOONCAKE_SRC=$src python3 tests/rdma/guest_suite.py"
cd "$src"
export RDMAVM_TIMEOUT=${RDMAVM_TIMEOUT:-600}
# Nested KVM hangs on some hosts before the guest prints a line: hide
# /dev/kvm (read-only bind in a private mount namespace) so the tool uses
# TCG, whose timing its header documents. MC_RDMA_VM_KVM=1 keeps KVM.
if [ -e /dev/kvm ] && [ "${MC_RDMA_VM_KVM:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
  exec unshare -m bash -c 'e=$(mktemp); mount --bind "$e" /dev/kvm && mount -o remount,bind,ro /dev/kvm; exec "$0" "$1"' "$vm" "$cmd"
fi
exec "$vm" "$cmd"
