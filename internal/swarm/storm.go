package swarm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// The reconnect storm (Spec.Scenario results.ScenarioStorm): a paced run in
// which, Spec.StormAt into the timed phase, a share of the users drop
// their connections at once (the swarm closes them, as a network failure
// or a restart would) and reconnect: Access and EnterRoom again, a
// NAME_TAKEN while the server still holds the old connection retried,
// each attempt after a random wait up to the back-off, which doubles at
// each failed attempt. While a user is away its scheduled chats are not
// sent (missed), and the chats it should have had are judged by when it
// was in its room. A receiver that stays to the end must have every chat
// sent while it was in the room. Of the chats sent during a stay that ended
// in a drop, a receiver must have those the server had surely delivered to
// it: each chat of a sender before a later chat of the same sender that
// the receiver did read in that stay (a server relays each sender's chats
// in order, and so does TCP). What it had not read when it dropped may
// have been in its socket, discarded by its own close: not the server's
// loss. Nor is a chat that reached no one, sent by a user who then dropped
// (droppedAfter). (An earlier rule compared first arrivals across senders
// with a 100 ms guard: on a loaded machine, where one reader runs behind
// the others by more than the guard, it counted chats still in a socket as
// lost.)

// stay is a time a user was in its room: from (nanotime; 0 for the set-up)
// to to (0: to the end); last[i] is the latest chat of the room's user i+1
// that the user read during it.
type stay struct {
	from, to int64
	last     []int64
}

// stormUser is a user's part of a storm.
type stormUser struct {
	// linkMu guards the user's link, which a reconnection swaps while the
	// user's sender writes.
	linkMu sync.Mutex
	// down is set from the drop until the user is back in its room.
	down atomic.Bool
	// sendTimes[j] is when the user sent its chat number j (0: not sent),
	// firstArrivals[j] when it first reached another user (0: not yet).
	sendTimes, firstArrivals []atomic.Int64
	missed                   atomic.Int64

	// Owned by the user's reading goroutine (read once it has ended).
	stays                              []stay
	dropped                            bool
	droppedAt, rejoinedAt, recoveredAt int64
	attempts                           int64
}

// stormRun is a run's storm.
type stormRun struct {
	at        int64 // nanotime of the storm; 0 before it
	mu        sync.Mutex
	reconnect *hdrhistogram.Histogram

	// drain: the last total of chats received, and since when (nanotime)
	// it has not changed (the watchdog's); slowest is the longest delivery
	// seen so far (any reader's).
	lastReceived int64
	quietSince   int64
	slowest      atomic.Int64
}

// delivered notes a delivery that took d.
func (sr *stormRun) delivered(d int64) {
	for {
		v := sr.slowest.Load()
		if d <= v || sr.slowest.CompareAndSwap(v, d) {
			return
		}
	}
}

// maxSends is the most chats a storm's user sends: count, or one per pause
// over the duration (and one for the offset).
func maxSends(s *Spec) int {
	if s.Count > 0 {
		return s.Count
	}
	return int(s.Duration/s.Pause) + 2
}

// initStorm prepares the users of a storm: their send times and an exact
// ledger (a receiver misses the chats of its outage, which a window over
// the lowest missing number could not follow).
func (rs *runState) initStorm() {
	rs.stormRun = &stormRun{reconnect: results.NewHistogram()}
	n := maxSends(rs.spec)
	for _, r := range rs.rooms {
		for _, u := range r.users {
			u.storm = &stormUser{sendTimes: make([]atomic.Int64, n+1), firstArrivals: make([]atomic.Int64, n+1), stays: []stay{{}}}
			for i := range u.ledger.from {
				u.ledger.from[i].bits = make([]uint64, (n+64)/64)
			}
		}
	}
}

// drop drops, Spec.StormAt into the timed phase, Spec.StormShare of the
// users (chosen at random), all at once.
func (rs *runState) drop(ctx context.Context) {
	at := rs.base + int64(rs.spec.StormAt)
	if err := sleepUntilNano(ctx, at, rs.abortCh, rs.stopCh); err != nil {
		return
	}
	var users []*user
	for _, r := range rs.rooms {
		users = append(users, r.users...)
	}
	rng := rand.New(rand.NewPCG(uint64(rs.spec.Seed), uint64(time.Now().UnixNano())))
	rng.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
	n := int(float64(len(users))*rs.spec.StormShare + 0.5)
	now := nanotime()
	rs.stormRun.mu.Lock()
	rs.stormRun.at = now
	rs.stormRun.mu.Unlock()
	for _, u := range users[:n] {
		u.storm.down.Store(true)
		u.storm.linkMu.Lock()
		_ = u.l.close()
		u.storm.linkMu.Unlock()
	}
}

// sleepUntilNano waits until nanotime at, or an abort or the stop.
func sleepUntilNano(ctx context.Context, at int64, abort, stop <-chan struct{}) error {
	return sleepFor(ctx, time.Duration(at-nanotime()), abort, stop)
}

// write sends pkt on the user's connection, which a storm may swap.
func (u *user) write(pkt []byte) error {
	if p := u.priv; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return u.l.write(pkt)
	}
	if u.storm == nil {
		return u.l.write(pkt)
	}
	u.storm.linkMu.Lock()
	defer u.storm.linkMu.Unlock()
	return u.l.write(pkt)
}

// pacedReadLoop is a paced user's reading side; in a storm, a user that
// was dropped reconnects and reads on.
func (u *user) pacedReadLoop(ctx context.Context) error {
	for {
		err := u.pacedRead()
		st := u.storm
		if err == nil || st == nil || !st.down.Load() {
			return err
		}
		if err := u.reconnect(ctx); err != nil {
			return err
		}
	}
}

// reconnect brings a dropped user back into its room.
func (u *user) reconnect(ctx context.Context) error {
	st := u.storm
	rs := u.r.rs
	if !st.dropped {
		st.dropped = true
		rs.stormRun.mu.Lock()
		st.droppedAt = rs.stormRun.at
		rs.stormRun.mu.Unlock()
		st.stays[len(st.stays)-1].to = st.droppedAt
	}
	rng := rand.New(rand.NewPCG(uint64(u.num), uint64(time.Now().UnixNano())))
	backoff := rs.spec.StormBackoff
	deadline := time.Now().Add(rs.spec.StallTimeout)
	var last error
	for {
		if time.Now().After(deadline) {
			return &userError{u: u, kind: results.FailTimeout,
				what: fmt.Sprintf("not back in %s after %d attempts in %s", u.r.name, st.attempts, rs.spec.StallTimeout), err: last}
		}
		wait := time.Duration(rng.Int64N(int64(backoff) + 1))
		if err := sleepUntilNano(ctx, nanotime()+int64(wait), rs.abortCh, nil); err != nil {
			return errAborted
		}
		backoff = min(2*backoff, rs.spec.StormBackoffMax)
		st.attempts++
		taken, err := u.rejoin(ctx)
		switch {
		case err == nil:
			now := nanotime()
			st.rejoinedAt = now
			st.stays = append(st.stays, stay{from: now})
			rs.stormRun.mu.Lock()
			_ = rs.stormRun.reconnect.RecordValue(min(now-st.droppedAt, results.HistogramHighest))
			rs.stormRun.mu.Unlock()
			st.down.Store(false)
			return nil
		case errors.Is(err, errAborted), ctx.Err() != nil:
			return errAborted
		case taken:
			// The server still holds the old connection: try again.
		default:
			var ue *userError
			if errors.As(err, &ue) && ue.kind == results.FailDenied {
				return err
			}
		}
		last = err
	}
}

// rejoin is one attempt at reconnecting: a new connection, Access and
// EnterRoom. taken is true when the room still has the user's name.
func (u *user) rejoin(ctx context.Context) (taken bool, err error) {
	rs := u.r.rs
	l, err := u.connectFresh(ctx)
	if err != nil {
		return false, err
	}
	deadline := time.Now().Add(rs.spec.StallTimeout)
	_ = l.setReadDeadline(deadline)
	_ = l.setWriteDeadline(deadline)
	defer func() {
		if err != nil {
			_ = l.close()
		}
	}()
	if err := l.write(u.r.access); err != nil {
		return false, u.failIO("send Access", err)
	}
	f, err := u.await("Access confirm", isConfirm(protocol.IDAccess))
	if err != nil {
		return false, err
	}
	if err := u.confirmed(f); err != nil {
		return false, err
	}
	if err := l.write(u.enter); err != nil {
		return false, u.failIO("send EnterRoom", err)
	}
	if f, err = u.await("EnterRoom confirm", isConfirm(protocol.IDEnterRoom)); err != nil {
		return false, err
	}
	if p, derr := f.Decode(); derr == nil {
		if e, ok := p.(*protocol.EnterRoom); ok && e.Result == protocol.EnterNameTaken {
			return true, errors.New("the name is still taken")
		}
	}
	if err := u.confirmed(f); err != nil {
		return false, err
	}
	_ = l.setReadDeadline(time.Time{})
	_ = l.setWriteDeadline(time.Time{})
	return false, nil
}

// connectFresh opens a new connection for a user whose old one was
// dropped, swapping it in under the user's link lock.
func (u *user) connectFresh(ctx context.Context) (*link, error) {
	st := u.storm
	st.linkMu.Lock()
	defer st.linkMu.Unlock()
	return u.connect(ctx)
}

// expects reports whether the user should have received chat j of the
// room's user i+1, sent at sent: sent during a stay to the end, or during a
// stay that ended in a drop, if the user read a later chat of that sender
// in it.
func (st *stormUser) expects(i int, j, sent int64) bool {
	for _, s := range st.stays {
		if sent < s.from || (s.to != 0 && sent >= s.to) {
			continue
		}
		if s.to == 0 || (i < len(s.last) && s.last[i] > j) {
			return true
		}
	}
	return false
}

// droppedAfter reports whether the user dropped after sending at t, in
// the same stay: a chat it sent that reached no one may have been in its
// socket when it closed (a close with unread input resets the connection
// and discards what the socket had not sent), and is expected by no one.
func (st *stormUser) droppedAfter(t int64) bool {
	for _, s := range st.stays {
		if t >= s.from && s.to != 0 && t < s.to {
			return true
		}
	}
	return false
}

// read notes that the user read chat j of the room's user i+1 (of n).
func (st *stormUser) read(i, n int, j int64) {
	s := &st.stays[len(st.stays)-1]
	if s.last == nil {
		s.last = make([]int64, n)
	}
	if i < len(s.last) {
		s.last[i] = max(s.last[i], j)
	}
}

// arrived records that chat j of this sender reached a user at now.
func (st *stormUser) arrived(j, now int64) {
	if j < 1 || j >= int64(len(st.firstArrivals)) {
		return
	}
	a := &st.firstArrivals[j]
	for {
		v := a.Load()
		if (v != 0 && v <= now) || a.CompareAndSwap(v, now) {
			return
		}
	}
}

// stormOutcome sums the storm's figures: who dropped, came back and
// recovered (had a chat sent after its return), and how long the last
// recovery took.
func (rs *runState) stormOutcome(doc *results.Document) {
	sr := rs.stormRun
	out := &results.Storm{AtSeconds: rs.spec.StormAt.Seconds()}
	var last int64
	allRecovered := true
	for _, r := range rs.rooms {
		for _, u := range r.users {
			st := u.storm
			out.Users++
			out.MissedSends += st.missed.Load()
			out.Attempts += st.attempts
			if !st.dropped {
				continue
			}
			out.Dropped++
			if st.rejoinedAt > 0 {
				out.Reconnected++
			}
			if st.recoveredAt > 0 {
				out.Recovered++
				last = max(last, st.recoveredAt)
			} else {
				allRecovered = false
			}
		}
	}
	if sr.at > 0 {
		out.AtSeconds = float64(sr.at-rs.base) / 1e9
		if allRecovered && out.Dropped > 0 {
			out.RecoverySeconds = float64(last-sr.at) / 1e9
		}
	}
	doc.Storm = out
	if sr.reconnect.TotalCount() > 0 {
		if e, err := results.EncodeHistogram(sr.reconnect); err == nil {
			if doc.Latency == nil {
				doc.Latency = map[string]*results.Histogram{}
			}
			doc.Latency[results.LatencyReconnect] = e
		}
	}
}

// stormDrained is the drain of a storm: every user is back, and the chats
// received have not changed for three of the watchdog's ticks.
func (rs *runState) stormDrained() bool {
	sr := rs.stormRun
	var total int64
	for _, r := range rs.rooms {
		for _, u := range r.users {
			if u.storm.down.Load() {
				return false
			}
		}
		total += r.received.Load()
	}
	now := nanotime()
	if total != sr.lastReceived || sr.quietSince == 0 {
		sr.lastReceived, sr.quietSince = total, now
		return false
	}
	// Quiet for three ticks and for twice the slowest delivery so far: on
	// a busy machine a chat in flight may take seconds (the drain's own
	// deadline bounds the wait).
	tick := int64(min(max(rs.spec.StallTimeout/8, 10*time.Millisecond), 250*time.Millisecond))
	return now-sr.quietSince >= max(3*tick, 2*sr.slowest.Load())
}
