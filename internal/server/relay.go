package server

// rawReadyLocked tells whether a send to c may go straight to its socket
// (sendRaw) before sendLocked: a TCP connection with a descriptor, open,
// not being let go, nothing waiting before it. c.mu must be held.
func (c *conn) rawReadyLocked() bool {
	return c.fd >= 0 && !c.flushing && !c.closed && c.lingering == "" && useSendto
}

// relayChat sends ind to every connection of conns but c, then conf to
// c, as send would, and returns the receivers, and whether one of them
// has half its send buffer or more waiting (its sender is then paced:
// conn.paceRoom). The send system call is made here (sendRaw is inlined):
// the returns up a deeper chain of calls were mispredicted after every
// loopback send. What the socket does not take goes through sendLocked.
func relayChat(c *conn, conns []*conn, ind, conf []byte) (int, bool) {
	n, behind, half := 0, false, c.s.cfg.SendBuffer/2
	for i := 0; i <= len(conns); i++ {
		o, b := c, conf
		if i < len(conns) {
			if o = conns[i]; o == c {
				continue
			}
			b = ind
			n++
		}
		o.mu.Lock()
		if o.rawReadyLocked() {
			if m := sendRaw(int(o.fd), b); m > 0 {
				o.taken += int64(m)
				b = b[m:]
			}
		}
		if len(b) > 0 {
			o.sendLocked(b) // the rest, or an error, as send would
			behind = behind || o.behindLocked(half)
		}
		o.mu.Unlock()
	}
	return n, behind
}

// behindLocked tells whether half bytes or more wait for the connection
// (half of the send buffer; c.mu held).
func (c *conn) behindLocked(half int) bool {
	if c.closed {
		return false
	}
	if c.ws != nil {
		return c.queued >= half
	}
	return len(c.out)+c.inflight >= half
}
