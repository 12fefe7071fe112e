package swarm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// Latency kinds recorded per user and merged per shard.
const (
	kDelivery = iota
	kTurn
	kScheduled
	kFanFirst
	kFanLast
	kFanSpread
	kResponse
	nKinds
)

// kindNames are the document's names of the latency kinds.
var kindNames = [nKinds]string{results.LatencyDelivery, results.LatencyTurn, results.LatencyDeliveryScheduled,
	results.LatencyFanoutFirst, results.LatencyFanoutLast, results.LatencyFanoutSpread, results.LatencyResponse}

// histShard holds histograms that users flush their buffered values into,
// under a lock taken once per batch (hdrhistogram is not concurrency-safe).
type histShard struct {
	mu sync.Mutex
	h  [nKinds]*hdrhistogram.Histogram
	_  [64]byte
}

func (s *histShard) hist(k int) *hdrhistogram.Histogram {
	if s.h[k] == nil {
		s.h[k] = results.NewHistogram()
	}
	return s.h[k]
}

// latBatch is the number of values a user buffers before flushing (small:
// every user has its buffers).
const latBatch = 32

// room is one chat room of the run.
type room struct {
	rs    *runState
	index int // 0-based within the run
	num   int // Room<num>
	name  string
	users []*user
	// access is the pre-encoded Access request (its default room is this
	// room).
	access []byte

	// slots hold, per room chat number k (mod len), the send of chat k and
	// its arrivals (turn-taking). A slot is reused by chat k+len only when
	// every receiver has had chat k: each user sends once in every users
	// consecutive chats, and only after it has received every earlier chat
	// (the turn rule), so len >= users is enough.
	slots []turnSlot
	mask  int64
	// count is the run's Spec.Count, here on a line every chat reads.
	count    int64
	lastSend atomic.Int64
	// progress counts sends, exits and completions (and receipts in paced
	// mode): the stall watchdog watches it.
	progress atomic.Int64
	received atomic.Int64 // paced mode: indications received
	seq      atomic.Int64 // turn-taking: the last chat number sent
	done     atomic.Int32 // users finished

	// Batched reads: the size of a chat indication from each user and of
	// a chat confirm, as Mark's server sends them.
	indSize     []int
	confirmSize int
	// exitSize: an ExitRoom indication of each user.
	exitSize []int

	// lowats: the users' sockets have a receive low-water mark above one
	// byte (batched reads, or confirmLowat): the watchdog lowers them when
	// the room makes no progress. Set before the timed phase.
	lowats bool

	// watchdog state (the watchdog goroutine only; stalled is read once
	// the users' goroutines have ended)
	wdProgress int64
	wdAt       int64
	unbatched  bool
	stalled    bool
}

// turnSlot is one chat of a turn-taking room: its number (k, set last by
// the sender, so that a receiver can tell the slot holds its chat), when
// it was sent and its arrivals.
type turnSlot struct {
	k    atomic.Int64
	sent atomic.Int64
	fan  fanSlot
}

// user is one simulated chat user (one connection).
//
// The fields that every packet of the timed phase touches come first, on
// the object's first two cache lines (an object of more than 480 bytes is
// 64-byte aligned): with thousands of users, a user's state has left the
// cache each time its socket is ready again, and each line it touches is
// a miss.
type user struct {
	r  *room
	l  *link
	rd *protocol.Reader // nil between reads on an event loop (see evLoop.readers)
	// rec buffers the latency values and timeline counts: the user's own,
	// or its event loop's.
	rec *recorder

	// Owned by the user's reading goroutine (or loop).
	sent, received int64
	// counted is the room's chats this user has received from the room's
	// users, each once: with sent, its progress through the room's turns.
	counted int64
	lastPkt atomic.Uint64 // id<<32 | type, for stall reports

	num            int // Mark<num>, 1-based
	exits          int
	confirmPending int
	exited         bool
	// Batched reads (Config.BatchReads): the low-water mark set, the
	// confirm this user still expects (confirmPending), and the switch the
	// watchdog or a packet of an unexpected size turns off (batchOff).
	batch bool
	// confirmLowat (the epoll engine: turn-taking with a count, reads not
	// batched, or paced): the socket's receive low-water mark is one byte
	// more than a chat confirm until the user has had every chat of its
	// room (then see awaitExits; paced: until it leaves), so that the
	// confirm of each chat it sends does not wake it alone but comes with
	// the next indication, which wakes it as it arrives (every indication
	// is longer): one read fewer per chat sent, every indication still
	// timed as it arrives. Set before the timed phase.
	confirmLowat bool
	ledger       ledger

	chat []byte
	// chatNumber is where the chat's number sits in chat (see ledger.go).
	chatNumber int
	confirms   int64
	lowat      int
	batchOff   atomic.Bool
	done       atomic.Bool

	name                  string
	enter, exit, roomList []byte
	// shard is where the user's own recorder flushes.
	shard   *histShard
	setupAt time.Duration // connect to EnterRoom confirm

	// Paced mode.
	sentA atomic.Int64 // messages sent, published by the sender
	ring  []sendSlot   // the sender's recent sends, by message number
	// doneSending is set when the sender has sent (or, in a storm, missed)
	// every scheduled chat.
	doneSending atomic.Bool
	// sentIn is the chats the sender sent within the schedule's window
	// (its goroutine's or loop's), readIn the indications and confirms
	// the reading side read within it (see runState.inWindow).
	sentIn, readIn int64
	// storm is the user's part of a storm (nil in other runs).
	storm *stormUser
	// priv is the user's private session (private chat runs only).
	priv *privateUser

	// Past 480 bytes, so that the allocator aligns users to cache lines
	// (TestHotLines).
	_ [32]byte
}

// sendSlot is a paced send: the message number and its times, written by
// the sender and read by receivers (a seqlock on n), and its arrivals.
type sendSlot struct {
	n, sched, sent atomic.Int64
	fan            fanSlot
}

// sentCount is the chats the user sent (once its goroutines have ended).
func (u *user) sentCount(paced bool) int64 {
	if paced {
		return u.sentA.Load()
	}
	return u.sent
}

// pacedRingSize is the number of a paced user's recent sends kept for
// the receivers: enough for the messages in flight over a stall timeout
// (a later arrival is counted but not timed), at most 256.
func pacedRingSize(cfg *Spec) int {
	want := 8
	if cfg.Pause > 0 {
		want = int(cfg.StallTimeout/cfg.Pause) + 2
	}
	size := 8
	for size < want && size < 256 {
		size <<= 1
	}
	return size
}

func newRoom(rs *runState, index, num, users int) (*room, error) {
	r := &room{rs: rs, index: index, num: num, name: "Room" + strconv.Itoa(num), count: int64(rs.spec.Count)}
	size := 1
	for size < users {
		size <<= 1
	}
	r.slots = make([]turnSlot, size)
	r.mask = int64(size - 1)
	var err error
	r.access, err = (&protocol.Access{
		Type:             protocol.Request,
		DefaultRoom:      r.name,
		AppletVersion:    results.MarkVersion,
		DocumentBase:     "http://www.volano.com/chat.html",
		CodeBase:         "http://chat.volano.net/vcclient",
		JavaVendor:       platform.Vendor,
		JavaVendorURL:    platform.VendorURL,
		JavaVersion:      platform.Version,
		JavaClassVersion: platform.ClassVersion,
		OSName:           platform.OSName,
		OSVersion:        platform.OSVersion,
		OSArch:           platform.OSArch,
	}).AppendPacket(nil)
	if err != nil {
		return nil, err
	}
	batch := rs.spec.BatchReads && runtime.GOOS == "linux" && !rs.paced && rs.spec.Count > 0 && rs.spec.Duration == 0 && rs.transport == TransportTCP
	// header 6, question 1, room id 4, room name, user name, text (Mark's
	// 60 characters, trimmed to 59 by the server).
	r.confirmSize = 6 + 1 + 4 + 2 + len(r.name) + 2 + 2
	for j := 1; j <= users; j++ {
		u := &user{r: r, num: j, name: "Mark" + strconv.Itoa(j), batch: batch, ledger: newLedger(users)}
		r.indSize = append(r.indSize, 6+1+4+2+len(r.name)+2+len(u.name)+2+len(MarkText)-1)
		u.shard = rs.shards[(index*users+j)%len(rs.shards)]
		if u.chat, err = (&protocol.Chat{Type: protocol.Request, RoomName: r.name, UserName: u.name, Text: numberedText(j, 0)}).AppendPacket(nil); err != nil {
			return nil, err
		}
		u.chatNumber = len(u.chat) - len(MarkText) + numberDigits + 1
		if u.enter, err = (&protocol.EnterRoom{Type: protocol.Request, RoomName: r.name, UserName: u.name,
			Profile: "This is the profile for " + u.name + " in " + r.name + "."}).AppendPacket(nil); err != nil {
			return nil, err
		}
		if u.exit, err = (&protocol.ExitRoom{Type: protocol.Request, RoomName: r.name, UserName: u.name}).AppendPacket(nil); err != nil {
			return nil, err
		}
		r.exitSize = append(r.exitSize, len(u.exit)) // the indication has the same fields
		if u.roomList, err = (&protocol.RoomList{Type: protocol.Request}).AppendPacket(nil); err != nil {
			return nil, err
		}
		if rs.paced {
			u.ring = make([]sendSlot, pacedRingSize(rs.spec))
		}
		r.users = append(r.users, u)
	}
	return r, nil
}

// recorder buffers latency values (by kind) and timeline counts for a
// histogram shard and the run's timeline: one per user on goroutines, one
// per event loop, shared by its users, on the epoll engine (what every
// packet writes then stays in the cache). Only its owner's goroutine or
// loop uses it.
type recorder struct {
	rs    *runState
	shard *histShard
	// shared: a loop's, which the loop flushes (see evEngine.close), not
	// each user when it ends.
	shared          bool
	latN            [nKinds]int
	tlNext, tlStart int64
	tlSent, tlRecv  int64
	lat             [nKinds][latBatch]int64
}

// recorder is the user's recorder: its loop's, or its own, made at the
// first use.
func (u *user) recorder() *recorder {
	if u.rec == nil {
		u.rec = &recorder{rs: u.r.rs, shard: u.shard}
	}
	return u.rec
}

// record buffers one latency value of kind k (nanoseconds).
func (u *user) record(k int, v int64) { u.recorder().record(k, v) }

func (c *recorder) record(k int, v int64) {
	n := c.latN[k]
	c.lat[k][n] = v
	n++
	if n == latBatch {
		c.flushLat(k, n)
		n = 0
	}
	c.latN[k] = n
}

func (c *recorder) flushLat(k, n int) {
	if n == 0 {
		return
	}
	s := c.shard
	s.mu.Lock()
	h := s.hist(k)
	for _, v := range c.lat[k][:n] {
		if v < 0 {
			v = 0
		} else if v > results.HistogramHighest {
			v = results.HistogramHighest
		}
		_ = h.RecordValue(v)
	}
	s.mu.Unlock()
}

// tick counts sent and received messages in the timeline, flushing the
// counts once per second of the timed phase.
func (u *user) tick(now, sent, recv int64) { u.recorder().tick(now, sent, recv) }

func (c *recorder) tick(now, sent, recv int64) {
	if now >= c.tlNext {
		c.flushTimeline()
		base := c.rs.base
		sec := (now - base) / int64(time.Second)
		c.tlStart = sec * int64(time.Second)
		c.tlNext = base + c.tlStart + int64(time.Second)
	}
	c.tlSent += sent
	c.tlRecv += recv
}

func (c *recorder) flushTimeline() {
	if c.tlSent != 0 || c.tlRecv != 0 {
		c.rs.timeline.AddElapsed(time.Duration(c.tlStart), c.tlSent, c.tlRecv)
		c.tlSent, c.tlRecv = 0, 0
	}
}

func (c *recorder) flush() {
	for k := 0; k < nKinds; k++ {
		c.flushLat(k, c.latN[k])
		c.latN[k] = 0
	}
	c.flushTimeline()
}

// flushAll flushes the user's own recorder (a loop's is the loop's to
// flush).
func (u *user) flushAll() {
	if u.rec != nil && !u.rec.shared {
		u.rec.flush()
	}
}

func (u *user) seen(f protocol.Frame) {
	u.lastPkt.Store(uint64(f.ID)<<32 | uint64(uint32(f.Type)))
}

// lastPacket describes the last packet the user received.
func (u *user) lastPacket() string {
	v := u.lastPkt.Load()
	if v == 0 {
		return "nothing yet"
	}
	return protocol.ID(v>>32).String() + " " + protocol.Type(int32(uint32(v))).String()
}

func (u *user) String() string { return u.name + " in " + u.r.name }

// markNumber returns n for a user name "Mark<n>" (1 <= n), 0 otherwise.
func markNumber(name []byte) int64 {
	if len(name) < 5 || len(name) > 12 || name[0] != 'M' || name[1] != 'a' || name[2] != 'r' || name[3] != 'k' {
		return 0
	}
	var n int64
	for _, c := range name[4:] {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// userError is a failure of one user, with its kind.
type userError struct {
	u    *user
	kind string
	what string
	err  error
}

func (e *userError) Error() string {
	msg := e.u.String()
	if e.what != "" {
		msg += ": " + e.what
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *userError) Unwrap() error { return e.err }

// failIO classifies an error reading or writing the user's connection.
// httpReply is what the packet id of an HTTP server's reply reads as: its
// first two bytes, "HT".
const httpReply = protocol.ID('H')<<8 | protocol.ID('T')

func (u *user) failIO(what string, err error) *userError {
	kind := results.Classify(err)
	var de *protocol.DecodeError
	switch {
	case errors.As(err, &de):
		kind = results.FailProtocol
		if errors.Is(err, protocol.ErrTooLarge) {
			what += fmt.Sprintf(": a packet from the server passed the client's bound of %d bytes (a hostile or broken server, or a room list longer than the bound: --max-packet raises it)",
				u.r.rs.spec.MaxPacket)
		}
		if errors.Is(err, protocol.ErrUnknownID) && de.ID == httpReply {
			what += ": the server answered in HTTP (\"HTTP/...\"): this is an HTTP server, such as volanogo serve's metrics or WebSocket port, not a chat port (TCP, 8000 by default; for WebSocket give --transport ws --url)"
		}
	case kind == results.FailClosed:
		what = "disconnected from server"
	case kind == results.FailTimeout && errors.Is(err, os.ErrDeadlineExceeded):
		what += fmt.Sprintf(" (no answer in %s; last packet: %s)", u.r.rs.spec.StallTimeout, u.lastPacket())
	}
	return &userError{u: u, kind: kind, what: what, err: err}
}

// serverError reports a StreamableError; Mark prints it and goes on, so
// the run goes on but fails.
func (u *user) serverError(f protocol.Frame) {
	text := "(undecodable)"
	if p, err := f.Decode(); err == nil {
		if se, ok := p.(*protocol.StreamableError); ok {
			text = se.Text
		}
	}
	// Quoted: the server's text reaches a terminal.
	u.r.rs.failures.Add(results.FailServerError, u.String()+": StreamableError: "+strconv.Quote(text), time.Now())
}
