package load

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"
)

// Defaults, as Mark has them where Mark has the option.
const (
	DefaultHost               = "localhost"
	DefaultPort               = 8000
	DefaultStart              = 1
	DefaultRooms              = 50
	DefaultUsers              = 20
	DefaultCount              = 100
	DefaultFile               = "volano-mark.log"
	DefaultConnectConcurrency = 16
	DefaultStallTimeout       = 30 * time.Second
	DefaultSLO                = time.Second
	// DefaultSpawnedRuns is -runs when the client starts the server
	// (--serve, --server-cmd): the Volano Report's rule, one discarded run
	// and the best two of the next three.
	DefaultSpawnedRuns = 4
	DefaultDiscard     = 1
)

// Version is the VolanoMark version load reports and sends in Access.
const Version = "2.13.4"

// Transports.
const (
	TransportTCP = "tcp"
	TransportWS  = "ws"
)

// Config is one invocation of the client: one or more steps (room counts),
// each with its runs. The zero value of a field means its default where a
// default is documented.
type Config struct {
	// Host and Port are the server's chat port (TCP transport).
	Host string
	Port int
	// Transport is "tcp" (default) or "ws"; URL is the WebSocket URL
	// (ws://host:port/chat).
	Transport string
	URL       string

	// Start is the first room number; Steps the number of rooms of each
	// step (one step: Mark's -rooms).
	Start int
	Steps []int
	// Users per room (at least 2) and Count messages per user (0 = no
	// limit: the run ends with Duration).
	Users int
	Count int
	// Pause 0 is Mark's turn-taking; otherwise each user sends one chat
	// every Pause from a random offset (open loop).
	Pause time.Duration
	// Duration ends a run with Count 0 or with pauses (0 = no limit).
	Duration time.Duration

	// ConnectRate bounds new connections per second (0 = unlimited);
	// ConnectConcurrency is how many rooms connect at once.
	ConnectRate        float64
	ConnectConcurrency int
	// StallTimeout fails a room that makes no progress for that long, and
	// bounds every wait of the set-up.
	StallTimeout time.Duration
	// Bind lists source addresses, used round-robin (see ParseBind).
	Bind []string
	// SLO is the p99 delivery latency past which a paced step breaks.
	SLO time.Duration
	// BatchReads (TCP turn-taking on Linux) sets each socket's receive
	// low-water mark to the bytes its user waits for until its turn, so
	// that a user wakes once per turn instead of once per message: far less
	// client CPU, but the delivery latency is then measured only on the
	// indication that gives its reader the turn.
	BatchReads bool
	// KeepGoing runs the next steps of a paced sweep after a broken one
	// (by default the sweep stops there).
	KeepGoing bool

	// ServerMetrics is a Prometheus URL of the server (CPU, RSS).
	ServerMetrics string
	// Serve starts a fresh `volanogo serve` per run with ServeCommand
	// (default: this executable, "serve", loopback ports 0).
	Serve        bool
	ServeCommand []string
	// ServerCmd starts any server per run: a shell command whose "{port}"
	// is replaced by a free loopback port.
	ServerCmd string
	// Runs per step (0 = 1, or DefaultSpawnedRuns when the client starts
	// the server) and Discard, the runs not counted (default 1 when Runs > 1).
	Runs    int
	Discard int

	// File is Mark's text log (the results, with an environment header);
	// "" writes none. Output is -o: a directory or a file for the result
	// documents ("" writes none).
	File   string
	Output string
	Label  string
	// CommandLine is recorded in the documents.
	CommandLine []string
	// Progress receives progress lines (nil: none).
	Progress io.Writer
	// CPUProfile writes a CPU profile of the client's timed phases.
	CPUProfile string
	// Seed seeds the random offsets of paced users (0: from the clock).
	Seed int64
}

// ConfigError is a configuration the engine refuses (a usage error).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func cfgErr(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// normalize fills defaults and checks c.
func (c *Config) normalize() error {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Transport == "" {
		c.Transport = TransportTCP
	}
	if c.Start == 0 {
		c.Start = DefaultStart
	}
	if len(c.Steps) == 0 {
		c.Steps = []int{DefaultRooms}
	}
	if c.Users == 0 {
		c.Users = DefaultUsers
	}
	if c.ConnectConcurrency <= 0 {
		c.ConnectConcurrency = DefaultConnectConcurrency
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.SLO <= 0 {
		c.SLO = DefaultSLO
	}
	spawned := c.Serve || c.ServerCmd != ""
	if c.Runs <= 0 {
		c.Runs = 1
		if spawned {
			c.Runs = DefaultSpawnedRuns
		}
	}
	if c.Discard < 0 {
		c.Discard = DefaultDiscard
	}
	if c.Discard >= c.Runs {
		c.Discard = 0
	}
	switch {
	case c.Port < 1 || c.Port > 65535:
		return cfgErr("-port: %d is not a port number", c.Port)
	case c.Users < 2:
		return cfgErr("-users: value must be at least 2 (%d)", c.Users)
	case c.Count < 0:
		return cfgErr("-count: value must not be negative (%d)", c.Count)
	case c.Pause < 0:
		return cfgErr("-pause: value must not be negative (%s)", c.Pause)
	case c.Start < 0:
		return cfgErr("-start: value must not be negative (%d)", c.Start)
	case c.Count == 0 && c.Duration <= 0:
		return cfgErr("-count 0 runs forever: give --duration")
	case c.ConnectRate < 0:
		return cfgErr("--connect-rate: must not be negative")
	case c.Serve && c.ServerCmd != "":
		return cfgErr("--serve and --server-cmd exclude each other")
	}
	for _, r := range c.Steps {
		if r < 1 {
			return cfgErr("-rooms: value must be at least 1 (%d)", r)
		}
	}
	switch c.Transport {
	case TransportTCP:
	case TransportWS:
		if c.URL == "" && !spawned {
			return cfgErr("--transport ws needs --url ws://host:port/chat")
		}
		if c.URL != "" {
			u, err := url.Parse(c.URL)
			if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
				return cfgErr("--url: %q is not a ws:// or wss:// URL", c.URL)
			}
		}
	default:
		return cfgErr("--transport: %q is not tcp or ws", c.Transport)
	}
	if c.ServerCmd != "" && !containsPort(c.ServerCmd) {
		return cfgErr("--server-cmd: the command must contain {port}")
	}
	if _, err := ParseBind(c.Bind); err != nil {
		return &ConfigError{Err: err}
	}
	return nil
}

// ErrFailed is returned by Run when a run failed (its document says why).
var ErrFailed = errors.New("the test failed")

// ErrInterrupted is returned by Run when the context was cancelled.
var ErrInterrupted = errors.New("interrupted")
