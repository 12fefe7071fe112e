// Command volanogo is VolanoMark rebuilt in Go: a chat server (serve), its
// client swarm (load) and the Volano Report (report), in one binary.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/volanogo/volanogo/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		// The first signal asks the command to stop and flush; from then
		// on a second one ends the process at once.
		select {
		case <-ctx.Done():
			stop()
		case <-done:
		}
	}()
	// A command that has not stopped within its grace after the signal
	// prints its goroutines and ends the process.
	go cli.WatchStop(ctx.Done(), done, os.Stderr, os.Exit)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	close(done)
	stop()
	os.Exit(code)
}
