// Command pause is the pod sandbox's process on the real node: it holds the pod's namespaces, reaps
// the orphans it inherits as PID 1, and exits on SIGINT or SIGTERM. No registry can be reached here,
// so the node's sandbox image is this binary in an empty image (tools/controlplane/node-images.ts).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
