package leak

import (
	"os"
	"os/signal"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A goroutine started after the snapshot and still running is reported,
// with its stack; once it ends, nothing is.
func TestSinceReportsNewGoroutine(t *testing.T) {
	before := Snapshot()
	stop := make(chan struct{})
	started := make(chan struct{})
	go func() {
		close(started)
		<-stop
	}()
	<-started
	leaked := Since(before)
	require.Len(t, leaked, 1)
	assert.Contains(t, leaked[0].Stack, "TestSinceReportsNewGoroutine")
	close(stop)
	assert.Empty(t, Wait(before, 5*time.Second))
}

// One goroutine ending while another starts keeps the count unchanged: a
// count would miss the new one, ids do not.
func TestSinceSeesThroughASwap(t *testing.T) {
	stopOld := make(chan struct{})
	oldDone := make(chan struct{})
	go func() {
		defer close(oldDone)
		<-stopOld
	}()
	before := Snapshot()
	close(stopOld)
	<-oldDone
	stopNew := make(chan struct{})
	defer close(stopNew)
	go func() { <-stopNew }()
	leaked := Wait(before, 200*time.Millisecond)
	require.Len(t, leaked, 1)
}

// The signal loop that the first signal.Notify starts (as the fuzzing
// coordinator does) lives as long as the process and is not a leak.
func TestSignalLoopIsExempt(t *testing.T) {
	before := Snapshot()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, quietSignal)
	signal.Stop(ch)
	for _, g := range Since(before) {
		t.Errorf("reported: %s", g.Stack)
	}
	var sawLoop bool
	for _, g := range Snapshot() {
		if strings.Contains(g.Stack, "os/signal.signal_recv") {
			sawLoop = true
			assert.True(t, Exempt(g))
		}
	}
	assert.True(t, sawLoop, "the signal loop is running")
}

// Check passes a test that leaves nothing behind.
func TestCheckClean(t *testing.T) {
	Check(t, time.Second)
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
}
