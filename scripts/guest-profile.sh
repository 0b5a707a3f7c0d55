#!/usr/bin/env bash
# Profile perftest runs inside a TCG guest with the host's perf (docs/performance.md, "Where
# the time goes"). The guest has no perf of its own: this copies the host's /usr/bin/perf
# (Debian package linux-perf) and the libraries it links into a directory that
# `cargo xtask vm --copy` puts at /host, then runs a guest script there (default:
# scripts/guest-profile-run.sh; the lean kernel and the production streams.ko, as the bench).
# `cargo xtask bench` records the same cases itself after its sweep (profile.md); this script
# stays for one-off guest scripts.
# Usage: scripts/guest-profile.sh [GUEST-SCRIPT]     (one guest at a time: flock as the bench)
set -euo pipefail
cd "$(dirname "$0")/.."
script=${1:-scripts/guest-profile-run.sh}
perf=$(command -v perf) || { echo "guest-profile: no perf on the host (apt-get install linux-perf)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/lib"
cp -L "$perf" "$dir/perf"
# Every library perf links, and the dynamic loader, by their sonames.
ldd "$perf" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
    while read -r lib; do cp -L "$lib" "$dir/lib/"; done
cp "$script" "$dir/run.sh"
cargo xtask vm --timeout 1500 --copy "$dir" -- 'sh /host/run.sh'
