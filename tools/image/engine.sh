# Sourced by build.sh and base.sh: podman and buildah with the settings these machines need
# (runc, cgroupfs, no default rlimits; DESIGN.md "Containers on these machines").
# shellcheck shell=bash
IMAGE_TOOLS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$IMAGE_TOOLS_DIR/containers.conf}"
RUNC="$(command -v runc || echo /usr/sbin/runc)"

podman_() { podman --runtime "$RUNC" --cgroup-manager=cgroupfs "$@"; }
buildah_() { buildah --runtime "$RUNC" --cgroup-manager=cgroupfs "$@"; }

require_tools() {
  local missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if ((${#missing[@]})); then
    echo "image: missing ${missing[*]}; on Debian/Ubuntu: apt-get install -y podman buildah runc debootstrap uidmap" >&2
    echo "       (or build with Docker: docker build -t appkind-operator:0.1.0 .)" >&2
    exit 1
  fi
}
