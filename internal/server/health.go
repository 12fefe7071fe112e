package server

import (
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// outOfFilesReady is how long after its last refusal for want of
// descriptors (logged at most once a second while they last) the server
// says it is not ready: new users are sent elsewhere while it is full.
const outOfFilesReady = 3 * time.Second

// metricsReserve is how many descriptors the metrics listener holds in
// reserve: at the open-files limit the chat listener's reserve goes to
// refusing chat connections, and a liveness probe, a readiness probe and
// a scrape of the full server must still be answered (each takes one to
// be accepted; a scrape one more, briefly, for /proc).
const metricsReserve = 3

// reserveListener is the metrics listener with its reserve: an accept that
// fails for want of a descriptor frees one of the reserve and accepts
// again; the reserve is taken back when a connection closes, and topped
// up on every accept.
type reserveListener struct {
	net.Listener
	mu    sync.Mutex
	spare []*os.File // open on os.DevNull, held for the next shortage
}

// fill tops the reserve up, as far as descriptors allow.
func (l *reserveListener) fill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.spare) < metricsReserve {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return
		}
		l.spare = append(l.spare, f)
	}
}

// release frees one descriptor of the reserve; false when none is left.
func (l *reserveListener) release() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.spare)
	if n == 0 {
		return false
	}
	_ = l.spare[n-1].Close()
	l.spare = l.spare[:n-1]
	return true
}

// Close closes the listener and gives the reserve back.
func (l *reserveListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	for _, f := range l.spare {
		_ = f.Close()
	}
	l.spare = nil
	l.mu.Unlock()
	return err
}

func (l *reserveListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err == nil {
			l.fill()
			return &reserveConn{Conn: nc, l: l}, nil
		}
		if !outOfFiles(err) || !l.release() {
			return nil, err
		}
	}
}

// reserveConn is an accepted metrics connection; its close tops the
// listener's reserve up with the descriptor it frees.
type reserveConn struct {
	net.Conn
	l    *reserveListener
	once sync.Once
}

func (c *reserveConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.fill)
	return err
}

func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// withReserve serves h with a descriptor of l's reserve freed for its
// duration: the process collector opens files under /proc for each scrape.
func (l *reserveListener) withReserve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.release() {
			defer l.fill()
		}
		h.ServeHTTP(w, r)
	})
}
