// Command pause is the sandbox ("pause") container of every pod on the test node:
// it holds the pod's namespaces, reaps the orphans it inherits as PID 1, and exits
// on SIGINT or SIGTERM. It stands in for registry.k8s.io/pause, which cannot be
// pulled here; scripts/k8s-node.sh builds it into the image uhlp.dev/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
