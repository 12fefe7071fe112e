package server

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// The engines of Config.Engine. The goroutine engine serves each TCP
// connection from a goroutine of its own (conn.serve); epoll and uring
// serve them from a few event loops, one core written once
// (loop_linux.go) over a poller of each kind (poll_epoll_linux.go,
// poll_uring_linux.go). WebSocket connections are served by goroutines
// on every engine. This file is the only one that knows their names.
const (
	EngineGoroutine = "goroutine"
	EngineEpoll     = "epoll"
	// EngineURing serves TCP connections from io_uring rings (Linux 5.11
	// or later, io_uring allowed).
	EngineURing = "uring"
	// EngineAuto is uring if its rings start, else epoll (Linux), else
	// goroutine.
	EngineAuto = "auto"
)

// ErrURingUnavailable is the error of an io_uring engine that cannot
// start: the kernel refused a ring.
var ErrURingUnavailable = errors.New("io_uring unavailable")

// checkEngine checks Config.Engine.
func checkEngine(name string) error {
	switch name {
	case EngineGoroutine, EngineAuto:
		return nil
	case EngineEpoll, EngineURing:
		if runtime.GOOS != "linux" {
			return errors.New("needs Linux: this build has only the goroutine engine")
		}
		return nil
	}
	return errors.New("must be goroutine, epoll, uring or auto")
}

// ioEngine is an event-loop engine as the server sees it (nil: the
// goroutine engine).
type ioEngine interface {
	// accept wraps the listener's accept: the connections it returns
	// are the engine's sockets (loopConn), or plain ones it leaves to
	// goroutines (no descriptor to spare).
	accept(ln *net.TCPListener) func() (net.Conn, error)
	// serve hands a tracked connection to its loop.
	serve(c *conn)
	// loopConns is each loop's connections (for the metrics).
	loopConns() []int32
	// stop stops the loops, once every connection is finished.
	stop()
}

// loopConn is what a connection sees of the event-loop engine serving it
// (conn.eng; nil on the goroutine engine and for WebSocket).
type loopConn interface {
	// attach makes c the connection of the socket and picks its loop
	// (newTCPConn), before the connection is tracked.
	attach(c *conn)
	// post queues the connection for its loop's attention (closed,
	// draining) and wakes the loop; it does nothing before the
	// connection is the loop's.
	post()
	// wantOut starts a write batch: bytes wait in c.out for the socket,
	// flushing was just set; conn.mu is held.
	wantOut()
	// deliver sends b to o from a handler of this connection, on its
	// loop (as o.send, or joining the loop's round of sends).
	deliver(o *conn, b []byte)
	// relay sends a chat's indication to every connection of conns but
	// c, and conf to c, from c's loop, under the room's lock; it returns
	// the receivers, and whether one has half its send buffer waiting.
	relay(c *conn, conns []*conn, ind, conf []byte) (int, bool)
}

// resolveEngine starts the configured engine, once: for uring its rings
// (an error if they cannot be), for epoll its loops (served by goroutines
// if they cannot be, logged), for auto the first of uring, epoll and
// goroutine that starts, logging which and why.
func (s *Server) resolveEngine() error {
	s.mu.Lock()
	done := s.engine != ""
	s.mu.Unlock()
	if done {
		return nil
	}
	use, eng, err := EngineGoroutine, ioEngine(nil), error(nil)
	switch s.cfg.Engine {
	case EngineURing:
		if eng, err = newURingEngine(s); err == nil {
			use = EngineURing
		}
	case EngineEpoll:
		var eerr error
		if eng, eerr = newEpollEngine(s); eerr == nil {
			use = EngineEpoll
		} else {
			s.log.Error("epoll engine: cannot start, serving with goroutines", "err", eerr)
		}
	case EngineAuto:
		uerr := error(nil)
		if eng, uerr = newURingEngine(s); uerr == nil {
			use = EngineURing
			s.log.Info("engine auto: uring", "why", "io_uring rings started")
		} else if eng, err = newEpollEngine(s); err == nil {
			use = EngineEpoll
			s.log.Info("engine auto: epoll", "why", uerr.Error())
		} else {
			s.log.Info("engine auto: goroutine", "why", fmt.Sprintf("%v; the epoll loops did not start either: %v", uerr, err))
			err = nil
		}
	}
	s.mu.Lock()
	if s.engine == "" {
		s.engine, s.eng = use, eng
		eng = nil
	}
	s.mu.Unlock()
	if eng != nil { // another caller resolved it first
		eng.stop()
	}
	return err
}

// engineAccept returns the acceptor's accept function: the listener's
// own, or the event-loop engine's.
func (s *Server) engineAccept(ln net.Listener) func() (net.Conn, error) {
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	if tl, ok := ln.(*net.TCPListener); ok && eng != nil {
		return eng.accept(tl)
	}
	return ln.Accept
}

// serveConn serves a tracked connection: on its goroutine, or on a loop.
func (s *Server) serveConn(c *conn) {
	if c.eng == nil {
		go c.serve()
		return
	}
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	if eng == nil { // the engine stopped (the server is closing)
		c.close(ReasonShutdown)
		c.finish()
		return
	}
	eng.serve(c)
}

// stopEngine stops the event loops (Shutdown, once every connection is
// finished).
func (s *Server) stopEngine() {
	s.mu.Lock()
	eng := s.eng
	s.eng = nil
	s.mu.Unlock()
	if eng != nil {
		eng.stop()
	}
}

// loopConns is the connections of each loop of the engine serving TCP
// (for the metrics); none on the goroutine engine.
func (s *Server) loopConns() []int32 {
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	if eng == nil {
		return nil
	}
	return eng.loopConns()
}
