//go:build !linux

package server

import "errors"

// The event-loop engines are Linux's; elsewhere only the goroutine engine
// runs (checkEngine refuses epoll and uring, and auto resolves to
// goroutine).

var errNeedsLinux = errors.New("the event-loop engines need Linux")

func newEpollEngine(*Server) (ioEngine, error) { return nil, errNeedsLinux }

func newURingEngine(*Server) (ioEngine, error) {
	return nil, errors.Join(ErrURingUnavailable, errNeedsLinux)
}
