package floor

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/uring"
)

// errURingUnavailable is the error of a ring that could not be set up.
var errURingUnavailable = errors.New("io_uring unavailable")

// ringEntries is floor.c's ring size.
const ringEntries = 8192

// User data of the ring's requests: a recv carries its connection's
// index; sends and the final cancellation carry a tag.
const (
	tagSend   = 1 << 62
	tagCancel = 1 << 61
)

// serveURing is the floor's server on io_uring, on one OS thread, as
// floor.c's -DURING: a recv in flight on every connection; each completed
// recv queues one send per other user of its room and the connection's
// next recv, and they go to the kernel in the next io_uring_enter, which
// also waits for completions (one system call per round).
//
// With an exit phase (sc not nil), it also relays each exit (see script)
// and closes each connection on its end of file, and stops once it has
// closed them all; the exit's packets are sent from the script's memory.
func serveURing(srv []int32, sc *script, done *atomic.Bool, ready chan<- error) sideResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ring, err := uring.New(ringEntries)
	if err != nil {
		err = fmt.Errorf("%w: %w", errURingUnavailable, err)
		ready <- err
		return sideResult{err: err}
	}
	defer ring.Close()
	n := len(srv)
	bufs, err := unix.Mmap(-1, 0, n*readBuf, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		err = fmt.Errorf("io_uring buffers: %w", err)
		ready <- err
		return sideResult{err: err}
	}
	s := &uringServer{ring: ring, srv: srv, users: sc.users, bufs: bufs, x: newServerExits(srv, sc)}
	for i := range srv {
		if err := s.recv(i); err != nil {
			ready <- err
			s.release()
			return sideResult{err: err}
		}
	}
	if err := ring.Submit(); err != nil {
		err = fmt.Errorf("io_uring_enter: %w", err)
		ready <- err
		s.release()
		return sideResult{err: err}
	}
	c0 := threadCPU()
	close(ready)
	err = s.loop(done)
	cpu := threadCPU() - c0
	if err == nil {
		err = s.x.unclosed()
	}
	s.release()
	return sideResult{cpu: cpu, err: err}
}

type uringServer struct {
	ring  *uring.Ring
	srv   []int32
	users int
	bufs  []byte
	// armed is the recvs in flight: the buffers the kernel may still
	// write into.
	armed int
	// x is the exit phase's state (nil without one).
	x *serverExits
}

func (s *uringServer) buf(i int) unsafe.Pointer { return unsafe.Pointer(&s.bufs[i*readBuf]) }

// sqe is a free submission entry, submitting what is queued when the
// queue is full.
func (s *uringServer) sqe() (*uring.SQE, error) {
	if q := s.ring.GetSQE(); q != nil {
		return q, nil
	}
	if err := s.ring.Submit(); err != nil {
		return nil, fmt.Errorf("io_uring_enter: %w", err)
	}
	if q := s.ring.GetSQE(); q != nil {
		return q, nil
	}
	return nil, errors.New("io_uring: the submission queue stays full")
}

func (s *uringServer) recv(i int) error {
	q, err := s.sqe()
	if err != nil {
		return err
	}
	uring.PrepRecv(q, int(s.srv[i]), s.buf(i), readBuf, 0, uint64(i))
	s.armed++
	return nil
}

// send queues a send of b, which stays in memory until the ring is
// released (the script's packets).
func (s *uringServer) send(fd int32, b []byte) error {
	q, err := s.sqe()
	if err != nil {
		return err
	}
	uring.PrepSend(q, int(fd), unsafe.Pointer(unsafe.SliceData(b)), len(b), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, tagSend)
	return nil
}

func (s *uringServer) loop(done *atomic.Bool) error {
	ts := unix.NsecToTimespec((100 * time.Millisecond).Nanoseconds())
	users := s.users
	for !done.Load() && !s.x.over() {
		if err := s.ring.SubmitAndWait(&ts); err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EAGAIN) {
			return fmt.Errorf("server: io_uring_enter: %w", err)
		}
		head := s.ring.Head()
		h := head
		for ; h != s.ring.Tail(); h++ {
			c := s.ring.Entry(h)
			d := c.UserData
			if d&tagSend != 0 {
				continue
			}
			s.armed--
			i, got := int(d), int(c.Res)
			if got <= 0 {
				if s.x != nil {
					s.x.closed(i)
				}
				continue
			}
			r := i / users
			p := s.buf(i)
			chat := got
			if s.x != nil {
				chat = s.x.chatBytes(i, got)
			}
			for j := 0; j < users && chat > 0; j++ {
				if j != i%users {
					q, err := s.sqe()
					if err != nil {
						return err
					}
					uring.PrepSend(q, int(s.srv[r*users+j]), p, chat, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, tagSend)
				}
			}
			if s.x != nil && s.x.leaves(i, got) {
				if err := s.x.relayExit(i, s.send); err != nil {
					return err
				}
			}
			if err := s.recv(i); err != nil {
				return err
			}
		}
		s.ring.Advance(h - head)
	}
	return nil
}

// release cancels the recvs in flight and waits for their completions, so
// that the kernel no longer writes into the buffers, then unmaps them (if
// some never complete, the buffers stay mapped: a few megabytes lost
// rather than memory written after its release).
func (s *uringServer) release() {
	if s.armed > 0 {
		if q, err := s.sqe(); err == nil {
			uring.PrepCancelAll(q, tagCancel)
		}
	}
	ts := unix.NsecToTimespec((100 * time.Millisecond).Nanoseconds())
	deadline := time.Now().Add(5 * time.Second)
	for s.armed > 0 && time.Now().Before(deadline) {
		if err := s.ring.SubmitAndWait(&ts); err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EAGAIN) {
			break
		}
		head := s.ring.Head()
		h := head
		for ; h != s.ring.Tail(); h++ {
			if d := s.ring.Entry(h).UserData; d&(tagSend|tagCancel) == 0 {
				s.armed--
			}
		}
		s.ring.Advance(h - head)
	}
	if s.armed == 0 {
		_ = unix.Munmap(s.bufs)
	}
	s.bufs = nil
}
