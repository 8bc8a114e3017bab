#!/usr/bin/env bash
# Builds the real control-plane binaries from the pinned Go modules into a cache outside the repo and
# prints that folder on the last line of stdout. Reuses the cache when every binary is already there.
#   etcd kube-apiserver kube-controller-manager   required
#   kube-scheduler kwok                           optional (pods stay Pending without them)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"

if ! command -v go >/dev/null 2>&1; then
  echo "controlplane: no Go toolchain found and no prebuilt binaries given." >&2
  echo "  Install Go >= 1.26 (https://go.dev/doc/install, or apt-get install golang-1.26) and re-run," >&2
  echo "  or set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver and kube-controller-manager." >&2
  exit 3
fi

# The key covers everything that shapes the binaries, this script (its flags) included; binaries.ts
# computes the same key to find the cache without Go.
key="$(cat "$here/k8s/go.sum" "$here/kwok/go.sum" "$here/k8s/cmd/etcd/main.go" "$here/build.sh" | sha256sum | cut -c1-12)"
k8s_version="$(awk '/k8s.io\/kubernetes v/ {print $2; exit}' "$here/k8s/go.mod")"
k8s_minor="$(echo "$k8s_version" | cut -d. -f2)"
# A plain `go build` reports v0.0.0-master+$Format:%H$, which kubectl cannot parse; stamp the real
# version as the upstream release build does (hack/lib/version.sh).
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor -X $pkg.gitTreeState=clean"
done
cache="${APPKIND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/appkind}/controlplane/${k8s_version}-${key}"
mkdir -p "$cache"

build() { # build <name> <module dir> <package> [ldflags]
  local name="$1" dir="$2" pkg="$3" ldflags="${4:-}" start tmp
  if [ -x "$cache/$name" ]; then return 0; fi
  start=$(date +%s)
  tmp="$cache/.$name.tmp.$$"
  echo "controlplane: building $name from $pkg (first run only; cached in $cache)" >&2
  if (cd "$here/$dir" && go build -ldflags="$ldflags" -o "$tmp" "$pkg") >&2; then
    mv -f "$tmp" "$cache/$name"
    echo "controlplane: built $name in $(( $(date +%s) - start ))s" >&2
  else
    rm -f "$tmp"
    return 1
  fi
}

total_start=$(date +%s)
build etcd k8s ./cmd/etcd
build kube-apiserver k8s k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build kube-controller-manager k8s k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build kube-scheduler k8s k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags" || echo "controlplane: kube-scheduler did not build; pods will stay Pending" >&2
build kwok kwok sigs.k8s.io/kwok/cmd/kwok || echo "controlplane: kwok did not build; pods will stay Pending" >&2
# Marks a finished run: binaries.ts then uses the cache without Go and does not retry optional
# binaries that failed to build.
touch "$cache/.complete"
echo "controlplane: binaries ready in $(( $(date +%s) - total_start ))s" >&2
echo "$cache"
