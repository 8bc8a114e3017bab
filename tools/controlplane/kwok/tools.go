//go:build tools

// Keeps kwok's main package in go.mod/go.sum so `go mod tidy` pins all it needs.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
