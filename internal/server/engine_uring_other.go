//go:build !linux

package server

import (
	"errors"
	"net"
)

// The io_uring engine is Linux's; elsewhere auto resolves to goroutine.

const (
	// EngineURing serves TCP connections from io_uring rings (Linux).
	EngineURing = "uring"
	// EngineAuto is uring if its rings start, else epoll (Linux), else
	// goroutine.
	EngineAuto = "auto"
)

// ErrURingUnavailable is the error of an io_uring engine that cannot
// start.
var ErrURingUnavailable = errors.New("io_uring unavailable")

type urEngine struct{}

type urLoop struct{}

// urSock is never created on this platform.
type urSock struct {
	net.Conn
	loop *urLoop
}

func (k *urSock) attachConn(*conn) {}
func (k *urSock) post()            {}
func (c *conn) urWantOut()         {}

func (l *urLoop) relay(*conn, []*conn, []byte, []byte) int { return 0 }

// resolveEngine: only the goroutine engine runs here.
func (s *Server) resolveEngine() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engine == "" {
		s.engine = EngineGoroutine
		if s.cfg.Engine == EngineAuto {
			s.log.Info("engine auto: goroutine", "why", "io_uring and epoll need Linux")
		}
	}
	return nil
}

func (l *urLoop) queueSend(o *conn, p []byte, _ bool) { o.send(p) }
