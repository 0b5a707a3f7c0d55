#!/usr/bin/env bash
# Count `unsafe` blocks, functions and impls per crate (what auditors read in docs/unsafe.md).
# Usage: scripts/unsafe-report.sh            print the table
#        scripts/unsafe-report.sh --check    fail if docs/unsafe.md does not hold the current table
set -euo pipefail
cd "$(dirname "$0")/.."
count() { { grep -oE "$1" || true; } | wc -l; }
table() {
  echo "| crate | files | unsafe blocks | unsafe fn | unsafe impl | SAFETY comments |"
  echo "|---|---|---|---|---|---|"
  for d in rust/streams_core rust/modules rust/pipe rust/tpi_udp user/libstreams-sys user/perftest xtask; do
    [ -d "$d" ] || continue
    files=$(find "$d" -name '*.rs' -not -path '*/target/*' | sort)
    [ -n "$files" ] || continue
    # strip line comments so that prose mentioning "unsafe" is not counted
    code=$(sed -e 's://.*$::' $files)
    blocks=$(count '\bunsafe\s*\{' <<<"$code")
    fns=$(count '\bunsafe\s+(extern\s+"C"\s+)?fn\b' <<<"$code")
    impls=$(count '\bunsafe\s+impl\b' <<<"$code")
    safety=$(cat $files | grep -cE '//\s*SAFETY:' || true)
    echo "| \`$d\` | $(wc -w <<<"$files") | $blocks | $fns | $impls | $safety |"
  done
}
if [ "${1:-}" = --check ]; then
  want=$(table)
  # The table is every line of docs/unsafe.md that starts with '|' (compared as a whole: a
  # multi-line `grep -F` pattern would match any single line).
  have=$(grep '^|' docs/unsafe.md)
  if [ "$want" != "$have" ]; then
    echo "docs/unsafe.md is stale; the current table is:"; echo "$want"; exit 1
  fi
  echo "docs/unsafe.md is current"
else
  table
fi
