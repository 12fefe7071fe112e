package swarm

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// openFilesSoft is this process's soft open-files limit now.
func openFilesSoft() int64 {
	soft, _ := sysinfo.OpenFilesLimit()
	return soft
}

// limiter is a token bucket of one token: new connections at most rate per
// second (a nil limiter does not limit).
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{interval: time.Duration(float64(time.Second) / rate)}
}

func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	t := l.next
	if t.Before(now) {
		t = now
	}
	l.next = t.Add(l.interval)
	l.mu.Unlock()
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setup connects every room, ConnectConcurrency rooms at a time, the users
// of one room one after the other (so that each room's EnterRoom order is
// Mark's). It returns the first failure; the caller aborts the run.
func (rs *runState) setup(ctx context.Context) error {
	// A failure stops new connections (the cancel), not those already
	// dialling: they finish their handshake, so that what the server
	// accepted is what the run carried (Connections.Carried).
	rs.dialCtx = ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *room)
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for w := 0; w < min(rs.spec.ConnectConcurrency, len(rs.rooms)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				if err := rs.setupRoom(ctx, r); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				rs.roomsReady.Add(1)
			}
		}()
	}
feed:
	for _, r := range rs.rooms {
		select {
		case jobs <- r:
		case <-ctx.Done():
			break feed
		case <-rs.abortCh:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// setupRoom connects the users of r in order and waits until every user
// knows that the room is full (Mark's enterCount).
func (rs *runState) setupRoom(ctx context.Context, r *room) error {
	timeout := rs.spec.StallTimeout
	for _, u := range r.users {
		t0 := time.Now()
		l, err := u.connect(ctx)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(timeout)
		_ = l.setReadDeadline(deadline)
		_ = l.setWriteDeadline(deadline)
		if err := l.write(r.access); err != nil {
			return u.failIO("send Access", err)
		}
		f, err := u.await("Access confirm", isConfirm(protocol.IDAccess))
		if err != nil {
			return err
		}
		if err := u.confirmed(f); err != nil {
			return err
		}
		if u.rd.Buffered() == 0 {
			// The confirm lists every room on the server: let its buffer
			// go rather than keep it for the whole run (100 KB a user at
			// 10,000 rooms).
			u.rd = protocol.NewReader(l, rs.spec.MaxPacket)
		}
		if err := l.write(u.enter); err != nil {
			return u.failIO("send EnterRoom", err)
		}
		if f, err = u.await("EnterRoom confirm", isConfirm(protocol.IDEnterRoom)); err != nil {
			return err
		}
		if err := u.confirmed(f); err != nil {
			return err
		}
		u.setupAt = time.Since(t0)
		rs.entered()
	}
	// Each user counts itself and the EnterRoom indications of the users
	// after it (Mark's enterCount reaching users).
	// Entries of other users (sharing the room) pass.
	for j, u := range r.users {
		for k := j + 1; k < len(r.users); k++ {
			name := r.users[k].name
			if _, err := u.await("EnterRoom indication of "+name, func(f protocol.Frame) bool {
				if f.ID != protocol.IDEnterRoom || f.Type != protocol.Indication {
					return false
				}
				p, err := f.Decode()
				return err == nil && p.(*protocol.EnterRoom).UserName == name
			}); err != nil {
				return err
			}
		}
	}
	for _, u := range r.users {
		_ = u.l.setReadDeadline(time.Time{})
		_ = u.l.setWriteDeadline(time.Time{})
	}
	return nil
}

// connect opens u's connection to the server (at most Spec.ConnectRate
// new connections a second), with a reader for it, and registers it with
// the run so that an abort closes it.
func (u *user) connect(ctx context.Context) (*link, error) {
	rs := u.r.rs
	if err := rs.limit.wait(ctx); err != nil {
		return nil, err
	}
	if rs.aborted.Load() {
		return nil, errAborted
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dialCtx := ctx
	if rs.dialCtx != nil {
		dialCtx = rs.dialCtx
	}
	rs.attempted.Add(1)
	rs.firstDial.CompareAndSwap(0, nanotime())
	l, err := rs.dialer.dial(dialCtx)
	if err != nil {
		if dialCtx.Err() != nil {
			return nil, dialCtx.Err()
		}
		kind, what := results.Classify(err), "connect"
		if kind == results.FailOpenFiles {
			what = fmt.Sprintf("connect (open-files limit %d, %d connections open)", openFilesSoft(), rs.open.Load())
		}
		return nil, &userError{u: u, kind: kind, what: what, err: err}
	}
	if !rs.addLink(l) {
		_ = l.close()
		return nil, errAborted
	}
	if testHookLink != nil {
		testHookLink(u, l)
	}
	u.l = l
	u.rd = protocol.NewReader(l, rs.spec.MaxPacket)
	return l, nil
}

// testHookLink, when set, is called with each new connection (a test
// slows one user's reads).
var testHookLink func(u *user, l *link)

func isConfirm(id protocol.ID) func(protocol.Frame) bool {
	return func(f protocol.Frame) bool { return f.ID == id && f.Type == protocol.Confirm }
}

// confirmed checks an Access or EnterRoom confirm: a refusal fails the
// user (denied).
func (u *user) confirmed(f protocol.Frame) error {
	p, err := f.Decode()
	if err != nil {
		return u.failIO("read "+f.ID.String()+" confirm", err)
	}
	switch p := p.(type) {
	case *protocol.Access:
		if p.Result != protocol.AccessOK {
			return &userError{u: u, kind: results.FailDenied, what: fmt.Sprintf("Access denied (result %d)", p.Result)}
		}
	case *protocol.EnterRoom:
		if p.Result != protocol.EnterOK {
			return &userError{u: u, kind: results.FailDenied, what: fmt.Sprintf("unable to enter %s (result %d)", u.r.name, p.Result)}
		}
	}
	return nil
}

// await reads packets until want accepts one, answering Pings and failing
// on a StreamableError.
func (u *user) await(what string, want func(protocol.Frame) bool) (protocol.Frame, error) {
	for {
		f, err := u.rd.Next()
		if err != nil {
			return f, u.failIO("waiting for "+what, err)
		}
		u.seen(f)
		if want(f) {
			return f, nil
		}
		if err := u.aside(f, what); err != nil {
			return f, err
		}
	}
}

// aside deals with a packet that arrived while the user waited for what:
// a Ping request is answered, EnterRoom and ExitRoom indications pass, a
// chat indication counts (another churn user's, or during the set-up an
// outside user's), a StreamableError or any other packet fails the user.
func (u *user) aside(f protocol.Frame, what string) error {
	switch f.ID {
	case protocol.IDStreamableError:
		text := "(undecodable)"
		if p, err := f.Decode(); err == nil {
			text = p.(*protocol.StreamableError).Text
		}
		return &userError{u: u, kind: results.FailServerError, what: "StreamableError while waiting for " + what + ": " + strconv.Quote(text)}
	case protocol.IDPing:
		if f.Type == protocol.Request {
			if err := u.l.write(protocol.AppendHeader(nil, protocol.IDPing, protocol.Response)); err != nil {
				return u.failIO("write", err)
			}
		}
	case protocol.IDEnterRoom, protocol.IDExitRoom:
	case protocol.IDChat:
		if v, err := protocol.ParseChat(f.Body); err != nil || f.Type != protocol.Indication || v.RoomID != 0 {
			// A private session's chat, or a kind no server sends.
			u.outsidePacket(f)
			break
		}
		rs := u.r.rs
		if rs.spec.Scenario == results.ScenarioChurn {
			// Another user's sequence: its chat reaches the room.
			u.received++
			rs.timeline.AddElapsed(time.Duration(nanotime()-rs.base), 0, 1)
			break
		}
		// The run's users do not chat during the set-up: another user of
		// the room does.
		u.outsideChat([]byte(senderOf(f)))
	default:
		// A whisper, a beep, a private session, or a kind of packet no
		// run asks for: counted apart (outside.go).
		u.outsidePacket(f)
	}
	return nil
}
