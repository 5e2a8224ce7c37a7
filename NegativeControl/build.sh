#!/usr/bin/env bash
# Builds the negative control for the no-missed-change checker (docs/checker.md): `nimbus` from
# the main package's sources, with Sources/NimbusStore/Records/Write/RecordWriteStrategies.swift replaced by
# this directory's (one broken write strategy, NegativeControlWrite.swift). Prints the binary's path.
#
#   bash NegativeControl/build.sh [BUILD-PATH]     (default: .build-nc at the repository root)
#
# Sources/ here is generated: directory links to the main package's targets, and for NimbusStore a
# tree of file links (all but the strategy list, in NimbusStore's folders) plus the two files of this directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_path=${1:-$root/.build-nc}
rm -rf "$here/Sources"
mkdir -p "$here/Sources/NimbusStore"
# Every server target (what Package.swift here declares); the client targets are not built.
for target in CLibPQ CLinux CCurl CCrypto NimbusWire NimbusSupport NimbusHTTP NimbusPostgres NimbusCore NimbusPush NimbusRelay \
    NimbusPushSender NimbusAPI NimbusAdmin nimbus; do
  ln -s "../../Sources/$target" "$here/Sources/$target"
done
# NimbusStore's files in their folders (Records/Write/, Push/, …), all but the strategy list.
(cd "$root/Sources/NimbusStore" && find . -name '*.swift' -type f) | while read -r file; do
  [ "$file" = ./Records/Write/RecordWriteStrategies.swift ] && continue
  mkdir -p "$here/Sources/NimbusStore/$(dirname "$file")"
  ln -s "$root/Sources/NimbusStore/$file" "$here/Sources/NimbusStore/$file"
done
ln -s ../../NegativeControlWrite.swift ../../RecordWriteStrategies.swift "$here/Sources/NimbusStore/"
swift build --package-path "$here" --product nimbus --build-path "$build_path" >&2
echo "$(swift build --package-path "$here" --build-path "$build_path" --show-bin-path)/nimbus"
