package cli

import (
	"fmt"
	"io"
	"runtime/pprof"
	"sync/atomic"
	"time"
)

// DefaultStopGrace is how long a command has to stop after the first
// SIGINT or SIGTERM before WatchStop gives up on it: a load writes its
// documents and stops its server (SIGTERM, SIGKILL five seconds later)
// and its shards within it.
const DefaultStopGrace = time.Minute

// stopGraceSlack is what serve's stop grace adds to its drain timeout.
const stopGraceSlack = 30 * time.Second

// stopGrace is the current stop grace in nanoseconds (0: the default).
var stopGrace atomic.Int64

// setStopGrace sets how long the running command may take to stop (serve
// raises it to its drain timeout and stopGraceSlack).
func setStopGrace(d time.Duration) { stopGrace.Store(int64(d)) }

// StopGrace is how long the running command may take to stop after the
// first signal.
func StopGrace() time.Duration {
	if d := time.Duration(stopGrace.Load()); d > 0 {
		return d
	}
	return DefaultStopGrace
}

// WatchStop is the process's last resort against a stop that hangs:
// once interrupted is closed (the first signal), it waits StopGrace() for
// done (the command has returned); if done does not come, it writes a line
// and every goroutine's stack to w, so that the hang can be found, and
// calls exit(1). It returns when done is closed. Every wait of volanogo
// has its own deadline; this is for the one that was missed.
func WatchStop(interrupted, done <-chan struct{}, w io.Writer, exit func(int)) {
	select {
	case <-done:
		return
	case <-interrupted:
	}
	grace := StopGrace()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		fmt.Fprintf(w, "volanogo: still running %v after the signal; its goroutines follow (a second signal ends it at once)\n", grace)
		_ = pprof.Lookup("goroutine").WriteTo(w, 2)
		exit(1)
	}
}
