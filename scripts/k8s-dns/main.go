// Command k8s-dns is CoreDNS with only the plugins the test node's cluster DNS uses
// (scripts/k8s-node.sh runs it on the node's bridge address and points every pod's
// resolv.conf at it). Building the plugin set here instead of all of CoreDNS keeps
// the build, and what it downloads, small.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The directives in the order CoreDNS runs them (a subset of its plugin.cfg).
func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "cache", "kubernetes", "forward"}
}

func main() {
	coremain.Run()
}
