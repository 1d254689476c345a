#!/usr/bin/env bash
# Sets up everything and runs mooncake on defaults on this machine: for now the
# metadata server, with a PUT and GET against it. Stops what it started.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/setup.sh
bin=build/src/cli/mooncake
"$bin" version
echo "mooncake metadata-server is not built yet" >&2
exit 1
