package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPacketTimeout: a packet begun after the Access must arrive whole
// within --packet-timeout: a peer that trickles one out, a byte at a time
// (each byte well inside the idle timeout), is closed for it; one whose
// packet takes a little while but arrives is served.
func TestPacketTimeout(t *testing.T) { forEngines(t, testPacketTimeout) }

func testPacketTimeout(t *testing.T, engine string) {
	const deadline = 300 * time.Millisecond
	s := startServer(t, Config{Engine: engine, PacketTimeout: deadline})
	whole, err := chat("Slow", "slow", "a chat sent a byte at a time").AppendPacket(nil)
	require.NoError(t, err)

	ok := dial(t, s)
	ok.access("Slow")
	ok.enter("Slow", "slow")
	for _, b := range whole { // well within the deadline
		ok.sendRaw([]byte{b})
		time.Sleep(deadline / time.Duration(4*len(whole)))
	}
	_, err = ok.next(5 * time.Second) // its confirm
	require.NoError(t, err)

	c := dial(t, s)
	c.access("Slow")
	c.enter("Slow", "trickler")
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for _, b := range whole[:len(whole)-1] { // never the last byte
			_ = c.c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(deadline / 4)
		}
	}()
	waitWithin(t, 10*time.Second, "the trickler to be closed", func() bool {
		return s.counters.closed[ReasonPacketTimeout].Load() == 1
	})
	took := time.Since(start)
	t.Logf("closed %v after its packet began (deadline %v)", took.Round(time.Millisecond), deadline)
	assert.Less(t, took, 10*deadline, "closed within a few deadlines")
	assert.Equal(t, int64(1), s.counters.open.Load(), "the other client is still served")
	<-closed
}
