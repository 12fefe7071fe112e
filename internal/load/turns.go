package load

import (
	"fmt"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// turns is a user's timed phase in Mark's turn-taking mode (protocol sheet
// §10.3), on the user's one goroutine: it reads every packet, and when the
// room's message count says it is this user's turn it sends the next chat
// (pre-encoded) right away. One message per room is in flight, so the
// room's send-time ring tells each receiver when the message it just got
// was sent.
func (u *user) turns() error {
	r := u.r
	rs := r.rs
	n := int64(len(r.users))
	myTurn := int64(u.num - 1)
	count := int64(rs.cfg.Count)
	if u.num == 1 {
		if err := u.sendChat(); err != nil {
			return err
		}
	}
	return u.loop(func(f protocol.Frame) (bool, error) {
		u.seen(f)
		switch f.ID {
		case protocol.IDChat:
			if f.Type == protocol.Confirm {
				u.confirms++
				if u.batch {
					u.confirmPending--
					if len(f.Raw) != r.confirmSize {
						u.batchOff.Store(true)
					}
				}
				return false, nil
			}
			v, err := protocol.ParseChat(f.Body)
			if err != nil {
				return false, u.failIO("read", err)
			}
			if f.Type != protocol.Indication || v.RoomID != 0 {
				return false, u.protocolError("unexpected Chat %s (room id %d)", f.Type, v.RoomID)
			}
			if u.batch {
				if s := markNumber(v.UserName); s < 1 || s > n || len(f.Raw) != r.indSize[s-1] {
					u.batchOff.Store(true)
				}
			}
			now := nanotime()
			if !u.acceptTurn(v.UserName, n, now) || u.seq%n != myTurn || u.exited {
				return false, nil
			}
			switch {
			case count > 0 && u.sent < count && !rs.stopping.Load():
				return false, u.sendChat()
			case count == 0 && !(u.num == 1 && rs.stopping.Load()):
				return false, u.sendChat()
			case u.num == 1:
				return false, u.sendExit()
			}
		case protocol.IDExitRoom:
			if f.Type != protocol.Indication {
				return false, nil
			}
			u.exits++
			if u.num > 1 && u.exits == u.num-1 && !u.exited {
				return false, u.sendExit()
			}
		case protocol.IDRoomList:
			if f.Type == protocol.Confirm && u.exited {
				u.done.Store(true)
				return true, nil
			}
		default:
			return false, u.other(f)
		}
		return false, nil
	})
}

// other handles packets that are neither chat nor the end of the room.
func (u *user) other(f protocol.Frame) error {
	switch f.ID {
	case protocol.IDStreamableError:
		u.serverError(f)
	case protocol.IDPing:
		if f.Type == protocol.Request {
			b := protocol.AppendHeader(nil, protocol.IDPing, protocol.Response)
			if err := u.l.write(b); err != nil {
				return u.failIO("write", err)
			}
		}
	case protocol.IDEnterRoom, protocol.IDExitRoom, protocol.IDRoomList, protocol.IDAccess:
		// late or extra room news: not counted (as in Mark)
	default:
		return u.protocolError("unexpected %s %s", f.ID, f.Type)
	}
	return nil
}

// acceptTurn checks that a chat indication from name is the next message
// of the room and records its delivery. A gap, a duplicate or a message
// out of turn is an integrity failure; after a gap the user follows the
// sender so that the room can go on.
func (u *user) acceptTurn(name []byte, n, now int64) bool {
	u.received++
	exp := u.seq%n + 1
	if s := markNumber(name); s != exp {
		r := u.r
		switch prev := (exp+n-2)%n + 1; {
		case s < 1 || s > n || s == int64(u.num):
			u.integrity(fmt.Sprintf("message %d: expected it from Mark%d, got one from %q", u.seq+1, exp, name))
			return false
		case s == prev:
			u.integrity(fmt.Sprintf("message %d: expected it from Mark%d, got a duplicate of message %d from Mark%d", u.seq+1, exp, u.seq, s))
			return false
		default:
			lost := (s - exp + n) % n
			u.integrity(fmt.Sprintf("message %d: expected it from Mark%d, got message %d from Mark%d (%d lost)", u.seq+1, exp, u.seq+1+lost, s, lost))
			u.seq += lost
			_ = r
		}
	}
	u.seq++
	// With batched reads only the indication that gives the reader its
	// turn is read as it arrives; the others wait for it.
	if !u.batch || u.seq%n == int64(u.num-1) {
		if st := u.r.sendAt[u.seq&u.r.mask].Load(); st != 0 {
			u.record(kDelivery, now-st)
		}
	}
	u.tick(now, 0, 1)
	return true
}

// wantBytes is what a user with batched reads waits for: the confirm of
// its last chat and every indication up to the one that gives it its turn;
// 1 (any byte) when the room ends before that turn or batching is off.
func (u *user) wantBytes() int {
	r := u.r
	n := int64(len(r.users))
	if u.exited || u.batchOff.Load() {
		return 1
	}
	d := (int64(u.num-1) - u.seq%n + n) % n
	v := u.seq + d
	if d == 0 || v > int64(r.rs.cfg.Count)*n {
		return 1
	}
	total := u.confirmPending * r.confirmSize
	for k := u.seq + 1; k <= v; k++ {
		total += r.indSize[(k-1)%n]
	}
	return max(total-u.rd.Buffered(), 1)
}

func (u *user) integrity(msg string) {
	u.r.rs.failures.Add(results.FailIntegrity, u.String()+": "+msg, time.Now())
}

// sendChat sends the user's next chat: message u.seq+1 of the room.
func (u *user) sendChat() error {
	r := u.r
	u.sent++
	u.seq++
	now := nanotime()
	r.sendAt[u.seq&r.mask].Store(now)
	if prev := r.lastSend.Swap(now); prev != 0 {
		u.record(kTurn, now-prev)
	}
	r.seq.Store(u.seq)
	r.progress.Add(1)
	u.tick(now, 1, 0)
	u.confirmPending++
	if err := u.l.write(u.chat); err != nil {
		return u.failIO("write", err)
	}
	return nil
}

// sendExit leaves the room: ExitRoom, then RoomList, whose confirm ends
// the user.
func (u *user) sendExit() error {
	u.exited = true
	u.r.progress.Add(1)
	if err := u.l.write(u.exit); err != nil {
		return u.failIO("write", err)
	}
	if err := u.l.write(u.roomList); err != nil {
		return u.failIO("write", err)
	}
	return nil
}

// paced is the reading side of a user in pause mode: it counts and times
// each indication against the sender's record of its n-th send.
func (u *user) pacedRead() error {
	r := u.r
	for {
		f, err := u.rd.Next()
		if err != nil {
			return u.failIO("read", err)
		}
		u.seen(f)
		switch f.ID {
		case protocol.IDChat:
			if f.Type == protocol.Confirm {
				u.confirms++
				continue
			}
			v, err := protocol.ParseChat(f.Body)
			if err != nil {
				return u.failIO("read", err)
			}
			if f.Type != protocol.Indication || v.RoomID != 0 {
				return u.protocolError("unexpected Chat %s (room id %d)", f.Type, v.RoomID)
			}
			now := nanotime()
			u.received++
			s := markNumber(v.UserName)
			if s < 1 || s > int64(len(r.users)) || s == int64(u.num) {
				u.integrity(fmt.Sprintf("a chat from %q", v.UserName))
				continue
			}
			u.got[s-1]++
			nth := u.got[s-1]
			ring := r.users[s-1].ring
			slot := &ring[nth&int64(len(ring)-1)]
			if slot.n.Load() == nth {
				sent, sched := slot.sent.Load(), slot.sched.Load()
				if slot.n.Load() == nth {
					u.record(kDelivery, now-sent)
					u.record(kScheduled, now-sched)
				}
			}
			r.received.Add(1)
			r.progress.Add(1)
			u.tick(now, 0, 1)
		case protocol.IDRoomList:
			if f.Type == protocol.Confirm { // the answer to the sender's exit
				u.done.Store(true)
				return nil
			}
		case protocol.IDExitRoom:
		default:
			if err := u.other(f); err != nil {
				return err
			}
		}
	}
}

// pacedSend is the sending side of a user in pause mode: after a random
// offset in [0, pause) it sends every pause on an absolute schedule,
// whatever the replies do, until count messages or the stop; then it
// waits for the run to drain and leaves the room.
func (u *user) pacedSend(offset time.Duration) error {
	rs := u.r.rs
	pause := int64(rs.cfg.Pause)
	count := int64(rs.cfg.Count)
	next := rs.base + int64(offset)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var sent int64
	for count == 0 || sent < count {
		if d := next - nanotime(); d > 0 {
			timer.Reset(time.Duration(d))
			select {
			case <-timer.C:
			case <-rs.stopCh:
			case <-rs.abortCh:
				return nil
			}
		}
		if rs.stopping.Load() {
			break
		}
		sent++
		slot := &u.ring[sent&int64(len(u.ring)-1)]
		slot.n.Store(-1)
		slot.sched.Store(next)
		now := nanotime()
		slot.sent.Store(now)
		slot.n.Store(sent)
		u.r.progress.Add(1)
		rs.timeline.AddElapsed(time.Duration(now-rs.base), 1, 0)
		if err := u.l.write(u.chat); err != nil {
			return u.failIO("write", err)
		}
		u.sentA.Store(sent)
		next += pause
	}
	select {
	case <-rs.drainedCh:
	case <-rs.abortCh:
		return nil
	}
	if err := u.l.write(u.exit); err != nil {
		return u.failIO("write", err)
	}
	if err := u.l.write(u.roomList); err != nil {
		return u.failIO("write", err)
	}
	return nil
}
