package server

import (
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// rawSock is what the event-loop engines' connections (evSock, urSock)
// share: a net.Conn over a raw non-blocking TCP socket, its descriptor
// closed by its loop only. Each engine adds its Read, its Close (close
// with the engine's post) and its loop's state.
type rawSock struct {
	fd     int
	remote *net.TCPAddr
	state  atomic.Int32 // sockLoose ... sockClosed
}

// Write writes what the socket takes now; the server writes through
// tryWrite and its loop, never through this.
func (k *rawSock) Write(p []byte) (int, error) {
	n, err := writeNonblock(uintptr(k.fd), p)
	if err == nil && n < len(p) {
		err = errWouldBlock
	}
	return n, err
}

// close closes a socket no loop has; for one a loop has, it shuts the
// socket down (the client sees the close now) and calls post to tell the
// loop, which closes the descriptor once nothing uses it.
func (k *rawSock) close(post func()) error {
	for {
		switch k.state.Load() {
		case sockLoose:
			if k.state.CompareAndSwap(sockLoose, sockClosed) {
				return unix.Close(k.fd)
			}
		case sockAttached:
			if k.state.CompareAndSwap(sockAttached, sockClosing) {
				err := unix.Shutdown(k.fd, unix.SHUT_RDWR)
				post()
				return err
			}
		default:
			return nil
		}
	}
}

// CloseWrite sends a FIN (conn.shutdownWriteLocked, under conn.mu).
func (k *rawSock) CloseWrite() error {
	if k.state.Load() >= sockClosing {
		return nil
	}
	return unix.Shutdown(k.fd, unix.SHUT_WR)
}

func (k *rawSock) SetNoDelay(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return unix.SetsockoptInt(k.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
}

func (k *rawSock) SetWriteBuffer(n int) error {
	return unix.SetsockoptInt(k.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, n)
}

func (k *rawSock) LocalAddr() net.Addr {
	sa, err := unix.Getsockname(k.fd)
	if err != nil {
		return &net.TCPAddr{}
	}
	return sockaddrTCP(sa)
}

func (k *rawSock) RemoteAddr() net.Addr { return k.remote }

// The loop keeps the deadlines; these are not used.
func (k *rawSock) SetDeadline(time.Time) error      { return nil }
func (k *rawSock) SetReadDeadline(time.Time) error  { return nil }
func (k *rawSock) SetWriteDeadline(time.Time) error { return nil }

// acceptRaw is an event-loop engine's accept: it takes a connection from
// tl and takes its socket out of Go's poller (a duplicate of the
// descriptor, sharing the non-blocking file description, stays; the
// original is closed), for wrap to make the engine's connection. Without
// a descriptor to spare (at the open-files limit) it returns the
// connection as it came, to be served by a goroutine.
func acceptRaw(tl *net.TCPListener, wrap func(fd int, remote *net.TCPAddr) net.Conn) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		nc, err := tl.AcceptTCP()
		if err != nil {
			return nil, err
		}
		rc, err := nc.SyscallConn()
		if err != nil {
			return nc, nil
		}
		fd := -1
		_ = rc.Control(func(s uintptr) { fd, _ = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
		if fd < 0 {
			return nc, nil
		}
		remote, _ := nc.RemoteAddr().(*net.TCPAddr)
		_ = nc.Close()
		return wrap(fd, remote), nil
	}
}
