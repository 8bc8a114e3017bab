#!/usr/bin/env bash
# Builds the echo app's image (a static Go binary in an empty image, with buildah) and saves it as a
# docker archive in ~/.cache/appkind/images/, keyed by its sources, so later runs on this machine reuse
# it. Prints the archive's path on the last stdout line. Usage: build.sh [--print-path]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
key="$(cat "$here/go.mod" "$here/main.go" "$here/Containerfile" "$here/build.sh" | sha256sum | cut -c1-12)"
cache="${APPKIND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/appkind}/images"
archive="$cache/echo-$key.tar"
image="localhost/appkind/echo:$key"
if [ "${1:-}" = "--print-path" ]; then echo "$archive"; exit 0; fi
if [ -s "$archive" ]; then echo "$archive"; exit 0; fi

source "$here/../../tools/image/engine.sh"
require_tools buildah go
mkdir -p "$cache"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/appkind-echo.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
(cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath go build -ldflags="-s -w" -o "$tmp/echo" .)
cp "$here/Containerfile" "$tmp/"
buildah_ bud --isolation=chroot --network=host --pull=false -q -t "$image" -f "$tmp/Containerfile" "$tmp" >/dev/null
buildah push -q "$image" "docker-archive:$tmp/echo.tar:$image" >/dev/null
rm -f "$cache"/echo-*.tar # older builds of other sources
mv "$tmp/echo.tar" "$archive"
echo "echo image $image built in $(( $(date +%s) - start ))s: $archive ($(( $(stat -c %s "$archive") / 1000 )) kB)" >&2
echo "$archive"
