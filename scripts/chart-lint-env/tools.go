//go:build tools

// The linters' main packages, named so that 'go mod tidy' keeps their requirements.
package tools

import (
	_ "github.com/yannh/kubeconform/cmd/kubeconform"
	_ "github.com/zegl/kube-score/cmd/kube-score"
)
