package server

import (
	"time"

	"github.com/volanogo/volanogo/pkg/protocol"
)

// share is what one connection has used of its fair share of chats: its
// chat rate (a generic cell rate algorithm: tat is when its bucket would
// be empty, on the clock of epoch) and its chats to rooms it is not in.
// Owned by the connection's reader (its goroutine, or its event loop).
type share struct {
	tat      int64  // nanoseconds since epoch
	chats    uint16 // chats since the clock was last read
	strays   uint16 // chats to rooms it was not in
	doomed   bool   // held unread for the violation hold, then closed (doomedClose)
	tooLarge bool   // doomed by a packet over --max-packet (its reader's error); else by its stray chats
	paced    bool   // counted once as paced (volanogo_requests_refused_total)
}

// epoch is the chat rates' clock: monotonic, whatever the wall clock does.
var epoch = time.Now()

// chatBatch is how many chats go between two readings of the clock, each
// charging that many: reading it costs about 100 ns on a virtual machine,
// a few percent of a chat's relay.
const chatBatch = 16

// maxStrays is how many chats to rooms it is not in a connection may
// send; the next closes it (ReasonNotInRoom). They are dropped without a
// reply, as the original drops them (a client racing its own ExitRoom
// may send one or two), but each costs a parse: a flood of them from a
// connection that is in no room would cost the server far more than its
// sender.
const maxStrays = 16

// chatDelay charges one chat read from c to its chat rate and says how
// long c must wait before that chat is handled (0: at once). The caller
// then holds the chat and reads nothing more from c for that long, and
// handles the chat without asking again: it has been charged. The
// goroutine engine sleeps (TCP's flow control slows the client down);
// an event loop pauses the connection. Call it for every chat, before
// handling it, on the connection's reader.
func (c *conn) chatDelay() time.Duration {
	rate := c.s.cfg.ChatRate
	if rate <= 0 {
		return 0
	}
	c.share.chats++
	if c.share.chats < chatBatch {
		return 0
	}
	n := int64(c.share.chats)
	c.share.chats = 0
	now := int64(time.Since(epoch))
	interval := int64(time.Second) / int64(rate)
	tat := max(c.share.tat, now) + n*interval
	c.share.tat = tat
	// a burst of one second's worth of chats passes unpaced
	wait := time.Duration(tat - now - int64(time.Second))
	if wait <= 0 {
		return 0
	}
	if !c.share.paced {
		c.share.paced = true
		c.s.refuseRequest(c, ReasonChatRate)
	}
	return wait
}

// paceChat is the goroutine engine's (and WebSocket's) use of chatDelay:
// it sleeps for the delay.
func (c *conn) paceChat() {
	if d := c.chatDelay(); d > 0 {
		time.Sleep(d)
	}
}

// strayChat counts a chat to a room c is not in, which is dropped; past
// maxStrays it dooms c: its reader reads no more of it, holds it for
// the violation hold, then closes it as a protocol violation of its own reason
// (ReasonNotInRoom). A WebSocket connection is closed at once.
func (c *conn) strayChat() {
	c.s.counters.strays.Add(1)
	if c.share.strays++; c.share.strays > maxStrays {
		c.share.doomed = true
	}
}

// endHolds lets every held connection go (Drain and Shutdown close them).
func (s *Server) endHolds() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// doomOnRead tells whether a read error is one a connection is held for
// before its close (a packet over --max-packet), and dooms it if so.
func (c *conn) doomOnRead(err error) bool {
	if readCloseReason(err) != ReasonTooLarge {
		return false
	}
	c.share.doomed, c.share.tooLarge = true, true
	return true
}

// doomedClose closes a doomed connection once it has been held.
func (c *conn) doomedClose() {
	if c.share.tooLarge {
		err := protocol.ErrTooLarge
		if c.reader != nil {
			if _, e := c.reader.Next(); readCloseReason(e) == ReasonTooLarge {
				err = e // the reader's own, which is sticky: it says what and where
			}
		}
		c.readFailed(err)
		return
	}
	c.close(ReasonNotInRoom)
}

// roomsFull tells whether c is in as many rooms as one connection may be
// (Config.MaxConnRooms): its share of the rooms a server holds, since each
// room a connection is in stays while it does.
func (c *conn) roomsFull() bool {
	max := c.s.cfg.MaxConnRooms
	return max > 0 && len(c.members) >= max
}

// searchCost is the bytes of room names a filtered RoomList may search
// for the price of one request. A list that searches more is charged the
// rest against the connection's request rate (--request-rate), so that
// lists over many rooms are paced by the work they take: at 20,000 rooms
// named as VolanoMark names them (190 KB of names) a list that searches
// them all costs 11 requests.
const searchCost = 16 << 10

// chargeSearch charges c for the bytes of names its filtered RoomList
// searched (Server.roomNames).
func (c *conn) chargeSearch(searched int) {
	if c.s.cfg.RequestRate > 0 && searched > searchCost {
		c.tokens -= float64(searched / searchCost)
	}
}

// holdRecvBuffer is a held connection's receive buffer (SO_RCVBUF; the
// kernel doubles it): once it is full the peer's segments are no longer
// taken, so a peer that goes on writing during the hold wakes nobody here,
// and its own writes pile up in its send buffer instead of each crossing
// the network stack.
const holdRecvBuffer = 4 << 10

// beginHold starts c's violation hold: c gets the small receive buffer
// of holdRecvBuffer, and is marked held (the held gauge; displacement
// ends the hold when descriptors are short, displace.go).
func (c *conn) beginHold() {
	if rb, ok := c.nc.(interface{ SetReadBuffer(n int) error }); ok {
		_ = rb.SetReadBuffer(holdRecvBuffer)
	}
	if c.status.Or(connHeld)&connHeld == 0 {
		c.s.counters.held.Add(1)
	}
}

// holdThenClose keeps a doomed connection of a reading goroutine open and
// unread for the violation hold (Config.ViolationHold; Off: not at all),
// or until the server drains or shuts down, then closes it. It sleeps: a
// thousand held connections cost no wake-ups.
func (c *conn) holdThenClose() {
	if d := c.s.cfg.ViolationHold; d > 0 {
		end := make(chan struct{}, 1)
		c.mu.Lock()
		c.wake = end // before the hold is marked: endHold sends on it
		c.mu.Unlock()
		c.beginHold()
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.s.stopping:
		case <-end: // displace.go: descriptors are short
		}
		t.Stop()
	}
	c.doomedClose()
}
