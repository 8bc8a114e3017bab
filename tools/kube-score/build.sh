#!/usr/bin/env bash
# Builds the kube-score binary the production-example test runs (github.com/zegl/kube-score, pinned in
# go.mod/go.sum beside this file) from the Go module proxy into a cache outside the repo and prints its
# path on the last line of stdout. Reuses the cached binary when it is there; a new machine builds it
# again (one `go build`, about two minutes on 2 cores with a cold Go cache). `build.sh --print-path` only prints where the
# binary goes. A lock (flock on <cache>/.lock) makes a second concurrent run wait for the first and
# reuse its result.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"

# The key covers what shapes the binary: the pinned modules and this script (its flags).
key="$(cat "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-12)"
version="$(awk '$1 == "github.com/zegl/kube-score" {print $2; exit}' "$here/go.mod")"
cache="${APPKIND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/appkind}/kube-score/${version}-${key}"
if [ "${1:-}" = "--print-path" ]; then echo "$cache/kube-score"; exit 0; fi

mkdir -p "$cache"
if [ -x "$cache/kube-score" ]; then echo "$cache/kube-score"; exit 0; fi

# Held until this script exits (fd 9; go gets it closed). A waiter then finds the binary.
if command -v flock >/dev/null 2>&1; then
  exec 9<>"$cache/.lock"
  if ! flock -n 9; then
    echo "kube-score: another build of $cache is in progress (pid $(cat "$cache/.lock" 2>/dev/null || echo '?')); waiting" >&2
    flock 9
    if [ -x "$cache/kube-score" ]; then echo "kube-score: the other build finished; reusing $cache/kube-score" >&2; echo "$cache/kube-score"; exit 0; fi
  fi
  echo "$$" >"$cache/.lock"
fi

if ! command -v go >/dev/null 2>&1; then
  echo "kube-score: no Go toolchain found. Install Go >= 1.26 (https://go.dev/doc/install) and re-run $0." >&2
  exit 3
fi

# The version as kube-score's own release build stamps it; `kube-score version` prints it.
ldflags="-s -w -X main.version=${version#v}"
tmp="$cache/.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
start=$(date +%s)
echo "kube-score: building kube-score $version (first run only; cached in $cache)" >&2
(cd "$here" && go build -ldflags="$ldflags" -o "$tmp/kube-score" github.com/zegl/kube-score/cmd/kube-score) 9>&- >&2
mv -f "$tmp/kube-score" "$cache/kube-score"
echo "kube-score: built $version in $(( $(date +%s) - start ))s" >&2
echo "$cache/kube-score"
