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

// baseline is the server's state at rest before a run that checks for
// leaks: samples until two in a row agree (at most LeakSettle), since a
// server just started may still be opening what it keeps (a descriptor,
// a goroutine, a JVM's threads).
func baseline(ctx context.Context, srv serverProbe) serverSample {
	prev := srv.sample(ctx)
	deadline := time.Now().Add(LeakSettle)
	for prev.ok && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		s := srv.sample(ctx)
		if !s.ok || (s.open == prev.open && s.goroutines == prev.goroutines && s.openFDs == prev.openFDs) {
			return s
		}
		prev = s
	}
	return prev
}

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

// leaks fills l from the server's state before and after the run.
func leaks(l *results.Leaks, before, after serverSample) {
	*l = results.Leaks{}
	if !before.ok || !after.ok {
		return
	}
	if before.hasOpen && after.hasOpen {
		l.LeakedConnections = max(0, after.open-before.open)
	}
	if before.goroutines > 0 && after.goroutines > 0 {
		l.LeakedGoroutines = max(0, after.goroutines-before.goroutines)
	}
	if before.openFDs > 0 && after.openFDs > 0 {
		l.LeakedFDs = max(0, after.openFDs-before.openFDs)
	}
}

// leakFailure is the failure for the leaks after what the run did (say,
// "1000 sequences"), "" if none.
func leakFailure(what string, l results.Leaks) string {
	if !l.Any() {
		return ""
	}
	return fmt.Sprintf("after %s the server still has %d more connections open, %d more goroutines and %d more descriptors than before the run",
		what, l.LeakedConnections, l.LeakedGoroutines, l.LeakedFDs)
}
