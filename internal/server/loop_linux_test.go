//go:build linux

package server

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
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
		n += l.open + len(l.paused) + len(l.watch) + len(l.queue) + poller(l.p)
		for _, k := range l.slots {
			if k != nil {
				n++
			}
		}
	}
	return n
}
