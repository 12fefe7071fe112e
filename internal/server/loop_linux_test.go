//go:build linux

package server

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSockLayout: what the loop touches of a socket for each event (its
// connection, descriptor and slot, and on epoll its budget, mask and
// pause), and what a relay touches of an io_uring socket's batch, is in
// its first 64 bytes; and each kind is a small size class (112 bytes on
// epoll, 224 on io_uring: less than the 128 and 256 of each engine's
// socket before the loop was written once).
func TestSockLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is for 64-bit pointers")
	}
	var e sock[epSock]
	assert.LessOrEqual(t, unsafe.Sizeof(e), uintptr(112))
	for _, f := range []uintptr{unsafe.Offsetof(e.c), unsafe.Offsetof(e.fd), unsafe.Offsetof(e.slot),
		unsafe.Offsetof(e.paused), unsafe.Offsetof(e.sawEOF),
		unsafe.Offsetof(e.x) + unsafe.Offsetof(e.x.budget), unsafe.Offsetof(e.x) + unsafe.Offsetof(e.x.mask)} {
		assert.Less(t, f, uintptr(64))
	}
	var u sock[urSock]
	assert.LessOrEqual(t, unsafe.Sizeof(u), uintptr(224))
	for _, f := range []uintptr{unsafe.Offsetof(u.c), unsafe.Offsetof(u.loop), unsafe.Offsetof(u.fd),
		unsafe.Offsetof(u.x) + unsafe.Offsetof(u.x.pending), unsafe.Offsetof(u.x) + unsafe.Offsetof(u.x.sending),
		unsafe.Offsetof(u.x) + unsafe.Offsetof(u.x.holding), unsafe.Offsetof(u.x) + unsafe.Offsetof(u.x.fixed)} {
		assert.Less(t, f, uintptr(64))
	}
	assert.LessOrEqual(t, unsafe.Offsetof(u.x)+unsafe.Offsetof(u.x.bout)+unsafe.Sizeof(u.x.bout), uintptr(64))
}

// loopKept counts what the engine's loops hold of connections: those
// registered, listed (paused, watched, queued) or in a poller's batch or
// sends. Read after the server's shutdown (the loops have stopped).
func loopKept(eng ioEngine) int {
	switch e := eng.(type) {
	case *loopEngine[epSock]:
		return e.kept(func(poller[epSock]) int { return 0 })
	case *loopEngine[urSock]:
		return e.kept(func(p poller[urSock]) int {
			u := p.(*urPoller)
			n := len(u.batch) + len(u.later) + len(u.held) + len(u.cqes)
			for _, k := range u.sends {
				if k != nil {
					n++
				}
			}
			return n
		})
	}
	return 0
}

func (e *loopEngine[X]) kept(poller func(poller[X]) int) int {
	n := 0
	for _, l := range e.loops {
		n += l.open + len(l.yielding) + len(l.timed) + len(l.watch) + len(l.queue) + poller(l.p)
		for _, k := range l.slots {
			if k != nil {
				n++
			}
		}
	}
	return n
}

// TestPauseHeap: the loop's timed pauses come off the heap soonest first,
// whatever was removed from the middle meanwhile (a paused connection
// that closed), and every sock's pausedAt is its index while it is there
// and -1 once it is not.
func TestPauseHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h pauseHeap[epSock]
	in := map[*sock[epSock]]bool{}
	check := func() {
		for i, k := range h {
			require.Equal(t, int32(i), k.pausedAt) //nolint:gosec // small
			if i > 0 {
				require.LessOrEqual(t, h[(i-1)/2].pauseBy, k.pauseBy, "heap order at %d", i)
			}
		}
		require.Len(t, h, len(in))
	}
	for range 2000 {
		switch op := rng.IntN(10); {
		case op < 6 || len(h) == 0:
			k := newSock[epSock](0)
			k.pauseBy = 1 + rng.Int64N(1000)
			h.push(k)
			in[k] = true
		case op < 8:
			k := h[rng.IntN(len(h))]
			require.Same(t, k, h.removeAt(int(k.pausedAt)))
			assert.Equal(t, int32(-1), k.pausedAt)
			delete(in, k)
		default:
			least := int64(1 << 62)
			for k := range in {
				least = min(least, k.pauseBy)
			}
			k := h.removeAt(0)
			require.Equal(t, least, k.pauseBy, "the soonest first")
			assert.Equal(t, int32(-1), k.pausedAt)
			delete(in, k)
		}
		check()
	}
	for last := int64(0); len(h) > 0; {
		k := h.removeAt(0)
		require.GreaterOrEqual(t, k.pauseBy, last)
		last = k.pauseBy
	}
}
