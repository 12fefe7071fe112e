package server

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// lowWaterConn is a goroutine-engine TCP connection whose reader may hold
// back its reads until enough of a large packet has come
// (protocol.LowWater, SO_RCVLOWAT): a packet trickled a few bytes per
// write then wakes the reader a few times rather than once per write.
// The option is set through the runtime's descriptor, which a concurrent
// close cannot pull away.
type lowWaterConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

func (c *lowWaterConn) SetReadLowWater(n int) error {
	var serr error
	if err := c.raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}

// withLowWater is the source of a connection's packet reader: a TCP
// connection of the goroutine engine with its low-water mark, else nc.
func withLowWater(nc net.Conn) io.Reader {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	return &lowWaterConn{TCPConn: tc, raw: raw}
}
