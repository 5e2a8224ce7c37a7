#!/usr/bin/env bash
# Refreshes the console's screenshots in docs/images/ (docs/console.md, README.md) from the
# browser scenario: runs 46-admin-console-browser against the binary built from this checkout,
# copies the pages' screenshots over, and writes into docs/console.md when and from which commit
# they were made. Test runs never write into docs/ (a run must leave the checkout as it found
# it; their screenshots stay in the ignored Tests/integration/out/console/): this command is the
# one way the images change. Commit what it changed.
#
#   bash Tests/integration/refresh-console-images.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
swift build
NIMBUS_BIN=${NIMBUS_BIN:-$(swift build --show-bin-path)/nimbus} bash Tests/integration/run.sh 46-admin-console-browser
for page in overview devices records retention audit; do
  cp "Tests/integration/out/console/$page.png" "docs/images/$page.png"
done
commit=$(git rev-parse --short HEAD)
# Changes under Sources/ not yet committed are in the pictures too: say so.
[ -z "$(git status --porcelain -- Sources)" ] || commit="$commit with uncommitted changes to Sources/"
line="The screenshots were made on $(date -u +%Y-%m-%d) from commit $commit by \`bash Tests/integration/refresh-console-images.sh\`."
grep -q '^The screenshots were made on ' docs/console.md || { echo "docs/console.md lacks the 'The screenshots were made on' line" >&2; exit 1; }
sed -i "s|^The screenshots were made on .*|$line|" docs/console.md
echo "refreshed docs/images/{overview,devices,records,retention,audit}.png; docs/console.md: $line"
