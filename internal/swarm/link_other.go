//go:build !unix

package swarm

import "github.com/volanogo/volanogo/pkg/protocol"

func (l *link) initRaw()                                             {}
func (l *link) rawRead(p []byte) (int, error)                        { return l.nc.Read(p) }
func (l *link) rawWrite(pkt []byte) error                            { _, err := l.nc.Write(pkt); return err }
func (u *user) loop(handle func(protocol.Frame) (bool, error)) error { return u.plainLoop(handle) }

func (u *user) setLowat()       {}
func (r *room) unbatch()        {}
func (l *link) setRcvLowat(int) {}
