package floor

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// fireBatch bounds the chats one round of the paced client sends, so that
// a client behind its schedule still reads between batches (as volanogo
// load's event loops do).
const fireBatch = 64

// pacedServer is the paced floor server's state: the start of a chat that
// a read split, for each connection. The server relays whole chats only,
// as a server reading packets does, so that a confirm never lands inside
// a chat on its way to the same user.
type pacedServer struct {
	confirm [][]byte
	held    []byte // MessageBytes a connection
	hold    []uint8
	scratch []byte // confirms sent together
}

// confirms is k confirms of room r, to send at once (as the chats they
// confirm were relayed, when a read returned several).
func (p *pacedServer) confirms(r, k int) []byte {
	c := p.confirm[r]
	if k == 1 {
		return c
	}
	p.scratch = p.scratch[:0]
	for ; k > 0; k-- {
		p.scratch = append(p.scratch, c...)
	}
	return p.scratch
}

// newPacedServer is nil for a turn-taking floor.
func newPacedServer(sc *script, conns int) *pacedServer {
	if sc.pacing == nil {
		return nil
	}
	return &pacedServer{confirm: sc.pacing.confirm, held: make([]byte, conns*MessageBytes), hold: make([]uint8, conns)}
}

// whole takes the got bytes just read from connection i into buf (which
// has room for MessageBytes more): it puts the bytes held from its
// previous read before them, holds back the start of a chat at their end,
// and returns the bytes of whole chats at buf's start and their count.
func (p *pacedServer) whole(i int, buf []byte, got int) (int, int) {
	held := p.held[i*MessageBytes : (i+1)*MessageBytes]
	if h := int(p.hold[i]); h > 0 {
		copy(buf[h:], buf[:got])
		copy(buf, held[:h])
		got += h
	}
	w := got / MessageBytes * MessageBytes
	p.hold[i] = uint8(copy(held, buf[w:got]))
	return w, w / MessageBytes
}

// pacedClient is the paced floor's client: its connections, its schedule
// and what it has received.
type pacedClient struct {
	cli []int32
	p   *pacing
	// part holds the bytes of a frame that a read split (MessageBytes a
	// connection), partLen how many.
	part    []byte
	partLen []uint8
	sent    int64
	// delivered is the chats received; confirmed the confirms.
	delivered, confirmed int64
	delivery, scheduled  histogram
}

// histogram records latencies without allocating.
type histogram interface{ RecordValue(int64) error }

// record records a latency of ns (at least 1 ns, at most an hour).
func record(h histogram, ns int64) {
	_ = h.RecordValue(min(max(ns, 1), results.HistogramHighest))
}

// pacedClients is the paced floor's client on one OS thread: it sends each
// user's chats on the schedule of p, stamped with their times, and reads
// every connection, recording each chat's delivery latency at the end of
// the read that returned it, until the schedule is over and every chat
// sent has reached the other users of its room and been confirmed to its
// sender. It fails when nothing arrives for stall while chats are on
// their way, and when done is set before its end.
func pacedClients(cli []int32, p *pacing, stall time.Duration, done *atomic.Bool) (sideResult, *pacedFigures) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fail := func(err error) (sideResult, *pacedFigures) {
		return sideResult{err: fmt.Errorf("client: %w", err)}, nil
	}
	ep, err := newEpoll(cli)
	if err != nil {
		return sideResult{err: err}, nil
	}
	defer unix.Close(ep)
	n := len(cli)
	delivery, scheduled := results.NewHistogram(), results.NewHistogram()
	c := &pacedClient{cli: cli, p: p, part: make([]byte, n*MessageBytes), partLen: make([]uint8, n),
		delivery: delivery, scheduled: scheduled}
	buf := make([]byte, readBuf)
	chat := chatFrame()
	ev := make([]unix.EpollEvent, 256)
	users := int64(p.users)

	c0, t0 := threadCPU(), time.Now()
	now := func() int64 { return int64(time.Since(t0)) }
	// The next send: connection order[next] in period k.
	next, k := 0, int64(0)
	due := func() int64 { return p.offset[p.order[next]] + k*p.pause }
	sending := n > 0 && due() < p.duration
	lastIn := int64(0)
	for {
		pending := c.sent*(users-1) > c.delivered || c.sent > c.confirmed
		if !sending && !pending {
			break
		}
		wait := int64(100 * time.Millisecond)
		if sending {
			wait = min(wait, max(due()-now(), 0))
		}
		got, err := epollWaitNanos(ep, ev, wait)
		if err != nil {
			return fail(fmt.Errorf("epoll_wait: %w", err))
		}
		if done.Load() {
			return sideResult{err: ErrInterrupted}, nil
		}
		t := now()
		if got > 0 {
			lastIn = t
		} else if pending && t-lastIn >= int64(stall) {
			return fail(fmt.Errorf("no message for %s (%d of %d chats delivered, %d of %d confirmed)",
				stall, c.delivered, c.sent*(users-1), c.confirmed, c.sent))
		}
		for e := 0; e < got; e++ {
			i := int(ev[e].Fd)
			r := rawRead(cli[i], buf)
			switch {
			case r == 0:
				return fail(fmt.Errorf("connection %d closed by the server", i))
			case r < 0:
				continue
			}
			if err := c.consume(i, buf[:r], now()); err != nil {
				return fail(err)
			}
		}
		for f := 0; sending && f < fireBatch; f++ {
			at := due()
			if at > now() {
				break
			}
			i := p.order[next]
			binary.LittleEndian.PutUint64(chat[schedAt:], uint64(at))
			sent := now()
			binary.LittleEndian.PutUint64(chat[sentAt:], uint64(sent))
			if !pending {
				lastIn, pending = sent, true // the stall counts from the first chat on its way
			}
			if e := rawSend(cli[i], chat, unix.MSG_NOSIGNAL); e != MessageBytes {
				if e >= 0 {
					return fail(fmt.Errorf("send: %d of %d bytes", e, MessageBytes))
				}
				return fail(fmt.Errorf("send: %w", unix.Errno(-e)))
			}
			c.sent++
			if next++; next == n {
				next, k = 0, k+1
			}
			sending = due() < p.duration
		}
	}
	res := sideResult{cpu: threadCPU() - c0, elapsed: time.Since(t0).Seconds()}
	fig := &pacedFigures{sent: c.sent, delivered: c.delivered}
	if fig.delivery, err = results.EncodeHistogram(delivery); err == nil {
		fig.deliveryScheduled, err = results.EncodeHistogram(scheduled)
	}
	if err != nil {
		return sideResult{err: err}, nil
	}
	return res, fig
}

// consume takes the bytes b read from connection i at t: whole frames, and
// the start of one that the read split.
func (c *pacedClient) consume(i int, b []byte, t int64) error {
	part := c.part[i*MessageBytes : (i+1)*MessageBytes]
	for len(b) > 0 {
		have := int(c.partLen[i])
		if have == 0 && len(b) >= headerLen {
			size, err := c.frameLen(i, b)
			if err != nil {
				return err
			}
			if len(b) >= size {
				// The common case: a whole frame in the read.
				c.frame(b[:size], t)
				b = b[size:]
				continue
			}
		}
		// A frame split between reads: gathered in part.
		if have < headerLen {
			k := copy(part[have:headerLen], b)
			have += k
			b = b[k:]
			if have < headerLen {
				c.partLen[i] = uint8(have)
				return nil
			}
		}
		size, err := c.frameLen(i, part[:headerLen])
		if err != nil {
			return err
		}
		k := copy(part[have:size], b)
		have += k
		b = b[k:]
		if have < size {
			c.partLen[i] = uint8(have)
			return nil
		}
		c.frame(part[:size], t)
		c.partLen[i] = 0
	}
	return nil
}

// frameLen is the length of the frame whose header starts b, from
// connection i: a chat's, or its room's confirm's.
func (c *pacedClient) frameLen(i int, b []byte) (int, error) {
	switch b[typeAt] {
	case byte(protocol.Indication):
		return MessageBytes, nil
	case byte(protocol.Confirm):
		return len(c.p.confirm[i/c.p.users]), nil
	}
	return 0, fmt.Errorf("connection %d: a frame of type %d (% x)", i, b[typeAt], b[:headerLen])
}

// frame counts one whole frame received at t, and times it if it is a
// chat.
func (c *pacedClient) frame(f []byte, t int64) {
	if f[typeAt] != byte(protocol.Indication) {
		c.confirmed++
		return
	}
	c.delivered++
	record(c.delivery, t-int64(binary.LittleEndian.Uint64(f[sentAt:])))
	record(c.scheduled, t-int64(binary.LittleEndian.Uint64(f[schedAt:])))
}

// epollWaitNanos waits up to ns nanoseconds, to the nanosecond where the
// kernel has epoll_pwait2 (Linux 5.11), else in milliseconds rounded up,
// so that a paced send is not late by the rounding. It blocks, so it goes
// through the scheduler's system call path, as epollWait does.
func epollWaitNanos(ep int, ev []unix.EpollEvent, ns int64) (int, error) {
	if !noPwait2.Load() {
		ts := unix.NsecToTimespec(ns)
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(ep), uintptr(unsafe.Pointer(&ev[0])), uintptr(len(ev)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			return 0, nil
		case unix.ENOSYS:
			noPwait2.Store(true)
		default:
			return 0, e
		}
	}
	return epollWait(ep, ev, int((ns+int64(time.Millisecond)-1)/int64(time.Millisecond)))
}

// noPwait2 is set once epoll_pwait2 has been found missing.
var noPwait2 atomic.Bool
