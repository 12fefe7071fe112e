package swarm

import (
	"fmt"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// Packets from outside the run: a person, a bot or another client sharing
// a room may whisper to one of the run's users, beep it, open a private
// session with it, or a server may send a packet of a known kind that no
// run asks for (a UserList confirm, a Kick). Each is counted apart by kind
// (results.Outside), never a failure unless Spec.Strict; a packet of an
// unknown id still fails its user, as the stream cannot be followed past
// it.

// outsidePacket counts a packet that is none of the run's own: f is
// neither a public chat of the room nor a packet the user waits for.
func (u *user) outsidePacket(f protocol.Frame) {
	g := &u.ledger
	if g.rare == nil {
		g.rare = &rareCounts{}
	}
	c := g.rare
	what := f.ID.String() + " " + f.Type.String()
	switch f.ID {
	case protocol.IDWhisper:
		c.whispers++
	case protocol.IDBeep:
		c.beeps++
	case protocol.IDEnterPrivate:
		c.privateEntered++
	case protocol.IDExitPrivate:
		c.privateExited++
	default:
		if f.ID == protocol.IDChat && f.Type == protocol.Indication {
			if v, err := protocol.ParseChat(f.Body); err == nil && v.RoomID != 0 {
				c.privateChats++
				what = fmt.Sprintf("private Chat indication (session %d)", v.RoomID)
				break
			}
		}
		c.other++
		rs := u.r.rs
		rs.otherOnce.Do(func() { rs.firstOther = u.String() + ": " + what })
	}
	if u.r.rs.spec.Strict {
		u.strictOutside(what, senderOf(f))
	}
}

// strictOutside fails the run on a packet from outside it (Spec.Strict),
// naming its sender when known (quoted: it is the peer's text).
func (u *user) strictOutside(what, from string) {
	msg := u.String() + ": " + what + " from outside the run"
	if from != "" {
		msg += fmt.Sprintf(" (from %q)", from)
	}
	u.r.rs.failures.Add(results.FailOutside, msg, time.Now())
}

// senderOf is the user name a packet from another user carries ("" when
// it has none or cannot be decoded).
func senderOf(f protocol.Frame) string {
	p, err := f.Decode()
	if err != nil {
		return ""
	}
	switch p := p.(type) {
	case *protocol.Whisper:
		return p.FromName
	case *protocol.Beep:
		return p.FromName
	case *protocol.EnterPrivate:
		return p.FromName
	case *protocol.ExitPrivate:
		return p.FromName
	case *protocol.Chat:
		return p.UserName
	}
	return ""
}

// outsideChat counts a public chat of the room from a user who is not one
// of the run's own.
func (u *user) outsideChat(name []byte) {
	u.ledger.outsideChats++
	if u.r.rs.spec.Strict {
		u.strictOutside("Chat indication", string(name))
	}
}

// outsideNews is an entry or an exit of a user who is not one of the
// run's own (counted by the caller): a failure with Spec.Strict only.
func (u *user) outsideNews(what, name string) {
	if u.r.rs.spec.Strict {
		u.strictOutside(what, name)
	}
}
