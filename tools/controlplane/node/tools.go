//go:build tools

// Keeps the real node's main packages in go.mod/go.sum so `go mod tidy` pins all they need:
// containerd with its runc shim and ctr (image import), the CNI plugins the node's network uses,
// and crictl for debugging a node by hand.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
