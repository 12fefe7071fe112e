package server

import "github.com/volanogo/volanogo/pkg/protocol"

// loopDeadlines is what an event loop (epoll or uring) keeps of one
// connection for its deadlines and its pause; owned by the loop. Both
// engines' sockets embed it where their cold fields are.
type loopDeadlines struct {
	accessBy int64 // unix nanos: the Access deadline (0: none)
	idleAt   int64 // unix nanos: the next idle check (0: not armed)
	seen     uint64
	lingerBy int64           // unix nanos: the end of the drain (0: not draining)
	pauseBy  int64           // unix nanos: a paused connection resumes then
	held     *protocol.Frame // the packet a paused connection handles on resuming
	scanned  uint64          // c.packets at the last scan
}

// scanSock is what the deadline scan asks of an engine's socket.
type scanSock interface {
	// stalledLocked: the current batch's write stall deadline has
	// passed with nothing of it in flight; c.mu is held.
	stalledLocked(now int64) bool
	isPaused() bool
}

// scanConn checks the deadlines of one of a loop's connections at now:
// the end of its drain, a slow consumer's write stall, the Access and
// idle timeouts (a Ping first, then the close); and gives back to pool
// the reader and scratch buffer of a connection that read nothing since
// the last scan. It reports whether the loop must settle c.
func scanConn(c *conn, k scanSock, d *loopDeadlines, now int64, pool *bufPool) bool {
	cfg := &c.s.cfg
	c.mu.Lock()
	switch {
	case c.closed:
	case d.lingerBy != 0:
		if now > d.lingerBy {
			c.closeLocked(c.lingering)
		}
	case c.flushing && k.stalledLocked(now):
		c.closeLocked(ReasonSlowConsumer)
	}
	closed := c.closed
	c.mu.Unlock()
	if closed || d.lingerBy != 0 {
		return true
	}
	if c.packets == d.scanned && !k.isPaused() && c.reader != nil && c.reader.Buffered() == 0 {
		// Idle since the last scan: give back the reader, its buffer
		// and the scratch buffer to the loop's pool (readIn takes
		// them back), so that thousands of idle connections cost
		// their state only.
		pool.giveBack(c)
	}
	d.scanned = c.packets
	if !c.accessed {
		if d.accessBy != 0 && now > d.accessBy {
			c.close(ReasonAccessTimeout)
			return true
		}
		return false
	}
	if cfg.IdleTimeout <= 0 {
		return false
	}
	if d.idleAt == 0 {
		d.idleAt, d.seen = now+int64(cfg.IdleTimeout), c.packets
		return false
	}
	if now < d.idleAt {
		return false
	}
	if c.packets != d.seen {
		c.strikes = 0
	} else {
		c.strikes++
		if c.strikes >= 2 {
			c.close(ReasonIdle)
			return true
		}
		c.sendPing()
	}
	d.idleAt, d.seen = now+int64(cfg.IdleTimeout), c.packets
	return true
}
