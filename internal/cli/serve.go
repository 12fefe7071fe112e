package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/server"
)

func init() { register(newServeCmd) }

type serveOptions struct {
	listen, wsListen, metricsListen string
	rooms                           []string
	roomsFile                       string
	roomLimit                       int
	maxName, maxRoomName            int
	maxProfile, maxText             int
	acceptVersions                  []string
	maxConnections                  int
	accessTimeout, idleTimeout      time.Duration
	packetTimeout, violationHold    time.Duration
	handshakeTimeout, drainTimeout  time.Duration
	sendBuffer, socketSendBuffer    int
	maxPacket                       int
	maxPrivate, maxRooms            int
	roomListMax, requestRate        int
	chatRate, maxConnRooms          int
	wsOrigins                       []string
	logLevel                        string
	engine                          string
	loops                           int
	loopFill                        int
	coalesce                        time.Duration
}

func newServeCmd(io *IO) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the chat server (the system under test)",
		Long: `Run volanogo's chat server: the VOLANO chat protocol over TCP, wire-compatible
with the original VOLANO 2.13.4 server, so that the original VolanoMark client
(java COM.volano.Mark) can measure it; the same packets over WebSocket (one
packet per binary message, path /chat); Prometheus metrics on /metrics, with
/healthz (the process is alive) and /readyz (listening, holding its reserve
descriptor, not draining) beside them. The metrics port defaults to 8002, next
to the chat port, rather than 9090: that is Prometheus's own port, where
exporters collide.

Defaults that protect (0 turns a timeout or limit off): a connection must
deliver its Access within --access-timeout (10s); a client silent for
--idle-timeout (10m, the original's shipped server.timeout) gets a Ping and is
closed one more timeout later; a packet, once begun, must arrive whole
within --packet-timeout (30s); at most --max-private private sessions opened
per connection (32) and --max-rooms dynamic rooms (20000); one connection
may be in at most --max-conn-rooms rooms (32); room lists carry at most
--room-list-max names (100) and 16 KiB; requests other than chats are paced
to --request-rate (1000 a second) per connection, chats to --chat-rate
(10000 a second); a connection that sends more than 16 chats to rooms it is
not in (they are dropped, as the original drops them) or a packet over
--max-packet (8 KiB) is held unread for --violation-hold (10s, what a
silent connection gets), then closed, so that an attacker that reconnects
at once waits instead of spinning. Closes for
bad input, floods and limits are logged at warn level, one line per reason
per 10 seconds with a count.

Engines (--engine): goroutine (the default) serves each TCP connection with
its own goroutine; epoll (Linux) serves them from a few event loops
(--loops; by default one per processor), each waiting
in epoll_wait, with no goroutine per connection: the same relay order, send
buffer, slow-consumer close, limits, deadlines and metrics, in less memory
per connection. uring (Linux 5.11 or later) serves them from io_uring rings
instead, one per loop: receives complete without a readiness report, and
the chats of a round go to all of their rooms in one system call; a ring
takes 8192 connections before the next gets any (--loop-fill), so that a
small server's rounds stay on one ring; if the kernel refuses
io_uring (too old, sysctl kernel.io_uring_disabled, a seccomp filter) serve
fails at start and says why. auto takes uring if it starts, else epoll,
else goroutine, and logs which and why. WebSocket connections are always
served by goroutines, whatever the engine. --coalesce (epoll only, off by
default) makes a loop that woke for few events sleep that long before it
looks for more, as a network card's interrupt moderation: when chats arrive
one at a time (paced runs) they are then taken several to a wake-up, for up
to that much more latency; the metrics say it (volanogo_server_coalesce_seconds)
and volanogo load records it with each run.

Rooms are permanent (--room, --rooms-file) or dynamic: a dynamic room is
created by the default room of a client's Access request and removed as soon
as nobody is in it. VolanoMark needs no configuration: each of its rooms is
created this way.

Once listening it prints one line on stdout:
  volanogo serve listening: chat=ADDR ws=ADDR metrics=ADDR
and logs to stderr. SIGINT or SIGTERM drains it: it stops accepting, lets each
connection's queued packets go out, closes it cleanly (FIN; a WebSocket gets a
going-away close) and gives each client a second to have its packets and close;
the whole drain lasts at most --drain-timeout, then it exits 0. A second signal
ends it at once.`,
		Example: `  # The server of the Volano Report's loopback test
  volanogo serve

  # The three sample rooms of the original server, WebSocket on :8080
  volanogo serve --room "Sample Permanent Room A" \
      --room "Sample Permanent Room B" --room "Sample Permanent Room C" \
      --ws-listen :8080

  # Refuse connections past 10,000; ping clients idle for 2 minutes
  volanogo serve --max-connections 10000 --idle-timeout 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := noNegativeFlags(cmd.Flags()); err != nil {
				return err
			}
			return serveRun(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", server.DefaultListen, "TCP address of the chat port")
	f.StringVar(&o.wsListen, "ws-listen", "", "address of the WebSocket listener, path /chat (empty: off)")
	f.StringVar(&o.metricsListen, "metrics-listen", server.DefaultMetrics, "address of /metrics, /healthz and /readyz (empty: off)")
	f.StringArrayVar(&o.rooms, "room", nil, "a permanent room (repeatable)")
	f.StringVar(&o.roomsFile, "rooms-file", "", "file of permanent rooms, one per line (blank lines and lines starting with # are skipped)")
	f.IntVar(&o.roomLimit, "room-limit", server.DefaultRoomLimit, "most users in one room")
	f.IntVar(&o.maxName, "max-name", server.DefaultMaxName, "longest user name, in UTF-16 units after trimming")
	f.IntVar(&o.maxRoomName, "max-room-name", server.DefaultMaxRoomName, "longest room name, in UTF-16 units")
	f.IntVar(&o.maxProfile, "max-profile", server.DefaultMaxProfile, "longest user profile, in UTF-16 units after trimming")
	f.IntVar(&o.maxText, "max-text", server.DefaultMaxText, "longest chat text, in UTF-16 units after trimming")
	f.StringArrayVar(&o.acceptVersions, "accept-version", []string{server.DefaultVersion}, "applet version an Access request may carry (repeatable)")
	f.IntVar(&o.maxConnections, "max-connections", 0, "refuse connections past this many open ones, once none can be let go to make room: held for a violation, or a second without an Access (0: no limit)")
	f.DurationVar(&o.accessTimeout, "access-timeout", server.DefaultAccessTimeout, "time a new connection has to deliver its whole Access request (0: no limit)")
	f.DurationVar(&o.idleTimeout, "idle-timeout", server.DefaultIdleTimeout, "send a Ping to a client silent this long, close it one timeout later (0: off)")
	f.DurationVar(&o.packetTimeout, "packet-timeout", server.DefaultPacketTimeout, "close a client whose packet, once begun, has not arrived whole in this long (0: off)")
	f.DurationVar(&o.violationHold, "violation-hold", server.DefaultViolationHold, "how long a connection that sent a packet over --max-packet or more than 16 chats to rooms it is not in is held, unread, before its close; a WebSocket is closed at once (0: closed at once)")
	f.DurationVar(&o.handshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "time a WebSocket upgrade request has to arrive")
	f.DurationVar(&o.drainTimeout, "drain-timeout", server.DefaultDrainTimeout, "on SIGTERM or SIGINT, longest the drain lasts (each connection gets a second to take its packets and close) before the rest are closed at once")
	f.IntVar(&o.sendBuffer, "send-buffer", server.DefaultSendBuffer, "bytes that may wait for one slow client (queued or in an unfinished write) before it is closed as a slow consumer")
	f.IntVar(&o.socketSendBuffer, "socket-send-buffer", server.DefaultSocketSendBuffer, "each connection's kernel send buffer, SO_SNDBUF (0: the kernel autotunes it)")
	f.IntVar(&o.maxPacket, "max-packet", 0, "largest packet a client may send, in bytes; a larger one is refused as soon as its first bytes say it will be larger, and its connection closed --violation-hold later, unread meanwhile (0: 8192, or twice the largest request the --max-* lengths allow if more)")
	f.IntVar(&o.maxPrivate, "max-private", server.DefaultMaxPrivate, "most private sessions one connection may have opened and not closed (0: no limit)")
	f.IntVar(&o.maxRooms, "max-rooms", server.DefaultMaxRooms, "most dynamic rooms; past it an Access is accepted but its room not created (0: no limit)")
	f.IntVar(&o.requestRate, "request-rate", server.DefaultRequestRate, "requests other than chats one connection may make per second, with a burst of as many; faster ones wait (0: no pacing)")
	f.IntVar(&o.chatRate, "chat-rate", server.DefaultChatRate, "chats one connection may send per second, with a burst of as many; faster ones wait (0: no pacing)")
	f.IntVar(&o.maxConnRooms, "max-conn-rooms", server.DefaultMaxConnRooms, "most rooms one connection may be in at once; past it EnterRoom is answered ROOM_FULL (0: no limit)")
	f.IntVar(&o.roomListMax, "room-list-max", server.DefaultRoomListMax, "most room names in an Access or RoomList confirm (which also stops at 16 KiB)")
	f.StringArrayVar(&o.wsOrigins, "ws-origin", nil, "Origin a browser may open a WebSocket from (repeatable; * allows any; default: same host only)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.engine, "engine", server.EngineGoroutine, "how TCP connections are served: goroutine (one each), epoll (Linux: event loops), uring (Linux: io_uring rings) or auto (uring, else epoll, else goroutine); WebSocket always uses goroutines")
	f.IntVar(&o.loops, "loops", 0, "event loops (rings) of the epoll and uring engines (0: one per processor)")
	f.IntVar(&o.loopFill, "loop-fill", 0, "connections a loop (ring) takes before new ones go to the next; once all have as many, to the one with fewest (0: epoll 1, an even spread; uring 8192)")
	f.DurationVar(&o.coalesce, "coalesce", 0, "--engine epoll: after a wake-up with few events, a loop waits this long (at most 10ms) before it looks for more, so that chats arriving one at a time are taken together: fewer wake-ups for up to this much more latency (0: no wait)")
	return cmd
}

func serveRun(ctx context.Context, io *IO, o *serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return &UsageError{Err: fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", o.logLevel)}
	}
	rooms := append([]string(nil), o.rooms...)
	if o.roomsFile != "" {
		fromFile, err := readRoomsFile(o.roomsFile)
		if err != nil {
			return err
		}
		rooms = append(rooms, fromFile...)
	}
	if o.listen == "" && o.wsListen == "" {
		return &UsageError{Err: fmt.Errorf("nothing to serve: --listen and --ws-listen are both empty")}
	}
	logger := slog.New(slog.NewTextHandler(io.Err, &slog.HandlerOptions{Level: level}))
	// A flag's 0 is off (Off); Config.check, the one place the ranges are
	// checked, refuses it for the limits that cannot be off. --max-packet's
	// 0 is its default, which follows the length limits.
	srv, err := server.New(server.Config{
		Listen: o.listen, WSListen: o.wsListen, WSOrigins: o.wsOrigins, MetricsListen: o.metricsListen,
		Rooms: rooms, RoomLimit: offIfZero(o.roomLimit), MaxName: offIfZero(o.maxName), MaxRoomName: offIfZero(o.maxRoomName),
		MaxProfile: offIfZero(o.maxProfile), MaxText: offIfZero(o.maxText), AcceptVersions: o.acceptVersions,
		MaxConnections: o.maxConnections, AccessTimeout: offIfZero(o.accessTimeout), IdleTimeout: offIfZero(o.idleTimeout),
		PacketTimeout: offIfZero(o.packetTimeout), ViolationHold: offIfZero(o.violationHold),
		HandshakeTimeout: offIfZero(o.handshakeTimeout), DrainTimeout: offIfZero(o.drainTimeout),
		SendBuffer: offIfZero(o.sendBuffer), SocketSendBuffer: offIfZero(o.socketSendBuffer), MaxPacket: o.maxPacket,
		MaxPrivate: offIfZero(o.maxPrivate), MaxRooms: offIfZero(o.maxRooms), RoomListMax: offIfZero(o.roomListMax),
		RequestRate: offIfZero(o.requestRate), ChatRate: offIfZero(o.chatRate), MaxConnRooms: offIfZero(o.maxConnRooms), Engine: o.engine, Loops: o.loops, LoopFill: o.loopFill, Coalesce: o.coalesce, Logger: logger,
	})
	if err != nil {
		return &UsageError{Err: serveFlagError(err)}
	}
	if err := srv.Start(); err != nil {
		if errors.Is(err, server.ErrURingUnavailable) {
			return fmt.Errorf("--engine %s: %w", o.engine, err)
		}
		return err
	}
	addr := func(a interface{ String() string }, on bool) string {
		if !on {
			return ""
		}
		return a.String()
	}
	// The ready line tells a parent (volanogo load --serve) the ports.
	ready := handshake.Serve{Chat: addr(srv.Addr(), o.listen != ""), WS: addr(srv.WSAddr(), o.wsListen != ""),
		Metrics: addr(srv.MetricsAddr(), o.metricsListen != "")}
	fmt.Fprintln(io.Out, ready.Line())
	logger.Info("volanogo serve started", "rooms", len(rooms), "room_limit", o.roomLimit, "max_connections", o.maxConnections,
		"engine", srv.Engine(), "access_timeout", o.accessTimeout, "idle_timeout", o.idleTimeout, "max_rooms", o.maxRooms, "max_private", o.maxPrivate)
	// The drain may take its timeout: the process's stop watchdog
	// (WatchStop) waits that and a little more.
	setStopGrace(o.drainTimeout + stopGraceSlack)
	<-ctx.Done()
	// The signal's context is done; a second signal ends the process at
	// once (cmd/volanogo restores the default action after the first).
	logger.Info("draining: not accepting; closing connections once their queued packets are out", "drain_timeout", o.drainTimeout)
	if err := srv.Drain(context.Background()); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// serveFlags names the flag of each server.Config field serve sets.
var serveFlags = map[string]string{
	"RoomLimit": "room-limit", "MaxName": "max-name", "MaxRoomName": "max-room-name", "MaxProfile": "max-profile",
	"MaxText": "max-text", "SendBuffer": "send-buffer", "MaxPacket": "max-packet", "RoomListMax": "room-list-max",
	"MaxPrivate": "max-private", "MaxRooms": "max-rooms", "SocketSendBuffer": "socket-send-buffer",
	"RequestRate": "request-rate", "ChatRate": "chat-rate", "MaxConnRooms": "max-conn-rooms",
	"MaxConnections": "max-connections", "Loops": "loops", "LoopFill": "loop-fill",
	"AccessTimeout": "access-timeout", "IdleTimeout": "idle-timeout", "PacketTimeout": "packet-timeout", "ViolationHold": "violation-hold", "HandshakeTimeout": "handshake-timeout",
	"DrainTimeout": "drain-timeout", "Engine": "engine", "Coalesce": "coalesce",
}

// serveFlagError says a server.ConfigError in terms of serve's flag, and
// its value as given (0 where serve passed Off).
func serveFlagError(err error) error {
	var ce *server.ConfigError
	flag, ok := "", false
	if errors.As(err, &ce) {
		flag, ok = serveFlags[ce.Field]
	}
	if !ok {
		return err
	}
	got := ce.Value
	switch got {
	case server.Off, time.Duration(server.Off):
		got = 0
	}
	if s, isString := got.(string); isString {
		got = strconv.Quote(s)
	}
	return fmt.Errorf("--%s %s (got %v)", flag, ce.Want, got)
}

// noNegativeFlags refuses a negative number or duration for any of serve's
// flags: none takes one (0 is off), and serve passes 0 to the server as
// Off, which a negative value must not be mistaken for. The other ranges
// are server.Config's.
func noNegativeFlags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		switch f.Value.Type() {
		case "int", "duration":
			if strings.HasPrefix(f.Value.String(), "-") {
				err = &UsageError{Err: fmt.Errorf("--%s must not be negative (got %s)", f.Name, f.Value)}
			}
		}
	})
	return err
}

// offIfZero maps a flag's 0 ("off") to the server's Off; Config's zero
// means the default.
func offIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return server.Off
	}
	return v
}

// readRoomsFile reads one permanent room per line.
func readRoomsFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rooms file: %w", err)
	}
	defer f.Close()
	var rooms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rooms = append(rooms, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("rooms file %s: %w", path, err)
	}
	return rooms, nil
}
