#!/usr/bin/env bash
# Builds the negative control for the no-missed-change checker (docs/checker.md): `nimbus` from
# the main package's sources, with Sources/NimbusStore/RecordWriteStrategies.swift replaced by
# this directory's (one broken write strategy, NegativeControlWrite.swift). Prints the binary's path.
#
#   bash NegativeControl/build.sh [BUILD-PATH]     (default: .build-nc at the repository root)
#
# Sources/ here is generated: directory links to the main package's targets, and for NimbusStore a
# directory of file links (all but the strategy list) plus the two files of this directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_path=${1:-$root/.build-nc}
rm -rf "$here/Sources"
mkdir -p "$here/Sources/NimbusStore"
# Every server target (what Package.swift here declares); the client targets are not built.
for target in CLibPQ CLinux CCurl CCrypto NimbusSupport NimbusHTTP NimbusPostgres NimbusCore NimbusPush NimbusRelay \
    NimbusPushSender NimbusAPI NimbusAdmin nimbus; do
  ln -s "../../Sources/$target" "$here/Sources/$target"
done
# NimbusStore's files and folders (Push/…), all but the strategy list.
for entry in "$root"/Sources/NimbusStore/*; do
  [ "$(basename "$entry")" = RecordWriteStrategies.swift ] && continue
  ln -s "../../../Sources/NimbusStore/$(basename "$entry")" "$here/Sources/NimbusStore/"
done
ln -s ../../NegativeControlWrite.swift ../../RecordWriteStrategies.swift "$here/Sources/NimbusStore/"
swift build --package-path "$here" --product nimbus --build-path "$build_path" >&2
echo "$(swift build --package-path "$here" --build-path "$build_path" --show-bin-path)/nimbus"
