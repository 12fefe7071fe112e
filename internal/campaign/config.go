package campaign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/volanogo/volanogo/internal/broker"
	"github.com/volanogo/volanogo/internal/results"
	"github.com/volanogo/volanogo/internal/swarm"
	"github.com/volanogo/volanogo/internal/sysinfo"
	"github.com/volanogo/volanogo/internal/usage"
)

// Defaults, as Mark has them where Mark has the option.
const (
	DefaultHost  = "localhost"
	DefaultPort  = 8000
	DefaultStart = 1
	DefaultRooms = 50
	// DefaultSpawnedRuns is the runs per step when the campaign starts the
	// server for turn-taking (Serve, ServerCmd): the Volano Report's rule,
	// one discarded run and the best two of the next three.
	DefaultSpawnedRuns = 4
)

// Config is one campaign: the steps (room counts) of a sweep, each with
// its runs, against one server or a fresh one per run, in this process or
// in shard processes. The zero value of a field means its default where a
// default is documented.
type Config struct {
	// Spec is every run's spec; its Rooms are the campaign's to fill (the
	// step's, or this shard's block of them).
	Spec swarm.Spec

	// Host and Port are the server's chat port (TCP); Transport is
	// swarm.TransportTCP (default), swarm.TransportWS with URL, or a
	// broker's protocol (swarm.TransportNATS, ...) at Host and Port, its
	// rooms' subjects named with Prefix, MQTT at QoS.
	Host      string
	Port      int
	Transport string
	URL       string
	Prefix    string
	QoS       int

	// Start is the first room number; Steps the number of rooms of each
	// step (one step: Mark's -rooms).
	Start int
	Steps []int
	// KeepGoing runs the next steps of a paced sweep after a broken one
	// (by default the sweep stops there).
	KeepGoing bool

	// ServerMetrics is a Prometheus URL of the server (CPU, RSS).
	ServerMetrics string
	// ServerLabels are key=value pairs that describe the server (load
	// --server-label), recorded in every run's ServerInfo; the keys
	// product, version and engine set those fields for a server that
	// cannot say them itself.
	ServerLabels map[string]string
	// Serve starts a fresh `volanogo serve` per run with ServeCommand
	// (default: this executable, "serve", loopback ports 0).
	Serve        bool
	ServeCommand []string
	// ServerCmd starts any server per run: a shell command whose "{port}"
	// is replaced by a free loopback port.
	ServerCmd string
	// ClientCmd runs an external VolanoMark client (the original Mark, say)
	// per run instead of volanogo's swarm: a shell command whose {host},
	// {port}, {rooms}, {users}, {count} and {start} are replaced by the
	// run's; the campaign reads Mark's result lines from its standard
	// output and measures its CPU and the server's over its timed phase
	// (from its "Running the test" line to its end). ClientTimeout bounds
	// it (default DefaultClientTimeout).
	ClientCmd     string
	ClientTimeout time.Duration
	// Runs per step (0: 1, or DefaultSpawnedRuns when the campaign starts
	// the server for turn-taking: the run rules are for scores, which
	// paced and churn runs do not have) and Discard, the runs not counted
	// at the start of each step (negative: the run rule's default, 1; none
	// when there is only one run).
	Runs    int
	Discard int
	// Retry makes a failed run again, on a fresh server when the campaign
	// starts it, up to Retry more times (load --retry): the Volano
	// Report's "worked on the second try". Each try is handed to the
	// sink; a replaced one is marked results.Retry.Superseded.
	Retry int
	// FindLimit, when set, searches for the largest step that holds
	// instead of running Steps (load --find-limit): see FindLimit.
	FindLimit *FindLimit
	// ServerCPUs runs each step once per value with the spawned server
	// restricted to that many processors: CPU affinity on the first n
	// processors this process may use, and GOMAXPROCS=n in the environment
	// of `volanogo serve`.
	ServerCPUs []int

	// Label names the platform in the documents (default: the server);
	// CommandLine is recorded in them.
	Label       string
	CommandLine []string

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
	// it was (results.Shard.ClockOffsetSeconds). More than MaxStartAtPast
	// in the past at the start is a usage error.
	StartAt time.Time

	// Procs > 0 runs each run as that many shard processes of this
	// program (ShardCommand), started and merged by this one; ProcsAuto
	// chooses per step enough processes that none holds more connections
	// than its open-files limit less OpenFilesReserve.
	Procs int
	// SplitWhenNeeded, with Procs 0 and no shard of its own, runs a step
	// as ProcsAuto shard processes when one process would hold more
	// connections than its open-files limit less OpenFilesReserve; a step
	// that fits stays in this process.
	SplitWhenNeeded bool
	// Floor, when set, measures this machine's kernel floor (load
	// --floor): Run calls it before each step's runs, at the step's room
	// count, and records what it returns in the environment of the step's
	// documents (results.Environment.Floor). An error stops the campaign
	// there: before any run when the first step's floor fails.
	Floor func(ctx context.Context, rooms, users int) (results.Floor, error)
	// ShardCommand is the argv of a shard process (default: this
	// executable and "shard"), which reads its spec on its standard input
	// (see RunShard).
	ShardCommand []string

	// serverVersion is the version of a broker program that ServerCmd
	// runs (broker.Servers), asked once before the runs.
	serverVersion string
}

// brokerIdentity completes the identity of a broker program that
// ServerCmd runs: its version, and for the command --serve gives it no
// flags (it has only addresses and settings that keep it off the disk).
func (c *Config) brokerIdentity(si *results.ServerInfo) {
	f := strings.Fields(c.ServerCmd)
	if si == nil || len(f) == 0 {
		return
	}
	b, ok := broker.LookupServer(filepath.Base(f[0]))
	if !ok {
		return
	}
	si.Product, si.Version = b.Name, c.serverVersion
	if strings.Join(f[1:], " ") == strings.TrimPrefix(strings.TrimPrefix(b.Command, b.Name), " ") {
		si.Flags = nil
	}
}

// brokerVersion asks the broker program that ServerCmd runs for its
// version, if it is one volanogo knows.
func (c *Config) brokerVersion(ctx context.Context) {
	f := strings.Fields(c.ServerCmd)
	if len(f) == 0 {
		return
	}
	if s, ok := broker.LookupServer(filepath.Base(f[0])); ok {
		c.serverVersion, _ = s.Version(ctx)
	}
}

// ProcsAuto is Config.Procs for "enough processes" (--procs auto).
const ProcsAuto = -1

// OpenFilesReserve is the descriptors a shard process keeps for itself
// beyond its connections when ProcsAuto sizes the shards.
const OpenFilesReserve = 100

// MaxStartAtPast is how far in the past Config.StartAt may be when a run
// begins (clocks of several machines differ a little).
const MaxStartAtPast = 5 * time.Second

// ErrFailed is returned by Run when a run failed (its document says why).
var ErrFailed = errors.New("the test failed")

// ErrInterrupted is returned by Run when the context was cancelled.
var ErrInterrupted = errors.New("interrupted")

// ConfigError is a configuration the campaign refuses: the one usage
// error type (usage.Error), as the swarm's is.
type ConfigError = usage.Error

func cfgErr(format string, args ...any) error { return usage.Errorf(format, args...) }

// IsUsage reports whether err is a configuration the campaign (or the
// swarm) refused.
func IsUsage(err error) bool { return usage.Is(err) }

// spawned reports whether the campaign starts the server.
func (c *Config) spawned() bool { return c.Serve || c.ServerCmd != "" }

// normalize fills defaults and checks c.
func (c *Config) normalize() error {
	s := &c.Spec
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Transport == "" {
		c.Transport = swarm.TransportTCP
	}
	if c.Start == 0 {
		c.Start = DefaultStart
	}
	if len(c.Steps) == 0 {
		c.Steps = []int{DefaultRooms}
	}
	if s.Users == 0 {
		s.Users = swarm.DefaultUsers
	}
	if s.ConnectConcurrency <= 0 {
		s.ConnectConcurrency = swarm.DefaultConnectConcurrency
	}
	if s.StallTimeout <= 0 {
		s.StallTimeout = swarm.DefaultStallTimeout
	}
	if s.SLO <= 0 {
		s.SLO = swarm.DefaultSLO
	}
	if c.Runs <= 0 {
		c.Runs = 1
		if c.spawned() && s.Pause == 0 && s.Scenario != results.ScenarioChurn {
			c.Runs = DefaultSpawnedRuns
		}
	}
	if c.Discard < 0 {
		c.Discard = results.DefaultRunRule.Discard
	}
	if c.Discard >= c.Runs {
		c.Discard = 0
	}
	switch {
	case c.Port < 1 || c.Port > 65535:
		return cfgErr("-port: %d is not a port number", c.Port)
	case s.Users < 2:
		return cfgErr("-users: value must be at least 2 (%d)", s.Users)
	case s.Count < 0:
		return cfgErr("-count: value must not be negative (%d)", s.Count)
	case s.Pause < 0:
		return cfgErr("-pause: value must not be negative (%s)", s.Pause)
	case c.Start < 0:
		return cfgErr("-start: value must not be negative (%d)", c.Start)
	case s.Count == 0 && s.Duration <= 0:
		return cfgErr("-count 0 runs forever: give --duration")
	case s.ConnectRate < 0:
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
	case swarm.TransportTCP:
	case swarm.TransportWS:
		if c.URL == "" && !c.spawned() {
			return cfgErr("--transport ws needs --url ws://host:port/chat")
		}
		if c.URL != "" {
			u, err := url.Parse(c.URL)
			if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
				return cfgErr("--url: %q is not a ws:// or wss:// URL", c.URL)
			}
		}
	case swarm.TransportNATS, swarm.TransportRedis, swarm.TransportMQTT:
		if c.Serve {
			return cfgErr("--serve starts volanogo serve, which speaks VOLANO: for a %s broker name it (--serve %s)", c.Transport, brokerProgram(c.Transport))
		}
	default:
		return cfgErr("--transport: %q is not tcp, ws, nats, redis or mqtt", c.Transport)
	}
	if (c.Prefix != "" || c.QoS != 0) && !swarm.IsBroker(c.Transport) {
		return cfgErr("--room-prefix and --qos are for a broker target (nats, redis, mqtt)")
	}
	if swarm.IsBroker(c.Transport) {
		if err := (broker.Options{Protocol: c.Transport, Prefix: c.Prefix, QoS: c.QoS}).Check(); err != nil {
			return &ConfigError{Err: err}
		}
	}
	if c.ServerCmd != "" && !strings.Contains(c.ServerCmd, "{port}") && !strings.Contains(c.ServerCmd, "{conf}") {
		return cfgErr("--server-cmd: the command must contain {port}")
	}
	if c.ClientCmd != "" {
		switch {
		case !strings.Contains(c.ClientCmd, "{port}"):
			return cfgErr("--client-cmd: the command must contain {port} (and {rooms}, {users}, {count} for the run's size)")
		case c.Transport != swarm.TransportTCP:
			return cfgErr("--client-cmd: the client speaks TCP: not with --transport %s", c.Transport)
		case s.Pause > 0 || s.Scenario == results.ScenarioChurn || s.Count == 0:
			return cfgErr("--client-cmd runs Mark's turn-taking, which must end: -count at least 1, no -pause, no --scenario churn")
		case c.Procs > 0 || c.ShardCount > 0:
			return cfgErr("--client-cmd is one client process: not with --procs or --shard")
		}
	}
	if c.Retry < 0 {
		return cfgErr("--retry: must not be negative (%d)", c.Retry)
	}
	if c.FindLimit != nil {
		if err := c.FindLimit.normalize(); err != nil {
			return err
		}
		if len(c.ServerCPUs) > 0 || c.ShardCount > 0 {
			return cfgErr("--find-limit searches one server's steps: not with --server-cpus or --shard")
		}
	}
	if _, err := swarm.ParseBind(s.Bind); err != nil {
		return &ConfigError{Err: fmt.Errorf("--bind: %w", err)}
	}
	return c.normalizeScaleOut()
}

// normalizeScaleOut checks the scenario, shards, processes, the start time
// and the server's processors.
func (c *Config) normalizeScaleOut() error {
	s := &c.Spec
	switch s.Scenario {
	case "", results.ScenarioTurns, results.ScenarioPaced:
		s.Scenario = results.ScenarioTurns
		if s.Pause > 0 {
			s.Scenario = results.ScenarioPaced
		}
	case results.ScenarioStorm:
		if s.Pause <= 0 {
			return cfgErr("--scenario storm: a storm is a paced run: give -pause")
		}
	case results.ScenarioPrivate:
		if s.Pause <= 0 {
			return cfgErr("--scenario private: private chat is paced: give -pause")
		}
		if s.Users%2 != 0 {
			return cfgErr("--scenario private: users chat in pairs: -users must be even (%d)", s.Users)
		}
	case results.ScenarioChurn:
		if s.Count < 1 {
			return cfgErr("--scenario churn: -count must be at least 1 (sequences per user)")
		}
		if s.Pause > 0 {
			return cfgErr("--scenario churn: -pause does not apply")
		}
	default:
		return cfgErr("--scenario: %q is not turns, paced, private, churn or storm", s.Scenario)
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
		if c.spawned() {
			return cfgErr("--shard runs part of a run against a server shared by the shards: not with --serve or --server-cmd (use --procs)")
		}
	}
	if c.Procs < ProcsAuto {
		return cfgErr("--procs: %d is not a number of processes", c.Procs)
	}
	if !c.StartAt.IsZero() {
		if late := time.Since(c.StartAt); late > MaxStartAtPast {
			return cfgErr("--start-at: %s is %s in the past", c.StartAt.Format(time.RFC3339), late.Round(time.Second))
		}
	}
	if len(c.ServerCPUs) > 0 {
		if !c.spawned() {
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

// target is where the runs connect when the campaign does not start the
// server.
func (c *Config) target() swarm.Target {
	if c.Transport == swarm.TransportWS {
		return swarm.Target{Transport: swarm.TransportWS, URL: c.URL}
	}
	return c.addrTarget(net.JoinHostPort(c.Host, strconv.Itoa(c.Port)))
}

// addrTarget is the target at addr (host:port) over the campaign's
// transport: VOLANO over TCP, or a broker's protocol.
func (c *Config) addrTarget(addr string) swarm.Target {
	if swarm.IsBroker(c.Transport) {
		return swarm.Target{Transport: c.Transport, Addr: addr, Prefix: c.Prefix, QoS: c.QoS}
	}
	return swarm.Target{Transport: swarm.TransportTCP, Addr: addr}
}

// brokerProgram names the program --serve starts for a broker protocol.
func brokerProgram(protocol string) string {
	for _, s := range broker.Servers {
		if s.Protocol == protocol {
			return s.Name
		}
	}
	return protocol
}

// ShardRooms returns the room numbers of shard index of count when a step
// of rooms rooms numbered from start is split: the contiguous block
// [start+rooms*index/count, start+rooms*(index+1)/count), so that the
// shards' sizes differ by at most one room and a room never spans two
// shards. count 0 is the whole step.
func ShardRooms(start, rooms, index, count int) []int {
	lo, hi := 0, rooms
	if count > 0 {
		lo, hi = rooms*index/count, rooms*(index+1)/count
	}
	nums := make([]int, 0, hi-lo)
	for r := lo; r < hi; r++ {
		nums = append(nums, start+r)
	}
	return nums
}
