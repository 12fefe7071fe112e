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
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
