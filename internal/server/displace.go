package server

import (
	"os"
	"time"
)

// Displacement: at a connection limit (the open-files limit, or
// --max-connections) the acceptor makes room before it refuses anyone.
// It ends every violation hold (those connections are closed for what
// they sent anyway: the hold only slows their sender down) and closes
// every connection that has gone displaceAge without an Access
// (ReasonDisplaced). A client that means to chat sends its Access as it
// connects; one silent for a second at a full server is an attacker
// holding descriptors, or a client that will be refused at its access
// timeout anyway. Connections past their Access are never displaced: a
// full server of real users refuses the next one, as before.
const (
	// displaceAge: a connection without an Access for this long may be
	// displaced.
	displaceAge = time.Second
	// displaceEvery: scans come at most this often, so that a flood of
	// connections at the limit costs one walk of the connections per
	// period, not one per accept.
	displaceEvery = 50 * time.Millisecond
	// roomWait bounds how long the acceptor waits for the descriptors
	// let go to be closed (an event loop closes them on its next round).
	roomWait = 100 * time.Millisecond
)

// Bits of conn.status.
const (
	connAdmitted = 1 << iota // its Access was read
	connHeld                 // in its violation hold
)

// endHold ends c's violation hold now: it is closed for what it sent,
// as at the hold's end.
func (c *conn) endHold() {
	if c.eng != nil {
		// The loop closes a doomed connection that is let go at once
		// (settle), for its own reason: the one given here is a marker.
		c.closeAfterReply(ReasonShutdown)
		c.wakeReader()
		return
	}
	c.mu.Lock()
	if c.ws == nil && c.wake != nil { // set before the hold began
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
}

// admitted tells whether c's Access was read, from any goroutine.
func (c *conn) admitted() bool { return c.status.Load()&connAdmitted != 0 }

// makeRoom lets go of every connection in its violation hold (closed for
// what it sent, as at the hold's end) and every one that has gone
// displaceAge without an Access (displaced). It returns how many it let
// go: 0 when there was none, or when the last scan was less than
// displaceEvery ago. All of them, not a few: a user waiting in the
// listen backlog behind an attacker's reconnecting connections gets in
// only when the room made reaches it (bench/server/occupied.sh: with 32 a
// scan, held connections let go oldest first, users waited 0.5-1.2 s at
// the median and up to 4.9 s; all at once, 8-12 ms and up to 54 ms), and
// each connection let go costs the attacker a dial, as it costs the
// server an accept.
func (s *Server) makeRoom() int {
	now := time.Now().UnixNano()
	last := s.lastRoom.Load()
	if now-last < int64(displaceEvery) || !s.lastRoom.CompareAndSwap(last, now) {
		return 0
	}
	var held, silent []*conn
	s.mu.Lock()
	for c := range s.conns {
		st := c.status.Load()
		switch {
		case st&connHeld != 0:
			held = append(held, c)
		case st&connAdmitted == 0 && now-c.born >= int64(displaceAge):
			silent = append(silent, c)
		}
	}
	s.mu.Unlock()
	for _, c := range held {
		c.endHold()
	}
	s.counters.holdsCut.Add(uint64(len(held)))
	for _, c := range silent {
		c.close(ReasonDisplaced) // logged as the other closes of its kind (warnReasons)
	}
	return len(held) + len(silent)
}

// waitForDescriptor waits, at most roomWait, until a descriptor can be
// opened beside the reserve: the connections makeRoom let go are closed.
func waitForDescriptor() {
	deadline := time.Now().Add(roomWait)
	for {
		if f, err := os.Open(os.DevNull); err == nil {
			_ = f.Close()
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
