//go:build !linux

package server

import (
	"errors"
	"net"
	"strconv"
)

// The epoll engine is Linux's; elsewhere only the goroutine engine runs.

func checkEngine(name string) error {
	switch name {
	case EngineGoroutine, EngineAuto:
		return nil
	case EngineEpoll, EngineURing:
		return errors.New("engine " + name + " needs Linux; this build has only the goroutine engine")
	}
	return errors.New("engine must be goroutine, epoll, uring or auto (got " + strconv.Quote(name) + ")")
}

type evEngine struct{}

// evSock is never created on this platform.
type evSock struct{ net.Conn }

func (k *evSock) attachConn(*conn) {}
func (k *evSock) post()            {}
func (c *conn) evWantOut()         {}

func (s *Server) engineAccept(ln net.Listener) func() (net.Conn, error) { return ln.Accept }
func (s *Server) stopEngine()                                           {}
func (s *Server) loopConns() []int32                                    { return nil }
func (s *Server) serveConn(c *conn)                                     { go c.serve() }
