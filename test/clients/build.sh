#!/usr/bin/env bash
# Builds the Go client programs the e2e suite drives (client-go informer) into the shared binary cache,
# keyed by a hash of go.mod, go.sum and the sources, so fresh clones reuse a binary built from the same code.
# Prints the binary path on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${FLEETGATE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetgate/bin}"
mkdir -p "$CACHE"
command -v go >/dev/null || { echo "test/clients/build.sh: go is not installed" >&2; exit 3; }

cd "$HERE"
hash=$( { cat go.mod go.sum; find . -name '*.go' -print0 | sort -z | xargs -0 cat; } | sha256sum | cut -c1-16)
out="$CACHE/informer-$hash"

exec 9>"$CACHE/.clients.lock"
flock 9
if [[ ! -x "$out" ]]; then
  start=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" ./informer
  mv "$out.tmp" "$out"
  echo "[clients] informer built in $((SECONDS - start)) s" >&2
  # Binaries of older sources pile up while the program is edited; other clones rebuild in seconds if needed.
  find "$CACHE" -maxdepth 1 -name 'informer-*' ! -name "informer-$hash" -mtime +7 -delete 2>/dev/null || true
fi
echo "$out"
