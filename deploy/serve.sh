#!/usr/bin/env bash
# The one command that runs Nimbus on a fresh Debian 12 machine with the Swift toolchain:
# installs what is missing, builds in release mode, starts the embedded PostgreSQL (in ./.nimbus),
# applies migrations and serves on 127.0.0.1:8080. Extra arguments go to `nimbus serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
swift build -c release --product nimbus
exec "$(swift build -c release --show-bin-path)/nimbus" serve "$@"
