//go:build !linux

package server

// relayChat sends ind to every connection of conns but c, then conf to
// c, and returns the receivers (send_linux.go's makes the system call
// itself).
func relayChat(c *conn, conns []*conn, ind, conf []byte) int {
	n := 0
	for _, o := range conns {
		if o != c {
			o.send(ind)
			n++
		}
	}
	c.send(conf)
	return n
}
