package cli

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
	idleTimeout                     time.Duration
	sendBuffer                      int
	maxPacket                       int
	wsOrigins                       []string
	logLevel                        string
}

func newServeCmd(io *IO) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the chat server (the system under test)",
		Long: `Run volanogo's chat server: the VOLANO chat protocol over TCP, wire-compatible
with the original VOLANO 2.13.4 server, so that the original VolanoMark client
(java COM.volano.Mark) can measure it; the same packets over WebSocket (one
packet per binary message, path /chat); Prometheus metrics on /metrics.

Rooms are permanent (--room, --rooms-file) or dynamic: a dynamic room is
created by the default room of a client's Access request and removed as soon
as nobody is in it. VolanoMark needs no configuration: each of its rooms is
created this way.

Once listening it prints one line on stdout:
  volanogo serve listening: chat=ADDR ws=ADDR metrics=ADDR
and logs to stderr. SIGINT or SIGTERM stops it: it closes every connection
and exits 0.`,
		Example: `  # The server of the Volano Report's loopback test
  volanogo serve

  # The three sample rooms of the original server, WebSocket on :8080
  volanogo serve --room "Sample Permanent Room A" --room "Sample Permanent Room B" \
      --room "Sample Permanent Room C" --ws-listen :8080

  # Refuse connections past 10,000; ping clients idle for 10 minutes
  volanogo serve --max-connections 10000 --idle-timeout 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveRun(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", server.DefaultListen, "TCP address of the chat port")
	f.StringVar(&o.wsListen, "ws-listen", "", "address of the WebSocket listener, path /chat (empty: off)")
	f.StringVar(&o.metricsListen, "metrics-listen", server.DefaultMetrics, "address of the Prometheus metrics listener, path /metrics (empty: off)")
	f.StringArrayVar(&o.rooms, "room", nil, "a permanent room (repeatable)")
	f.StringVar(&o.roomsFile, "rooms-file", "", "file of permanent rooms, one per line (blank lines and lines starting with # are skipped)")
	f.IntVar(&o.roomLimit, "room-limit", server.DefaultRoomLimit, "most users in one room")
	f.IntVar(&o.maxName, "max-name", server.DefaultMaxName, "longest user name, in UTF-16 units after trimming")
	f.IntVar(&o.maxRoomName, "max-room-name", server.DefaultMaxRoomName, "longest room name, in UTF-16 units")
	f.IntVar(&o.maxProfile, "max-profile", server.DefaultMaxProfile, "longest user profile, in UTF-16 units after trimming")
	f.IntVar(&o.maxText, "max-text", server.DefaultMaxText, "longest chat text, in UTF-16 units after trimming")
	f.StringArrayVar(&o.acceptVersions, "accept-version", []string{server.DefaultVersion}, "applet version an Access request may carry (repeatable)")
	f.IntVar(&o.maxConnections, "max-connections", 0, "refuse connections past this many open ones (0: no limit)")
	f.DurationVar(&o.idleTimeout, "idle-timeout", 0, "send a Ping after this long without a packet, close after twice as long (0: off)")
	f.IntVar(&o.sendBuffer, "send-buffer", server.DefaultSendBuffer, "bytes that may wait for one slow client before it is closed as a slow consumer")
	f.IntVar(&o.maxPacket, "max-packet", 64<<10, "largest incoming packet, in bytes")
	f.StringArrayVar(&o.wsOrigins, "ws-origin", nil, "Origin a browser may open a WebSocket from (repeatable; * allows any; default: same host only)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
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
	for _, v := range []struct {
		name string
		v    int
	}{{"--room-limit", o.roomLimit}, {"--max-name", o.maxName}, {"--max-room-name", o.maxRoomName},
		{"--max-profile", o.maxProfile}, {"--max-text", o.maxText}, {"--send-buffer", o.sendBuffer}, {"--max-packet", o.maxPacket}} {
		if v.v <= 0 {
			return &UsageError{Err: fmt.Errorf("%s must be positive (got %d)", v.name, v.v)}
		}
	}
	if o.listen == "" && o.wsListen == "" {
		return &UsageError{Err: fmt.Errorf("nothing to serve: --listen and --ws-listen are both empty")}
	}
	logger := slog.New(slog.NewTextHandler(io.Err, &slog.HandlerOptions{Level: level}))
	srv, err := server.New(server.Config{
		Listen: o.listen, WSListen: o.wsListen, WSOrigins: o.wsOrigins, MetricsListen: o.metricsListen,
		Rooms: rooms, RoomLimit: o.roomLimit, MaxName: o.maxName, MaxRoomName: o.maxRoomName,
		MaxProfile: o.maxProfile, MaxText: o.maxText, AcceptVersions: o.acceptVersions,
		MaxConnections: o.maxConnections, IdleTimeout: o.idleTimeout, SendBuffer: o.sendBuffer,
		MaxPacket: o.maxPacket, Logger: logger,
	})
	if err != nil {
		return &UsageError{Err: err}
	}
	if err := srv.Start(); err != nil {
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
	logger.Info("volanogo serve started", "rooms", len(rooms), "room_limit", o.roomLimit, "max_connections", o.maxConnections)
	<-ctx.Done()
	logger.Info("stopping: closing connections")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
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
