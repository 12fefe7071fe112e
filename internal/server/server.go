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
// Every protocol violation closes only the connection that made it, and
// is counted by reason in volanogo_connections_closed_total.
package server

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/volanogo/volanogo/pkg/protocol"
)

// Defaults, as the original server ships them.
const (
	DefaultListen      = ":8000"
	DefaultMetrics     = ":9090"
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
)

// Config configures a Server. The zero value of a field means its default.
type Config struct {
	// Listen is the TCP address of the chat port ("" = do not listen).
	Listen string
	// WSListen is the WebSocket address (path /chat); "" = off.
	WSListen string
	// WSOrigins lists the Origin values a browser may connect from; empty
	// allows requests without an Origin header and same-host origins only;
	// "*" allows any.
	WSOrigins []string
	// MetricsListen is the Prometheus address (path /metrics); "" = off.
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
	// MaxConnections refuses connections past this many (0 = no limit).
	MaxConnections int
	// IdleTimeout: after this long without a packet the server sends a Ping;
	// after twice this long it closes (0 = never).
	IdleTimeout time.Duration
	// SendBuffer bounds the bytes waiting to be written to one connection.
	SendBuffer int
	// MaxPacket bounds one incoming packet (default protocol.DefaultMaxPacket).
	MaxPacket int
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Registry receives the server's metrics; nil creates a private one.
	Registry *prometheus.Registry
}

func (c *Config) setDefaults() {
	if c.RoomLimit == 0 {
		c.RoomLimit = DefaultRoomLimit
	}
	if c.MaxName == 0 {
		c.MaxName = DefaultMaxName
	}
	if c.MaxRoomName == 0 {
		c.MaxRoomName = DefaultMaxRoomName
	}
	if c.MaxProfile == 0 {
		c.MaxProfile = DefaultMaxProfile
	}
	if c.MaxText == 0 {
		c.MaxText = DefaultMaxText
	}
	if len(c.AcceptVersions) == 0 {
		c.AcceptVersions = []string{DefaultVersion}
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = DefaultSendBuffer
	}
	if c.MaxPacket == 0 {
		c.MaxPacket = protocol.DefaultMaxPacket
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
}

func (c *Config) check() error {
	for _, v := range []struct {
		name string
		v    int
	}{{"room limit", c.RoomLimit}, {"max name", c.MaxName}, {"max room name", c.MaxRoomName},
		{"max profile", c.MaxProfile}, {"max text", c.MaxText}, {"send buffer", c.SendBuffer}, {"max packet", c.MaxPacket}} {
		if v.v < 0 {
			return fmt.Errorf("%s must not be negative (got %d)", v.name, v.v)
		}
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("max connections must not be negative (got %d)", c.MaxConnections)
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("idle timeout must not be negative (got %v)", c.IdleTimeout)
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

// Server is a chat server. Create it with New, start it with Start (or
// Run), stop it with Shutdown.
type Server struct {
	cfg      Config
	log      *slog.Logger
	counters *counters
	versions map[string]bool

	mu        sync.Mutex // guards rooms, roomOrder, conns, listeners, closing
	rooms     map[string]*room
	roomOrder []*room
	conns     map[*conn]struct{}
	closing   bool
	nextPriv  atomic.Int32
	privMu    sync.Mutex
	privates  map[int32]*private
	listeners []net.Listener
	httpSrvs  []*http.Server
	tcpAddr   net.Addr
	wsAddr    net.Addr
	metrAddr  net.Addr

	wg         sync.WaitGroup // accept loops and connections
	lastEMFILE atomic.Int64   // unix nanos of the last "out of descriptors" log line
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
	}
	for _, v := range cfg.AcceptVersions {
		s.versions[v] = true
	}
	for _, name := range cfg.Rooms {
		s.addRoomLocked(name, true, "")
	}
	if err := s.counters.register(cfg.Registry); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return s, nil
}

// Registry is the server's private Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.cfg.Registry }

// Start opens the configured listeners and starts serving them. It
// returns once every listener is open.
func (s *Server) Start() error {
	fail := func(err error) error {
		s.closeListeners()
		return err
	}
	if s.cfg.Listen != "" {
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
		mux := http.NewServeMux()
		mux.Handle("/chat", s.WebSocketHandler())
		s.serveHTTP(ln, mux)
	}
	if s.cfg.MetricsListen != "" {
		ln, err := net.Listen("tcp", s.cfg.MetricsListen)
		if err != nil {
			return fail(fmt.Errorf("metrics listener: %w", err))
		}
		s.metrAddr = ln.Addr()
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.MetricsHandler())
		s.serveHTTP(ln, mux)
	}
	return nil
}

// MetricsHandler serves the server's metrics in the Prometheus format.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
	})
}

func (s *Server) serveHTTP(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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

// Run starts the server, serves until ctx is done, then shuts down,
// giving connections up to five seconds to close.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Shutdown(sctx)
}

// Shutdown stops accepting, closes every connection and waits for the
// server's goroutines to end, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error {
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
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: %w", ctx.Err())
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
// at once; the listener is closed by Shutdown.
func (s *Server) ServeTCP(ln net.Listener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	if s.tcpAddr == nil {
		s.tcpAddr = ln.Addr()
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ln)
	}()
}

func (s *Server) acceptLoop(ln net.Listener) {
	reserve := openReserve()
	defer func() {
		if reserve != nil {
			reserve.Close()
		}
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
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
				continue
			}
			s.logOutOfFiles(err)
			// Give the waiting client an answer now rather than leave it in
			// the backlog: free the reserved descriptor, accept, close.
			if reserve != nil {
				reserve.Close()
				reserve = nil
				if c2, err2 := ln.Accept(); err2 == nil {
					s.counters.refused[ReasonOpenFiles].Add(1)
					_ = c2.Close()
				}
				reserve = openReserve()
			}
			if reserve == nil {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		if s.cfg.MaxConnections > 0 && s.counters.open.Load() >= int64(s.cfg.MaxConnections) {
			s.counters.refused[ReasonMaxConns].Add(1)
			_ = nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
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
			return
		}
		go c.serve()
	}
}

// openReserve holds one descriptor back so that the server can still
// accept-and-close when it runs out.
func openReserve() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
}

func (s *Server) logOutOfFiles(err error) {
	now := time.Now().UnixNano()
	last := s.lastEMFILE.Load()
	if now-last < int64(time.Second) || !s.lastEMFILE.CompareAndSwap(last, now) {
		return
	}
	soft, hard := openFilesLimit()
	s.log.Error("out of file descriptors: refusing new connections, existing ones are still served",
		"err", err, "open_files_soft_limit", soft, "open_files_hard_limit", hard,
		"connections_open", s.counters.open.Load(),
		"remedy", "raise the limit (ulimit -n, systemd LimitNOFILE, or the container runtime's nofile) or spread the load over more server processes")
}

// track registers a new connection; false when the server is closing.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
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
	s.counters.open.Add(-1)
	if v, ok := s.counters.closed[reason]; ok {
		v.Add(1)
	}
	s.wg.Done()
}
