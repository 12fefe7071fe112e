//go:build linux

package server

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/uring"
)

// The io_uring engine (Config.Engine EngineURing): the event-loop core
// over io_uring rings, one a loop. What differs from epoll is how a loop
// talks to the kernel:
//
//   - Receives: every connection has a multishot recv armed on its loop's
//     ring (Linux 6.0), which completes at each arrival into one of the
//     loop's provided buffers (512 KiB a loop, whatever the connections).
//     The packets a completion completes are handled in the buffer, and
//     what the reader leaves is copied out before the buffer goes back. A
//     paused connection's recv is cancelled until it resumes. Without
//     buffer rings, each connection has a recv of its own buffer in
//     flight, armed again after each completion.
//   - Sends: a chat from a ring's connection is queued, under the room's
//     lock, for every receiver: one that nothing else was writing to joins
//     the loop's batch with the chat in its batch buffer (bout), and is
//     flushing from then on; whatever else comes for it, from any thread,
//     goes behind, in its out buffer. At the end of the round every
//     receiver of the batch gets one non-blocking send of its batch
//     buffer, all submitted by one io_uring_enter, during which the kernel
//     runs them. What a send leaves unwritten goes in front of out, and
//     the receiver's own ring polls its socket for room (POLLOUT) to write
//     the rest (loop.writeOut); what came meanwhile goes in the next
//     round's batch. After a busy round a chat's confirm to its sender
//     waits for the next round (urHoldMax at most), to go with the next
//     chat of its room in one send. Handlers' replies and entry and exit
//     indications join the round's batch the same way (deliver).
//
// A send in flight on one ring keeps its receiver's descriptor open (its
// own ring's release waits for it), and whoever queues bytes behind it
// from elsewhere wakes that ring if it waits (loop.kick), so that the
// send's completion is handled at once.

// urSock is the io_uring poller's state of a socket.
type urSock struct {
	// The batch (guarded by conn.mu): what a delivery and its send's
	// completion touch.
	pending     *loop[urSock] // the loop whose batch has it (its send at the end of the round, or in flight)
	bout        []byte        // the batch's bytes: appended by pending (under conn.mu), sent by it
	sending     int16         // in a batch or sent by some ring: the descriptor stays open
	flushed     bool          // owned by pending: bout's send is in flight (later bytes go to out)
	holding     bool          // owned by pending: in its held list, a confirm in bout, not yet in a batch
	wantOut     bool          // its loop is to poll the socket for room
	releaseWait bool          // its loop waits for sending to fall to zero

	// Owned by the loop.
	fixed     bool // the socket is in its ring's file table, at slot fd
	recvArmed bool
	recvStop  bool // multishot: the recv is being cancelled (paused)
	pollArmed bool
	cancelled bool   // the requests in flight were cancelled (release)
	rbuf      []byte // single-shot: the recv's buffer; multishot: a copy of what the reader left
	rdata     []byte // received, not yet read by the reader
	rerr      error  // the end of the stream or a receive error, once rdata is read
}

// Ring sizes: submission entries (a chat to a room of 20 takes 21), and
// completions (a recv per connection of the ring may complete at once).
const (
	urEntries   = 4096
	urCQEntries = 32768
	urRecvBuf   = 1024
)

// The loop's provided buffers for multishot receives: consumed piece by
// piece (Linux 6.12), a few large ones; else many small ones, each taken
// whole by one arrival. 512 KiB a ring either way: the smaller the ring,
// the more of it is still in the processor's caches when the next
// arrivals land in it. A round's arrivals past it end their multishot
// recvs with ENOBUFS, which settle arms again.
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
// or poll its connection's slot, for a send its index in the sends.
const (
	urTagShift = 56
	urTagMask  = 0xff << urTagShift
	urRecv     = 1 << urTagShift
	urPoll     = 2 << urTagShift
	urSend     = 3 << urTagShift
	urWake     = 4 << urTagShift
	urCancel   = 5 << urTagShift
)

// urPoller is one loop's ring.
type urPoller struct {
	l    *loop[urSock]
	ring *uring.Ring
	bufs *uring.BufRing // multishot receives' buffers; nil: a recv per connection, into its own buffer
	// fixedMax: descriptors below it go in the ring's file table (slot =
	// descriptor), so that its sends to them skip the descriptor's lookup
	// and reference count; 0: no table
	fixedMax  int
	wakefd    int
	wbuf      [8]byte // the eventfd's counter, read by the ring
	armed     int     // requests in flight: recvs, polls, the eventfd read
	wakeArmed bool

	cqes       []uring.CQE // completions taken from the ring, not yet handled
	batch      []*sock[urSock]
	batchSpare []*sock[urSock]
	later      []*sock[urSock] // confirms for the end of the next round (queueSend)
	held       []*sock[urSock] // last round's later: each joins the batch with the next chat for it, or at the round's end
	handled    int             // completions handled this round (but sends')
	sends      []*sock[urSock] // connections with a send in flight, by the send's user data
	sendFree   []int32
	ts         unix.Timespec
	// sendsPrepared: the sends prepared since the last submission
	sendsPrepared uint32
	touched       uintptr  // the sum of relay's and reap's early loads, kept so they are made
	outPool       [][]byte // batch buffers
}

// newURingEngine starts the io_uring engine's rings; the error says why
// io_uring cannot be used.
func newURingEngine(s *Server) (ioEngine, error) {
	e, err := startLoops(s, s.cfg.Loops, cmp.Or(s.cfg.LoopFill, uringLoopFill), newURingPoller)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func newURingPoller(l *loop[urSock]) (poller[urSock], error) {
	ring, err := urSetup()
	if err != nil {
		return nil, urUnavailable(err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		ring.Close()
		return nil, os.NewSyscallError("eventfd", err)
	}
	p := &urPoller{l: l, ring: ring, wakefd: wakefd}
	if urMultishot && ring.Flags()&uring.SetupSingleIssuer != 0 {
		// multishot recv is Linux 6.0, as the single-issuer flag
		p.bufs, err = ring.RegisterBufRing(0, urBufsInc, urBufSizeInc, true)
		if err == nil && !p.bufs.Incremental() {
			p.bufs.Close()
			p.bufs, err = ring.RegisterBufRing(0, urBufsWhole, urBufSizeWhol, false)
		}
		if err != nil {
			p.bufs = nil
		}
	}
	var lim unix.Rlimit
	if urFixedFiles && unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		n := uint32(min(lim.Cur, 1<<16))
		if ring.RegisterFilesSparse(n) == nil {
			p.fixedMax = int(n)
		}
	}
	p.armWake()
	if err := ring.SubmitWait(0, nil); err != nil {
		p.stopped()
		p.close()
		return nil, urUnavailable(fmt.Errorf("io_uring_enter: %w", err))
	}
	return p, nil
}

// close closes the eventfd, once no loop may wake this one.
func (p *urPoller) close() { _ = unix.Close(p.wakefd) }

// stopped cancels what is still in flight, waits (a few seconds at most)
// for the kernel to be done with the buffers, and closes the ring.
func (p *urPoller) stopped() {
	if p.armed > 0 {
		if q := p.sqe(); q != nil {
			uring.PrepCancelAll(q, urCancel)
		}
		ts := unix.NsecToTimespec(int64(100 * time.Millisecond))
		deadline := time.Now().Add(3 * time.Second)
		for p.armed > 0 && time.Now().Before(deadline) {
			if err := p.ring.SubmitWait(1, &ts); err != nil && !errors.Is(err, unix.EBUSY) {
				break
			}
			r := p.ring
			head, tail := r.Head(), r.Tail()
			for h := head; h != tail; h++ {
				e := r.Entry(h)
				switch e.UserData & urTagMask {
				case urRecv:
					if p.bufs == nil || e.Flags&uring.CQEFMore == 0 {
						p.armed--
					}
				case urPoll, urWake:
					p.armed--
				}
			}
			r.Advance(tail - head)
		}
	}
	if p.armed == 0 {
		if p.bufs != nil {
			p.bufs.Close()
		}
		p.ring.Close()
	} // else the kernel may still write into the buffers: the ring stays
}

func (p *urPoller) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(p.wakefd, one[:])
}

// poll sends the round's batch, submits what is prepared and waits for
// completions, and handles them.
func (p *urPoller) poll(d time.Duration, quiet bool) error {
	p.flushBatch(p.handled >= urHoldMin)
	p.handled = 0
	var err error
	if d != 0 && p.ring.Ready() == 0 && len(p.cqes) == 0 {
		err = p.wait(d, quiet)
	} else if p.ring.Unsubmitted() > 0 {
		err = p.ring.SubmitNonblocking()
	}
	p.sendsPrepared = 0
	if err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("io_uring_enter: %w", err)
	}
	p.reap()
	for i := 0; i < len(p.cqes); i++ {
		p.complete(p.cqes[i]) // a relay may append to cqes
	}
	p.handled += len(p.cqes)
	clear(p.cqes)
	p.cqes = p.cqes[:0]
	return nil
}

// wait submits what is prepared and waits: the sends complete during the
// submission (non-blocking), so it waits for one completion more than
// they make, for d at most (d < 0: for as long as it takes); for the
// sends only when the loop has no connection (nothing else may come), a
// loop tick at most while sends are in flight, and urHoldMax at most with
// held confirms to send. With a limit it keeps the loop's P
// (waitKeepingP's reasons) unless the loop is quiet; without, or quiet,
// it waits through the scheduler.
func (p *urPoller) wait(d time.Duration, quiet bool) error {
	n := p.sendsPrepared + 1
	if p.sendsPrepared > 0 {
		if p.l.open == 0 {
			n--
		}
		if d < 0 {
			d = p.l.tick
		}
	}
	if len(p.held) > 0 || len(p.batch) > 0 {
		if d < 0 || d > urHoldMax {
			d = urHoldMax
		}
	}
	if d < 0 {
		return p.ring.SubmitWait(n, nil)
	}
	p.ts = unix.NsecToTimespec(int64(d))
	if quiet && d > 0 {
		return p.ring.SubmitWait(n, &p.ts)
	}
	err := p.ring.WaitNonblocking(n, &p.ts)
	if errors.Is(err, unix.EINTR) {
		runtime.Gosched() // most likely a preemption request
		return nil
	}
	return err
}

// sqe is a free submission entry, submitting what is queued when the
// queue is full.
func (p *urPoller) sqe() *uring.SQE {
	for range 100 {
		if q := p.ring.GetSQE(); q != nil {
			return q
		}
		p.sendsPrepared = 0 // submitted: their completions are waiting
		if err := p.ring.SubmitWait(0, nil); err != nil {
			p.reap() // EBUSY: make room in the completion queue
		}
	}
	p.l.s.log.Error("uring engine: the submission queue stays full")
	return nil
}

// reap takes the ring's completions: a send's is handled at once (a
// relay waits for it), the others are kept in cqes for the loop.
func (p *urPoller) reap() {
	r := p.ring
	head, tail := r.Head(), r.Tail()
	// As in relay: the sends' connections, out of the cache after the
	// kernel's sends, fetched in parallel before their locks are taken.
	t := uintptr(0)
	for h := head; h != tail; h++ {
		if e := r.Entry(h); e.UserData&urTagMask == urSend {
			t += uintptr(unsafe.Pointer(p.sends[int(e.UserData&^urTagMask)].c))
		}
	}
	for h := head; h != tail; h++ {
		if e := r.Entry(h); e.UserData&urTagMask == urSend {
			o := p.sends[int(e.UserData&^urTagMask)].c
			// its lock's line, by a field nobody writes
			t += uintptr(unsafe.Pointer(o.ws))
		}
	}
	p.touched = t
	for h := head; h != tail; h++ {
		e := r.Entry(h)
		if e.UserData&urTagMask == urSend {
			p.sendDone(int(e.UserData&^urTagMask), e.Res)
		} else {
			p.cqes = append(p.cqes, *e)
		}
	}
	r.Advance(tail - head)
}

func (p *urPoller) armWake() {
	q := p.sqe()
	if q == nil {
		return
	}
	uring.PrepRead(q, p.wakefd, unsafe.Pointer(&p.wbuf[0]), len(p.wbuf), urWake)
	p.wakeArmed = true
	p.armed++
}

// complete handles one completion other than a send's.
func (p *urPoller) complete(e uring.CQE) {
	l := p.l
	tag, slot := e.UserData&urTagMask, int(e.UserData&^urTagMask)
	switch tag {
	case urWake:
		p.armed--
		p.wakeArmed = false
		p.armWake()
		l.woken()
	case urRecv:
		last := p.bufs == nil || e.Flags&uring.CQEFMore == 0
		if last {
			p.armed--
		}
		k := l.slots[slot]
		if k == nil { // (never: release waits for its requests' completions)
			p.l.s.log.Error("uring engine: a receive completed for a released connection", "slot", slot)
			if p.bufs != nil && e.Flags&uring.CQEFBuffer != 0 {
				if _, bid, whole := p.bufs.Buf(e.Flags, e.Res); whole {
					p.bufs.Recycle(bid)
				}
			}
			return
		}
		if last {
			k.x.recvArmed = false
			k.x.recvStop = false
		}
		if p.bufs != nil && e.Flags&uring.CQEFBuffer != 0 {
			p.receivedBuf(k, e)
			return
		}
		p.received(k, e.Res)
	case urPoll:
		p.armed--
		k := l.slots[slot]
		if k == nil { // (never, as above)
			p.l.s.log.Error("uring engine: a poll completed for a released connection", "slot", slot)
			return
		}
		k.x.pollArmed = false
		l.event(k, false, e.Res != -int32(unix.ECANCELED), false)
	}
}

// received handles a recv's completion.
func (p *urPoller) received(k *sock[urSock], res int32) {
	switch {
	case res > 0:
		k.x.rdata = k.x.rbuf[:res]
	case res == 0:
		k.x.rerr = io.EOF
	case res == -int32(unix.ECANCELED), res == -int32(unix.EINTR), res == -int32(unix.EAGAIN), res == -int32(unix.ENOBUFS):
		// ENOBUFS: the loop's buffers ran out, the multishot recv
		// ended; settle arms another
	default:
		k.x.rerr = os.NewSyscallError("recv", syscall.Errno(-res))
	}
	p.handleIn(k)
}

// receivedBuf handles a multishot recv's completion into a provided
// buffer: the bytes are handled in place, and what the reader leaves (a
// paused or closing connection's) is copied out before the buffer goes
// back to the kernel.
func (p *urPoller) receivedBuf(k *sock[urSock], e uring.CQE) {
	x := &k.x
	data, bid, whole := p.bufs.Buf(e.Flags, e.Res)
	if k.c != nil && k.c.share.doomed {
		// held unread until its close (the violation hold): what its multishot
		// recv brings before the cancel is never read, so not copied
		if whole {
			p.bufs.Recycle(bid)
		}
		return
	}
	if len(x.rdata) > 0 {
		x.rdata = append(x.rdata, data...) // behind what was left (x.rbuf)
		x.rbuf = x.rdata
	} else {
		x.rdata = data
	}
	p.handleIn(k)
	if len(x.rdata) > 0 && (len(x.rbuf) == 0 || &x.rdata[0] != &x.rbuf[0]) {
		x.rbuf = append(x.rbuf[:0], x.rdata...)
		x.rdata = x.rbuf
	}
	if len(x.rdata) == 0 {
		x.rbuf = nil
	}
	if whole {
		p.bufs.Recycle(bid)
	}
}

// handleIn hands what a recv brought to the loop.
func (p *urPoller) handleIn(k *sock[urSock]) {
	if k.slot < 0 {
		return
	}
	k.c.mu.Lock()
	closed := k.c.closed
	k.c.mu.Unlock()
	if closed {
		k.x.rdata = nil
		p.l.settle(k)
		return
	}
	p.l.event(k, true, false, k.x.rerr != nil)
}

// read hands the reader what the last recv brought; then the end of the
// stream or the error, if the recv ended so; else errWouldBlock.
func (p *urPoller) read(k *sock[urSock], b []byte) (int, error) {
	x := &k.x
	if len(x.rdata) > 0 {
		n := copy(b, x.rdata)
		x.rdata = x.rdata[n:]
		return n, nil
	}
	if x.rerr != nil {
		return 0, x.rerr
	}
	return 0, errWouldBlock
}

func (p *urPoller) add(k *sock[urSock]) error {
	if int(k.fd) < p.fixedMax && p.ring.UpdateFile(uint32(k.fd), k.fd) == nil {
		k.x.fixed = true
	}
	if p.bufs == nil {
		k.x.rbuf = make([]byte, urRecvBuf)
	}
	return nil
}

// update arms the requests an open connection needs: a recv unless it is
// paused (a paused connection's multishot recv is cancelled: what is on
// its way is kept), and a poll for room when bytes wait.
func (p *urPoller) update(k *sock[urSock]) {
	x := &k.x
	c := k.c
	c.mu.Lock()
	if !c.flushing || x.pending != nil || x.sending > 0 {
		x.wantOut = false // nothing to write, or a send's completion goes on
	}
	wantOut, closed := x.wantOut, c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	switch {
	case !x.recvArmed && !k.paused && len(x.rdata) == 0 && x.rerr == nil:
		if q := p.sqe(); q != nil {
			if p.bufs != nil {
				uring.PrepRecvMultishot(q, int(k.fd), p.bufs.Group(), urRecv|uint64(k.slot)) //nolint:gosec // a slot is not negative here
			} else {
				uring.PrepRecv(q, int(k.fd), unsafe.Pointer(&x.rbuf[0]), len(x.rbuf), 0, urRecv|uint64(k.slot)) //nolint:gosec // as above
			}
			x.recvArmed = true
			p.armed++
		}
	case x.recvArmed && k.paused && p.bufs != nil && !x.recvStop && !x.cancelled:
		x.recvStop = true
		p.cancel(urRecv | uint64(k.slot)) //nolint:gosec // as above
	}
	if wantOut && !x.pollArmed {
		if q := p.sqe(); q != nil {
			uring.PrepPollAdd(q, int(k.fd), unix.POLLOUT, urPoll|uint64(k.slot)) //nolint:gosec // as above
			x.pollArmed = true
			p.armed++
		}
	}
}

// wantOut has the connection's ring poll for room (conn.mu held).
func (p *urPoller) wantOut(k *sock[urSock]) {
	if !k.x.wantOut {
		k.x.wantOut = true
		k.post()
	}
}

// inFlight: a batch in a ring's hands (queued or sent) is not stalled,
// whatever its age.
func (p *urPoller) inFlight(k *sock[urSock]) bool {
	return k.x.sending > 0 || k.x.pending != nil
}

// remove cancels the recv and poll in flight (the shutdown has usually
// completed them already) and waits for a send on another ring; true once
// none names the descriptor, which then leaves the ring's file table.
func (p *urPoller) remove(k *sock[urSock]) bool {
	x := &k.x
	if x.recvArmed || x.pollArmed {
		if !x.cancelled {
			x.cancelled = true
			if x.recvArmed {
				p.cancel(urRecv | uint64(k.slot)) //nolint:gosec // as above
			}
			if x.pollArmed {
				p.cancel(urPoll | uint64(k.slot)) //nolint:gosec // as above
			}
		}
		return false
	}
	c := k.c
	c.mu.Lock()
	if x.sending > 0 {
		x.releaseWait = true
		pending := x.pending
		c.mu.Unlock()
		if pending != nil && pending != p.l {
			pending.kick() // its completion releases this one
		}
		return false
	}
	c.mu.Unlock()
	if x.fixed {
		// out of the table first: the ring's reference would keep the
		// socket open, and the descriptor's number is free once closed
		_ = p.ring.UpdateFile(uint32(k.fd), -1) //nolint:gosec // a descriptor is not negative
		x.fixed = false
	}
	x.rbuf, x.rdata = nil, nil
	return true
}

func (p *urPoller) cancel(target uint64) {
	if q := p.sqe(); q != nil {
		uring.PrepCancel(q, target, urCancel)
	}
}

func (p *urPoller) deliver(_ *sock[urSock], o *conn, b []byte) { _ = p.queueSend(o, b, false) }

// relay queues a chat's indication ind for every member but the sender
// and the confirm conf for it; the loop sends them at the end of its
// round (flushBatch).
func (p *urPoller) relay(k *sock[urSock], conns []*conn, ind, conf []byte) (int, bool) {
	// The receivers' state is out of the cache (the kernel's sends have
	// been through it since): a word of each of their sockets' lines
	// first, independent loads, fetched in parallel rather than one miss
	// after another under each lock (handleChat fetched their conns').
	t := uintptr(0)
	for _, o := range conns {
		if s, ok := o.eng.(*sock[urSock]); ok {
			t += uintptr(unsafe.Pointer(s.c)) // the batch's line, by a field nobody writes
		}
	}
	p.touched = t
	c := k.c
	n, behind := 0, false
	for _, o := range conns {
		if o != c {
			behind = p.queueSend(o, ind, false) || behind
			n++
		}
	}
	behind = p.queueSend(c, conf, true) || behind
	return n, behind
}

// queueSend queues b for o (one lock of o per delivery): in o's batch
// buffer if o is in this loop's batch and nothing else waits, else behind
// what waits in its out buffer; a receiver that nothing owns (not
// flushing) joins the batch, and from then on whatever else comes for it,
// from any thread, goes behind.
//
// A chat's confirm (later) may join the next round's batch instead: in
// turn-taking the next packet for its sender is most often the next chat
// of its room, and the confirm goes out with it, in front, in one send.
// A held confirm's connection joins the batch when the next chat for it
// comes, next to that chat's other receivers (flushBatch says when the
// loop holds confirms, and for how long at most). It reports whether half
// of o's send buffer or more waits (conn.behindLocked).
func (p *urPoller) queueSend(o *conn, b []byte, later bool) bool {
	k, ok := o.eng.(*sock[urSock])
	if !ok {
		o.mu.Lock() // a WebSocket, or a connection a goroutine serves
		o.sendLocked(b)
		behind := o.behindLocked(p.l.s.cfg.SendBuffer / 2)
		o.mu.Unlock()
		return behind
	}
	x := &k.x
	l := p.l
	var kick *loop[urSock]
	o.mu.Lock()
	switch {
	case o.closed || o.lingering != "" || o.fd < 0:
	case len(o.out)+o.inflight+len(b) > l.s.cfg.SendBuffer:
		o.detail = fmt.Sprintf("the kernel took %d bytes, %d more were waiting", o.taken, len(o.out)+o.inflight)
		o.closeLocked(ReasonSlowConsumer)
	case x.pending == l && !x.flushed && len(o.out) == 0:
		// in this round's batch already, or holding a confirm: one
		// send takes both
		x.bout = append(x.bout, b...)
		o.inflight += len(b)
		if x.holding {
			// its place in the batch: beside the chat's other
			// receivers, not ahead of them
			x.holding = false
			p.batch = append(p.batch, k)
		}
	case o.flushing:
		// behind what waits: the send in flight's completion, or the
		// poll for room, sends it
		o.out = append(o.out, b...)
		if x.pending != nil && x.pending != l {
			kick = x.pending
		}
	default:
		o.flushing = true
		x.pending, x.flushed = l, false
		x.bout = append(p.takeOut(), b...)
		o.inflight = len(x.bout)
		x.sending++
		if later {
			p.later = append(p.later, k)
		} else {
			p.batch = append(p.batch, k)
		}
	}
	behind := o.behindLocked(l.s.cfg.SendBuffer / 2)
	o.mu.Unlock()
	if kick != nil {
		kick.kick() // its send's completion takes what waits behind it
	}
	return behind
}

// takeOut is an empty batch buffer from the loop's pool.
func (p *urPoller) takeOut() []byte {
	b, _ := pop(&p.outPool)
	return b
}

// giveOut puts a batch buffer back in the loop's pool: the batches'
// memory is the loop's, not every connection's.
func (p *urPoller) giveOut(b []byte) {
	if cap(b) > 0 && cap(b) <= 4096 && len(p.outPool) < poolMax {
		p.outPool = append(p.outPool, b[:0])
	}
}

// flushBatch prepares one send per connection of the round's batch, of
// its batch buffer (the next io_uring_enter submits them together;
// non-blocking, they complete during it). Only this loop touches a batch
// buffer once it is in the batch, so no lock is taken here; its bytes
// count as inflight until the send completes.
//
// The round's confirms (later) go too, unless hold: then they join the
// next round's batch, where the next chat for their senders may join
// them. A loop holds them after a busy round only (urHoldMin), whose
// sends will bring the next chats, and waits for those urHoldMax at most
// before sending them: a confirm is held one round and one wait at most.
func (p *urPoller) flushBatch(hold bool) {
	// the last round's held confirms that no chat took go now, last
	for _, k := range p.held {
		if k.x.holding {
			k.x.holding = false
			p.batch = append(p.batch, k)
		}
	}
	clear(p.held)
	p.held = p.held[:0]
	if !hold && len(p.later) > 0 {
		p.batch = append(p.batch, p.later...)
		clear(p.later)
		p.later = p.later[:0]
	}
	for range 4 { // a full submission queue reaps sends that may queue more
		if len(p.batch) == 0 {
			break
		}
		b := p.batch
		p.batch = p.batchSpare[:0]
		p.flushConns(b)
		clear(b)
		p.batchSpare = b[:0]
	}
	for _, k := range p.later {
		k.x.holding = true
	}
	p.held, p.later = p.later, p.held
}

func (p *urPoller) flushConns(b []*sock[urSock]) {
	// A large batch goes in chunks, each submitted and its completions
	// handled at once; a small one in the loop's next io_uring_enter.
	chunk := uint32(len(b) + 1) //nolint:gosec // a batch fits
	if len(b) >= urChunkMin {
		chunk = urChunk
	}
	for _, k := range b {
		q := p.sqe() // it may reap other sends' completions
		if q == nil {
			p.unbatch(k)
			continue
		}
		k.x.flushed = true
		p.sendsPrepared++
		// k.fd: the descriptor stays open while sending counts this send
		uring.PrepSend(q, int(k.fd), unsafe.Pointer(&k.x.bout[0]), len(k.x.bout), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, urSend|uint64(p.sendSlot(k))) //nolint:gosec // an index
		if k.loop == p.l && k.x.fixed {
			uring.FixedFile(q, uint32(k.fd)) //nolint:gosec // a descriptor is not negative
		}
		if p.sendsPrepared >= chunk {
			if err := p.ring.SubmitNonblocking(); err == nil || errors.Is(err, unix.EBUSY) {
				p.sendsPrepared = 0
				p.reap()
			}
		}
	}
}

// A batch of urChunkMin sends or more (a round of turn-taking in hundreds
// of rooms) is submitted urChunk sends at a time, and each chunk's
// completions are handled at once, while the chunk's connections are
// still in the processor's caches and the clients can answer its chats.
// Smaller batches go in one submission with the loop's wait. Tests lower
// both.
var (
	urChunkMin = 512
	urChunk    = uint32(64)
)

// unbatch hands a batch's bytes to the connection's own loop, which
// writes them when the socket has room (no submission entry was free).
func (p *urPoller) unbatch(k *sock[urSock]) {
	o := k.c
	x := &k.x
	o.mu.Lock()
	defer o.mu.Unlock()
	x.sending--
	x.pending = nil
	if !o.closed {
		o.out = append(x.bout, o.out...)
		o.inflight = 0
		k.wantOut()
	}
	x.bout = nil
	if x.sending == 0 && x.releaseWait {
		x.releaseWait = false
		k.post()
	}
}

// sendSlot records k as having a send in flight on the ring; the index
// is the send's user data.
func (p *urPoller) sendSlot(k *sock[urSock]) int {
	if n := len(p.sendFree); n > 0 {
		i := p.sendFree[n-1]
		p.sendFree = p.sendFree[:n-1]
		p.sends[i] = k
		return int(i)
	}
	p.sends = append(p.sends, k)
	return len(p.sends) - 1
}

// sendDone handles the completion of a batch's send: what the socket did
// not take waits in out, in front of what came meanwhile, and the
// connection's loop polls for room; what came meanwhile joins the next
// batch.
func (p *urPoller) sendDone(i int, res int32) {
	k := p.sends[i]
	p.sends[i] = nil
	p.sendFree = append(p.sendFree, int32(i)) //nolint:gosec // an index
	o := k.c
	x := &k.x
	o.mu.Lock()
	defer o.mu.Unlock()
	x.sending--
	buf := x.bout
	x.bout, x.pending = nil, nil
	if o.closed {
		p.giveOut(buf)
		if x.sending == 0 && x.releaseWait {
			x.releaseWait = false
			k.post()
		}
		return
	}
	o.inflight = 0
	if res < 0 && res != -int32(unix.EAGAIN) && res != -int32(unix.EINTR) {
		p.giveOut(buf)
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
		p.giveOut(buf)
		k.wantOut()
		return
	}
	p.giveOut(buf)
	if len(o.out) == 0 {
		x.wantOut = false
		k.flushed()
		return
	}
	// what came meanwhile: the next round's batch
	x.pending, x.flushed = p.l, false
	x.bout, o.out = o.out, nil
	o.inflight = len(x.bout)
	x.sending++
	p.batch = append(p.batch, k)
}
