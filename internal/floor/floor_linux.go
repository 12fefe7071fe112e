package floor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// Run measures the floor of s: it connects the pairs (or has a child
// connect the clients' ends), runs the server thread and the client
// thread, and returns both sides' figures. It fails with the reason when
// the engine is unavailable (io_uring disabled, say), when the connections
// do not fit the open-files limit even split over two processes, or when
// the clients stall.
func Run(ctx context.Context, s Spec) (results.Floor, error) {
	if err := s.normalize(); err != nil {
		return results.Floor{}, err
	}
	conns := s.Rooms * s.Users
	soft, _ := sysinfo.OpenFilesLimit()
	fits := func(fds int) bool { return soft <= 0 || int64(fds)+Reserve <= soft }
	child := s.Child || !fits(2*conns)
	if child && !fits(conns) {
		return results.Floor{}, fmt.Errorf("%d connections: one side alone passes this process's open-files limit (%d, less %d kept in reserve)", conns, soft, Reserve)
	}
	// Each side's thread holds a processor of the scheduler when it is
	// not blocked in the kernel: keep one more for the rest.
	if runtime.GOMAXPROCS(0) < 3 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	}
	sc := &script{users: s.Users}
	if s.Pause > 0 {
		var err error
		if sc.pacing, err = newPacing(s.Rooms, s.Users, s.Pause, s.Duration, s.Seed); err != nil {
			return results.Floor{}, err
		}
	} else if !s.ChatOnly {
		var err error
		if sc, err = newScript(s.Rooms, s.Users, s.Count); err != nil {
			return results.Floor{}, err
		}
	}
	when := time.Now()
	l, addr, err := listen()
	if err != nil {
		return results.Floor{}, err
	}
	defer unix.Close(l)
	p := &pairs{}
	defer p.close()
	var ch *childProc
	if child {
		if ch, err = startChild(ctx, &s, addr); err != nil {
			return results.Floor{}, err
		}
		defer ch.stop()
		err = p.acceptIndexed(ctx, l, conns, s.StallTimeout, ch)
	} else {
		err = p.connect(ctx, l, addr, conns)
	}
	if err != nil {
		return results.Floor{}, err
	}

	var done atomic.Bool
	defer context.AfterFunc(ctx, func() { done.Store(true) })()
	ready := make(chan error, 1)
	srvRes := make(chan sideResult, 1)
	go func() { srvRes <- serve(s.Engine, p.srv, sc, &done, ready) }()
	if err := <-ready; err != nil {
		<-srvRes
		return results.Floor{}, err
	}
	var cr sideResult
	var pf *pacedFigures
	switch {
	case child:
		cr, pf = ch.run(ctx)
	case sc.pacing != nil:
		cr, pf = pacedClients(p.cli, sc.pacing, s.StallTimeout, &done)
	default:
		cr = clients(p.cli, s.Count, sc, s.StallTimeout, &done)
	}
	sr := awaitServer(srvRes, &done, cr.err != nil || s.ChatOnly, s.StallTimeout)
	switch {
	case ctx.Err() != nil:
		return results.Floor{}, ErrInterrupted
	case cr.err != nil && sr.err != nil:
		return results.Floor{}, fmt.Errorf("%w (%w)", sr.err, cr.err)
	case sr.err != nil:
		return results.Floor{}, sr.err
	case cr.err != nil:
		return results.Floor{}, cr.err
	}
	if sc.pacing != nil {
		if pf == nil {
			return results.Floor{}, errors.New("the clients' process: no paced figures")
		}
		pf.serverWakes = sr.wakes
		return pacedFloor(&s, child, when, sr.cpu, cr.cpu, cr.elapsed, pf), nil
	}
	return figures(&s, child, when, sr.cpu, cr.cpu, cr.elapsed), nil
}

// awaitServer is the server thread's result once the clients have ended:
// stopped at once when stop (chat only, or the clients failed), else when
// it has closed every connection, within stall.
func awaitServer(res <-chan sideResult, done *atomic.Bool, stop bool, stall time.Duration) sideResult {
	if !stop {
		t := time.NewTimer(stall)
		defer t.Stop()
		select {
		case r := <-res:
			done.Store(true)
			return r
		case <-t.C:
		}
	}
	done.Store(true)
	return <-res
}

// serve runs the server thread of engine.
func serve(engine string, srv []int32, sc *script, done *atomic.Bool, ready chan<- error) sideResult {
	if engine == EngineURing {
		return serveURing(srv, sc, done, ready)
	}
	return serveEpoll(srv, sc, done, ready)
}

// listen is a TCP listener on a free port of 127.0.0.1.
func listen() (int, *unix.SockaddrInet4, error) {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("socket: %w", err)
	}
	sa := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(l, sa); err != nil {
		_ = unix.Close(l)
		return -1, nil, fmt.Errorf("bind 127.0.0.1:0: %w", err)
	}
	if err := unix.Listen(l, 4096); err != nil {
		_ = unix.Close(l)
		return -1, nil, fmt.Errorf("listen: %w", err)
	}
	got, err := unix.Getsockname(l)
	if err != nil {
		_ = unix.Close(l)
		return -1, nil, fmt.Errorf("getsockname: %w", err)
	}
	a, ok := got.(*unix.SockaddrInet4)
	if !ok {
		_ = unix.Close(l)
		return -1, nil, errors.New("getsockname: not an IPv4 address")
	}
	return l, a, nil
}

// pairs are the connections' two ends, index room × users + user (cli is
// empty when the clients are in a child).
type pairs struct{ srv, cli []int32 }

func (p *pairs) close() {
	for _, fds := range [][]int32{p.srv, p.cli} {
		for _, fd := range fds {
			if fd >= 0 { // -1: closed in the exit phase
				_ = unix.Close(int(fd))
			}
		}
	}
	p.srv, p.cli = nil, nil
}

func noDelay(fd int) error { return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) }

// dial is one client end, connected to addr, with TCP_NODELAY.
func dial(addr *unix.SockaddrInet4) (int, error) {
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Connect(c, addr); err != nil {
		_ = unix.Close(c)
		return -1, fmt.Errorf("connect: %w", err)
	}
	if err := noDelay(c); err != nil {
		_ = unix.Close(c)
		return -1, fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
	}
	return c, nil
}

// connect makes the n pairs in this process, one after the other, as
// floor.c does: connect, then accept.
func (p *pairs) connect(ctx context.Context, l int, addr *unix.SockaddrInet4, n int) error {
	p.srv, p.cli = make([]int32, 0, n), make([]int32, 0, n)
	for i := 0; i < n; i++ {
		if i%1000 == 0 && ctx.Err() != nil {
			return ErrInterrupted
		}
		c, err := dial(addr)
		if err != nil {
			return fmt.Errorf("connection %d of %d: %w", i+1, n, err)
		}
		p.cli = append(p.cli, int32(c))
		a, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		p.srv = append(p.srv, int32(a))
		if err := noDelay(a); err != nil {
			return fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
		}
	}
	return nil
}

// acceptIndexed accepts the n connections of a child, each of which
// first sends its index (4 bytes, little-endian), and places them by it.
func (p *pairs) acceptIndexed(ctx context.Context, l, n int, stall time.Duration, ch *childProc) error {
	const tick = 200 * time.Millisecond
	tv := unix.NsecToTimeval(tick.Nanoseconds())
	if err := unix.SetsockoptTimeval(l, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("setsockopt SO_RCVTIMEO: %w", err)
	}
	p.srv = make([]int32, n)
	for i := range p.srv {
		p.srv[i] = -1
	}
	idle := time.Duration(0)
	for got := 0; got < n; {
		a, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			if err := ch.failed(); err != nil {
				return err
			}
			if idle += tick; idle >= stall {
				return fmt.Errorf("the clients' process connected %d of %d in %s, then nothing", got, n, stall)
			}
			continue
		case err != nil:
			return fmt.Errorf("accept: %w", err)
		}
		idle = 0
		i, err := readIndex(a, stall)
		if err == nil && (i < 0 || i >= n || p.srv[i] >= 0) {
			err = fmt.Errorf("connection index %d out of place", i)
		}
		if err == nil {
			err = noDelay(a)
		}
		if err != nil {
			_ = unix.Close(a)
			return fmt.Errorf("the clients' process: %w", err)
		}
		p.srv[i] = int32(a)
		got++
	}
	return nil
}

// readIndex reads a connection's index; the socket has the listener's
// receive timeout, a tick, so that a silent child fails it within stall.
func readIndex(fd int, stall time.Duration) (int, error) {
	var b [4]byte
	deadline := time.Now().Add(stall)
	for have := 0; have < len(b); {
		n, err := unix.Read(fd, b[have:])
		switch {
		case (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && time.Now().Before(deadline):
			continue
		case err != nil:
			return 0, fmt.Errorf("read a connection's index: %w", err)
		case n == 0:
			return 0, errors.New("a connection closed before its index")
		}
		have += n
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}
