//go:build tools

// Package tools records the main package scripts/helm-env.sh builds, so that
// 'go mod tidy' keeps every module it needs in go.mod and go.sum.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
