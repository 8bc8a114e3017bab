#!/usr/bin/env bash
# `npm run image`: builds the operator image from the Dockerfile with buildah, for machines without a
# Docker engine. Docker users run `docker build -t appkind-operator:0.1.0 .` instead; the Dockerfile
# is the same. Usage: build.sh [IMAGE]   (default appkind-operator:<package.json version>)
# - The base image (the Dockerfile's NODE_IMAGE) is pulled, or stood in for locally when no registry
#   is reachable (base.sh).
# - RUN steps reach the npm registry this machine is configured for: the host's registry URL and CA
#   file are mounted into the build containers (as /root/.npmrc), never baked into a layer that ships.
# - Layers are cached in the container storage (outside the repository), so a rebuild after a source
#   change reruns only the compile step.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/engine.sh"
require_tools buildah podman node npm
ROOT="$(cd "$IMAGE_TOOLS_DIR/../.." && pwd)"
cd "$ROOT"

IMAGE="${1:-appkind-operator:$(node -p "require('./package.json').version")}"
BASE="$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile | head -n 1)"
[[ -n "$BASE" ]] || { echo "build.sh: no 'ARG NODE_IMAGE=' in the Dockerfile" >&2; exit 1; }

started=$(date +%s)
bash "$IMAGE_TOOLS_DIR/base.sh" "$BASE"

mounts=()
tmp="$(mktemp -d "${TMPDIR:-/tmp}/appkind-image.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
{
  echo "registry=$(npm config get registry)"
  echo "update-notifier=false"
  cafile="$(npm config get cafile)"
  if [[ -n "$cafile" && "$cafile" != null && -f "$cafile" ]]; then
    echo "cafile=/root/.npm-host-ca.crt"
    mounts+=(--volume "$cafile:/root/.npm-host-ca.crt:ro")
  elif [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -f "$NODE_EXTRA_CA_CERTS" ]]; then
    echo "cafile=/root/.npm-host-ca.crt"
    mounts+=(--volume "$NODE_EXTRA_CA_CERTS:/root/.npm-host-ca.crt:ro")
  fi
} >"$tmp/npmrc"
mounts+=(--volume "$tmp/npmrc:/root/.npmrc:ro")

echo "== buildah bud -t $IMAGE (base $BASE)"
buildah_ bud --isolation=chroot --network=host --layers --pull=false "${mounts[@]}" \
  --build-arg "NODE_IMAGE=$BASE" -t "$IMAGE" -f Dockerfile .

size=$(podman_ image inspect --format '{{.Size}}' "$IMAGE")
echo "== built $IMAGE in $(( $(date +%s) - started ))s: $(( size / 1000000 )) MB, $(podman_ run --rm --entrypoint node "$IMAGE" --version)"
