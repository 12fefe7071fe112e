package swarm

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// turns is a user's timed phase in Mark's turn-taking mode (protocol sheet
// §10.3), on the user's one goroutine: it reads every packet, and when it
// is this user's turn it sends the next chat (pre-encoded) right away. One
// chat per room is in flight, so the room's slots tell each receiver when
// the chat it just got was sent.
//
// The turn rule is Mark's count: a user sends its next chat, chat
// sent*users+num of the room, once it has sent and received every chat
// before it, that is when sent + counted = sent*users+num-1, where counted
// is the chats received from the room's users, each once (the ledger,
// ledger.go, keeps duplicates out). A count goes on through reordering,
// whatever order the chats arrive in, and a user leaves only once it has
// had every chat of the room (mayLeave). A lost chat stops its receiver's
// count, as it stops Mark's: the room stalls, and the ledger names the
// lost chat when the stall ends the run. (Mark takes the count modulo
// users; exact, the count cannot give a turn twice.) Only the room's own
// users count: chats, entries and exits of other users (people, bots or
// moderators sharing the room) are counted apart.
func (u *user) turns() error {
	if err := u.firstTurn(); err != nil {
		return err
	}
	return u.loop(u.turnFrame)
}

// firstTurn starts the user's timed phase of turn-taking: user 1 sends
// the room's first chat.
func (u *user) firstTurn() error {
	if u.num == 1 {
		return u.sendChat()
	}
	return nil
}

// turnFrame is the user's packet handler in turn-taking (a method, not a
// closure: what it needs is on the user's hot lines and the room's).
func (u *user) turnFrame(f protocol.Frame) (bool, error) {
	r := u.r
	rs := r.rs
	n := int64(len(r.users))
	myTurn := int64(u.num - 1)
	count := r.count
	u.seen(f)
	switch f.ID {
	case protocol.IDChat:
		if f.Type == protocol.Confirm {
			u.confirms++
			u.confirmPending--
			if u.batch {
				if len(f.Raw) != r.confirmSize {
					u.batchOff.Store(true)
				}
			}
			return false, nil
		}
		v, ok := chatView(f.Body)
		if !ok {
			var err error
			if v, err = protocol.ParseChat(f.Body); err != nil {
				return false, u.failIO("read", err)
			}
		}
		if f.Type != protocol.Indication || v.RoomID != 0 {
			// A private session's chat, or a kind no server sends.
			u.outsidePacket(f)
			return false, nil
		}
		s := markNumber(v.UserName)
		if u.batch && (s < 1 || s > n || len(f.Raw) != r.indSize[s-1]) {
			u.batchOff.Store(true)
		}
		if !u.acceptTurn(v.UserName, v.Text, s, n) || u.exited {
			return false, nil
		}
		if u.confirmLowat && u.sent+u.counted == count*n {
			u.awaitExits()
		}
		if u.sent+u.counted != u.sent*n+myTurn {
			if u.mayLeave() {
				return false, u.sendExit()
			}
			return false, nil
		}
		// The duration's stop (with or without a count) ends the room at
		// user 1's next turn: the users before it go on sending until
		// then, so that every user has had every chat when it leaves.
		switch {
		case (count == 0 || u.sent < count) && !(u.num == 1 && rs.stopping.Load()):
			err := u.sendChat()
			if err == nil && u.confirmLowat && u.sent+u.counted == count*n {
				// The room's last chat, sent by its last user: what
				// comes next is its confirm and the exits.
				u.awaitExits()
			}
			return false, err
		case u.num == 1:
			return false, u.sendExit()
		}
	case protocol.IDExitRoom:
		if f.Type != protocol.Indication {
			return false, nil
		}
		if !u.roomNews(f) {
			return false, nil
		}
		u.exits++
		if u.mayLeave() {
			return false, u.sendExit()
		}
		if u.confirmLowat && u.sent+u.counted == count*n {
			// Woken before every exit it waits for had come (they came
			// apart): the mark is what is still to come, or the last of
			// them would not wake it.
			u.awaitExits()
		}
	case protocol.IDEnterRoom:
		if f.Type == protocol.Indication {
			u.roomNews(f)
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
}

// chatView reads the body of a Chat packet as protocol.ParseChat does,
// in the case of every chat the run sends: strings of ASCII bytes, which
// are valid modified UTF-8 as they are, so that they need no scan but
// this one. ok is false for anything else, which the caller gives to
// ParseChat (its errors).
func chatView(body []byte) (v protocol.ChatView, ok bool) {
	// question 1, room id 4, then room name, user name and text, each
	// with a 2-byte length.
	if len(body) < 5 {
		return v, false
	}
	v.Question = body[0] != 0
	v.RoomID = int32(binary.BigEndian.Uint32(body[1:5]))
	b := body[5:]
	var str [3][]byte
	for i := range str {
		if len(b) < 2 {
			return v, false
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b)-2 < n || !ascii(b[2:2+n]) {
			return v, false
		}
		str[i] = b[2 : 2+n : 2+n]
		b = b[2+n:]
	}
	if len(b) != 0 {
		return v, false
	}
	v.RoomName, v.UserName, v.Text = str[0], str[1], str[2]
	return v, true
}

// ascii reports whether b is all bytes below 0x80.
func ascii(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// mayLeave says whether a user other than user 1 leaves now: Mark's
// cascade (user k leaves once the k-1 users before it have left), and,
// unlike Mark, only once it has had every chat of the room, so that a
// chat that is merely late still arrives (the room's last chat number is
// final once user 1 has left).
func (u *user) mayLeave() bool {
	return u.num > 1 && !u.exited && u.exits == u.num-1 && u.sent+u.counted >= u.r.seq.Load()
}

// roomNews sorts an EnterRoom or ExitRoom indication: true for the first
// exit of one of the room's own users; other users' entries and exits are
// counted apart.
func (u *user) roomNews(f protocol.Frame) bool {
	p, err := f.Decode()
	if err != nil {
		return false
	}
	var name string
	switch p := p.(type) {
	case *protocol.ExitRoom:
		name = p.UserName
	case *protocol.EnterRoom:
		name = p.UserName
	}
	s := markNumber([]byte(name))
	own := s >= 1 && s <= int64(len(u.r.users)) && s != int64(u.num)
	g := &u.ledger
	switch {
	case !own && f.ID == protocol.IDExitRoom:
		g.outsideExited++
		u.outsideNews("ExitRoom indication", name)
	case !own:
		g.outsideEntered++
		u.outsideNews("EnterRoom indication", name)
	case f.ID == protocol.IDExitRoom:
		return g.markLeft(s)
	}
	return false
}

// other handles packets that are neither chat nor the end of the room.
func (u *user) other(f protocol.Frame) error {
	switch f.ID {
	case protocol.IDStreamableError:
		u.serverError(f)
	case protocol.IDPing:
		if f.Type == protocol.Request {
			b := protocol.AppendHeader(nil, protocol.IDPing, protocol.Response)
			if err := u.write(b); err != nil {
				return u.failIO("write", err)
			}
		}
	case protocol.IDEnterRoom, protocol.IDExitRoom, protocol.IDRoomList, protocol.IDAccess:
		// late or extra room news: not counted (as in Mark)
	default:
		// A whisper, a beep, a private session, or a kind of packet no
		// run asks for: counted apart (outside.go).
		u.outsidePacket(f)
	}
	return nil
}

// acceptTurn enters a chat indication from name (user number s, 0 if the
// name is not Mark<n>) into the ledger and the latency histograms. It
// returns false when the chat does not count towards the turns: a
// duplicate, or a chat of a user who is not one of the room's own
// (counted apart).
func (u *user) acceptTurn(name, text []byte, s, n int64) bool {
	if s < 1 || s > n {
		u.outsideChat(name)
		return false
	}
	if s == int64(u.num) {
		// The server never relays a chat back to its sender.
		u.received++
		u.ledger.corrupted++
		u.r.rs.failures.Add(results.FailCorrupted, fmt.Sprintf("%s: a chat under its own name (%q)", u, text), time.Now())
		return false
	}
	u.received++
	now := nanotime()
	j, fresh := u.identify(s, text)
	if !fresh {
		return false
	}
	u.counted++
	var k int64
	if j > 0 {
		k = (j-1)*n + s
		u.roomOrder(k)
	}
	// With batched reads only the chat that gives the reader its turn is
	// read as it arrives; the others wait for it.
	timed := !u.batch || u.sent+u.counted == u.sent*n+int64(u.num)-1
	if k > 0 && timed {
		r := u.r
		slot := &r.slots[k&r.mask]
		if slot.k.Load() == k {
			sent := slot.sent.Load()
			u.record(kDelivery, now-sent)
			if !u.batch {
				if first, last, all := slot.fan.arrive(now, n-1); all {
					u.recordFanout(sent, first, last)
				}
			}
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
	seq := u.sent + u.counted // the chats of the room this user has had
	d := (int64(u.num-1) - seq%n + n) % n
	v := seq + d
	if d == 0 || v > int64(r.rs.spec.Count)*n {
		return 1
	}
	total := u.confirmPending * r.confirmSize
	for k := seq + 1; k <= v; k++ {
		total += r.indSize[(k-1)%n]
	}
	return max(total-u.rd.Buffered(), 1)
}

// sendChat sends the user's next chat: chat sent*users+num of the room.
func (u *user) sendChat() error {
	r := u.r
	k := u.sent*int64(len(r.users)) + int64(u.num)
	u.sent++
	putNumber(u.chat[u.chatNumber:], u.sent)
	now := nanotime()
	slot := &r.slots[k&r.mask]
	slot.k.Store(-1)
	slot.sent.Store(now)
	slot.fan.reset()
	slot.k.Store(k)
	if prev := r.lastSend.Swap(now); prev != 0 {
		u.record(kTurn, now-prev)
	}
	r.seq.Store(k)
	r.progress.Add(1)
	u.tick(now, 1, 0)
	u.confirmPending++
	if err := u.l.write(u.chat); err != nil {
		return u.failIO("write", err)
	}
	return nil
}

// awaitExits is a user's receive low-water mark once it has had every
// chat of its room (confirmLowat): what it waits for then is the exits of
// the users before it (Mark's cascade), so the mark is their bytes, and
// the confirm of its last chat if it has not come: one wake-up for them
// all instead of one each. Another packet (a user from outside the room)
// only wakes it early; a server whose packets are not the sizes expected
// stalls the room until the watchdog lowers the mark (see room.unbatch).
func (u *user) awaitExits() {
	r := u.r
	want := max(u.confirmPending, 0) * r.confirmSize
	for j := 0; j < u.num-1; j++ {
		if u.ledger.left[j/64]&(1<<uint(j%64)) == 0 {
			want += r.exitSize[j]
		}
	}
	want = max(want-u.rd.Buffered(), 1)
	if u.batchOff.Load() {
		want = 1
	}
	if want != u.lowat {
		u.lowat = want
		u.l.setRcvLowat(want)
	}
}

// sendExit leaves the room: ExitRoom, then RoomList, whose confirm ends
// the user.
func (u *user) sendExit() error {
	u.exited = true
	u.r.progress.Add(1)
	if u.confirmLowat && u.lowat > 1 {
		// What follows (the exit's answers) is of sizes not known.
		u.lowat = 1
		u.l.setRcvLowat(1)
	}
	if err := u.l.write(u.exit); err != nil {
		return u.failIO("write", err)
	}
	if err := u.l.write(u.roomList); err != nil {
		return u.failIO("write", err)
	}
	return nil
}

// pacedRead is the reading side of a user in pause mode, on its own
// goroutine: see pacedFrame.
func (u *user) pacedRead() error {
	for {
		f, err := u.rd.Next()
		if err != nil {
			return u.failIO("read", err)
		}
		if done, err := u.pacedFrame(f); done || err != nil {
			return err
		}
	}
}

// pacedFrame handles one packet of a paced user's reading side (its
// goroutine's or an event loop's): it enters each indication into the
// ledger and times it against the sender's record of that send, from the
// actual send and from the schedule. done is true once the user's exit is
// confirmed.
func (u *user) pacedFrame(f protocol.Frame) (done bool, err error) {
	r := u.r
	n := int64(len(r.users))
	u.seen(f)
	switch f.ID {
	case protocol.IDChat:
		if f.Type == protocol.Confirm {
			u.confirms++
			if r.rs.inWindow(nanotime()) {
				u.readIn++
			}
			return false, nil
		}
		// (As turn-taking: ASCII strings without the generic decode.)
		v, ok := chatView(f.Body)
		if !ok {
			if v, err = protocol.ParseChat(f.Body); err != nil {
				return false, u.failIO("read", err)
			}
		}
		if u.priv != nil && f.Type == protocol.Indication && v.RoomID == u.priv.id {
			return false, u.privateChat(v, nanotime())
		}
		if f.Type != protocol.Indication || v.RoomID != 0 {
			u.outsidePacket(f)
			return false, nil
		}
		now := nanotime()
		s := markNumber(v.UserName)
		if s < 1 || s > n {
			u.outsideChat(v.UserName)
			return false, nil
		}
		u.received++
		if r.rs.inWindow(now) {
			u.readIn++
		}
		if s == int64(u.num) {
			u.ledger.corrupted++
			r.rs.failures.Add(results.FailCorrupted, fmt.Sprintf("%s: a chat under its own name (%q)", u, v.Text), time.Now())
			return false, nil
		}
		j, fresh := u.identify(s, v.Text)
		if !fresh {
			return false, nil
		}
		if j > 0 && u.storm != nil {
			u.stormArrival(s, j, now)
		}
		if j > 0 {
			ring := r.users[s-1].ring
			slot := &ring[j&int64(len(ring)-1)]
			if slot.n.Load() == j {
				sent, sched := slot.sent.Load(), slot.sched.Load()
				if slot.n.Load() == j {
					u.record(kDelivery, now-sent)
					u.record(kScheduled, now-sched)
					if sr := r.rs.stormRun; sr != nil {
						sr.delivered(now - sent)
					}
					if first, last, all := slot.fan.arrive(now, n-1); all {
						u.recordFanout(sent, first, last)
					}
				}
			}
		}
		r.received.Add(1)
		r.progress.Add(1)
		u.tick(now, 0, 1)
	case protocol.IDRoomList:
		if f.Type == protocol.Confirm { // the answer to the sender's exit
			u.done.Store(true)
			return true, nil
		}
	case protocol.IDEnterRoom, protocol.IDExitRoom:
		if f.Type == protocol.Indication {
			u.roomNews(f)
		}
	default:
		if u.priv != nil && u.priv.ended(f) {
			break
		}
		if err := u.other(f); err != nil {
			return false, err
		}
	}
	return false, nil
}

// stormArrival is a storm's account of chat j of user s reaching u at now.
func (u *user) stormArrival(s, j, now int64) {
	r := u.r
	sender := r.users[s-1].storm
	sender.arrived(j, now)
	u.storm.read(int(s-1), len(r.users), j)
	if st := u.storm; st.rejoinedAt > 0 && st.recoveredAt == 0 {
		// Recovered: a chat sent after this user's return.
		if j < int64(len(sender.sendTimes)) && sender.sendTimes[j].Load() > st.rejoinedAt {
			st.recoveredAt = now
		}
	}
}

// pastDuration reports whether a paced chat scheduled at next (nanotime)
// falls after the run's duration: it is not sent, however late the stop
// is.
func (rs *runState) pastDuration(next int64) bool {
	return rs.spec.Duration > 0 && next-rs.base >= int64(rs.spec.Duration)
}

// publishSend numbers the user's chat sent and records it, scheduled at
// sched (nanotime), in the user's ring for the receivers to time it; it
// returns the time of the send.
func (u *user) publishSend(sent, sched int64) int64 {
	putNumber(u.chat[u.chatNumber:], sent)
	slot := &u.ring[sent&int64(len(u.ring)-1)]
	slot.n.Store(-1)
	slot.sched.Store(sched)
	slot.fan.reset()
	now := nanotime()
	slot.sent.Store(now)
	slot.n.Store(sent)
	u.r.progress.Add(1)
	return now
}

// pacedSend is the sending side of a user in pause mode: after a random
// offset in [0, pause) it sends every pause on an absolute schedule,
// whatever the replies do, until count messages or the stop; then it
// waits for the run to drain and leaves the room.
func (u *user) pacedSend(offset time.Duration) error {
	rs := u.r.rs
	pause := int64(rs.spec.Pause)
	count := int64(rs.spec.Count)
	next := rs.base + int64(offset)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var sent int64
	if !rs.spec.publishes(u.num) {
		count = -1 // it only reads
	}
	for k := int64(0); count == 0 || k < count; k++ {
		if d := next - nanotime(); d > 0 {
			timer.Reset(time.Duration(d))
			select {
			case <-timer.C:
			case <-rs.stopCh:
			case <-rs.abortCh:
				return nil
			}
		}
		if rs.stopping.Load() || rs.pastDuration(next) {
			break
		}
		st := u.storm
		if st != nil && st.down.Load() {
			// Away in a storm: this chat is not sent.
			st.missed.Add(1)
			next += pause
			continue
		}
		sent++
		now := u.publishSend(sent, next)
		if rs.inWindow(now) {
			u.sentIn++
		}
		if st != nil && sent < int64(len(st.sendTimes)) {
			st.sendTimes[sent].Store(now)
		}
		rs.timeline.AddElapsed(time.Duration(now-rs.base), 1, 0)
		if err := u.write(u.chat); err != nil {
			if st != nil && st.down.Load() {
				// Dropped as it wrote: the chat did not leave, and its
				// number goes to the next one.
				if sent < int64(len(st.sendTimes)) {
					st.sendTimes[sent].Store(0)
				}
				sent--
				st.missed.Add(1)
				next += pause
				continue
			}
			return u.failIO("write", err)
		}
		u.sentA.Store(sent)
		next += pause
	}
	u.doneSending.Store(true)
	select {
	case <-rs.drainedCh:
	case <-rs.abortCh:
		return nil
	}
	if err := u.write(u.exit); err != nil {
		return u.failIO("write", err)
	}
	if err := u.write(u.roomList); err != nil {
		return u.failIO("write", err)
	}
	return nil
}
