//go:build linux

package server

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/uring"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// The io_uring engine (Config.Engine EngineURing) serves TCP connections
// from a few rings, each owned by a goroutine locked to its OS thread,
// like the epoll engine's loops, with the same handlers. What differs is
// how the loop talks to the kernel:
//
//   - Receives: every connection has a multishot recv armed on its
//     loop's ring (Linux 6.0), which completes at each arrival into one of
//     the loop's provided buffers (a buffer ring: 512 KiB a loop, whatever
//     the connections); a completion is a read done, with no readiness
//     report and read system call to pair, and nothing to re-arm. The
//     packets it completes are handled in the buffer, and what the reader
//     leaves (a paused or closing connection's) is copied out before the
//     buffer goes back. A connection paused by the request rate has its
//     recv cancelled until it resumes. Where the kernel lacks buffer
//     rings, each connection has a recv of its own buffer in flight,
//     armed again after each completion.
//   - The relay: a chat from a connection of a ring is queued, under the
//     room's lock, for every receiver (its lock taken here, and once more
//     at its send's completion): one that nothing else was writing to
//     (not flushing) joins the loop's batch with the chat in its batch
//     buffer (bout), and is flushing from then on: whatever else comes for
//     it, from any thread, goes behind, in its out buffer. At the end of the round (the completions one
//     wait brought) every receiver of the batch gets one send of its batch
//     buffer (non-blocking: MSG_DONTWAIT, so a full socket completes with
//     EAGAIN rather than waits), prepared without its lock (only the
//     loop touches a batch buffer) and all submitted by one io_uring_enter,
//     during which the kernel runs them. Several chats to one receiver in
//     a round cost one send. From joining the batch to its send's
//     completion a receiver's batch bytes count as inflight (the send
//     buffer's bound sees them). What a send leaves unwritten goes in
//     front of out, and the receiver's own ring polls its socket for room
//     (POLLOUT) to write the rest, with the epoll engine's write-stall and
//     slow-consumer rules; what came meanwhile goes in the next round's
//     batch. Batch buffers come from, and go back to, the loop's pool.
//     After a busy round a chat's confirm to its sender waits for the
//     next round (1 ms at most), to go with the next chat of its room in
//     one send, sent beside that chat's other receivers (flushBatch).
//
// A handler's replies and its room's entry and exit indications join the
// round's batch the same way (conn.deliver). What else is sent (private
// sessions' packets, whispers, beeps) goes through conn.send as on the
// other engines: a non-blocking send, and the rest to out.
//
// A connection's descriptor is closed by its loop only, once no request
// of any ring uses it: a close from elsewhere shuts the socket down, which
// completes its recv and poll, and posts it to its loop; a send in flight
// on another ring is counted (sending) and the loop waits for it.

// The engines that pick one of the others at Start.
const (
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

// Ring sizes: submission entries (a chat to a room of 20 takes 21), and
// completions (a recv per connection of the ring may complete at once).
const (
	urEntries   = 4096
	urCQEntries = 32768
	urRecvBuf   = 1024
)

// The loop's provided buffers, for multishot receives: consumed piece by
// piece (Linux 6.12), a few large ones; else many small ones, each taken
// whole by one arrival. 512 KiB a ring either way, whatever the
// connections: a connection holds a buffer only from its arrival's
// completion to the end of its handling (what its reader has not taken
// then is copied out). The kernel writes the buffers in turn, round
// and round: the smaller the ring, the more of it is still in the
// processor's caches when the next arrivals land in it (half of one
// core's L2 on the machine it was measured on). A round's arrivals
// past it end their multishot recvs with ENOBUFS, which settle arms
// again.
const (
	urBufsInc     = 128
	urBufSizeInc  = 4096
	urBufsWhole   = 1024
	urBufSizeWhol = 512
)

// A loop holds its round's chat confirms for the next round (flushBatch)
// after a round that handled urHoldMin completions or more (turn-taking
// of many rooms: the round's sends bring the next chats), and waits
// urHoldMax at most for that round to come. Tests lower urHoldMin.
var urHoldMin = 8

const urHoldMax = time.Millisecond

// urMultishot: receive with multishot recvs into the loop's provided
// buffers where the kernel has them (Linux 6.0); tests turn it off to
// exercise the recv per connection.
var urMultishot = true

// urFixedFiles: each ring registers its connections' sockets (Linux
// 5.19); tests turn it off.
var urFixedFiles = true

// urSetup makes a loop's ring, on the loop's thread; tests replace it to
// simulate a kernel without io_uring.
var urSetup = func() (*uring.Ring, error) {
	o := uring.Options{Flags: uring.SetupCQSize | uring.SetupSubmitAll | uring.SetupCoopTaskrun | uring.SetupSingleIssuer,
		CQEntries: urCQEntries}
	r, err := uring.NewWith(urEntries, o)
	if errors.Is(err, unix.EINVAL) {
		// a kernel older than 6.0 lacks some of the flags
		o.Flags = uring.SetupCQSize
		r, err = uring.NewWith(urEntries, o)
	}
	return r, err
}

// urUnavailable explains a failed io_uring_setup by its errno.
func urUnavailable(err error) error {
	why := ""
	switch {
	case errors.Is(err, unix.ENOSYS):
		why = "this kernel has no io_uring (it needs Linux 5.11 or later built with CONFIG_IO_URING)"
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		why = "io_uring is not allowed here: sysctl kernel.io_uring_disabled, or a seccomp filter (a container runtime's default profile)"
	case errors.Is(err, unix.EINVAL), errors.Is(err, uring.ErrNoExtArg):
		why = "the kernel lacks io_uring features this engine needs (Linux 5.11 or later)"
	case errors.Is(err, unix.ENOMEM):
		why = "not enough lockable memory for the rings (ulimit -l)"
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		why = "out of file descriptors"
	}
	if why != "" {
		return fmt.Errorf("%w: %w (%s)", ErrURingUnavailable, err, why)
	}
	return fmt.Errorf("%w: %w", ErrURingUnavailable, err)
}

// User data of the rings' requests: a tag in the top byte, and for a recv
// or poll its connection's slot, for a send its index in the batch.
const (
	urTagShift = 56
	urTagMask  = 0xff << urTagShift
	urRecv     = 1 << urTagShift
	urPoll     = 2 << urTagShift
	urSend     = 3 << urTagShift
	urWake     = 4 << urTagShift
	urCancel   = 5 << urTagShift
)

// urSock is one TCP connection of the io_uring engine: the net.Conn over
// the raw socket that the accept loop, protocol.Reader and closeLocked
// see, and the state its loop keeps for it.
type urSock struct {
	// What a delivery and its send's completion touch comes first, in
	// the first 64 bytes (a urSock is 256 bytes from the allocator, so
	// one cache line): after the kernel's sends it is out of the cache.
	c    *conn
	loop *urLoop
	// Guarded by conn.mu.
	pending     *urLoop // the loop whose batch has it (its send at the end of the round, or in flight)
	sending     int16   // in a batch or sent by some ring: the descriptor stays open
	flushed     bool    // owned by pending: bout's send is in flight (later bytes go to out)
	holding     bool    // owned by pending: in its held list, a confirm in bout, not yet in a batch
	wantOut     bool    // the loop is to poll the socket for room
	releaseWait bool    // the loop waits for sending to fall to zero
	fixed       bool    // owned by loop: the socket is in its ring's file table, at slot fd
	bout        []byte  // the batch's bytes: appended by pending (under conn.mu), sent by it
	rawSock             // its fd: the socket
	sawEOF      bool    // draining, the client closed
	stallBy     int64   // unix nanos: the write stall deadline of the current batch
	batchLeft   int     // bytes of the current batch not yet written

	// Owned by the loop.
	slot      int32  // index in loop.slots; -1 before register and after release
	queued    bool   // in loop.queue (guarded by loop.qmu)
	rbuf      []byte // single-shot: the recv's buffer; multishot: a copy of what the reader left
	rdata     []byte // received, not yet read by the reader
	recvStop  bool   // multishot: the recv is being cancelled (paused)
	rerr      error  // the end of the stream or a receive error, once rdata is read
	recvArmed bool
	pollArmed bool
	cancelled bool // the requests in flight were cancelled (release)
	paused    bool
	loopDeadlines
}

// Read hands protocol.Reader what the last recv brought; then the end of
// the stream or the error, if the recv ended so; else errWouldBlock.
func (k *urSock) Read(p []byte) (int, error) {
	if len(k.rdata) > 0 {
		n := copy(p, k.rdata)
		k.rdata = k.rdata[n:]
		return n, nil
	}
	if k.rerr != nil {
		return 0, k.rerr
	}
	return 0, errWouldBlock
}

// Close closes a socket no loop has; for one a loop has, it shuts the
// socket down (which completes its recv and poll) and tells the loop,
// which closes the descriptor once no request uses it. For a tracked
// connection it is called under conn.mu (closeLocked).
func (k *urSock) Close() error { return k.close(k.post) }

// attachConn makes c the connection of k (newTCPConn) and picks its
// loop, before the connection is tracked.
func (k *urSock) attachConn(c *conn) {
	k.c = c
	c.ur = k
	c.fd = k.fd
	k.remote = nil // c.remote has it
	c.s.mu.Lock()
	if e := c.s.ur; e != nil {
		k.loop = pickLoop(e.loops, e.fill)
	}
	c.s.mu.Unlock()
}

// post queues the connection for its loop's attention (new, closed,
// draining, or wanting room to write) and wakes the loop if it waits.
func (k *urSock) post() {
	l := k.loop
	if l == nil {
		return
	}
	l.qmu.Lock()
	if k.queued {
		l.qmu.Unlock()
		return
	}
	k.queued = true
	l.queue = append(l.queue, k.c)
	wake := l.sleeping && !l.signalled
	if wake {
		l.signalled = true
	}
	l.qmu.Unlock()
	if wake {
		l.wake()
	}
}

// urEngine is a server's rings.
type urEngine struct {
	loops    []*urLoop
	fill     int // Config.LoopFill, or the engine's default
	wg       sync.WaitGroup
	reserved int // Ps counted in holdProcs
}

// urLoop is one ring and its connections.
type urLoop struct {
	loopShare
	s    *Server
	ring *uring.Ring
	bufs *uring.BufRing // multishot receives' buffers; nil: a recv per connection, into its own buffer
	// fixedMax: descriptors below it go in the ring's file table (slot =
	// descriptor), so that its sends to them skip the descriptor's lookup
	// and reference count; 0: no table
	fixedMax int
	wakefd   int
	tick     time.Duration
	wbuf     [8]byte // the eventfd's counter, read by the ring

	qmu       sync.Mutex // guards queue, signalled, sleeping, stop
	queue     []*conn
	signalled bool // the eventfd was written since the queue was last taken
	sleeping  bool // the loop waits in the kernel (a post must wake it)
	stop      bool

	// Owned by the loop.
	slots      []*conn
	free       []int32
	open       int
	armed      int // requests in flight: recvs, polls, the eventfd read
	wakeArmed  bool
	paused     []*conn
	nextScan   time.Time
	cqes       []uring.CQE // completions taken from the ring, not yet handled
	batch      []*conn     // connections with bytes to send at the end of the round
	batchSpare []*conn
	later      []*conn   // connections with a confirm to send at the end of the next round (queueSend)
	held       []*conn   // last round's later: each joins the batch with the next chat for it, or at the round's end
	handled    int       // completions handled this round (but sends')
	sends      []*urSock // connections with a send in flight, by the send's user data
	sendFree   []int32
	ts         unix.Timespec
	// sendsPrepared: the sends prepared since the last submission
	sendsPrepared uint32
	touched       uintptr  // the sum of relay's and reap's early loads, kept so they are made
	pool          bufPool  // idle connections' readers and scratch buffers
	outPool       [][]byte // batch buffers
}

// startURing starts the rings once (every loop's ring is made on its own
// thread); the error says why io_uring cannot be used.
func (s *Server) startURing() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ur != nil {
		return nil
	}
	n := s.cfg.Loops
	if n <= 0 {
		// One per processor, as the epoll engine; filled one after
		// the other (uringLoopFill), so that a small server's
		// connections share one.
		n = baseProcs()
	}
	e := &urEngine{fill: cmp.Or(s.cfg.LoopFill, uringLoopFill)}
	for range n {
		l := &urLoop{s: s, tick: engineTick(&s.cfg), wakefd: -1}
		ready := make(chan error, 1)
		e.wg.Add(1)
		go func() { defer e.wg.Done(); l.run(ready) }()
		if err := <-ready; err != nil {
			e.stop()
			return err
		}
		e.loops = append(e.loops, l)
	}
	holdProcs(len(e.loops)) // the loops wait keeping their P
	e.reserved = len(e.loops)
	s.ur = e
	return nil
}

// engineTick is the period of a loop's deadline scan: an eighth of the
// shortest deadline, between 5 ms and 250 ms.
func engineTick(cfg *Config) time.Duration {
	tick := 250 * time.Millisecond
	for _, d := range []time.Duration{cfg.AccessTimeout, cfg.IdleTimeout, writeStall} {
		if d > 0 {
			tick = min(tick, d/8)
		}
	}
	return max(tick, 5*time.Millisecond)
}

// stopURing stops the rings (Shutdown, once every connection is
// finished).
func (s *Server) stopURing() {
	s.mu.Lock()
	e := s.ur
	s.ur = nil
	s.mu.Unlock()
	if e != nil {
		e.stop()
	}
}

func (e *urEngine) stop() {
	for _, l := range e.loops {
		l.qmu.Lock()
		l.stop = true
		l.qmu.Unlock()
		l.wake()
	}
	e.wg.Wait()
	for _, l := range e.loops {
		_ = unix.Close(l.wakefd)
	}
	holdProcs(-e.reserved)
	e.reserved = 0
}

// resolveEngine starts the configured engine, once: for uring its rings
// (an error if they cannot be), for auto the first of uring, epoll and
// goroutine that starts, logging which and why.
func (s *Server) resolveEngine() error {
	s.mu.Lock()
	done := s.engine != ""
	s.mu.Unlock()
	if done {
		return nil
	}
	use, err := EngineGoroutine, error(nil)
	switch s.cfg.Engine {
	case EngineURing:
		if err = s.startURing(); err == nil {
			use = EngineURing
		}
	case EngineAuto:
		uerr := s.startURing()
		switch {
		case uerr == nil:
			use = EngineURing
			s.log.Info("engine auto: uring", "why", "io_uring rings started")
		case s.startEngine() != nil:
			use = EngineEpoll
			s.log.Info("engine auto: epoll", "why", uerr.Error())
		default:
			s.log.Info("engine auto: goroutine", "why", uerr.Error()+"; the epoll loops did not start either")
		}
	case EngineEpoll:
		if s.startEngine() != nil {
			use = EngineEpoll
		}
	}
	s.mu.Lock()
	if s.engine == "" {
		s.engine = use
	}
	s.mu.Unlock()
	return err
}

// urAccept is the acceptor's accept function on the io_uring engine: as
// the epoll engine's, the socket leaves Go's poller (a duplicate of its
// descriptor stays); without a descriptor to spare the connection is
// served by a goroutine.
func (s *Server) urAccept(tl *net.TCPListener) func() (net.Conn, error) {
	return acceptRaw(tl, func(fd int, remote *net.TCPAddr) net.Conn {
		return &urSock{rawSock: rawSock{fd: fd, remote: remote}, slot: -1}
	})
}

// urServe hands a tracked connection to its loop.
func (s *Server) urServe(c *conn) {
	k := c.ur
	if k.loop == nil {
		// the engine stopped (the server is closing)
		c.close(ReasonShutdown)
		c.finish()
		return
	}
	if s.cfg.AccessTimeout > 0 {
		k.accessBy = time.Now().Add(s.cfg.AccessTimeout).UnixNano()
	}
	k.loop.conns.Add(1) // before a close may release it
	k.state.Store(sockAttached)
	k.post()
}

func (l *urLoop) wake() {
	one := [8]byte{1}
	if l.wakefd >= 0 {
		_, _ = unix.Write(l.wakefd, one[:])
	}
}

// run is the loop, on its own OS thread; ready gets nil once the ring
// works, or why it cannot.
func (l *urLoop) run(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ring, err := urSetup()
	if err != nil {
		ready <- urUnavailable(err)
		return
	}
	l.ring = ring
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		ring.Close()
		ready <- os.NewSyscallError("eventfd", err)
		return
	}
	l.wakefd = wakefd
	if urMultishot && ring.Flags()&uring.SetupSingleIssuer != 0 {
		// multishot recv is Linux 6.0, as the single-issuer flag
		l.bufs, err = ring.RegisterBufRing(0, urBufsInc, urBufSizeInc, true)
		if err == nil && !l.bufs.Incremental() {
			l.bufs.Close()
			l.bufs, err = ring.RegisterBufRing(0, urBufsWhole, urBufSizeWhol, false)
		}
		if err != nil {
			l.bufs = nil
		}
	}
	var lim unix.Rlimit
	if urFixedFiles && unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		n := uint32(min(lim.Cur, 1<<16))
		if ring.RegisterFilesSparse(n) == nil {
			l.fixedMax = int(n)
		}
	}
	l.armWake()
	if err := l.ring.SubmitWait(0, nil); err != nil {
		l.teardown()
		_ = unix.Close(wakefd)
		ready <- urUnavailable(fmt.Errorf("io_uring_enter: %w", err))
		return
	}
	ready <- nil
	for {
		q, stop := l.takeQueue()
		if stop {
			break
		}
		wait, timeout := uint32(1), l.timeout()
		if q != nil {
			l.runQueue(q)
			wait = 0 // posted work: submit what it armed, do not wait
		}
		l.flushBatch(l.handled >= urHoldMin)
		l.handled = 0
		// The sends and recvs go in without the scheduler's bookkeeping.
		// With nothing to handle, the same system call waits: the sends
		// complete during the submission (non-blocking), so it waits for
		// one completion more than they make; for a while at most if it
		// holds confirms.
		var err error
		if wait == 1 && l.ring.Ready() == 0 && len(l.cqes) == 0 {
			if (len(l.held) > 0 || len(l.batch) > 0) && (timeout == nil || l.ts.Sec > 0 || l.ts.Nsec > int64(urHoldMax)) {
				l.ts = unix.NsecToTimespec(int64(urHoldMax))
				timeout = &l.ts
			}
			err = l.wait(l.sendsPrepared+1, timeout)
		} else if l.ring.Unsubmitted() > 0 {
			err = l.ring.SubmitNonblocking()
		}
		l.sendsPrepared = 0
		if wait == 1 {
			l.qmu.Lock()
			l.sleeping = false
			l.qmu.Unlock()
		}
		if err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EAGAIN) {
			l.s.log.Error("uring engine: io_uring_enter failed", "err", err)
			break
		}
		l.reap()
		for i := 0; i < len(l.cqes); i++ {
			l.complete(l.cqes[i]) // a relay may append to cqes
		}
		l.handled += len(l.cqes)
		clear(l.cqes)
		l.cqes = l.cqes[:0]
		now := time.Now()
		if len(l.paused) > 0 {
			l.resumePaused(now.UnixNano())
		}
		if l.open > 0 && !now.Before(l.nextScan) {
			l.scan(now.UnixNano())
			l.nextScan = now.Add(l.tick)
		}
	}
	l.teardown()
}

// wait submits what is prepared and waits for n completions. With connections (a timeout: the next
// scan) it keeps its P, which holdProcs reserved, as the epoll engine's
// loops do: no scheduler bookkeeping, no hand-off of the P by sysmon and
// no wait for one on return. Without connections it waits as a blocking
// system call, for as long as it takes.
func (l *urLoop) wait(n uint32, timeout *unix.Timespec) error {
	if timeout == nil {
		return l.ring.SubmitWait(n, nil)
	}
	err := l.ring.WaitNonblocking(n, timeout)
	if errors.Is(err, unix.EINTR) {
		// most likely a preemption request: let the scheduler have it
		runtime.Gosched()
		return nil
	}
	return err
}

// takeQueue takes the posted connections; with none, the loop is about
// to wait (sleeping), so that a post wakes it.
func (l *urLoop) takeQueue() (q []*conn, stop bool) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.stop {
		return nil, true
	}
	if len(l.queue) == 0 {
		l.sleeping = true
		return nil, false
	}
	q = l.queue
	l.queue = nil
	l.signalled = false
	for _, c := range q {
		c.ur.queued = false
	}
	return q, false
}

func (l *urLoop) runQueue(q []*conn) {
	for _, c := range q {
		k := c.ur
		if k.slot < 0 {
			if k.state.Load() == sockClosed {
				continue // released already
			}
			l.register(c)
		}
		l.settle(c)
	}
}

// teardown cancels what is still in flight, waits (a few seconds at most)
// for the kernel to be done with the buffers, and closes the ring (the
// eventfd is closed by urEngine.stop, once no one may write it).
func (l *urLoop) teardown() {
	if l.armed > 0 {
		if q := l.sqe(); q != nil {
			uring.PrepCancelAll(q, urCancel)
		}
		ts := unix.NsecToTimespec(int64(100 * time.Millisecond))
		deadline := time.Now().Add(3 * time.Second)
		for l.armed > 0 && time.Now().Before(deadline) {
			if err := l.ring.SubmitWait(1, &ts); err != nil && !errors.Is(err, unix.EBUSY) {
				break
			}
			r := l.ring
			head, tail := r.Head(), r.Tail()
			for h := head; h != tail; h++ {
				e := r.Entry(h)
				switch e.UserData & urTagMask {
				case urRecv:
					if l.bufs == nil || e.Flags&uring.CQEFMore == 0 {
						l.armed--
					}
				case urPoll, urWake:
					l.armed--
				}
			}
			r.Advance(tail - head)
		}
	}
	if l.armed == 0 {
		if l.bufs != nil {
			l.bufs.Close()
		}
		l.ring.Close()
	} // else the kernel may still write into the buffers: the ring stays
}

// timeout is the wait's limit: until the next scan or resume; none with
// no connections.
func (l *urLoop) timeout() *unix.Timespec {
	if l.open == 0 && len(l.paused) == 0 {
		return nil
	}
	until := l.nextScan
	for _, c := range l.paused {
		if t := time.Unix(0, c.ur.pauseBy); t.Before(until) {
			until = t
		}
	}
	d := max(time.Until(until), 0)
	l.ts = unix.NsecToTimespec(int64(d))
	return &l.ts
}

// sqe is a free submission entry, submitting what is queued when the
// queue is full.
func (l *urLoop) sqe() *uring.SQE {
	for range 100 {
		if q := l.ring.GetSQE(); q != nil {
			return q
		}
		l.sendsPrepared = 0 // submitted: their completions are waiting
		if err := l.ring.SubmitWait(0, nil); err != nil {
			l.reap() // EBUSY: make room in the completion queue
		}
	}
	l.s.log.Error("uring engine: the submission queue stays full")
	return nil
}

// reap takes the ring's completions: a send's is handled at once (a
// relay waits for it), the others are kept in cqes for the loop.
func (l *urLoop) reap() {
	r := l.ring
	head, tail := r.Head(), r.Tail()
	// As in relay: the sends' connections, out of the cache after the
	// kernel's sends, fetched in parallel before their locks are taken.
	t := uintptr(0)
	for h := head; h != tail; h++ {
		if e := r.Entry(h); e.UserData&urTagMask == urSend {
			t += uintptr(unsafe.Pointer(l.sends[int(e.UserData&^urTagMask)].c))
		}
	}
	for h := head; h != tail; h++ {
		if e := r.Entry(h); e.UserData&urTagMask == urSend {
			o := l.sends[int(e.UserData&^urTagMask)].c
			// its lock's line, by a field nobody writes (o.fd and
			// o.taken, there too, would be racy reads: other loops
			// write them)
			t += uintptr(unsafe.Pointer(o.ws))
		}
	}
	l.touched = t
	for h := head; h != tail; h++ {
		e := r.Entry(h)
		if e.UserData&urTagMask == urSend {
			l.sendDone(int(e.UserData&^urTagMask), e.Res)
		} else {
			l.cqes = append(l.cqes, *e)
		}
	}
	r.Advance(tail - head)
}

func (l *urLoop) armWake() {
	q := l.sqe()
	if q == nil {
		return
	}
	uring.PrepRead(q, l.wakefd, unsafe.Pointer(&l.wbuf[0]), len(l.wbuf), urWake)
	l.wakeArmed = true
	l.armed++
}

// complete handles one completion other than a send's.
func (l *urLoop) complete(e uring.CQE) {
	tag, slot := e.UserData&urTagMask, int(e.UserData&^urTagMask)
	switch tag {
	case urWake:
		l.armed--
		l.wakeArmed = false
		l.armWake() // the queue is taken at the top of the loop
	case urRecv:
		c := l.slots[slot]
		k := c.ur
		if l.bufs == nil || e.Flags&uring.CQEFMore == 0 {
			l.armed--
			k.recvArmed = false
			k.recvStop = false
		}
		if l.bufs != nil && e.Flags&uring.CQEFBuffer != 0 {
			l.receivedBuf(c, e)
			return
		}
		l.received(c, e.Res)
	case urPoll:
		l.armed--
		c := l.slots[slot]
		c.ur.pollArmed = false
		if e.Res != -int32(unix.ECANCELED) {
			c.urWriteOut()
		}
		l.settle(c)
	}
}

// register adds a new connection to the loop.
func (l *urLoop) register(c *conn) {
	k := c.ur
	if n := len(l.free); n > 0 {
		k.slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		k.slot = int32(len(l.slots))
		l.slots = append(l.slots, nil)
	}
	l.slots[k.slot] = c
	if k.fd < l.fixedMax && l.ring.UpdateFile(uint32(k.fd), int32(k.fd)) == nil {
		k.fixed = true
	}
	if l.bufs == nil {
		k.rbuf = make([]byte, urRecvBuf)
	}
	l.open++
	if l.open == 1 {
		l.nextScan = time.Now().Add(l.tick)
	}
}

// received handles a recv's completion.
func (l *urLoop) received(c *conn, res int32) {
	k := c.ur
	switch {
	case res > 0:
		k.rdata = k.rbuf[:res]
	case res == 0:
		k.rerr = io.EOF
	case res == -int32(unix.ECANCELED), res == -int32(unix.EINTR), res == -int32(unix.EAGAIN), res == -int32(unix.ENOBUFS):
		// ENOBUFS: the loop's buffers ran out, the multishot recv
		// ended; settle arms another
	default:
		k.rerr = os.NewSyscallError("recv", syscall.Errno(-res))
	}
	l.handleIn(c)
}

// receivedBuf handles a multishot recv's completion into a provided
// buffer: the bytes are handled in place, and what the reader leaves
// (a paused or closing connection's) is copied out before the buffer
// goes back to the kernel.
func (l *urLoop) receivedBuf(c *conn, e uring.CQE) {
	k := c.ur
	data, bid, whole := l.bufs.Buf(e.Flags, e.Res)
	if len(k.rdata) > 0 {
		k.rdata = append(k.rdata, data...) // behind what was left (k.rbuf)
		k.rbuf = k.rdata
	} else {
		k.rdata = data
	}
	l.handleIn(c)
	if len(k.rdata) > 0 && (len(k.rbuf) == 0 || &k.rdata[0] != &k.rbuf[0]) {
		k.rbuf = append(k.rbuf[:0], k.rdata...)
		k.rdata = k.rbuf
	}
	if len(k.rdata) == 0 {
		k.rbuf = nil
	}
	if whole {
		l.bufs.Recycle(bid)
	}
}

// handleIn hands what a recv brought to the connection's reader (or
// drain), and settles it.
func (l *urLoop) handleIn(c *conn) {
	k := c.ur
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
	case k.lingerBy != 0:
		l.drainIn(c)
	case !k.paused:
		l.readIn(c)
	}
	l.settle(c)
}

// settle releases a closed connection, starts the drain of one being let
// go, and arms the requests an open one needs: a recv, and a poll for
// room when bytes wait.
func (l *urLoop) settle(c *conn) {
	k := c.ur
	if k.slot < 0 {
		return
	}
	c.mu.Lock()
	closed, lingering, wantOut := c.closed, c.lingering, k.wantOut
	c.mu.Unlock()
	if closed {
		l.release(c)
		return
	}
	if lingering != "" && k.lingerBy == 0 {
		// drain: a second at most for the reply to go out and the
		// client to close
		k.lingerBy = time.Now().Add(time.Second).UnixNano()
		k.paused = false
		k.held = nil
		l.drainIn(c)
		c.mu.Lock()
		closed = c.closed
		c.mu.Unlock()
		if closed {
			l.release(c)
			return
		}
	}
	switch {
	case !k.recvArmed && !k.paused && len(k.rdata) == 0 && k.rerr == nil:
		if q := l.sqe(); q != nil {
			if l.bufs != nil {
				uring.PrepRecvMultishot(q, k.fd, l.bufs.Group(), urRecv|uint64(k.slot))
			} else {
				uring.PrepRecv(q, k.fd, unsafe.Pointer(&k.rbuf[0]), len(k.rbuf), 0, urRecv|uint64(k.slot))
			}
			k.recvArmed = true
			l.armed++
		}
	case k.recvArmed && k.paused && l.bufs != nil && !k.recvStop && !k.cancelled:
		// a paused connection receives nothing more (what is on its
		// way is kept) until it resumes: its multishot recv ends
		k.recvStop = true
		l.cancel(urRecv | uint64(k.slot))
	}
	if wantOut && !k.pollArmed {
		if q := l.sqe(); q != nil {
			uring.PrepPollAdd(q, k.fd, unix.POLLOUT, urPoll|uint64(k.slot))
			k.pollArmed = true
			l.armed++
		}
	}
}

// readIn handles the packets that the received bytes complete.
func (l *urLoop) readIn(c *conn) {
	k := c.ur
	if c.reader == nil {
		c.reader = l.pool.reader(k, c.s.cfg.MaxPacket)
		if c.scratch == nil {
			c.scratch = l.pool.scratch()
		}
	}
	for {
		c.mu.Lock()
		stop := c.closed || c.lingering != ""
		backlog := c.flushing && len(c.out)+c.inflight > c.s.cfg.SendBuffer/2
		c.mu.Unlock()
		if stop {
			return
		}
		if backlog {
			l.pause(c, nil, backlogPause) // held back
			return
		}
		f, err := c.reader.Next()
		if err != nil {
			if errors.Is(err, errWouldBlock) {
				return
			}
			c.readFailed(err)
			return
		}
		c.received(f)
		if f.ID != protocol.IDChat {
			if d := c.throttleDelay(); d > 0 {
				l.pause(c, &f, d)
				return
			}
			c.takeToken()
		}
		c.handle(f)
	}
}

// pause receives nothing more for a connection for d: one paced by the
// request rate, which handles its packet held on resuming, or one held
// back by its own replies (held nil, backlogPause).
func (l *urLoop) pause(c *conn, held *protocol.Frame, d time.Duration) {
	k := c.ur
	k.held = held // valid: the reader is not called until resume
	k.pauseBy = time.Now().Add(d).UnixNano()
	k.paused = true
	l.paused = append(l.paused, c)
}

// backlogPause is how long a connection held back waits before its loop
// reads on.
//
// A connection with half its send buffer waiting to be written is held
// back: backpressure, as a blocking writer would give. Without it, one
// round can handle a pipelining client's every request that a multishot
// recv brought, megabytes of them, before the ring sees what the socket
// took, and a client that reads as fast as it can is closed as a slow
// consumer. A client that does not read at all is still closed, by the
// write-stall rule.
const backlogPause = time.Millisecond

func (l *urLoop) resumePaused(now int64) {
	kept := l.paused[:0]
	var due []*conn
	for _, c := range l.paused {
		k := c.ur
		switch {
		case !k.paused || k.slot < 0:
		case k.pauseBy <= now:
			due = append(due, c)
		default:
			kept = append(kept, c)
		}
	}
	clear(l.paused[len(kept):])
	l.paused = kept
	for _, c := range due {
		l.resume(c)
		l.settle(c)
	}
}

// resume handles a paused connection's held packet and reads on.
func (l *urLoop) resume(c *conn) {
	k := c.ur
	if !k.paused {
		return
	}
	k.paused = false
	c.mu.Lock()
	stop := c.closed || c.lingering != ""
	c.mu.Unlock()
	f := k.held
	k.held = nil
	if stop {
		return
	}
	if f != nil { // paused by the request rate, not held back
		c.throttleResume()
		c.takeToken()
		c.handle(*f)
	}
	l.readIn(c)
}

// drainIn discards the input of a connection being let go; at its end of
// stream the connection closes, once its reply is out.
func (l *urLoop) drainIn(c *conn) {
	k := c.ur
	k.rdata = nil
	if k.rerr == nil {
		return
	}
	c.mu.Lock()
	if k.sawEOF || c.closed {
		c.mu.Unlock()
		return
	}
	if c.flushing {
		k.sawEOF = true // closed by the write-out once the reply is out
	} else {
		c.closeLocked(c.lingering)
	}
	c.mu.Unlock()
}

// scan checks the deadlines of the loop's connections.
func (l *urLoop) scan(now int64) {
	for _, c := range l.slots {
		if c != nil && scanConn(c, c.ur, &c.ur.loopDeadlines, now, &l.pool) {
			l.settle(c)
		}
	}
}

// stalledLocked: a batch in a ring's hands (queued or sent) is not
// stalled yet, whatever its age.
func (k *urSock) stalledLocked(now int64) bool {
	return k.sending == 0 && k.pending == nil && now > k.stallBy
}
func (k *urSock) isPaused() bool { return k.paused }

// release closes a finished connection's descriptor and runs its
// disconnect processing, once no request uses the descriptor: the recv
// and poll in flight are cancelled (the shutdown has usually completed
// them already), and a send on another ring is waited for.
func (l *urLoop) release(c *conn) {
	k := c.ur
	if k.slot < 0 {
		return
	}
	if k.recvArmed || k.pollArmed {
		if !k.cancelled {
			k.cancelled = true
			if k.recvArmed {
				l.cancel(urRecv | uint64(k.slot))
			}
			if k.pollArmed {
				l.cancel(urPoll | uint64(k.slot))
			}
		}
		return
	}
	c.mu.Lock()
	if k.sending > 0 {
		k.releaseWait = true
		c.mu.Unlock()
		return
	}
	if k.fixed {
		// out of the table first: the ring's reference would keep the
		// socket open, and the descriptor's number is free once closed
		_ = l.ring.UpdateFile(uint32(k.fd), -1)
		k.fixed = false
	}
	k.state.Store(sockClosed)
	_ = unix.Close(k.fd)
	c.fd = -1
	c.mu.Unlock()
	l.slots[k.slot] = nil
	l.free = append(l.free, k.slot)
	k.slot = -1
	k.held = nil
	k.rbuf, k.rdata = nil, nil
	l.open--
	l.conns.Add(-1)
	c.finish()
	l.pool.giveBack(c)
}

func (l *urLoop) cancel(target uint64) {
	if q := l.sqe(); q != nil {
		uring.PrepCancel(q, target, urCancel)
	}
}

// urWantOut starts a write batch: bytes wait in out for the socket's
// room (under c.mu, flushing set); the loop polls for it.
func (c *conn) urWantOut() {
	k := c.ur
	k.stallBy = time.Now().Add(writeStall).UnixNano()
	k.batchLeft = len(c.out)
	if !k.wantOut {
		k.wantOut = true
		k.post()
	}
}

// urWriteOut writes what waits in out as far as the socket takes it (its
// loop, on POLLOUT). A batch (what waited when it began) must be written
// within writeStall, or the client is a slow consumer.
func (c *conn) urWriteOut() {
	k := c.ur
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.flushing || k.sending > 0 || k.pending != nil {
		// a send in flight or queued on a ring: its completion goes on
		k.wantOut = false
		return
	}
	n, err := c.tryWrite(c.out)
	if err != nil {
		c.detail = err.Error()
		c.closeLocked(ReasonWriteError)
		return
	}
	c.out = c.out[:copy(c.out, c.out[n:])]
	c.taken += int64(n)
	k.batchLeft -= n
	switch {
	case len(c.out) == 0:
		c.urFlushed()
	case k.batchLeft <= 0:
		k.batchLeft = len(c.out)
		k.stallBy = time.Now().Add(writeStall).UnixNano()
	}
}

// urFlushed ends a flush: nothing waits any more (under c.mu).
func (c *conn) urFlushed() {
	k := c.ur
	c.flushing = false
	k.wantOut = false
	if cap(c.out) > 4096 {
		c.out = nil
	}
	if c.lingering != "" {
		if k.sawEOF {
			c.closeLocked(c.lingering)
			return
		}
		c.shutdownWriteLocked()
	}
}

// relay queues a chat's indication ind for every member but m and the
// confirm conf for c (handleChat, under the room's lock, on c's loop),
// and returns the number of receivers. The loop sends them at the end of
// its round (flushBatch).
func (l *urLoop) relay(c *conn, conns []*conn, ind, conf []byte) int {
	// The receivers' state is out of the cache (the kernel's sends have
	// been through it since): loading a word of each of their lines first,
	// independent loads, lets the processor fetch them in parallel rather
	// than one miss after another under each lock.
	t := uintptr(0)
	for _, o := range conns {
		t += uintptr(unsafe.Pointer(o.ur)) // not o.fd: release writes it
	}
	for _, o := range conns {
		if k := o.ur; k != nil {
			t += uintptr(unsafe.Pointer(k.pending))
		}
	}
	l.touched = t
	n := 0
	for _, o := range conns {
		if o != c {
			l.queueSend(o, ind, false)
			n++
		}
	}
	l.queueSend(c, conf, true)
	return n
}

// queueSend queues p for o (one lock of o per delivery): in the batch
// buffer (bout) of o if o is in this loop's batch and nothing else waits,
// else behind what waits in its out buffer; a receiver that nothing owns
// (not flushing) joins the batch, and from then on whatever else comes
// for it, from any thread, goes behind.
//
// A chat's confirm (later) may join the next round's batch instead: in
// turn-taking the next packet for its sender is most often the next chat
// of its room, which its next user sends once this round's sends reach
// it, and the confirm goes out with it, in front, in one send: one send a
// chat fewer (a twentieth of a room of 20's) for the server, and one
// receive fewer for the client. See flushBatch for when, and for how long
// at most. A held confirm's connection joins the batch when the next chat
// for it comes, next to that chat's other receivers: at the head of the
// batch (as the held confirms once were), the previous sender of each
// room got each chat a whole flush ahead of the rest, and at 950 rooms
// on one ring, whose flush of a round takes tens of milliseconds, the
// fan-out spread of a broadcast was 100 ms at the median.
func (l *urLoop) queueSend(o *conn, p []byte, later bool) {
	k := o.ur
	if k == nil {
		o.send(p)
		return
	}
	o.mu.Lock()
	switch {
	case o.closed || o.lingering != "" || o.fd < 0:
	case len(o.out)+o.inflight+len(p) > l.s.cfg.SendBuffer:
		o.detail = fmt.Sprintf("the kernel took %d bytes, %d more were waiting", o.taken, len(o.out)+o.inflight)
		o.closeLocked(ReasonSlowConsumer)
	case k.pending == l && !k.flushed && len(o.out) == 0:
		// in this round's batch already, or holding a confirm: one
		// send takes both
		k.bout = append(k.bout, p...)
		o.inflight += len(p)
		if k.holding {
			// its place in the batch: beside the chat's other
			// receivers, not ahead of them
			k.holding = false
			l.batch = append(l.batch, o)
		}
	case o.flushing:
		// behind what waits: the send in flight's completion, or the
		// poll for room, sends it
		o.out = append(o.out, p...)
	default:
		o.flushing = true
		k.pending, k.flushed = l, false
		k.bout = append(l.takeOut(), p...)
		o.inflight = len(k.bout)
		k.sending++
		if later {
			l.later = append(l.later, o)
		} else {
			l.batch = append(l.batch, o)
		}
	}
	o.mu.Unlock()
}

// takeOut is an empty batch buffer from the loop's pool.
func (l *urLoop) takeOut() []byte {
	b, _ := pop(&l.outPool)
	return b
}

// giveOut puts a batch buffer back in the loop's pool: the batches'
// memory is the loop's, not every connection's.
func (l *urLoop) giveOut(b []byte) {
	if cap(b) > 0 && cap(b) <= 4096 && len(l.outPool) < poolMax {
		l.outPool = append(l.outPool, b[:0])
	}
}

// flushBatch prepares one send per connection of the round's batch, of
// its batch buffer (the next io_uring_enter submits them together;
// non-blocking, they complete during it). Only this loop touches a
// batch buffer once it is in the batch, so no lock is taken here; its
// bytes count as inflight until the send completes.
//
// The round's confirms (later) go too, unless hold: then they join the
// next round's batch, where the next chat for their senders may join
// them. A loop holds them after a busy round only (urHoldMin), whose sends
// will bring the next chats, and waits for those urHoldMax at most before
// sending them: a confirm is held one round and one wait at most.
func (l *urLoop) flushBatch(hold bool) {
	// the last round's held confirms that no chat took go now, last
	for _, o := range l.held {
		if k := o.ur; k.holding {
			k.holding = false
			l.batch = append(l.batch, o)
		}
	}
	clear(l.held)
	l.held = l.held[:0]
	if !hold && len(l.later) > 0 {
		l.batch = append(l.batch, l.later...)
		clear(l.later)
		l.later = l.later[:0]
	}
	for range 4 { // a full submission queue reaps sends that may queue more
		if len(l.batch) == 0 {
			break
		}
		b := l.batch
		l.batch = l.batchSpare[:0]
		l.flushConns(b)
		clear(b)
		l.batchSpare = b[:0]
	}
	for _, o := range l.later {
		o.ur.holding = true
	}
	l.held, l.later = l.later, l.held
}

func (l *urLoop) flushConns(b []*conn) {
	// A large batch goes in chunks, each submitted and its completions
	// handled at once; a small one in the loop's next io_uring_enter.
	chunk := uint32(len(b) + 1)
	if len(b) >= urChunkMin {
		chunk = urChunk
	}
	for _, o := range b {
		k := o.ur
		q := l.sqe() // it may reap other sends' completions
		if q == nil {
			l.unbatch(o)
			continue
		}
		k.flushed = true
		l.sendsPrepared++
		// k.fd: the descriptor stays open while sending counts this send
		uring.PrepSend(q, k.fd, unsafe.Pointer(&k.bout[0]), len(k.bout), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, urSend|uint64(l.sendSlot(k)))
		if k.loop == l && k.fixed {
			uring.FixedFile(q, uint32(k.fd))
		}
		if l.sendsPrepared >= chunk {
			if err := l.ring.SubmitNonblocking(); err == nil || errors.Is(err, unix.EBUSY) {
				l.sendsPrepared = 0
				l.reap()
			}
		}
	}
}

// A batch of urChunkMin sends or more (a round of turn-taking in hundreds
// of rooms) is submitted urChunk sends at a time, and each chunk's
// completions are handled at once, while the chunk's connections are
// still in the processor's caches, and while the clients can answer the
// chunk's chats: at 475 rooms of 20 the server's CPU per message fell by
// a fifth. Smaller batches go in one submission with the loop's wait:
// chunks made 15 rooms a fifth dearer. Tests lower both.
var (
	urChunkMin = 512
	urChunk    = uint32(64)
)

// unbatch hands a batch's bytes to the connection's own loop, which
// writes them when the socket has room (no submission entry was free).
func (l *urLoop) unbatch(o *conn) {
	k := o.ur
	o.mu.Lock()
	defer o.mu.Unlock()
	k.sending--
	k.pending = nil
	if !o.closed {
		o.out = append(k.bout, o.out...)
		o.inflight = 0
		o.urWantOut()
	}
	k.bout = nil
	if k.sending == 0 && k.releaseWait {
		k.releaseWait = false
		k.post()
	}
}

// sendSlot records o as having a send in flight on the ring; the index
// is the send's user data.
func (l *urLoop) sendSlot(o *urSock) int {
	if n := len(l.sendFree); n > 0 {
		i := l.sendFree[n-1]
		l.sendFree = l.sendFree[:n-1]
		l.sends[i] = o
		return int(i)
	}
	l.sends = append(l.sends, o)
	return len(l.sends) - 1
}

// sendDone handles the completion of a batch's send: what the socket did
// not take waits in out, in front of what came meanwhile, and the
// connection's loop polls for room; what came meanwhile joins the next
// batch.
func (l *urLoop) sendDone(i int, res int32) {
	k := l.sends[i]
	l.sends[i] = nil
	l.sendFree = append(l.sendFree, int32(i))
	o := k.c
	o.mu.Lock()
	defer o.mu.Unlock()
	k.sending--
	buf := k.bout
	k.bout, k.pending = nil, nil
	if o.closed {
		l.giveOut(buf)
		if k.sending == 0 && k.releaseWait {
			k.releaseWait = false
			k.post()
		}
		return
	}
	o.inflight = 0
	if res < 0 && res != -int32(unix.EAGAIN) && res != -int32(unix.EINTR) {
		l.giveOut(buf)
		o.detail = os.NewSyscallError("send", syscall.Errno(-res)).Error()
		o.closeLocked(ReasonWriteError)
		return
	}
	w := max(int(res), 0)
	o.taken += int64(w)
	if w < len(buf) {
		// the socket is full: the rest first, then what came meanwhile
		rest := make([]byte, 0, len(buf)-w+len(o.out))
		o.out = append(append(rest, buf[w:]...), o.out...)
		l.giveOut(buf)
		o.urWantOut()
		return
	}
	l.giveOut(buf)
	if len(o.out) == 0 {
		o.urFlushed()
		return
	}
	// what came meanwhile: the next round's batch
	k.pending, k.flushed = l, false
	k.bout, o.out = o.out, nil
	o.inflight = len(k.bout)
	k.sending++
	l.batch = append(l.batch, o)
}
