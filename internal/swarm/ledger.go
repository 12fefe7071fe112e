package swarm

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/volanogo/volanogo/internal/results"
)

// The ledger: every chat the run sends is identified by its text, so that
// each receiver can tell a lost chat from a late one, a duplicate, a
// corrupted one and one out of order, whatever order the server keeps.
//
// The text is Mark's 60 characters with its first two blocks of ten
// replaced by the sender's number and the chat's number among the
// sender's chats, nine digits and a space each:
//
//	"000000014 000000002 123456789 123456789 123456789 123456789 "
//
// is Mark14's second chat. The length is Mark's, so every packet the
// server reads and writes has the size it has with Mark, and the server's
// work is the same. The server trims the trailing space (protocol sheet
// §2), as it does Mark's.

// textTail is what follows the two numbers: Mark's last four blocks.
const textTail = "123456789 123456789 123456789 123456789 "

const (
	numberDigits = 9
	// textNumbers is where the numbers end and textTail begins.
	textNumbers = 2 * (numberDigits + 1)
)

func init() {
	if textNumbers+len(textTail) != len(MarkText) {
		panic("load: the numbered text is not as long as Mark's")
	}
}

// numberedText is the text of sender's chat number j.
func numberedText(sender int, j int64) string {
	b := make([]byte, 0, len(MarkText))
	b = appendNumber(b, int64(sender))
	b = append(b, ' ')
	b = appendNumber(b, j)
	b = append(b, ' ')
	return string(append(b, textTail...))
}

func appendNumber(b []byte, v int64) []byte {
	var d [numberDigits]byte
	putNumber(d[:], v)
	return append(b, d[:]...)
}

// putNumber writes v as numberDigits decimal digits into b (v below
// 10^numberDigits).
func putNumber(b []byte, v int64) {
	for i := numberDigits - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

func getNumber(b []byte) (int64, bool) {
	var v int64
	for _, c := range b[:numberDigits] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseText reads the sender's number and the chat's number from a chat's
// text as the server relayed it (trimmed or not). ok is false when the
// numbers cannot be read; intact is false when anything else differs from
// what was sent.
func parseText(t []byte) (sender, j int64, ok, intact bool) {
	if len(t) < textNumbers || t[numberDigits] != ' ' || t[textNumbers-1] != ' ' {
		return 0, 0, false, false
	}
	var ok1, ok2 bool
	sender, ok1 = getNumber(t)
	j, ok2 = getNumber(t[numberDigits+1:])
	if !ok1 || !ok2 {
		return 0, 0, false, false
	}
	// Compared in place: a conversion kept in a variable would copy.
	rest := t[textNumbers:]
	intact = string(rest) == textTail || string(rest) == textTail[:len(textTail)-1]
	return sender, j, true, intact
}

// senderLog is what one receiver has seen of one sender's chats: a window
// over the chat numbers, so that a duplicate is told from a chat that was
// merely late.
type senderLog struct {
	next   int64  // the lowest number not received yet (numbers start at 1)
	window uint64 // bit i: number next+1+i has been received
	max    int64  // the highest number received
	got    int64  // distinct numbers received
	// bits, when set (a storm, where a receiver misses whole stretches of
	// a sender's chats), is every number received: bit j of word j/64.
	bits []uint64
}

// windowSize is how far past the lowest missing number a receiver keeps
// track of a sender's chats; a chat further ahead is counted (untracked)
// but could not be told from a duplicate if it came again.
const windowSize = 64

// arrival is what accept makes of a chat number.
type arrival int

const (
	arrFresh     arrival = iota // first arrival
	arrDuplicate                // received before
	arrUntracked                // first arrival, beyond the window
)

// accept records the arrival of number j (>= 1); late is true when a
// higher number of the same sender arrived before it.
func (l *senderLog) accept(j int64) (a arrival, late bool) {
	if l.next == 0 {
		l.next = 1
	}
	late = j < l.max
	if l.bits != nil {
		return l.acceptExact(j, late)
	}
	switch {
	case j < l.next:
		return arrDuplicate, late
	case j == l.next:
		for {
			l.next++
			bit := l.window & 1
			l.window >>= 1
			if bit == 0 {
				break
			}
		}
	case j-l.next-1 < windowSize:
		bit := uint64(1) << uint(j-l.next-1)
		if l.window&bit != 0 {
			return arrDuplicate, late
		}
		l.window |= bit
	default:
		a = arrUntracked
	}
	l.got++
	l.max = max(l.max, j)
	return a, late
}

// acceptExact is accept with the exact set of numbers (bits).
func (l *senderLog) acceptExact(j int64, late bool) (arrival, bool) {
	w, bit := j/64, uint64(1)<<uint(j%64)
	if w >= int64(len(l.bits)) {
		l.got++
		l.max = max(l.max, j)
		return arrUntracked, late
	}
	if l.bits[w]&bit != 0 {
		return arrDuplicate, late
	}
	l.bits[w] |= bit
	l.got++
	l.max = max(l.max, j)
	return arrFresh, late
}

// has reports whether number j was received (a storm's exact ledger).
func (l *senderLog) has(j int64) bool {
	w := j / 64
	return w < int64(len(l.bits)) && l.bits[w]&(uint64(1)<<uint(j%64)) != 0
}

// ledger is one receiver's account of its room's chats, kept by the
// user's reading goroutine.
type ledger struct {
	from []senderLog // per sender of the room (index num-1)
	// maxK is the highest room chat number received (turn-taking).
	maxK int64
	// unread counts chats from the room's users whose numbers could not
	// be read: each is presumably one of the chats missing at the end.
	unread int64

	reordered, maxDisplacement int64
	senderReordered            int64
	duplicated, corrupted      int64
	untracked                  int64

	outsideChats, outsideEntered, outsideExited int64
	// left marks the users of the room whose exit this user has seen
	// (bit num-1), so that an exit counts once whoever else leaves.
	left []uint64
	// rare counts the other packets from outside the run (made at the
	// first: most runs never see one).
	rare *rareCounts
}

// rareCounts are a receiver's counts of whispers, beeps, private sessions
// and unexpected packets from outside the run (results.Outside).
type rareCounts struct {
	whispers, beeps                             int64
	privateEntered, privateExited, privateChats int64
	other                                       int64
}

func newLedger(users int) ledger {
	return ledger{from: make([]senderLog, users), left: make([]uint64, (users+63)/64)}
}

// markLeft records that user s (1-based) left; false if already seen.
func (g *ledger) markLeft(s int64) bool {
	w, bit := (s-1)/64, uint64(1)<<uint((s-1)%64)
	if g.left[w]&bit != 0 {
		return false
	}
	g.left[w] |= bit
	return true
}

// identify enters a chat from user s of the room with the given text into
// u's ledger. It returns the chat's number j among s's chats (0 when it
// cannot be read) and fresh = false for a duplicate, which the caller must
// not count again.
func (u *user) identify(s int64, text []byte) (j int64, fresh bool) {
	g := &u.ledger
	rs := u.r.rs
	ts, j, ok, intact := parseText(text)
	count := u.r.count
	if !ok || ts != s || j < 1 || (count > 0 && j > count) {
		g.corrupted++
		g.unread++
		what := "its number cannot be read"
		if ok {
			what = fmt.Sprintf("its text says chat %d of Mark%d", j, ts)
		}
		rs.failures.Add(results.FailCorrupted, fmt.Sprintf("%s: a chat from Mark%d: %s (%q)", u, s, what, text), time.Now())
		return 0, true
	}
	a, late := g.from[s-1].accept(j)
	if a == arrDuplicate {
		g.duplicated++
		rs.failures.Add(results.FailDuplicated, fmt.Sprintf("%s: chat %d of Mark%d arrived twice", u, j, s), time.Now())
		return j, false
	}
	if a == arrUntracked {
		g.untracked++
	}
	if !intact {
		g.corrupted++
		rs.failures.Add(results.FailCorrupted, fmt.Sprintf("%s: chat %d of Mark%d: its text is not what was sent (%q)", u, j, s, text), time.Now())
	}
	if late {
		g.senderReordered++
		if rs.paced {
			// Turn-taking tells it by the room's order (roomOrder); a
			// paced room has no order across its senders, but each
			// sender's chats arrive in the order sent (counted in
			// SenderReordered).
			d := g.from[s-1].max - j
			msg := fmt.Sprintf("%s: chat %d of Mark%d arrived after its chat %d (%d later)", u, j, s, g.from[s-1].max, d)
			if rs.spec.StrictOrder {
				rs.failures.Add(results.FailReordered, msg, time.Now())
			}
			rs.reorderOnce.Do(func() { rs.firstReorder = msg })
		}
	}
	return j, true
}

// roomOrder checks room chat number k against the latest this user has
// seen: an earlier one is reordered (turn-taking).
func (u *user) roomOrder(k int64) {
	g := &u.ledger
	if k > g.maxK {
		g.maxK = k
		return
	}
	d := g.maxK - k
	g.reordered++
	g.maxDisplacement = max(g.maxDisplacement, d)
	rs := u.r.rs
	n := int64(len(u.r.users))
	msg := fmt.Sprintf("%s: chat %d of the room (Mark%d's) arrived after chat %d (%d later)", u, k, (k-1)%n+1, g.maxK, d)
	if rs.spec.StrictOrder {
		rs.failures.Add(results.FailReordered, msg, time.Now())
	}
	rs.reorderOnce.Do(func() { rs.firstReorder = msg })
}

// stallLimit is, in a room that stalled, the last chat of the room's
// user i (0-based) that u should have had by then: the chats of that
// sender that came before the latest chat u got (in turn-taking the
// room's, in pause mode that sender's). The ones after it were in flight
// when the room stalled: whether the server still held them or lost
// them, a stall cannot tell.
func (u *user) stallLimit(i int) int64 {
	g := &u.ledger
	if u.r.rs.paced {
		return g.from[i].max
	}
	// Sender i+1's chat j is chat (j-1)*n + i+1 of the room.
	n, s := int64(len(u.r.users)), int64(i+1)
	if g.maxK < s {
		return 0
	}
	return (g.maxK-s)/n + 1
}

// stormMissing counts the chats of sender s that u should have had (sent
// while u was in its room) and did not, with the first of them.
func (u *user) stormMissing(i int, s *user, l *senderLog) (missing, firstMissing int64) {
	for j := 1; j < len(s.storm.sendTimes); j++ {
		t := s.storm.sendTimes[j].Load()
		first := s.storm.firstArrivals[j].Load()
		if t <= 0 || (first == 0 && s.storm.droppedAfter(t)) || !u.storm.expects(i, int64(j), t) || l.has(int64(j)) {
			continue
		}
		if missing == 0 {
			firstMissing = int64(j)
		}
		missing++
	}
	return missing, firstMissing
}

// fanSlot gathers the arrivals of one broadcast at the other users of its
// room, for the fan-out histograms: the earliest and the latest arrival,
// and how many have arrived. The last receiver records the broadcast.
type fanSlot struct {
	first, last atomic.Int64 // nanotime; first starts at math.MaxInt64
	arrived     atomic.Int64
}

func (f *fanSlot) reset() {
	f.first.Store(math.MaxInt64)
	f.last.Store(0)
	f.arrived.Store(0)
}

// arrive records an arrival at now; for the last of receivers arrivals it
// returns the first and last arrival times.
func (f *fanSlot) arrive(now int64, receivers int64) (first, last int64, all bool) {
	for {
		v := f.first.Load()
		if now >= v || f.first.CompareAndSwap(v, now) {
			break
		}
	}
	for {
		v := f.last.Load()
		if now <= v || f.last.CompareAndSwap(v, now) {
			break
		}
	}
	if f.arrived.Add(1) != receivers {
		return 0, 0, false
	}
	return f.first.Load(), f.last.Load(), true
}

// recordFanout records one broadcast sent at sent whose receivers' arrivals
// spanned first..last.
func (u *user) recordFanout(sent, first, last int64) {
	u.record(kFanFirst, first-sent)
	u.record(kFanLast, last-sent)
	u.record(kFanSpread, last-first)
}

// integrity sums the receivers' ledgers into the document's, counts what
// was lost and adds the failures that only the end can tell (once every
// user's goroutine has ended). ranToEnd is false for a run that ended
// early.
func (rs *runState) integrity(ranToEnd bool) *results.Integrity {
	g := &results.Integrity{StrictOrder: rs.spec.StrictOrder}
	var out results.Outside
	var lostExample string
	for _, r := range rs.rooms {
		n := int64(len(r.users))
		for _, u := range r.users {
			l := &u.ledger
			g.Receivers++
			g.Duplicated += l.duplicated
			g.Corrupted += l.corrupted
			g.Reordered += l.reordered
			g.SenderReordered += l.senderReordered
			g.MaxDisplacement = max(g.MaxDisplacement, l.maxDisplacement)
			if l.reordered > 0 {
				g.ReceiversReordered++
			}
			out.Chats += l.outsideChats
			out.Entered += l.outsideEntered
			out.Exited += l.outsideExited
			if c := l.rare; c != nil {
				out.Whispers += c.whispers
				out.Beeps += c.beeps
				out.PrivateEntered += c.privateEntered
				out.PrivateExited += c.privateExited
				out.PrivateChats += c.privateChats
				out.Other += c.other
			}
			var missing int64
			for i, s := range r.users {
				// Chats were still in flight when a run ended early,
				// except in a room that had stalled for the stall
				// timeout: what it misses then is lost if a later chat
				// overtook it (stallLimit), in flight otherwise.
				if !u.expects(s) || !(ranToEnd || r.stalled) {
					continue
				}
				if u.storm != nil {
					m, first := u.stormMissing(i, s, &l.from[i])
					missing += m
					if m > 0 && lostExample == "" {
						lostExample = fmt.Sprintf("%s never received chat %d of Mark%d, sent while it was in the room", u, first, i+1)
					}
					continue
				}
				sent := s.sentCount(rs.paced)
				if r.stalled {
					limit := min(sent, u.stallLimit(i))
					g.InFlight += max(0, sent-max(limit, l.from[i].got))
					sent = limit
				}
				if d := sent - l.from[i].got; d > 0 {
					missing += d
					if lostExample == "" {
						first := max(l.from[i].next, 1)
						lostExample = fmt.Sprintf("%s never received chat %d of Mark%d", u, first, i+1)
						if !rs.paced {
							lostExample += fmt.Sprintf(" (chat %d of the room)", (first-1)*n+int64(i+1))
						}
					}
				}
			}
			g.Lost += max(0, missing-l.unread)
		}
	}
	if out != (results.Outside{}) {
		out.FirstOther = rs.firstOther
		g.Outside = &out
	}
	g.FirstReordered = rs.firstReorder
	if g.Lost > 0 {
		rs.failures.AddN(results.FailLost, fmt.Sprintf("%d chats lost: %s", g.Lost, lostExample), time.Now(), g.Lost)
	}
	return g
}

// expects reports whether u receives the chats of s: every other user of
// its room, or in private chat its partner's and the echoes of its own.
func (u *user) expects(s *user) bool {
	if p := u.priv; p != nil {
		return s == p.partner || s == u
	}
	return s != u
}
