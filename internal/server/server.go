// Package server is volanogo's chat server: the VOLANO chat protocol of
// pkg/protocol over TCP and WebSocket, wire-compatible with the original
// VOLANO 2.13.4 server as far as VolanoMark and the protocol sheet see it.
//
// # Model
//
// Rooms are permanent (from the configuration) or dynamic: a dynamic room
// is created by the defaultRoom of an Access request and removed as soon
// as it has neither users nor connections whose Access named it. Users
// enter rooms by name; a connection may be in several rooms.
//
// Each connection has one goroutine that reads and dispatches its packets.
// A packet for others (a chat, say) is relayed by that goroutine itself,
// under the room's lock, straight into each receiver's socket with a
// non-blocking write; whatever the socket does not take at once waits in
// the receiver's own buffer, drained by a short-lived writer goroutine.
// So a room's events reach every member in one order, a member's reaction
// to a message can never overtake the rest of its broadcast, and a slow
// reader never stalls a room: when its waiting bytes pass the send buffer
// it is closed (reason slow_consumer).
//
// That is the goroutine engine, the default. The epoll engine
// (Config.Engine, Linux) serves TCP connections from a few event loops
// instead, with the same handlers and the same relay; see
// engine_epoll_linux.go. The uring engine's loops are io_uring rings, and
// its relay sends each round's bytes for all receivers in one system
// call; see engine_uring_linux.go.
//
// Every protocol violation closes only the connection that made it, and
// is counted by reason in volanogo_connections_closed_total.
//
// # Hostile peers
//
// The defaults bound what one peer can hold or cost (see the Default*
// constants): its Access must arrive within a deadline and a silent client
// is pinged and closed; what waits for it, in the server and in the
// kernel's send buffer, is bounded; its private sessions, the dynamic
// rooms and the room lists it is sent are capped; its requests other than
// chats are paced. No lock shared between clients is held for work that
// grows with one client's input (stall_test.go measures each case), and
// closes and refusals are logged at warn level at most once per reason per
// interval, with a count.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/volanogo/volanogo/internal/sysinfo"
	"github.com/volanogo/volanogo/pkg/protocol"
)

// Defaults, as the original server ships them.
const (
	DefaultListen = ":8000"
	// DefaultMetrics is next to the chat port (8000) rather than on 9090,
	// which is Prometheus's own port and the one exporters collide on.
	DefaultMetrics     = ":8002"
	DefaultRoomLimit   = 25
	DefaultMaxName     = 20
	DefaultMaxRoomName = 100
	DefaultMaxProfile  = 200
	DefaultMaxText     = 200
	DefaultVersion     = "2.13.4"
	// DefaultSendBuffer bounds the bytes waiting for one slow receiver.
	DefaultSendBuffer = 256 << 10
	// DefaultReadBuffer is each connection's initial read buffer; it grows
	// for a larger packet up to MaxPacket.
	DefaultReadBuffer = 512
	// DefaultMaxPacket bounds one packet from a client (Config.MaxPacket)
	// when the name and text limits are the defaults. The largest request
	// those let through is 1,039 bytes (maxRequest: a Whisper of the
	// longest names and text, every character three bytes); a client's
	// Access is a few hundred. A larger packet is refused as soon as its
	// first bytes say it will be (a string's length, an array's count),
	// so that a peer cannot make the server hold, or walk, more than this
	// of a packet no client sends: the 64 KiB packet of 21,840 one-byte
	// strings that an attacker trickles in a few bytes a write is refused
	// at its count, 14 bytes in.
	DefaultMaxPacket = 8 << 10
)

// maxRequest is the largest request a client can send that the name and
// text limits let through, in bytes: a header, a bool and an int32 (a
// Chat's), four strings of up to three bytes a UTF-16 unit (a Whisper's
// room, two names and text; an EnterRoom's profile, room and name fit
// too). The Access and PasswordAccess strings have no limits of their
// own; a client's are short.
func (c *Config) maxRequest() int {
	str := func(units int) int { return 2 + min(3*max(units, 0), 65535) }
	return 6 + 1 + 4 + str(c.MaxRoomName) + 2*str(c.MaxName) + str(max(c.MaxText, c.MaxProfile))
}

// Defaults that protect the server from peers that never speak, speak too
// slowly or ask for too much (README: "Defaults that protect").
const (
	// DefaultAccessTimeout is how long a new connection has to deliver its
	// whole first packet (Access). The original has no separate deadline:
	// its read timeout (server.timeout, 10 minutes as shipped) covers the
	// first read too, so a silent connection waits 10 minutes for a Ping
	// and 20 to be closed. Every client sends Access as soon as it has
	// connected, so 10 seconds is generous even on a loaded machine.
	DefaultAccessTimeout = 10 * time.Second
	// DefaultIdleTimeout is the original's shipped server.timeout: a Ping
	// after 10 minutes without a packet, the close after 20. The slowest
	// documented pace (the light capacity profile: one chat every 10 s)
	// and the longest documented set-up wait (19,000 users ramped in at
	// 100 a second wait up to 190 s for the timed phase) are far inside it.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultPacketTimeout bounds how long a packet may take to arrive
	// once its first bytes have: a client writes each packet whole, and
	// the largest (--max-packet) crosses a 56 kbit/s line in 10 seconds;
	// a peer that trickles one out byte by byte holds a reader and a
	// buffer the while.
	DefaultPacketTimeout = 30 * time.Second
	// DefaultHandshakeTimeout bounds a WebSocket upgrade request, from
	// accept to the end of its headers.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultMaxPrivate is the most private sessions one connection may
	// have opened at once (the original has no limit). A user talks
	// privately with a few others at a time; a room holds 25.
	DefaultMaxPrivate = 32
	// DefaultMaxRooms bounds the dynamic rooms (permanent ones are not
	// counted). The largest documented run needs 10,000 (the heavy
	// capacity profile's last step: 20,000 users, 2 per room); each room
	// costs a few hundred bytes.
	DefaultMaxRooms = 20000
	// DefaultRoomListMax and RoomListMaxBytes bound the room names in an
	// Access confirm and a RoomList confirm: the first ones in creation
	// order (permanent rooms first). The original lists every room, which
	// makes a 100-byte request answerable by megabytes.
	DefaultRoomListMax = 100
	RoomListMaxBytes   = 16 << 10
	// DefaultSocketSendBuffer bounds the kernel's send buffer of each
	// connection (SO_SNDBUF; the kernel doubles it for its bookkeeping).
	// Left to autotuning it grows to tcp_wmem's maximum (4 MB by default),
	// which a client that never reads fills before --send-buffer counts a
	// byte. See bench/server/slow.sh for the measurement behind it.
	DefaultSocketSendBuffer = 64 << 10
	// DefaultRequestRate paces one connection's requests other than chats
	// (per second, with a burst of as many): a user makes a few a minute.
	DefaultRequestRate = 1000
	// DefaultChatRate paces one connection's chats (per second, with a
	// burst of as many). The benchmark's busiest user sends far fewer:
	// README, "Defaults that protect", has the measurements.
	DefaultChatRate = 10000
	// DefaultMaxConnRooms is the most rooms one connection may be in at
	// once: each room a connection is in stays while it does, so one
	// connection could otherwise hold every dynamic room (--max-rooms).
	// VolanoMark's users are in one room each; a person in a few.
	DefaultMaxConnRooms = 32
	// DefaultDrainTimeout bounds a graceful shutdown.
	DefaultDrainTimeout = 10 * time.Second
	// DefaultViolationHold is how long a connection doomed by what it sent
	// (past 16 stray chats, a packet over --max-packet) is held, unread,
	// before its close. An attacker that reconnects as soon as it is
	// closed would otherwise spend the machine's CPU (its own and the
	// server's) on connections, Access and 17 chats at a time, or on the
	// first bytes of packets refused at their count, as fast as it can;
	// held, its writes wait on TCP's flow control and it makes one
	// connection a hold. Ten seconds is what a silent connection is held
	// for (DefaultAccessTimeout), so a held one costs the server no more
	// than a connection that never spoke. Beside 16 attackers writing
	// 64 KiB packets 1-3 bytes a call as fast as they can, an honest room
	// kept 0.49-0.76 of its throughput with a hold of a second and
	// 0.87-1.01 with ten (README, "Defaults that protect"). The original
	// pauses a client for a second after each of several requests (its
	// delay.* settings) for the same reason.
	DefaultViolationHold = 10 * time.Second
)

// Config configures a Server. The zero value of a field means its default;
// for the limits and deadlines that are on by default, Off (-1) turns one
// off.
type Config struct {
	// Listen is the TCP address of the chat port ("" = do not listen).
	Listen string
	// WSListen is the WebSocket address (path /chat); "" = off.
	WSListen string
	// WSOrigins lists the Origin values a browser may connect from; empty
	// allows requests without an Origin header and same-host origins only;
	// "*" allows any.
	WSOrigins []string
	// MetricsListen is the address of /metrics, /healthz and /readyz
	// ("" = off).
	MetricsListen string
	// Rooms are the permanent rooms, in order.
	Rooms []string
	// RoomLimit is the most users in one room.
	RoomLimit int
	// MaxName, MaxRoomName, MaxProfile, MaxText bound the lengths (in UTF-16
	// units, after trimming, as the original measures them).
	MaxName, MaxRoomName, MaxProfile, MaxText int
	// AcceptVersions are the applet versions an Access may carry.
	AcceptVersions []string
	// MaxConnections refuses connections past this many (0 = no limit),
	// once none can be let go to make room (displace.go).
	MaxConnections int
	// AccessTimeout is how long a connection has to deliver its Access
	// (default DefaultAccessTimeout; Off: no deadline).
	AccessTimeout time.Duration
	// IdleTimeout: after this long without a packet the server sends a Ping;
	// after twice this long it closes (default DefaultIdleTimeout; Off:
	// never).
	IdleTimeout time.Duration
	// PacketTimeout: a packet begun after the Access must arrive whole
	// within this long (default DefaultPacketTimeout; Off: no deadline).
	PacketTimeout time.Duration
	// HandshakeTimeout bounds a WebSocket upgrade request (default
	// DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// SendBuffer bounds the bytes waiting to be written to one connection,
	// counting those handed to a write the kernel has not finished taking.
	SendBuffer int
	// SocketSendBuffer sets each TCP connection's kernel send buffer
	// (default DefaultSocketSendBuffer; Off: the kernel autotunes it).
	SocketSendBuffer int
	// MaxPacket bounds one incoming packet: a larger one is refused as
	// soon as its first bytes say it will be larger, and its connection
	// closed (ReasonTooLarge) ViolationHold later, unread meanwhile.
	// Default: DefaultMaxPacket, or twice the largest request the name and
	// text limits allow if that is more; it may not be less than that
	// request.
	MaxPacket int
	// MaxPrivate is the most private sessions one connection may have
	// opened and not yet closed (default DefaultMaxPrivate; Off: no limit).
	MaxPrivate int
	// MaxRooms is the most dynamic rooms at once (default DefaultMaxRooms;
	// Off: no limit). Past it an Access is still accepted but its room is
	// not created, as the original does with dynamic rooms turned off.
	MaxRooms int
	// RoomListMax is the most room names in an Access or RoomList confirm
	// (default DefaultRoomListMax); the names also stop at RoomListMaxBytes.
	RoomListMax int
	// RequestRate paces each connection's requests other than chats, per
	// second, with a burst of as many (default DefaultRequestRate; Off: no
	// pacing).
	RequestRate int
	// ChatRate paces each connection's chats, per second, with a burst of
	// as many (default DefaultChatRate; Off: no pacing).
	ChatRate int
	// MaxConnRooms is the most rooms one connection may be in at once;
	// an EnterRoom past it is answered ROOM_FULL (default
	// DefaultMaxConnRooms; Off: no limit).
	MaxConnRooms int
	// DrainTimeout bounds Drain (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// ViolationHold is how long a TCP connection doomed by what it sent is
	// held unread before its close (default DefaultViolationHold; Off:
	// closed at once). Drain and Shutdown end the hold. A WebSocket
	// connection is closed at once (a new one costs a handshake).
	ViolationHold time.Duration
	// LogInterval is the period of the warnings about closed connections:
	// one line per reason per interval, with a count (default 10 s).
	LogInterval time.Duration
	// Engine serves the TCP chat connections: EngineGoroutine (default: a
	// goroutine per connection), EngineEpoll (Linux: a few event loops,
	// no goroutine per connection), EngineURing (Linux: a few io_uring
	// rings; Start fails if the kernel refuses them) or EngineAuto (uring,
	// else epoll, else goroutine; Server.Engine tells which). WebSocket
	// connections are served by goroutines on every engine.
	Engine string
	// Loops is the epoll and uring engines' event loops (default: one
	// per processor; GOMAXPROCS is raised to the loops plus one while
	// they run).
	Loops int
	// LoopFill is how many connections a loop of the epoll and uring
	// engines takes before new ones go to the next loop; once every loop
	// has that many, each goes to the loop with the fewest. 1 spreads
	// them evenly (the epoll engine's default); the uring engine's
	// default, 8192, keeps a server of fewer connections on one ring,
	// whose rounds then carry more of each chat's sends.
	LoopFill int
	// Coalesce (the epoll engine) is how long a loop waits, after a round
	// of few events, before it looks for more: the events of that time
	// then come in one wake-up, as a network card's interrupt moderation
	// batches packets. It trades up to that much delivery latency for
	// fewer wake-ups when chats arrive one at a time (paced runs). 0 (the
	// default): no wait, each round follows the last at once.
	Coalesce time.Duration
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Registry receives the server's metrics; nil creates a private one.
	Registry *prometheus.Registry
}

// MaxCoalesce bounds Config.Coalesce: a loop's wait for more events
// delays every delivery by up to as much.
const MaxCoalesce = 10 * time.Millisecond

// Off turns off a limit or deadline of Config that is on by default.
const Off = -1

func defaultInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

func defaultDuration(v *time.Duration, d time.Duration) {
	if *v == 0 {
		*v = d
	}
}

func (c *Config) setDefaults() {
	defaultInt(&c.RoomLimit, DefaultRoomLimit)
	defaultInt(&c.MaxName, DefaultMaxName)
	defaultInt(&c.MaxRoomName, DefaultMaxRoomName)
	defaultInt(&c.MaxProfile, DefaultMaxProfile)
	defaultInt(&c.MaxText, DefaultMaxText)
	if len(c.AcceptVersions) == 0 {
		c.AcceptVersions = []string{DefaultVersion}
	}
	defaultInt(&c.SendBuffer, DefaultSendBuffer)
	defaultInt(&c.SocketSendBuffer, DefaultSocketSendBuffer)
	defaultInt(&c.MaxPacket, max(DefaultMaxPacket, 2*c.maxRequest()))
	defaultInt(&c.MaxPrivate, DefaultMaxPrivate)
	defaultInt(&c.MaxRooms, DefaultMaxRooms)
	defaultInt(&c.RoomListMax, DefaultRoomListMax)
	defaultInt(&c.RequestRate, DefaultRequestRate)
	defaultInt(&c.ChatRate, DefaultChatRate)
	defaultInt(&c.MaxConnRooms, DefaultMaxConnRooms)
	defaultDuration(&c.AccessTimeout, DefaultAccessTimeout)
	defaultDuration(&c.PacketTimeout, DefaultPacketTimeout)
	defaultDuration(&c.IdleTimeout, DefaultIdleTimeout)
	defaultDuration(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	defaultDuration(&c.DrainTimeout, DefaultDrainTimeout)
	defaultDuration(&c.ViolationHold, DefaultViolationHold)
	defaultDuration(&c.LogInterval, 10*time.Second)
	if c.Engine == "" {
		c.Engine = EngineGoroutine
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
}

// ConfigError is a Config field out of its range: the one place the
// server's settings are checked (volanogo serve's flags map to it).
type ConfigError struct {
	Field string // the Config field, as in Go: "RoomLimit"
	Value any    // what it was
	Want  string // what it must be: "must be positive"
}

func (e *ConfigError) Error() string {
	if s, ok := e.Value.(string); ok {
		return fmt.Sprintf("%s %s (got %q)", e.Field, e.Want, s)
	}
	return fmt.Sprintf("%s %s (got %v)", e.Field, e.Want, e.Value)
}

func (c *Config) check() error {
	// Limits that cannot be off (Off, or any other negative value).
	for _, v := range []struct {
		field string
		v     int
	}{{"RoomLimit", c.RoomLimit}, {"MaxName", c.MaxName}, {"MaxRoomName", c.MaxRoomName},
		{"MaxProfile", c.MaxProfile}, {"MaxText", c.MaxText}, {"SendBuffer", c.SendBuffer}, {"MaxPacket", c.MaxPacket},
		{"RoomListMax", c.RoomListMax}} {
		if v.v < 0 {
			return &ConfigError{v.field, v.v, "must be positive"}
		}
	}
	if n := c.maxRequest(); c.MaxPacket < n {
		return &ConfigError{"MaxPacket", c.MaxPacket, fmt.Sprintf("must hold the largest request the name and text limits allow, %d bytes", n)}
	}
	// Limits that are on by default and Off turns off; 0 is no limit.
	for _, v := range []struct {
		field string
		v     int
	}{{"MaxPrivate", c.MaxPrivate}, {"MaxRooms", c.MaxRooms}, {"SocketSendBuffer", c.SocketSendBuffer},
		{"RequestRate", c.RequestRate}, {"ChatRate", c.ChatRate}, {"MaxConnRooms", c.MaxConnRooms}} {
		if v.v < Off {
			return &ConfigError{v.field, v.v, "must not be negative"}
		}
	}
	for _, v := range []struct {
		field string
		v     int
	}{{"MaxConnections", c.MaxConnections}, {"Loops", c.Loops}, {"LoopFill", c.LoopFill}} {
		if v.v < 0 {
			return &ConfigError{v.field, v.v, "must not be negative"}
		}
	}
	for _, v := range []struct {
		field string
		v     time.Duration
	}{{"AccessTimeout", c.AccessTimeout}, {"IdleTimeout", c.IdleTimeout}, {"PacketTimeout", c.PacketTimeout}, {"ViolationHold", c.ViolationHold}} {
		if v.v < Off {
			return &ConfigError{v.field, v.v, "must not be negative"}
		}
	}
	for _, v := range []struct {
		field string
		v     time.Duration
	}{{"HandshakeTimeout", c.HandshakeTimeout}, {"DrainTimeout", c.DrainTimeout}, {"LogInterval", c.LogInterval}} {
		if v.v < 0 {
			return &ConfigError{v.field, v.v, "must be positive"}
		}
	}
	if err := checkEngine(c.Engine); err != nil {
		return &ConfigError{"Engine", c.Engine, err.Error()}
	}
	switch {
	case c.Coalesce < 0 || c.Coalesce > MaxCoalesce:
		return &ConfigError{"Coalesce", c.Coalesce, fmt.Sprintf("must be between 0 and %v", MaxCoalesce)}
	case c.Coalesce > 0 && c.Engine != EngineEpoll:
		return &ConfigError{"Coalesce", c.Coalesce, "applies to the epoll engine only (engine " + c.Engine + ")"}
	}
	seen := map[string]bool{}
	for _, r := range c.Rooms {
		if r == "" {
			return errors.New("a permanent room name is empty")
		}
		if seen[r] {
			return fmt.Errorf("permanent room %q is given twice", r)
		}
		if n := protocol.UTF16Len(mustEncode(r)); n > c.MaxRoomName {
			return fmt.Errorf("permanent room %q is longer than the room name limit (%d > %d)", r, n, c.MaxRoomName)
		}
		seen[r] = true
	}
	return nil
}

// Server is a chat server. Create it with New, start it with Start, stop
// it with Drain (gracefully) or Shutdown.
type Server struct {
	cfg      Config
	log      *slog.Logger
	counters *counters
	warn     *warner
	versions map[string]bool

	mu        sync.Mutex // guards the fields down to httpSrvs
	rooms     map[string]*room
	roomOrder []*room
	dynamic   int        // dynamic rooms in rooms
	list      *roomList  // the bounded list of Access confirms; nil when stale
	index     *roomIndex // roomOrder as of the last change, for filtered RoomLists; nil when stale
	conns     map[*conn]struct{}
	closing   bool
	listeners []net.Listener
	metricsLn net.Listener // among listeners; kept open by a drain
	httpSrvs  []*http.Server

	nextPriv atomic.Int32
	privMu   sync.Mutex // guards privates; held only for O(1) work
	privates map[int32]*private

	tcpAddr  net.Addr
	wsAddr   net.Addr
	metrAddr net.Addr

	chatListeners atomic.Int32 // TCP accept loops running
	reserves      atomic.Int32 // reserve descriptors they hold
	draining      atomic.Bool
	stopping      chan struct{} // closed when Drain or Shutdown begins: held connections are let go
	stopOnce      sync.Once

	wg         sync.WaitGroup // accept loops, HTTP servers and connections
	eng        ioEngine       // the event-loop engine, once started (nil: goroutines); guarded by mu
	engine     string         // the engine in use, once Start or ServeTCP resolved it; guarded by mu
	lastEMFILE atomic.Int64   // unix nanos of the last "out of descriptors" log line
	lastRoom   atomic.Int64   // unix nanos of the last makeRoom scan

	// testHookTracked, when set, runs between a connection's tracking and
	// its hand-over to its engine (tests force a close into that window).
	testHookTracked atomic.Pointer[func(*conn)]
}

// New checks cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		counters: newCounters(),
		versions: map[string]bool{},
		rooms:    map[string]*room{},
		conns:    map[*conn]struct{}{},
		privates: map[int32]*private{},
		stopping: make(chan struct{}),
	}
	s.warn = newWarner(s.log, cfg.LogInterval)
	for _, v := range cfg.AcceptVersions {
		s.versions[v] = true
	}
	for _, name := range cfg.Rooms {
		s.addRoomLocked(name, true, "")
	}
	if err := s.counters.register(cfg.Registry, s.Engine, s.loopConns, cfg.Coalesce); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return s, nil
}

// Engine is the engine serving TCP connections: EngineGoroutine,
// EngineEpoll or EngineURing, once Start or ServeTCP has started it
// (EngineAuto resolved, a fallback applied); Config.Engine before.
func (s *Server) Engine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engine == "" {
		return s.cfg.Engine
	}
	return s.engine
}

// Registry is the server's private Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.cfg.Registry }

// Start opens the configured listeners and starts serving them. It
// returns once every listener is open and the chat listener's reserve
// descriptor is held, so that a server reported ready can answer at the
// open-files limit.
func (s *Server) Start() error {
	fail := func(err error) error {
		s.closeListeners()
		s.stopEngine()
		s.warn.stop()
		return err
	}
	if s.cfg.Listen != "" {
		if err := s.resolveEngine(); err != nil {
			return fail(err)
		}
		ln, err := net.Listen("tcp", s.cfg.Listen)
		if err != nil {
			return fail(fmt.Errorf("chat listener: %w", err))
		}
		s.tcpAddr = ln.Addr()
		s.ServeTCP(ln)
	}
	if s.cfg.WSListen != "" {
		ln, err := net.Listen("tcp", s.cfg.WSListen)
		if err != nil {
			return fail(fmt.Errorf("websocket listener: %w", err))
		}
		s.wsAddr = ln.Addr()
		s.serveHTTP(&handshakeListener{Listener: ln, s: s}, s.wsMux())
	}
	if s.cfg.MetricsListen != "" {
		ln, err := net.Listen("tcp", s.cfg.MetricsListen)
		if err != nil {
			return fail(fmt.Errorf("metrics listener: %w", err))
		}
		s.metrAddr = ln.Addr()
		// its own reserve of descriptors: the probes and the scrape of a
		// server at its open-files limit are answered
		rl := &reserveListener{Listener: ln}
		rl.fill()
		mux := http.NewServeMux()
		mux.Handle("/metrics", rl.withReserve(s.MetricsHandler()))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "ok\n")
		})
		mux.HandleFunc("/readyz", s.serveReady)
		s.serveHTTP(rl, mux)
		s.mu.Lock()
		s.metricsLn = rl // open until Shutdown, so that /readyz can say "draining"
		s.mu.Unlock()
	}
	return nil
}

// Ready tells whether the server takes new users: it is listening, every
// chat listener holds its reserve descriptor, it has not refused a
// connection for want of descriptors in the last outOfFilesReady, and it
// is not draining. The reason says what is missing.
func (s *Server) Ready() (bool, string) {
	s.mu.Lock()
	closing, listening := s.closing, len(s.listeners) > 0 && !(len(s.listeners) == 1 && s.metricsLn != nil)
	s.mu.Unlock()
	switch {
	case s.draining.Load() || closing:
		return false, "draining"
	case !listening:
		return false, "not listening"
	case s.reserves.Load() < s.chatListeners.Load():
		return false, "no reserve descriptor (out of open files)"
	case time.Now().UnixNano()-s.lastEMFILE.Load() < int64(outOfFilesReady):
		return false, "out of open files: new connections are refused"
	}
	return true, "ready"
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	ok, why := s.Ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = io.WriteString(w, why+"\n")
}

// MetricsHandler serves the server's metrics in the Prometheus format.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
	})
}

func (s *Server) serveHTTP(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: s.cfg.HandshakeTimeout, IdleTimeout: s.cfg.HandshakeTimeout,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug), ConnContext: withHandshakeConn}
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.httpSrvs = append(s.httpSrvs, srv)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// Addr is the chat listener's address (nil before Start or when off).
func (s *Server) Addr() net.Addr { return s.tcpAddr }

// WSAddr is the WebSocket listener's address.
func (s *Server) WSAddr() net.Addr { return s.wsAddr }

// MetricsAddr is the metrics listener's address.
func (s *Server) MetricsAddr() net.Addr { return s.metrAddr }

// Drain stops the server gracefully: it stops accepting (and /readyz says
// so), lets each connection's queued packets go out, then closes it with
// a FIN (a WebSocket with a going-away close message) and waits for the
// client to close, all within the drain timeout or ctx, whichever is
// sooner; connections still open then are closed at once.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	s.endHolds()
	s.closeChatListeners()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.closeAfterReply(ReasonShutdown)
		c.wakeReader()
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		s.waitConns()
		close(done)
	}()
	select {
	case <-done:
	case <-dctx.Done():
		s.log.Warn("drain timed out: closing the remaining connections", "open", s.counters.open.Load())
	}
	sctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	return s.Shutdown(sctx)
}

// waitConns waits until no connection is open (Drain's wait: the wait
// group also counts the listeners, which Drain leaves to Shutdown).
func (s *Server) waitConns() {
	for s.counters.open.Load() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

// Shutdown stops accepting, closes every connection and waits for the
// server's goroutines to end, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.endHolds()
	s.closeListeners()
	s.mu.Lock()
	s.closing = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	srvs := s.httpSrvs
	s.mu.Unlock()
	for _, srv := range srvs {
		_ = srv.Close()
	}
	for _, c := range conns {
		c.close(ReasonShutdown)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	defer s.warn.stop()
	select {
	case <-done:
		s.stopEngine()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: %w", ctx.Err())
	}
}

// closeChatListeners closes the chat and WebSocket listeners, leaving the
// metrics listener open.
func (s *Server) closeChatListeners() {
	s.mu.Lock()
	var lns []net.Listener
	keep := s.listeners[:0:0]
	for _, ln := range s.listeners {
		if ln == s.metricsLn {
			keep = append(keep, ln)
		} else {
			lns = append(lns, ln)
		}
	}
	s.listeners = keep
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	lns := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// ServeTCP serves chat connections from ln until it is closed. It returns
// once the listener's reserve descriptor is open; the listener is closed
// by Shutdown.
func (s *Server) ServeTCP(ln net.Listener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	if s.tcpAddr == nil {
		s.tcpAddr = ln.Addr()
	}
	s.mu.Unlock()
	a := &acceptor{s: s, ln: ln}
	if err := s.resolveEngine(); err != nil {
		s.log.Error("cannot start the engine, serving with goroutines", "engine", s.cfg.Engine, "err", err)
	}
	a.accept = s.engineAccept(ln)
	a.holdReserve()
	s.chatListeners.Add(1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.chatListeners.Add(-1)
		a.loop()
	}()
}

// acceptor is one chat listener's accept loop and its reserve descriptor:
// one descriptor held back so that at the open-files limit the loop can
// still accept a waiting connection and close it, rather than leave its
// client waiting in the backlog.
type acceptor struct {
	s       *Server
	ln      net.Listener
	accept  func() (net.Conn, error) // ln.Accept, or the engine's
	reserve *os.File
}

// holdReserve opens the reserve descriptor if it is not held. Every pass
// of the loop calls it, so that the reserve comes back as soon as a
// descriptor is free again.
func (a *acceptor) holdReserve() {
	if a.reserve != nil {
		return
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		return
	}
	a.reserve = f
	a.s.reserves.Add(1)
}

func (a *acceptor) releaseReserve() {
	if a.reserve == nil {
		return
	}
	_ = a.reserve.Close()
	a.reserve = nil
	a.s.reserves.Add(-1)
}

func (a *acceptor) loop() {
	s := a.s
	defer a.releaseReserve()
	for {
		a.holdReserve()
		nc, err := a.accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if nc = a.acceptFailed(err); nc == nil {
				continue
			}
		}
		// At the limit, a connection let go by makeRoom makes room for
		// this one (the open count falls as the loops close them).
		if s.cfg.MaxConnections > 0 && s.counters.open.Load() >= int64(s.cfg.MaxConnections) && s.makeRoom() == 0 {
			s.refuse(ReasonMaxConns, nc.RemoteAddr().String())
			_ = nc.Close()
			continue
		}
		if tc, ok := nc.(interface {
			SetNoDelay(bool) error
			SetWriteBuffer(int) error
		}); ok {
			_ = tc.SetNoDelay(true)
			if s.cfg.SocketSendBuffer > 0 {
				_ = tc.SetWriteBuffer(s.cfg.SocketSendBuffer)
			}
		}
		s.counters.accepted[0].Add(1)
		c, err := newTCPConn(s, nc)
		if err != nil {
			_ = nc.Close()
			s.log.Warn("set up connection", "err", err)
			continue
		}
		if !s.track(c) {
			c.closeSilently()
			s.counters.closed[ReasonShutdown].Add(1) // accepted, and closed
			return
		}
		if h := s.testHookTracked.Load(); h != nil {
			(*h)(c)
		}
		s.serveConn(c)
	}
}

// acceptFailed deals with a failed accept; at the open-files limit it
// may accept a waiting connection itself, and returns it when it is to be
// served after all.
func (a *acceptor) acceptFailed(err error) net.Conn {
	s := a.s
	kind := "other"
	switch {
	case errors.Is(err, syscall.EMFILE):
		kind = "emfile"
	case errors.Is(err, syscall.ENFILE):
		kind = "enfile"
	}
	s.counters.acceptErrors[kind].Add(1)
	if kind == "other" {
		s.log.Warn("accept failed", "err", err)
		time.Sleep(5 * time.Millisecond)
		return nil
	}
	s.logOutOfFiles(err)
	if s.makeRoom() > 0 {
		// The next pass accepts the waiting client, once the
		// connections let go have given their descriptors back.
		waitForDescriptor()
		return nil
	}
	if a.reserve == nil {
		time.Sleep(10 * time.Millisecond)
		return nil
	}
	// Give a waiting client an answer now rather than leave it in the
	// backlog: free the reserved descriptor, accept, close. The next pass
	// takes the reserve back. Linux fails accept with EMFILE before it
	// looks for a connection, so there may be none: this accept must not
	// wait, or it would refuse the first client to come after descriptors
	// are free again.
	a.releaseReserve()
	dl, canPoll := a.ln.(interface{ SetDeadline(time.Time) error })
	if !canPoll {
		return nil
	}
	_ = dl.SetDeadline(time.Now().Add(time.Millisecond))
	nc, err := a.ln.Accept()
	_ = dl.SetDeadline(time.Time{})
	if err != nil {
		time.Sleep(10 * time.Millisecond) // nobody waiting: do not spin
		return nil
	}
	// Descriptors may have been freed since accept failed (the accept
	// above can outlast its millisecond on a busy machine, and the client
	// may have come after the shortage): if the reserve can be taken back,
	// there is room, and this connection is served (by a goroutine on
	// every engine, as one that finds no descriptor to spare), not
	// refused.
	a.holdReserve()
	if a.reserve != nil {
		return nc
	}
	s.refuse(ReasonOpenFiles, nc.RemoteAddr().String())
	_ = nc.Close()
	return nil
}

func (s *Server) logOutOfFiles(err error) {
	now := time.Now().UnixNano()
	last := s.lastEMFILE.Load()
	if now-last < int64(time.Second) || !s.lastEMFILE.CompareAndSwap(last, now) {
		return
	}
	soft, hard := sysinfo.OpenFilesLimit()
	s.log.Error("out of file descriptors: refusing new connections, existing ones are still served",
		"err", err, "open_files_soft_limit", soft, "open_files_hard_limit", hard,
		"connections_open", s.counters.open.Load(),
		"remedy", "raise the limit (ulimit -n, systemd LimitNOFILE, or the container runtime's nofile) or spread the load over more server processes")
}

// refuse counts a connection refused at accept.
func (s *Server) refuse(reason, remote string) {
	s.counters.refused[reason].Add(1)
	if reason != ReasonOpenFiles { // logged by logOutOfFiles
		s.warn.note("refused", reason, remote, "")
	}
}

// track registers a new connection; false when the server is closing.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.draining.Load() {
		return false
	}
	c.born = time.Now().UnixNano()
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.counters.open.Add(1)
	return true
}

// untrack forgets a closed connection and counts its close: the open
// gauge falls before the close is counted, so that whoever sees the count
// also sees the gauge.
func (s *Server) untrack(c *conn, reason string) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if c.status.And(^uint32(connHeld))&connHeld != 0 {
		s.counters.held.Add(-1)
	}
	s.counters.open.Add(-1)
	if v, ok := s.counters.closed[reason]; ok {
		v.Add(1)
	}
	if warnReasons[reason] {
		s.warn.note("closed", reason, c.remote, c.detail)
	}
	s.wg.Done()
}
