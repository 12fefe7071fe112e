package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/sysinfo"
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
	// StrictOrder fails a run when any chat reaches a receiver after a
	// later chat of its room (volanogo serve keeps each room's order; the
	// original server and many others do not: by default reordering is
	// counted and reported, not a failure).
	StrictOrder bool
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
	// the server for turn-taking: the run rules are for scores, which
	// paced and churn runs do not have) and Discard, the runs not counted
	// (default 1 when Runs > 1).
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

	// Scenario is "" (turn-taking, or paced when Pause > 0) or
	// results.ScenarioChurn: each user repeats connect, Access, EnterRoom,
	// one chat, ExitRoom, close, Count times (see churn.go).
	Scenario string

	// ShardIndex of ShardCount (ShardCount 0: not sharded) runs this
	// process's share of each step's rooms: the contiguous block of rooms
	// [Start+R*i/N, Start+R*(i+1)/N), whole rooms only (see ShardRooms).
	// Its documents record the whole run in Config and its rooms in Shard.
	ShardIndex, ShardCount int
	// RunID is the run's shared id (default: a new random id per run);
	// with several steps or runs each run's id is RunID-<rooms>-<run>
	// (RunID-<rooms>-c<cpus>-<run> with ServerCPUs), the same in every
	// shard.
	RunID string
	// StartAt is the wall-clock start of the timed phase of the first run:
	// the set-up first, then a wait until StartAt, then the start. A shard
	// whose set-up ends after StartAt starts at once and records how late
	// it was (results.Shard.ClockOffsetSeconds). More than
	// MaxStartAtPast in the past at the start is a usage error.
	StartAt time.Time
	// Gate, when set, synchronises the timed phase with other processes:
	// Ready is called when the set-up is done and returns the start time,
	// Ended when the timed phase is over (see StdioGate; --procs uses it).
	Gate Gate

	// Procs > 0 runs each run as that many shard processes of this
	// program (ShardCommand), started and merged by this one; ProcsAuto
	// chooses per step enough processes that none holds more connections
	// than its open-files limit less OpenFilesReserve.
	Procs int
	// SplitWhenNeeded, with Procs 0 and no shard of its own, runs a step
	// as ProcsAuto shard processes when one process would hold more
	// connections than its open-files limit less OpenFilesReserve; a step
	// that fits stays in this process. (--procs not given.)
	SplitWhenNeeded bool
	// ShardCommand is the argv prefix of a shard process (default: this
	// executable and "load"); the shard's flags follow it.
	ShardCommand []string

	// ServerCPUs runs each step once per value with the spawned server
	// (Serve or ServerCmd) restricted to that many processors: CPU
	// affinity on the first n processors this process may use, and
	// GOMAXPROCS=n in the environment of `volanogo serve`.
	ServerCPUs []int
}

// ProcsAuto is Config.Procs for "enough processes" (--procs auto).
const ProcsAuto = -1

// OpenFilesReserve is the descriptors a shard process keeps for itself
// beyond its connections when ProcsAuto sizes the shards.
const OpenFilesReserve = 100

// MaxStartAtPast is how far in the past Config.StartAt may be when a run
// begins (clocks of several machines differ a little).
const MaxStartAtPast = 5 * time.Second

// Gate synchronises the timed phase of a shard with the other shards of
// its run.
type Gate interface {
	// Ready is called once the set-up is done; it returns when the timed
	// phase is to start.
	Ready(ctx context.Context) (time.Time, error)
	// Ended is called when the timed phase is over, before the
	// connections close (paced: when the messages in flight have arrived,
	// before the users leave).
	Ended()
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
		if spawned && c.Pause == 0 && c.Scenario != results.ScenarioChurn {
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
	return c.normalizeScaleOut()
}

// normalizeScaleOut checks the options of issue 5: shards, processes,
// the start time, churn and the server's processors.
func (c *Config) normalizeScaleOut() error {
	switch c.Scenario {
	case "", results.ScenarioTurns, results.ScenarioPaced:
		c.Scenario = ""
	case results.ScenarioChurn:
		if c.Count < 1 {
			return cfgErr("--scenario churn: -count must be at least 1 (sequences per user)")
		}
		if c.Pause > 0 {
			return cfgErr("--scenario churn: -pause does not apply")
		}
	default:
		return cfgErr("--scenario: %q is not turns, paced or churn", c.Scenario)
	}
	if c.ShardCount != 0 || c.ShardIndex != 0 {
		if c.ShardCount < 1 || c.ShardIndex < 0 || c.ShardIndex >= c.ShardCount {
			return cfgErr("--shard: %d/%d is not a shard (I/N with 0 <= I < N)", c.ShardIndex, c.ShardCount)
		}
		for _, r := range c.Steps {
			if r < c.ShardCount {
				return cfgErr("--shard %d/%d: %d rooms cannot be split into %d shards of whole rooms", c.ShardIndex, c.ShardCount, r, c.ShardCount)
			}
		}
		if c.Procs != 0 {
			return cfgErr("--procs and --shard exclude each other")
		}
		if c.Serve || c.ServerCmd != "" {
			return cfgErr("--shard runs part of a run against a server shared by the shards: not with --serve or --server-cmd (use --procs)")
		}
	}
	if c.Procs < ProcsAuto {
		return cfgErr("--procs: %d is not a number of processes", c.Procs)
	}
	if c.Procs != 0 && c.CPUProfile != "" {
		return cfgErr("--cpuprofile profiles one process: not with --procs")
	}
	if !c.StartAt.IsZero() {
		if late := time.Since(c.StartAt); late > MaxStartAtPast {
			return cfgErr("--start-at: %s is %s in the past", c.StartAt.Format(time.RFC3339), late.Round(time.Second))
		}
	}
	if len(c.ServerCPUs) > 0 {
		if !c.Serve && c.ServerCmd == "" {
			return cfgErr("--server-cpus needs --serve or --server-cmd (the client starts the server)")
		}
		avail := sysinfo.AvailableCPUs()
		for _, n := range c.ServerCPUs {
			if n < 1 || (avail > 0 && n > avail) {
				return cfgErr("--server-cpus: %d is not between 1 and the %d processors this process may use", n, avail)
			}
		}
	}
	return nil
}

// ErrFailed is returned by Run when a run failed (its document says why).
var ErrFailed = errors.New("the test failed")

// ErrInterrupted is returned by Run when the context was cancelled.
var ErrInterrupted = errors.New("interrupted")
