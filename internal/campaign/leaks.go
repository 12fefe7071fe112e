package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/volanogo/volanogo/internal/results"
)

// LeakSettle is how long a churn run waits, after its last sequence, for
// the server's open connections, goroutines and descriptors to come back
// to what they were before the run; what is still above then is a leak.
var LeakSettle = 5 * time.Second

// settle samples the server until its connections, goroutines and
// descriptors are back to before's (or LeakSettle has passed) and
// returns the last sample.
func settle(ctx context.Context, srv serverProbe, before serverSample) serverSample {
	deadline := time.Now().Add(LeakSettle)
	for {
		s := srv.sample(ctx)
		if !s.ok || !before.ok || (s.open <= before.open && s.goroutines <= before.goroutines && s.openFDs <= before.openFDs) {
			return s
		}
		if time.Now().After(deadline) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaks fills c's leaks from the server's state before and after the run.
func leaks(c *results.Churn, before, after serverSample) {
	c.LeakedConnections, c.LeakedGoroutines, c.LeakedFDs = 0, 0, 0
	if !before.ok || !after.ok {
		return
	}
	if before.hasOpen && after.hasOpen {
		c.LeakedConnections = max(0, after.open-before.open)
	}
	if before.goroutines > 0 && after.goroutines > 0 {
		c.LeakedGoroutines = max(0, after.goroutines-before.goroutines)
	}
	if before.openFDs > 0 && after.openFDs > 0 {
		c.LeakedFDs = max(0, after.openFDs-before.openFDs)
	}
}

// leakFailure is the failure for a churn run's leaks, "" if none.
func leakFailure(c *results.Churn) string {
	if c.LeakedConnections == 0 && c.LeakedGoroutines == 0 && c.LeakedFDs == 0 {
		return ""
	}
	return fmt.Sprintf("after %d sequences the server still has %d more connections open, %d more goroutines and %d more descriptors than before the run",
		c.Sequences, c.LeakedConnections, c.LeakedGoroutines, c.LeakedFDs)
}
