package server

// rawReadyLocked tells whether a send to c may go straight to its socket
// (sendRaw) before sendLocked: a TCP connection with a descriptor, open,
// not being let go, nothing waiting before it. c.mu must be held.
func (c *conn) rawReadyLocked() bool {
	return c.fd >= 0 && !c.flushing && !c.closed && c.lingering == "" && useSendto
}

// relayChat sends ind to every connection of conns but c, then conf to
// c, as send would, and returns the receivers. The send system call is
// made here (sendRaw is inlined), not four calls down (send, tryWrite,
// writeNonblock, rawSend): the kernel's path of a loopback send is
// deeper than the processor's return stack, so every return after it
// was mispredicted, and the returns up that chain were about a quarter
// of the server's user-space time at 15 rooms in a perf profile. What
// the socket does not take at once goes through sendLocked, under the
// same hold of the lock.
func relayChat(c *conn, conns []*conn, ind, conf []byte) int {
	n := 0
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
		}
		o.mu.Unlock()
	}
	return n
}
