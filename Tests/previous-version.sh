#!/usr/bin/env bash
# Builds the `nimbus` of the previous schema version (main just before the newest migration file
# was added) and prints the binary's path; the rolling-upgrade scenario serves one database with
# it and with the current binary at once. The build is kept in .build/previous/<commit> and reused.
#
# usage: Tests/previous-version.sh   (from the checkout; needs its git history)
set -euo pipefail
cd "$(dirname "$0")/.."

newest=$(ls migrations/*.sql | sort | tail -n 1)
# Along main's own line (--first-parent): a migration that came in with a merge was added by the
# merge, whose first parent is main as it was (a branch's intermediate commits need not build).
added=$(git log --first-parent --diff-filter=A --format=%H -n 1 -- "$newest") \
  || { echo "previous-version.sh: no git history here to find the commit before $newest" >&2; exit 1; }
[ -n "$added" ] || { echo "previous-version.sh: $newest is not committed yet" >&2; exit 1; }
previous=$(git rev-parse "$added^")
work=".build/previous/$previous"
binary="$work/.build/debug/nimbus"
if [ ! -x "$binary" ]; then
  rm -rf "$work/src"
  mkdir -p "$work/src"
  git archive "$previous" | tar -x -C "$work/src"
  echo "previous-version.sh: building nimbus at ${previous:0:12} (before $(basename "$newest")) into $work" >&2
  swift build --package-path "$work/src" --scratch-path "$work/.build" --product nimbus >&2
  ln -sfn src/migrations "$work/migrations"
fi
printf '%s\n' "$(cd "$work" && pwd)/.build/debug/nimbus"
