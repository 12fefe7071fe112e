package swarm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// Private chat (results.ScenarioPrivate) is the game-server vendor's
// private-message test made with the VOLANO protocol: the users of a room
// in pairs (Mark1 with Mark2, Mark3 with Mark4, ...), each pair in a
// private session that the first opens with EnterPrivate in the set-up.
// In the timed phase every user sends its partner a private chat every
// pause, on the paced schedule, and echoes back each chat it receives
// from its partner, as Mark's own users echo private chats: every user
// sends one chat a pause and receives two, its partner's and the echo of
// its own (the vendor's In:Out of 1:2). The ledger keeps both: the
// partner's chats under the partner's number, the echoes of a user's own
// chats under its own. Latency is the paced run's for the partner's chat
// (from the send and from the schedule) and, for the echo, the round trip
// (results.LatencyResponse).

// privateUser is a user's part of a private chat run.
type privateUser struct {
	partner *user
	id      int32 // the session's room id
	// echo is the private chat that echoes the partner's chat number
	// echoNumber..+numberDigits (patched before each send); echoes counts
	// them (the reading goroutine's).
	echo       []byte
	echoNumber int
	echoes     int64
	// mu orders the user's writes: the sender's chats and the reader's
	// echoes share the connection.
	mu sync.Mutex
}

// openPrivate pairs the users of every room and opens their sessions,
// ConnectConcurrency rooms at a time; each wait has the stall timeout.
func (rs *runState) openPrivate(ctx context.Context) error {
	jobs := make(chan *room)
	errs := make(chan error, len(rs.rooms))
	var wg sync.WaitGroup
	for w := 0; w < min(rs.spec.ConnectConcurrency, len(rs.rooms)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				if err := r.openPrivate(); err != nil {
					errs <- err
					return
				}
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
		case err := <-errs:
			errs <- err
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return ctx.Err()
}

// openPrivate opens the sessions of r's pairs: the first of each sends
// EnterPrivate, reads its confirm (the session's id), and the second
// reads the indication, which must name the same session.
func (r *room) openPrivate() error {
	deadline := time.Now().Add(r.rs.spec.StallTimeout)
	for i := 0; i+1 < len(r.users); i += 2 {
		a, b := r.users[i], r.users[i+1]
		req, err := (&protocol.EnterPrivate{Type: protocol.Request, RoomName: r.name, FromName: a.name, ToName: b.name}).AppendPacket(nil)
		if err != nil {
			return err
		}
		for _, u := range []*user{a, b} {
			_ = u.l.setReadDeadline(deadline)
			_ = u.l.setWriteDeadline(deadline)
		}
		if err := a.l.write(req); err != nil {
			return a.failIO("send EnterPrivate", err)
		}
		ids := [2]int32{}
		for k, w := range []struct {
			u   *user
			typ protocol.Type
		}{{a, protocol.Confirm}, {b, protocol.Indication}} {
			f, err := w.u.await("EnterPrivate "+w.typ.String()+" with "+map[bool]string{true: b.name, false: a.name}[k == 0],
				func(f protocol.Frame) bool { return f.ID == protocol.IDEnterPrivate && f.Type == w.typ })
			if err != nil {
				return err
			}
			p, err := f.Decode()
			if err != nil {
				return w.u.failIO("read EnterPrivate", err)
			}
			ep := p.(*protocol.EnterPrivate)
			if ep.RoomID == 0 {
				return &userError{u: w.u, kind: results.FailDenied, what: "EnterPrivate with session 0"}
			}
			ids[k] = ep.RoomID
		}
		if ids[0] != ids[1] {
			return &userError{u: b, kind: results.FailProtocol, what: fmt.Sprintf("EnterPrivate indication names session %d, the confirm %d", ids[1], ids[0])}
		}
		for _, pair := range [][2]*user{{a, b}, {b, a}} {
			if err := pair[0].setPrivate(pair[1], ids[0]); err != nil {
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

// setPrivate makes u's chats private ones to partner in session id: its
// paced chat, and the echo of the partner's.
func (u *user) setPrivate(partner *user, id int32) error {
	chat, err := (&protocol.Chat{Type: protocol.Request, RoomID: id, UserName: u.name, Text: numberedText(u.num, 0)}).AppendPacket(nil)
	if err != nil {
		return err
	}
	echo, err := (&protocol.Chat{Type: protocol.Request, RoomID: id, UserName: u.name, Text: numberedText(partner.num, 0)}).AppendPacket(nil)
	if err != nil {
		return err
	}
	u.chat, u.chatNumber = chat, len(chat)-len(MarkText)+numberDigits+1
	u.priv = &privateUser{partner: partner, id: id, echo: echo, echoNumber: len(echo) - len(MarkText) + numberDigits + 1}
	return nil
}

// privateChat handles a private chat in u's session: the partner's chat
// (entered in the ledger under the partner's number, timed, echoed) or
// the echo of u's own (under u's number, timed as a round trip).
func (u *user) privateChat(v protocol.ChatView, now int64) error {
	r, p := u.r, u.priv
	u.received++
	if r.rs.inWindow(now) {
		u.readIn++
	}
	if markNumber(v.UserName) != int64(p.partner.num) {
		u.ledger.corrupted++
		r.rs.failures.Add(results.FailCorrupted, fmt.Sprintf("%s: a private chat from %q, not its partner %s", u, v.UserName, p.partner.name), time.Now())
		return nil
	}
	s, _, ok, _ := parseText(v.Text)
	own := ok && s == int64(u.num)
	from := p.partner
	if own {
		from = u
	}
	j, fresh := u.identify(int64(from.num), v.Text)
	if !fresh {
		return nil
	}
	if j > 0 {
		slot := &from.ring[j&int64(len(from.ring)-1)]
		if slot.n.Load() == j {
			sent, sched := slot.sent.Load(), slot.sched.Load()
			if slot.n.Load() == j {
				if own {
					u.record(kResponse, now-sent)
				} else {
					u.record(kDelivery, now-sent)
					u.record(kScheduled, now-sched)
				}
			}
		}
	}
	r.received.Add(1)
	r.progress.Add(1)
	u.tick(now, 0, 1)
	if own || j == 0 {
		return nil
	}
	// Echo the partner's chat back into the session.
	putNumber(p.echo[p.echoNumber:], j)
	if err := u.write(p.echo); err != nil {
		return u.failIO("write", err)
	}
	p.echoes++
	u.tick(now, 1, 0)
	return nil
}

// privateDrained reports whether every private chat sent has reached its
// partner and come back.
func (rs *runState) privateDrained() bool {
	for _, r := range rs.rooms {
		var sent int64
		for _, u := range r.users {
			sent += u.sentA.Load()
		}
		if r.received.Load() < 2*sent {
			return false
		}
	}
	return true
}

// ended reports whether f ends p's own session (the partner left its
// room first, which closes it): the run's own doing, not an outsider's.
func (p *privateUser) ended(f protocol.Frame) bool {
	if f.ID != protocol.IDExitPrivate || f.Type != protocol.Indication {
		return false
	}
	x, err := f.Decode()
	e, ok := x.(*protocol.ExitPrivate)
	return err == nil && ok && e.RoomID == p.id
}
