package server

import (
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// countedLowWater counts the reads of a goroutine-engine connection's
// source, keeping its low-water mark.
type countedLowWater struct {
	*lowWaterConn
	reads int
}

func (c *countedLowWater) Read(p []byte) (int, error) {
	c.reads++
	return c.lowWaterConn.Read(p)
}

// TestLowWaterTrickle: over a real loopback socket, a 64 KiB packet of
// one-byte strings written 1 to 3 bytes at a time reaches the goroutine
// engine's reader in a few dozen reads (its low-water mark holds the
// reader back until the bytes the packet still needs have come); it
// took one read per write or so.
func TestLowWaterTrickle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer cc.Close()
	sc, err := ln.Accept()
	require.NoError(t, err)
	defer sc.Close()

	rooms := make([]string, 21840)
	for i := range rooms {
		rooms[i] = "x"
	}
	pkt, err := (&protocol.RoomList{Type: protocol.Request, Rooms: rooms}).AppendPacket(nil)
	require.NoError(t, err)
	writes := make(chan int, 1)
	go func() {
		rng := rand.New(rand.NewPCG(5, 6))
		n := 0
		_ = cc.SetWriteDeadline(time.Now().Add(time.Minute))
		for off := 0; off < len(pkt); n++ {
			k := min(1+rng.IntN(3), len(pkt)-off)
			if off == 0 {
				k = 12 // the header and the count
			}
			if _, err := cc.Write(pkt[off : off+k]); err != nil {
				break
			}
			off += k
		}
		writes <- n
	}()

	lw, ok := withLowWater(sc).(*lowWaterConn)
	require.True(t, ok, "a TCP connection gets a low-water mark")
	src := &countedLowWater{lowWaterConn: lw}
	r := protocol.NewReader(src, 0)
	require.NoError(t, sc.SetReadDeadline(time.Now().Add(time.Minute)))
	f, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, pkt, f.Raw)
	n := <-writes
	t.Logf("%d writes, %d reads", n, src.reads)
	// typically 3 to 7; without the mark about one per write on an idle
	// machine (the bound leaves room for a loaded one)
	assert.Less(t, src.reads, n/8, "reads for %d writes", n)
}
