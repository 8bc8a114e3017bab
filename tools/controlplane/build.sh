#!/usr/bin/env bash
# Builds the real control-plane binaries from the pinned Go modules into a cache outside the repo and
# prints that folder on the last line of stdout. Reuses the cache when every binary is already there.
#   etcd kube-apiserver kube-controller-manager   required
#   kube-scheduler kwok                           optional (pods stay Pending without them)
#   kubelet kube-proxy containerd containerd-shim-runc-v2 ctr crictl pause bridge host-local
#   loopback portmap                              optional (the real node: --real-node)
# `build.sh --print-cache-dir` only prints the folder (binaries.ts computes the same; a unit test
# compares the two).
#
# One `go build` builds the Kubernetes binaries from one module (k8s/go.mod: kube-apiserver's k8s.io
# libraries, the kubelet and kube-proxy, kwok v0.8.0 built against them too), so every shared package
# is compiled once and one binary links while the others still compile. A second `go build` builds
# the real node's runtime from node/go.mod (containerd v2 and its shim, ctr, crictl, the CNI plugins
# and the sandbox's pause binary): containerd pins other releases of libraries the k8s module shares. `-gcflags=all=-dwarf=false` and `-ldflags=-s -w` skip
# debug info the binaries would drop anyway (no symbol table, no DWARF; the code is the same, panics
# still print function names and lines). The planning step (`go list -deps`) downloads the modules
# on a fresh machine; build-progress-cli.ts counts those downloads, then the packages `go build -v`
# names against that plan: a bar on a terminal, a line every 15 s otherwise.
# A lock (flock on <cache>/.lock) makes a second concurrent run wait for the first and reuse its result.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"

# The key covers everything that shapes the binaries, this script (its flags) included; binaries.ts
# computes the same key to find the cache without Go.
key="$(cat "$here/k8s/go.sum" "$here/k8s/cmd/etcd/main.go" "$here/node/go.sum" "$here/node/cmd/pause/main.go" \
  "$here/build.sh" | sha256sum | cut -c1-12)"
k8s_version="$(awk '/k8s.io\/kubernetes v/ {print $2; exit}' "$here/k8s/go.mod")"
cache="${APPKIND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/appkind}/controlplane/${k8s_version}-${key}"
if [ "${1:-}" = "--print-cache-dir" ]; then echo "$cache"; exit 0; fi

all_there() { # all_there <name>...: every named binary is in the cache
  local name
  for name in "$@"; do [ -x "$cache/$name" ] || return 1; done
}
mkdir -p "$cache"
if [ -e "$cache/.complete" ] && all_there etcd kube-apiserver kube-controller-manager; then echo "$cache"; exit 0; fi

# Held until this script exits (fd 9; children get it closed). A waiter then finds .complete.
if command -v flock >/dev/null 2>&1; then
  exec 9<>"$cache/.lock"
  if ! flock -n 9; then
    echo "controlplane: another build of $cache is in progress (pid $(cat "$cache/.lock" 2>/dev/null || echo '?')); waiting" >&2
    flock 9
    if [ -e "$cache/.complete" ] && all_there etcd kube-apiserver kube-controller-manager; then
      echo "controlplane: the other build finished; reusing $cache" >&2
      echo "$cache"
      exit 0
    fi
  fi
  echo "$$" >"$cache/.lock"
fi

if ! command -v go >/dev/null 2>&1; then
  echo "controlplane: no Go toolchain found and no prebuilt binaries given." >&2
  echo "  Install Go >= 1.26 (https://go.dev/doc/install, or apt-get install golang-1.26) and re-run," >&2
  echo "  or set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver and kube-controller-manager." >&2
  exit 3
fi

k8s_minor="$(echo "$k8s_version" | cut -d. -f2)"
# A plain `go build` reports v0.0.0-master+$Format:%H$, which kubectl cannot parse; stamp the real
# version as the upstream release build does (hack/lib/version.sh). etcd links neither package;
# kwok links client-go, which is v1.37.2's here too.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor -X $pkg.gitTreeState=clean"
done

# The progress filter needs the repo's node_modules (tsx, cli-progress); without them go's own output
# (a line per download, then one package per line) is shown as it is.
tsx="$here/../../node_modules/.bin/tsx"
progress() { # progress <args>: reads go's output on stdin, writes stderr only
  if [ -x "$tsx" ]; then "$tsx" "$here/build-progress-cli.ts" "$@" >&2; else cat >&2; fi
}

tmp="$cache/.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
build_module() { # build_module <module folder> <name=package>...: builds the named binaries not yet cached
  local module="$1" spec name rc=0
  shift
  local names=() pkgs=()
  for spec in "$@"; do
    name="${spec%%=*}"
    if [ ! -x "$cache/$name" ]; then names+=("$name"); pkgs+=("${spec#*=}"); fi
  done
  ((${#names[@]})) || return 0
  local start=$(date +%s)
  echo "controlplane: building ${names[*]} (first run only; cached in $cache)" >&2
  rm -rf "$tmp" && mkdir -p "$tmp"
  # The plan: every package the binaries need, its Go files (count, folder, names: the estimate weighs
  # packages by source size) and whether it must be compiled. On a fresh machine this step downloads
  # the modules first; go prints `go: downloading <module>` for each, which progress counts.
  (cd "$module" && go list -deps -tags no_btrfs -gcflags=all=-dwarf=false -f \
    $'{{.ImportPath}}\t{{len .GoFiles}}\t{{.Stale}}\t{{.Name}}\t{{.Dir}}\t{{join .GoFiles ","}}' "${pkgs[@]}" 2>&1 >"$tmp/plan") 9>&- \
    | progress --downloads 9>&- || rc=$?
  if [ $rc -eq 0 ]; then
    (cd "$module" && go build -v -tags no_btrfs -gcflags=all=-dwarf=false -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}" 2>&1) 9>&- \
      | progress "$tmp/plan" "${names[*]}" 9>&- || rc=$?
  fi
  for name in "${names[@]}"; do
    if [ -x "$tmp/$name" ]; then mv -f "$tmp/$name" "$cache/$name"; fi
  done
  echo "controlplane: built ${names[*]} in $(( $(date +%s) - start ))s$([ $rc -eq 0 ] || echo ' (with errors above)')" >&2
}
build_module "$here/k8s" etcd=./cmd/etcd kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler kwok=sigs.k8s.io/kwok/cmd/kwok \
  kubelet=k8s.io/kubernetes/cmd/kubelet kube-proxy=k8s.io/kubernetes/cmd/kube-proxy
# The real node's runtime; `-tags no_btrfs` leaves out containerd's btrfs snapshotter (it needs cgo).
build_module "$here/node" containerd=github.com/containerd/containerd/v2/cmd/containerd \
  containerd-shim-runc-v2=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  ctr=github.com/containerd/containerd/v2/cmd/ctr crictl=sigs.k8s.io/cri-tools/cmd/crictl pause=./cmd/pause \
  bridge=github.com/containernetworking/plugins/plugins/main/bridge \
  host-local=github.com/containernetworking/plugins/plugins/ipam/host-local \
  loopback=github.com/containernetworking/plugins/plugins/main/loopback \
  portmap=github.com/containernetworking/plugins/plugins/meta/portmap
all_there etcd kube-apiserver kube-controller-manager || { echo "controlplane: etcd, kube-apiserver or kube-controller-manager did not build" >&2; exit 1; }
for name in kube-scheduler kwok; do
  all_there $name || echo "controlplane: $name did not build; pods will stay Pending" >&2
done
for name in kubelet kube-proxy containerd containerd-shim-runc-v2 ctr pause bridge host-local loopback portmap; do
  all_there $name || echo "controlplane: $name did not build; the real node (--real-node) cannot start" >&2
done
# Marks a finished run: binaries.ts then uses the cache without Go and does not retry optional
# binaries that failed to build.
touch "$cache/.complete"
echo "$cache"
