package swarm

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/usage"
)

// Transports: the VOLANO protocol over TCP or WebSocket, or a pub/sub
// broker's own protocol (internal/broker), one connection per user.
const (
	TransportTCP   = "tcp"
	TransportWS    = "ws"
	TransportNATS  = broker.NATS
	TransportRedis = broker.Redis
	TransportMQTT  = broker.MQTT
)

// IsBroker reports whether transport is a broker's protocol.
func IsBroker(transport string) bool {
	return transport == TransportNATS || transport == TransportRedis || transport == TransportMQTT
}

// Engines of the client: how the users' sockets are read in the timed
// phase.
const (
	// EngineGoroutine: a goroutine per user, on Go's poller.
	EngineGoroutine = "goroutine"
	// EngineEpoll: a few event loops on their own threads run the users'
	// handlers and paced sends themselves (Linux, TCP, turn-taking and
	// paced runs; storm and churn run on goroutines).
	EngineEpoll = "epoll"
)

// Defaults of Spec, as Mark has them where Mark has the option.
const (
	DefaultUsers              = 20
	DefaultCount              = 100
	DefaultConnectConcurrency = 16
	DefaultStallTimeout       = 30 * time.Second
	DefaultSLO                = time.Second
	// DefaultStormBackoff and DefaultStormBackoffMax are the back-off of a
	// storm's reconnections: a random wait up to 50 ms before the first
	// attempt, doubling to at most 2 s.
	DefaultStormBackoff    = 50 * time.Millisecond
	DefaultStormBackoffMax = 2 * time.Second
	// DefaultMaxPacket bounds one packet a user reads from the server, and
	// so what a hostile server can make it hold. The largest a client
	// receives from volanogo serve is an EnterRoom confirm of a full room
	// (25 users, names of 20 and profiles of 200 characters at 3 bytes
	// each: 17,988 bytes); its room lists stop at 16 KiB of names
	// (RoomListMaxBytes). The original server lists every room: 98,909
	// bytes at Room1 to Room10000 (the largest documented run), about
	// 12,900 rooms within this bound; more need Spec.MaxPacket (load
	// --max-packet).
	DefaultMaxPacket = 128 << 10
)

// MinMaxPacket is the least Spec.MaxPacket: the longest chat indication
// a server sends under the original's limits (room name of 100, user name
// of 20 and text of 200 characters, 3 bytes each) is 977 bytes.
const MinMaxPacket = 1 << 10

// MarkText is the text of every chat Mark sends: "123456789 " six times.
// The swarm sends the same length with numbers in it (see ledger.go).
const MarkText = "123456789 123456789 123456789 123456789 123456789 123456789 "

// Target is the server a run connects to.
type Target struct {
	// Transport is TransportTCP (Addr, host:port), TransportWS (URL,
	// ws://host:port/chat), or a broker's (Addr).
	Transport string
	Addr      string
	URL       string
	// Prefix (brokers) goes before each room's name to make its subject,
	// channel or topic; QoS is MQTT's, 0 or 1.
	Prefix string
	QoS    int
}

// Spec is one run of the swarm: its rooms, its users and what they do.
// The zero value of a field means its default where one is documented.
type Spec struct {
	// Scenario is results.ScenarioTurns (Mark's turn-taking; the default
	// when Pause is 0), results.ScenarioPaced (when Pause > 0) or
	// results.ScenarioChurn.
	Scenario string
	// Rooms are the numbers n of the rooms Room<n> this run holds: a whole
	// step, or one shard's block of it.
	Rooms []int
	// Users per room (at least 2) and Count chats per user (0: no limit;
	// the run ends with Duration).
	Users int
	Count int
	// Pause 0 is Mark's turn-taking; otherwise each user sends one chat
	// every Pause from a random offset in [0, Pause), on a schedule (open
	// loop).
	Pause time.Duration
	// Duration ends a run with Count 0 or with pauses (0: no limit).
	Duration time.Duration
	// Publishers, in a paced run, is how many users of each room send
	// chats, Mark1 to Mark<Publishers>, each every Pause; the others only
	// read (0: every user). One publisher and 19 readers is nats bench's
	// shape (one publisher, 19 subscribers to a subject).
	Publishers int

	// ConnectRate bounds new connections per second (0: unlimited);
	// ConnectConcurrency is how many rooms connect at once.
	ConnectRate        float64
	ConnectConcurrency int
	// StallTimeout fails a room that makes no progress for that long, and
	// bounds every wait of the set-up.
	StallTimeout time.Duration
	// Bind lists source addresses, used round-robin (see ParseBind).
	Bind []string
	// SLO is the p99 delivery latency past which a paced run is broken.
	SLO time.Duration
	// BatchReads (TCP turn-taking on Linux) sets each socket's receive
	// low-water mark to the bytes its user waits for until its turn, so
	// that a user wakes once per turn instead of once per chat: far less
	// client CPU, but the delivery latency is then measured only on the
	// chat that gives its reader the turn, and fan-out not at all.
	BatchReads bool
	// StrictOrder fails a run when any chat reaches a user after a later
	// chat of its room (volanogo serve keeps each room's order; the
	// original server does not: by default reordering is counted and
	// reported, not a failure).
	StrictOrder bool
	// Strict fails a run when a packet from outside it reaches one of its
	// users: another user's chat, entry or exit, a whisper, a beep, a
	// private session, a packet of a kind no run asks for. By default they
	// are counted apart (results.Outside), never a failure.
	Strict bool
	// Seed seeds the random offsets of paced users and the choice of a
	// storm's users (0: from the clock).
	Seed int64

	// A storm (Scenario results.ScenarioStorm) is a paced run in which,
	// StormAt into the timed phase (default: a third of it), StormShare of
	// the users (default all) drop their connections at once and reconnect:
	// each waits a random time up to StormBackoff (doubling at each failed
	// attempt, at most StormBackoffMax) before each attempt.
	StormAt, StormBackoff, StormBackoffMax time.Duration
	StormShare                             float64

	// Engine is EngineGoroutine (the default) or EngineEpoll; Loops is the
	// epoll engine's number of event loops (0: half the processors Go may
	// use, at least one: the other half is left to the server when both
	// share the machine, as on loopback).
	Engine string
	Loops  int

	// MaxPacket is the largest packet a user accepts from the server, in
	// bytes (0: DefaultMaxPacket); a larger one fails the user, naming
	// the bound.
	MaxPacket int
}

// Phase is a stage of a run, as an Observer learns of it.
type Phase int

const (
	// PhaseSetup: the users connect, pass Access and enter their rooms
	// (not timed).
	PhaseSetup Phase = iota
	// PhaseTimed: the timed phase has begun (Mark's start signal).
	PhaseTimed
	// PhaseEnded: the timed phase is over; every chat has arrived (paced:
	// the drain is over) and the users have not yet closed their
	// connections (paced users leave their rooms after it).
	PhaseEnded
)

func (p Phase) String() string {
	switch p {
	case PhaseSetup:
		return "set-up"
	case PhaseTimed:
		return "running"
	case PhaseEnded:
		return "ended"
	}
	return fmt.Sprintf("phase %d", int(p))
}

// Observer learns of a run's phases and decides when its timed phase
// starts. Its methods are called from the goroutine that called Run, in
// order, and must return promptly, except Start.
type Observer interface {
	// Phase is called as the run enters phase ph. p is a live view of the
	// run's progress; it may be read from any goroutine until Run returns.
	Phase(ph Phase, p Progress)
	// Start is called once the set-up is done, and returns the wall-clock
	// time at which the timed phase is to start (the zero time: at once),
	// or an error that calls the run off (another shard failed, say).
	Start(ctx context.Context) (time.Time, error)
}

// Progress is a live view of a run.
type Progress interface {
	Snapshot() Snapshot
}

// Snapshot is a run's progress at one moment.
type Snapshot struct {
	Phase Phase
	// Rooms and RoomsReady: the set-up's progress.
	Rooms, RoomsReady int
	// Open is the connections open now.
	Open int64
	// Sent and Received are the timed phase's chats so far (received:
	// indications); Expected is their total at the end (0 when not known
	// beforehand).
	Sent, Received, Expected int64
}

// ErrAborted is returned by a wait that the run's abort ended.
var errAborted = errors.New("run aborted")

// ConfigError is a Spec or Target the swarm refuses: the one usage error
// type (usage.Error), as the campaign's and the commands' are.
type ConfigError = usage.Error

func cfgErr(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// normalize fills the defaults of s and checks it and t.
func (s *Spec) normalize(t Target) error {
	if s.Users == 0 {
		s.Users = DefaultUsers
	}
	if s.ConnectConcurrency <= 0 {
		s.ConnectConcurrency = DefaultConnectConcurrency
	}
	if s.StallTimeout <= 0 {
		s.StallTimeout = DefaultStallTimeout
	}
	if s.SLO <= 0 {
		s.SLO = DefaultSLO
	}
	if s.MaxPacket == 0 {
		s.MaxPacket = DefaultMaxPacket
	}
	switch s.Scenario {
	case "":
		s.Scenario = results.ScenarioTurns
		if s.Pause > 0 {
			s.Scenario = results.ScenarioPaced
		}
	case results.ScenarioTurns, results.ScenarioPaced:
		if s.Pause > 0 {
			s.Scenario = results.ScenarioPaced
		} else {
			s.Scenario = results.ScenarioTurns
		}
	case results.ScenarioStorm:
		if s.Pause <= 0 {
			return cfgErr("storm: a storm is a paced run: give a pause")
		}
		if s.StormShare == 0 {
			s.StormShare = 1
		}
		if s.StormBackoff <= 0 {
			s.StormBackoff = DefaultStormBackoff
		}
		if s.StormBackoffMax <= 0 {
			s.StormBackoffMax = DefaultStormBackoffMax
		}
		length := s.Duration
		if length <= 0 {
			length = time.Duration(s.Count) * s.Pause
		}
		if s.StormAt <= 0 {
			s.StormAt = length / 3
		}
		switch {
		case s.StormShare < 0 || s.StormShare > 1:
			return cfgErr("storm: the share of users must be between 0 and 1 (%g)", s.StormShare)
		case s.StormAt >= length:
			return cfgErr("storm: at %s, the run is over (it lasts %s)", s.StormAt, length)
		case s.StormBackoffMax < s.StormBackoff:
			return cfgErr("storm: the longest back-off (%s) is shorter than the first (%s)", s.StormBackoffMax, s.StormBackoff)
		}
	case results.ScenarioChurn:
		if s.Count < 1 {
			return cfgErr("churn: count must be at least 1 (sequences per user)")
		}
		if s.Pause > 0 {
			return cfgErr("churn: pause does not apply")
		}
	case results.ScenarioPrivate:
		switch {
		case s.Pause <= 0:
			return cfgErr("private: private chat is paced: give a pause")
		case s.Users%2 != 0:
			return cfgErr("private: users chat in pairs: give an even number of users per room (%d)", s.Users)
		case t.Transport != TransportTCP && t.Transport != TransportWS:
			return cfgErr("private: private sessions are the VOLANO protocol's: not with a broker")
		}
	default:
		return cfgErr("scenario %q is not turns, paced, private, churn or storm", s.Scenario)
	}
	switch {
	case len(s.Rooms) == 0:
		return cfgErr("no rooms")
	case s.Users < 2:
		return cfgErr("users: value must be at least 2 (%d)", s.Users)
	case s.Count < 0:
		return cfgErr("count: value must not be negative (%d)", s.Count)
	case s.Pause < 0:
		return cfgErr("pause: value must not be negative (%s)", s.Pause)
	case s.Count == 0 && s.Duration <= 0:
		return cfgErr("count 0 runs forever: give a duration")
	case s.Publishers != 0 && s.Scenario != results.ScenarioPaced:
		return cfgErr("publishers: paced runs only (a pause; not %s)", s.Scenario)
	case s.Publishers < 0 || s.Publishers > s.Users:
		return cfgErr("publishers: between 1 and the users of a room, %d (%d)", s.Users, s.Publishers)
	case s.ConnectRate < 0:
		return cfgErr("connect rate: must not be negative")
	case s.MaxPacket < MinMaxPacket:
		return cfgErr("max packet: %d bytes is below %d, less than a chat of the longest names and text", s.MaxPacket, MinMaxPacket)
	}
	if _, err := ParseBind(s.Bind); err != nil {
		return &ConfigError{Err: err}
	}
	switch s.Engine {
	case "", EngineGoroutine:
		s.Engine = EngineGoroutine
	case EngineEpoll:
		if s.Loops <= 0 {
			s.Loops = max(1, runtime.GOMAXPROCS(0)/2)
		}
		switch {
		case !evSupported:
			return cfgErr("engine epoll: only on Linux")
		case s.Scenario == results.ScenarioStorm:
			return cfgErr("engine epoll: turns and paced only (a storm's users reconnect in the timed phase, which the loops do not do: it runs on goroutines)")
		case s.Scenario == results.ScenarioChurn:
			return cfgErr("engine epoll: turns and paced only (churn connects and closes users all the time, which the loops do not do: it runs on goroutines)")
		case s.Scenario == results.ScenarioPrivate:
			return cfgErr("engine epoll: turns and paced only (private chat echoes each chat it reads, which the loops do not do: it runs on goroutines)")
		case t.Transport == TransportWS:
			return cfgErr("engine epoll: TCP only (WebSocket runs on goroutines)")
		}
	default:
		return cfgErr("engine %q is not goroutine or epoll", s.Engine)
	}
	if s.Engine != EngineEpoll && s.Loops != 0 {
		return cfgErr("loops: only with engine epoll")
	}
	switch t.Transport {
	case TransportTCP:
		if t.Addr == "" {
			return cfgErr("no server address")
		}
	case TransportWS:
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return cfgErr("%q is not a ws:// or wss:// URL", t.URL)
		}
	case TransportNATS, TransportRedis, TransportMQTT:
		if t.Addr == "" {
			return cfgErr("no broker address")
		}
		if s.BatchReads {
			return cfgErr("batch reads: VOLANO over TCP only (they wait for the sizes of VOLANO packets)")
		}
		if err := (broker.Options{Protocol: t.Transport, Prefix: t.Prefix, QoS: t.QoS}).Check(); err != nil {
			return &ConfigError{Err: err}
		}
	default:
		return cfgErr("transport %q is not tcp, ws, nats, redis or mqtt", t.Transport)
	}
	return nil
}

// publishes reports whether user num (1-based) of a room sends chats.
func (s *Spec) publishes(num int) bool { return s.Publishers == 0 || num <= s.Publishers }

// publishers is how many users of a room send chats.
func (s *Spec) publishers() int {
	if s.Publishers == 0 {
		return s.Users
	}
	return s.Publishers
}

// paced reports whether the spec is a paced run (a storm is one).
func (s *Spec) paced() bool {
	return s.Scenario == results.ScenarioPaced || s.Scenario == results.ScenarioStorm || s.Scenario == results.ScenarioPrivate
}
