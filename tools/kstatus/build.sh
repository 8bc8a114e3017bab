#!/usr/bin/env bash
# Builds the kstatus program the GitOps tests run (main.go: sigs.k8s.io/cli-utils' kstatus, pinned in
# go.mod/go.sum beside this file) from the Go module proxy into a cache outside the repo and prints its
# path on the last line of stdout. Reuses the cached binary when it is there.
# A lock (flock on <cache>/.lock) makes a second concurrent run wait for the first and reuse its result.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"

# The key covers what shapes the binary: the pinned modules, the program and this script.
key="$(cat "$here/go.sum" "$here/main.go" "$here/build.sh" | sha256sum | cut -c1-12)"
version="$(awk '$1 == "sigs.k8s.io/cli-utils" {print $2; exit}' "$here/go.mod")"
cache="${APPKIND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/appkind}/kstatus/${version}-${key}"
if [ "${1:-}" = "--print-path" ]; then echo "$cache/kstatus"; exit 0; fi

mkdir -p "$cache"
if [ -x "$cache/kstatus" ]; then echo "$cache/kstatus"; exit 0; fi

# Held until this script exits (fd 9; go gets it closed). A waiter then finds the binary.
if command -v flock >/dev/null 2>&1; then
  exec 9<>"$cache/.lock"
  if ! flock -n 9; then
    echo "kstatus: another build of $cache is in progress (pid $(cat "$cache/.lock" 2>/dev/null || echo '?')); waiting" >&2
    flock 9
    if [ -x "$cache/kstatus" ]; then echo "$cache/kstatus"; exit 0; fi
  fi
  echo "$$" >"$cache/.lock"
fi

if ! command -v go >/dev/null 2>&1; then
  echo "kstatus: no Go toolchain found. Install Go >= 1.26 (https://go.dev/doc/install) and re-run $0." >&2
  exit 3
fi

tmp="$cache/.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
start=$(date +%s)
echo "kstatus: building cli-utils $version's kstatus (first run only; cached in $cache)" >&2
(cd "$here" && go build -ldflags="-s -w" -o "$tmp/kstatus" .) 9>&- >&2
mv -f "$tmp/kstatus" "$cache/kstatus"
echo "kstatus: built in $(( $(date +%s) - start ))s" >&2
echo "$cache/kstatus"
