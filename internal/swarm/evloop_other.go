//go:build !linux

package swarm

import (
	"errors"

	"github.com/volanogo/volanogo/pkg/protocol"
)

const evSupported = false

var errNoEpoll = errors.New("engine epoll: only on Linux")

type evEngine struct{}

func newEvEngine(int) (*evEngine, error) { return nil, errNoEpoll }
func (e *evEngine) close()               {}
func (e *evEngine) attach(*user, func(protocol.Frame) (bool, error), func(error)) error {
	return errNoEpoll
}
func (l *link) evCloseLink() (bool, error) { return false, nil }
func (l *link) evControl(func(int)) bool   { return false }
func (l *link) loopWrite([]byte) error     { return errNoEpoll }
