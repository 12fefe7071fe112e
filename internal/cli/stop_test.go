package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWatchStopHung(t *testing.T) {
	setStopGrace(20 * time.Millisecond)
	t.Cleanup(func() { setStopGrace(0) })
	interrupted, done := make(chan struct{}), make(chan struct{})
	var out lockedBuffer
	exited := make(chan int, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		WatchStop(interrupted, done, &out, func(code int) { exited <- code })
	}()
	close(interrupted)
	select {
	case code := <-exited:
		assert.Equal(t, 1, code)
	case <-time.After(10 * time.Second):
		require.Fail(t, "WatchStop did not end a command that did not stop")
	}
	<-returned
	assert.Contains(t, out.String(), "volanogo: still running 20ms after the signal")
	// The stacks name this test's goroutine.
	assert.Contains(t, out.String(), "TestWatchStopHung")
}

func TestWatchStopStopped(t *testing.T) {
	setStopGrace(time.Hour)
	t.Cleanup(func() { setStopGrace(0) })
	for _, interrupt := range []bool{false, true} {
		interrupted, done := make(chan struct{}), make(chan struct{})
		var out lockedBuffer
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			WatchStop(interrupted, done, &out, func(int) { t.Error("exit called for a command that stopped") })
		}()
		if interrupt {
			close(interrupted)
		}
		close(done)
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			require.Fail(t, "WatchStop did not return once the command stopped")
		}
		assert.Empty(t, out.String())
	}
}

func TestStopGrace(t *testing.T) {
	t.Cleanup(func() { setStopGrace(0) })
	setStopGrace(0)
	assert.Equal(t, DefaultStopGrace, StopGrace())
	setStopGrace(40 * time.Second)
	assert.Equal(t, 40*time.Second, StopGrace())
}
