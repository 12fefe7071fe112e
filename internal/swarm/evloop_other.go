//go:build !linux

package swarm

import (
	"errors"
	"time"
)

const evSupported = false

var errNoEpoll = errors.New("engine epoll: only on Linux")

type evEngine struct{}

func newEvEngine(int, int) (*evEngine, error)                           { return nil, errNoEpoll }
func (e *evEngine) close()                                              {}
func (e *evEngine) start(int64)                                         {}
func (e *evEngine) leave()                                              {}
func (e *evEngine) attachTurns(*user, func(error)) error                { return errNoEpoll }
func (e *evEngine) attachPaced(*user, time.Duration, func(error)) error { return errNoEpoll }
func (l *link) evCloseLink() (bool, error)                              { return false, nil }
func (l *link) evControl(func(int)) bool                                { return false }
func (l *link) loopWrite([]byte) error                                  { return errNoEpoll }
